"""Shared test helpers."""
import importlib
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
KERNELS = REPO / "kernels"
TOOLCHAIN_MODULES = ("qwengpu.toolchain.ptx", "qwengpu.toolchain.lower", "qwengpu.interp")


@pytest.fixture
def toolchain():
    """Skip while the PTX parser, the lowering or the interpreter does not
    exist yet (they are written in parallel); once a module exists, an error
    importing it fails the test."""
    for name in TOOLCHAIN_MODULES:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not written yet")
        importlib.import_module(name)


@pytest.fixture
def kernels_dir() -> Path:
    return KERNELS
