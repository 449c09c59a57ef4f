"""The SIMT machine compiled into circuit layers: vocabulary (tokens), ROM encoding,
ALU and control stages, the assembly (build) and the launch runtime. docs/machine.md."""
