"""Shared test helpers."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def kernels_dir() -> Path:
    """The project's kernel suite."""
    return REPO / "kernels"


@pytest.fixture(scope="module")
def standin_fast():
    """(fast path, readout) of the stand-in merged model in fp32, read straight from the checkpoint
    (FastModel.from_checkpoint): no stock model is held, so a module needs a few GB, not 15."""
    from qwengpu.driver import runtime
    from qwengpu.fast import FastModel
    from qwengpu.model.merge import default_merged_model
    path = default_merged_model()
    return FastModel.from_checkpoint(path, "float32"), runtime.readout_of(path)


@pytest.fixture(autouse=True)
def fresh_model_cache():
    """Every test starts without a kept model-engine model (tests swap the loader for fakes)."""
    from qwengpu import api
    api._LOADED.clear()
    yield
    api._LOADED.clear()


@pytest.fixture(autouse=True, scope="module")
def free_module_memory(request):
    """What a test module kept goes when it ends, so it never sits beside the larger models of later
    modules (CI has 24 GB): the module's own lru_caches (compiled circuits, toy models) and a chat
    session's text models (the merged model without its circuit layers, 1.5 GB in bf16 for the
    stand-in). The machines qwengpu.machine.build keeps stay: later modules reuse them (a minute
    each to build again)."""
    yield
    import functools
    import gc
    import sys
    for value in vars(request.module).values():
        if isinstance(value, functools._lru_cache_wrapper):
            value.cache_clear()
    session = sys.modules.get("qwengpu.chat.session")
    if session is not None:
        session._TEXT_MODELS.clear()
        session._SYSTEM_TURNS.clear()
    gc.collect()
