"""The exact fast path: a merged model's circuit layers run on their nonzero structure, token by
token, with the stock decode path's formulas (identical tokens; model.py's docstring says why).

    model.py   FastModel: the compact matrices, the step (one launch or a batch in lockstep)
    native.py  the step in C (native.c), compiled on first use into build/native/
    weights.py a checkpoint's tensors read from its safetensors files, a few rows at a time
    cache.py   a checkpoint's compact matrices, cached under build/fast-cache/
"""
from qwengpu.fast.model import FastModel, FastPathError

__all__ = ["FastModel", "FastPathError"]
