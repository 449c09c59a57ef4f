"""Shared test helpers."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def kernels_dir() -> Path:
    """The project's kernel suite."""
    return REPO / "kernels"
