"""The model dtypes by name: "float32" and "bfloat16", each a torch dtype. The one table that
every loader, builder and checker of a model takes its `dtype` argument from. It imports torch,
so only modules that load weights import it (not the machine's light definition modules)."""
import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
