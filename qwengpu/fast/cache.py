"""The fast path's compact matrices of a checkpoint, cached under build/fast-cache/.

Extracting them (FastModel.from_checkpoint) reads every circuit layer's dense matrices and
scans them for nonzeros: seconds of CPU. What it derives is a few MB, a function of the
checkpoint's bytes, the dtype and the extraction code alone, so it is saved once, keyed by

    build/fast-cache/CHECKPOINT-CODE-DTYPE.pt
    CHECKPOINT: weights.fingerprint (config.json's bytes, each weight file's name, size, mtime)
    CODE: sha256 of FORMAT, the dtype and the source of model.py, weights.py and this file

and loaded on the next start-up; writing an entry removes the same checkpoint's and dtype's
entries of other code (stale). A cache hit skips the dense reads entirely, including the
load-time checks (they passed when the entry was written, for the same bytes and code).

Where: $QWENGPU_FAST_CACHE if set (a folder; "off" disables the cache), else build/fast-cache
in the repository. An unreadable or stale entry is ignored (rebuilt); when the folder cannot be
written the load goes on without the cache and warns once with the reason (FastCacheWarning).
"""
from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import torch

FORMAT = 1
PACKAGE = Path(__file__).resolve().parents[1]     # qwengpu/
REPO = PACKAGE.parent
ENV = "QWENGPU_FAST_CACHE"
_SOURCES = ("fast/model.py", "fast/weights.py", "fast/cache.py")   # under qwengpu/


class FastCacheWarning(UserWarning):
    """The fast-path cache could not be used (the load goes on without it)."""


def cache_dir() -> Path | None:
    where = os.environ.get(ENV)
    if where is not None and where.strip().lower() in ("off", "0", "no", "false", ""):
        return None
    return Path(where) if where else REPO / "build" / "fast-cache"


def code_key(dtype: str) -> str:
    """What else the entry depends on: the format, the dtype and the extraction code."""
    h = hashlib.sha256(f"format={FORMAT};dtype={dtype};".encode())
    for name in _SOURCES:
        h.update((PACKAGE / name).read_bytes())
    return h.hexdigest()


def entry(path: str | Path, dtype: str, folder: Path | None = None) -> Path | None:
    """The entry's file: CHECKPOINT-CODE-DTYPE.pt (None: the cache is off)."""
    from qwengpu.fast.weights import fingerprint
    folder = cache_dir() if folder is None else folder
    if folder is None:
        return None
    return folder / f"{fingerprint(path)[:24]}-{code_key(dtype)[:24]}-{dtype}.pt"


def _stale(file: Path) -> list[Path]:
    """Entries of the same checkpoint and dtype written by other code (superseded by `file`)."""
    ckpt, _, dtype = file.stem.split("-", 2)
    return [f for f in file.parent.glob(f"{ckpt}-*-{dtype}.pt") if f != file]


def load(file: Path | None) -> dict | None:
    """The saved derived data, or None (no entry, or one that cannot be read)."""
    if file is None or not file.is_file():
        return None
    try:
        return torch.load(file, weights_only=True, mmap=True)     # pages are read as they are used
    except Exception as e:                          # a torn or foreign file: rebuild it
        warnings.warn(f"fast-path cache entry {file} is unreadable ({e}); rebuilding it", FastCacheWarning)
        return None


def save(file: Path | None, data: dict) -> bool:
    """Write an entry atomically (a temporary file renamed into place); False with a warning
    naming the folder and the reason when it cannot be written."""
    if file is None:
        return False
    tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        torch.save(data, tmp)
        os.replace(tmp, file)
    except OSError as e:
        warnings.warn(f"the fast-path cache folder {file.parent} is not writable ({e.strerror or e}); "
                      f"going on without the cache (set {ENV} to a writable folder, or to 'off')",
                      FastCacheWarning)
        try:
            tmp.unlink()
        except OSError:
            pass
        return False
    for old in _stale(file):
        try:
            old.unlink()
        except OSError:
            pass
    return True
