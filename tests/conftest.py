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
