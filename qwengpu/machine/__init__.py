"""The SIMT machine compiled into circuit layers: its contract with the host (the vocabulary in
tokens, the ROM encoding, the packed words), one module per unit (layers in plan.py), and the
assembly (build). The host side of a launch is qwengpu.driver. docs/machine.md."""
