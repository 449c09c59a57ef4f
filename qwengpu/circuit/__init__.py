"""The circuit compiler: exact machine primitives compiled into stock Qwen3.5 layers.

host.py      HostSpec: the per-layer resources of the Qwen3.5 host
residual.py  named residual fields, their lifetimes, the layout map
layer.py     one compiled decoder layer (GDN part + MLP part) in Qwen3.5 parameter names
gadgets.py   MLP gadgets (gates, compare, add, shifts, multiply, select, ...)
memory.py    Gated DeltaNet memory banks (addressable rows in a head's state)
model.py     a stock Qwen3_5ForCausalLM around compiled layers, and field encode/decode
check.py     check_circuit(): every gadget and bank through the stock layers, fp32 and bf16
weights.py   CircuitWeights: a compiled circuit as the merge takes it
"""
from qwengpu.errors import QwenGpuError


class CircuitError(QwenGpuError):
    """A circuit that cannot be compiled: out of dims, neurons, heads, or a broken silence rule."""


class ResidualFullError(CircuitError):
    """The circuit's fields need more residual dims than its width (a wider C may fit)."""
