"""Shared test helpers."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def kernels_dir() -> Path:
    """The project's kernel suite."""
    return REPO / "kernels"


@pytest.fixture(autouse=True)
def fresh_model_cache():
    """Every test starts without a kept model-engine model (tests swap the loader for fakes)."""
    from qwengpu import api
    api._LOADED.clear()
    yield
    api._LOADED.clear()


@pytest.fixture(autouse=True, scope="module")
def free_chat_models():
    """A chat session's text model (the merged model without its circuit layers, 1.5 GB in bf16 for
    the stand-in) is kept for later sessions; after each test module it goes, so it never sits
    beside the larger models of later modules (CI has 24 GB)."""
    yield
    import gc
    import sys
    session = sys.modules.get("qwengpu.chat.session")
    if session is not None:
        session._TEXT_MODELS.clear()
        session._SYSTEM_TURNS.clear()
        gc.collect()
