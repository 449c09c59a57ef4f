"""The model dtypes, by name: the one table every loader, builder and checker of a model takes
its `dtype` argument from. Names only at import, so light modules (api, cli) can list and check
them without importing torch; `torch_dtype` resolves one where weights are loaded."""
from qwengpu.errors import QwenGpuError

DTYPES = ("float32", "bfloat16")
SHORT = {"float32": "fp32", "bfloat16": "bf16"}        # short names in reports and result keys


def check_dtype(name: str, error: type[QwenGpuError] = QwenGpuError) -> str:
    """`name` itself, or `error` naming the choices."""
    if name not in DTYPES:
        raise error(f"unknown dtype {name!r}; choose one of {', '.join(DTYPES)}")
    return name


def torch_dtype(name: str, error: type[QwenGpuError] = QwenGpuError):
    """The torch dtype named `name` (checked as by check_dtype)."""
    import torch
    return getattr(torch, check_dtype(name, error))
