"""The fast path's step in C (native.c), compiled on first use with the system C compiler and
loaded with ctypes: one call runs a token through every circuit layer, where the torch code
issues about 700 small ops. `NativeStep` packs a FastModel's compact matrices once.

The library is cached under build/native/, named by a hash of the source and the flags, so an
edit rebuilds it. When it cannot be built or loaded (NativeError), `FastModel(native=None)`
keeps its torch ops (same formulas, slower) with a warning; `native=True` raises.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from qwengpu.errors import QwenGpuError

SOURCE = Path(__file__).with_name("native.c")
CACHE = Path(__file__).resolve().parents[2] / "build" / "native"
# IEEE float32 as written: no reassociation, no fused multiply-add
FLAGS = ("-O3", "-fno-fast-math", "-ffp-contract=off", "-fPIC", "-shared")
COMPILERS = ("cc", "gcc", "clang", "clang-19")

F32P, I32P = ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_int32)


class NativeError(QwenGpuError):
    """The C step could not be built or loaded."""


class Csr(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_int32), ("cols", ctypes.c_int32), ("indptr", I32P), ("indices", I32P),
                ("values", F32P), ("in_dims", I32P), ("gain", F32P), ("out_dims", I32P)]


class Dense(ctypes.Structure):
    _fields_ = [("first", ctypes.c_int32), ("rows", ctypes.c_int32), ("cols", ctypes.c_int32), ("col", I32P),
                ("w", F32P), ("bias", ctypes.c_int32), ("off_from", ctypes.c_float)]


def _off_column(w: np.ndarray) -> tuple[int, float]:
    """A column of a Dense block (w [cols, rows]) that turns every row off when it alone is
    nonzero: all its weights are negative, so from an input of `off_from` up every row's sum is
    below -89, where silu is exactly -0 (native.c's silu), as it is +0 at an input of 0. A bank
    whose rows all need a set address bit (a paged bank, docs/machine.md step 28) has one: its
    decoder's bias. (-1, 0) when no column does."""
    candidates = [c for c in range(len(w)) if (w[c] < 0).all()]
    if not candidates:
        return -1, 0.0
    c = max(candidates, key=lambda c: float(-w[c].max()))
    return c, float(np.float32(90.0) / -w[c].max())


class Csc(ctypes.Structure):
    _fields_ = [("ptr", I32P), ("rows", I32P), ("values", F32P)]


class Layer(ctypes.Structure):
    _fields_ = [("heads", ctypes.c_int32), ("proj", Csr), ("keys", ctypes.POINTER(Dense)), ("out", Csr), ("norm_w", F32P),
                ("neurons", ctypes.c_int32), ("gate_up", Csr), ("down", Csr), ("gate_by_input", Csc),
                ("down_by_neuron", Csc)]


class Bounds(ctypes.Structure):
    _fields_ = [("blocks", ctypes.c_int32), ("first", I32P), ("ptr", I32P), ("col", I32P), ("hi", F32P), ("lo", F32P)]


class Model(ctypes.Structure):
    _fields_ = [("N", ctypes.c_int32), ("L", ctypes.c_int32), ("dk", ctypes.c_int32), ("dv", ctypes.c_int32),
                ("eps", ctypes.c_float), ("layers", ctypes.POINTER(Layer)), ("head", Csr), ("bounds", Bounds)]


HEAD_BLOCK = 256        # head rows a bound covers: neighbouring GPU tokens differ in a few payload bits


def compiler() -> str | None:
    """The C compiler to use: $CC, else the first of COMPILERS on PATH."""
    for name in ((os.environ["CC"],) if os.environ.get("CC") else COMPILERS):
        if shutil.which(name):
            return name
    return None


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """native.c compiled (once per source and flags) and loaded."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + " ".join(FLAGS).encode()).hexdigest()[:16]
    path = CACHE / f"qgstep-{digest}.so"
    if not path.is_file():
        cc = compiler()
        if cc is None:
            raise NativeError("no C compiler found (set CC, or install gcc or clang) to build the fast path's C step")
        try:
            CACHE.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
                built = Path(tmp) / path.name
                run = subprocess.run([cc, *FLAGS, "-o", str(built), str(SOURCE), "-lm"], capture_output=True, text=True)
                if run.returncode != 0:
                    raise NativeError(f"{cc} failed to build {SOURCE.name}:\n{run.stderr.strip()}")
                os.replace(built, path)              # atomic: a concurrent build sees a whole file
        except OSError as e:
            raise NativeError(f"cannot build the C step in {CACHE}: {e}") from e
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise NativeError(f"cannot load the C step {path} (delete it to rebuild): {e}") from e
    lib.qg_scratch_floats.restype = ctypes.c_int64
    lib.qg_scratch_floats.argtypes = [ctypes.POINTER(Model)]
    lib.qg_hidden.restype = None
    lib.qg_hidden.argtypes = [ctypes.POINTER(Model), ctypes.POINTER(ctypes.c_void_p), ctypes.c_int32,
                              ctypes.c_int32, ctypes.c_void_p, F32P]
    lib.qg_delta_rule.restype = None
    lib.qg_delta_rule.argtypes = [F32P, F32P, F32P, F32P, ctypes.c_float, ctypes.c_int32, ctypes.c_int32, F32P, F32P]
    lib.qg_top2.restype = None
    lib.qg_top2.argtypes = [ctypes.POINTER(Model), ctypes.c_int32, ctypes.c_void_p, F32P, F32P, I32P]
    return lib


class NativeStep:
    """A FastModel's circuit layers and GPU-token head, packed for native.c."""

    def __init__(self, fast):
        self.lib = library()
        self.owned: list = []                       # the arrays the C structs point into
        layers = (Layer * fast.L)(*[self._layer(lay, fast.dk, fast.dv) for lay in fast.layers])
        self.owned.append(layers)
        self.model = Model(fast.N, fast.L, fast.dk, fast.dv, fast.eps, layers, self._csr(fast.head),
                           self._bounds(fast.head.csr))
        self.scratches = [np.zeros(self.lib.qg_scratch_floats(ctypes.byref(self.model)), np.float32)]
        self.pool, self.pool_size = None, 0

    def _array(self, t, dtype, ptr):
        if t is None:
            return ptr()                            # NULL
        a = np.ascontiguousarray(t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t, dtype=dtype)
        self.owned.append(a)
        return a.ctypes.data_as(ptr)

    def _csr(self, s) -> Csr:
        rows, cols = s.csr.shape
        if not torch.isfinite(s.csr.values()).all():
            # native.c skips the terms of zero inputs, which are +-0 only for finite weights
            raise NativeError("a circuit weight is not finite: the C step cannot run this model exactly")
        return Csr(rows, cols, self._array(s.csr.crow_indices(), np.int32, I32P),
                   self._array(s.csr.col_indices(), np.int32, I32P), self._array(s.csr.values(), np.float32, F32P),
                   self._array(s.cols, np.int32, I32P),
                   self._array(None if s.gain is None else s.gain.flatten(), np.float32, F32P),
                   self._array(s.rows, np.int32, I32P))

    def _keys(self, csr: torch.Tensor, heads: int, dk: int, width: int):
        """Per head, its q rows and then its k rows as native.c's Dense blocks when they all read the
        same columns (a bank's address decoder does), else an empty block (the CSR rows are used)."""
        indptr, cols, values = (t.numpy() for t in (csr.crow_indices(), csr.col_indices(), csr.values()))
        blocks = []
        for first in (h * width + part * dk for h in range(heads) for part in range(2)):
            spans = [slice(indptr[r], indptr[r + 1]) for r in range(first, first + dk)]
            shared = {tuple(cols[s]) for s in spans if s.stop > s.start}
            if len(shared) != 1:
                blocks.append(Dense())
                continue
            col = np.array(shared.pop(), np.int32)
            w = np.zeros((len(col), dk), np.float32)
            for r, s in enumerate(spans):
                if s.stop > s.start:
                    w[:, r] = values[s]
            bias, off_from = _off_column(w)
            blocks.append(Dense(first, dk, len(col), self._array(col, np.int32, I32P), self._array(w, np.float32, F32P),
                                bias, off_from))
        array = (Dense * len(blocks))(*blocks)
        self.owned.append(array)
        return array

    def _by_column(self, csr: torch.Tensor, rows: int | None = None) -> Csc:
        """The matrix (its first `rows` rows) by columns, rows ascending in each. native.c's MLP adds
        a row's terms column by column, which is the CSR's own order only if each row's columns
        ascend."""
        indptr, cols, values = (t.numpy() for t in (csr.crow_indices(), csr.col_indices(), csr.values()))
        rows = csr.shape[0] if rows is None else rows
        cols, values = cols[:indptr[rows]], values[:indptr[rows]]
        row = np.repeat(np.arange(rows), np.diff(indptr[:rows + 1]))
        if np.any((np.diff(cols) <= 0) & (row[1:] == row[:-1])):
            raise NativeError("a CSR row's columns are not ascending: the MLP's sums would change order")
        order = np.lexsort((row, cols))
        ptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=csr.shape[1]))])
        return Csc(self._array(ptr, np.int32, I32P), self._array(row[order], np.int32, I32P),
                   self._array(values[order], np.float32, F32P))

    def _bounds(self, csr: torch.Tensor) -> Bounds:
        """The head's rows in blocks of HEAD_BLOCK, each with its columns and their largest and
        smallest weights (0 counts for a row that lacks the column): native.c's Bounds."""
        indptr, cols, values = (t.numpy() for t in (csr.crow_indices(), csr.col_indices(), csr.values()))
        rows, width = csr.shape
        first = list(range(0, rows, HEAD_BLOCK)) + [rows]
        block = np.repeat(np.arange(rows) // HEAD_BLOCK, np.diff(indptr))
        key = block.astype(np.int64) * width + cols                # (block, column), sorted below
        order = np.argsort(key, kind="stable")
        key, v = key[order], values[order].astype(np.float64)
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64)
        top = np.maximum.reduceat(v, starts) if len(key) else v
        bottom = np.minimum.reduceat(v, starts) if len(key) else v
        used = key[starts]
        block, col = used // width, used % width
        count = np.diff(np.r_[starts, len(key)])                   # rows of the block that have the column
        lacking = count < np.minimum((block + 1) * HEAD_BLOCK, rows) - block * HEAD_BLOCK
        top[lacking], bottom[lacking] = np.maximum(top[lacking], 0), np.minimum(bottom[lacking], 0)
        ptr = np.searchsorted(block, np.arange(len(first)))
        return Bounds(len(first) - 1, self._array(first, np.int32, I32P), self._array(ptr, np.int32, I32P),
                      self._array(col, np.int32, I32P), self._array(top, np.float32, F32P),
                      self._array(bottom, np.float32, F32P))

    def _layer(self, lay, dk: int, dv: int) -> Layer:
        g, m = lay.gdn, lay.mlp
        empty = Csr()
        return Layer(len(g.heads) if g else 0, self._csr(g.proj) if g else empty,
                     self._keys(g.proj.csr, len(g.heads), dk, 2 * dk + 2 * dv) if g else None,
                     self._csr(g.out) if g else empty,
                     self._array(g.norm_w if g else None, np.float32, F32P),
                     m.gate_up.csr.shape[0] // 2 if m else 0, self._csr(m.gate_up) if m else empty,
                     self._csr(m.down) if m else empty,
                     self._by_column(m.gate_up.csr, m.gate_up.csr.shape[0] // 2) if m else Csc(),
                     self._by_column(m.down.csr) if m else Csc())

    def hidden(self, states: list[torch.Tensor], x: torch.Tensor, workers: int = 1) -> None:
        """x [B, N] (float32, contiguous) through the circuit layers in place; states[l] [B, heads, dk, dv].
        Up to `workers` threads take disjoint ranges of rows (ctypes releases the GIL)."""
        if not x.is_contiguous() or any(not S.is_contiguous() for S in states):
            raise NativeError("the C step needs contiguous residuals and states")
        ptrs = (ctypes.c_void_p * len(states))(*[S.data_ptr() if S.numel() else None for S in states])
        run = functools.partial(self.lib.qg_hidden, ctypes.byref(self.model), ptrs)
        B = x.shape[0]
        parts = min(workers, B)
        if parts <= 1:
            run(0, B, x.data_ptr(), self._scratch(0))
            return
        bounds = [B * i // parts for i in range(parts + 1)]
        jobs = [self._pool(parts).submit(run, lo, hi, x.data_ptr(), self._scratch(i))
                for i, (lo, hi) in enumerate(zip(bounds, bounds[1:]))]
        for job in jobs:
            job.result()

    def _scratch(self, worker: int):
        while len(self.scratches) <= worker:
            self.scratches.append(np.zeros_like(self.scratches[0]))
        return self.scratches[worker].ctypes.data_as(F32P)

    def _pool(self, workers: int) -> ThreadPoolExecutor:
        if self.pool_size < workers:
            self.pool, self.pool_size = ThreadPoolExecutor(workers, thread_name_prefix="qgstep"), workers
        return self.pool

    def top2(self, h: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """Per row of h [B, N]: the two largest GPU-token logits [B, 2] and their indices [B, 2]."""
        h = h.contiguous()
        top, at = np.zeros((h.shape[0], 2), np.float32), np.zeros((h.shape[0], 2), np.int32)
        self.lib.qg_top2(ctypes.byref(self.model), h.shape[0], h.data_ptr(), self._scratch(0),
                         top.ctypes.data_as(F32P), at.ctypes.data_as(I32P))
        return top, at
