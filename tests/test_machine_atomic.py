"""The atomic read-modify-write unit through the stock Qwen3.5 layers, fp32 and bf16, against
isa.ATOM_SEMANTICS: every op on edge and random operands, all flags zero -> 0, inputs
untouched and temporaries cleared, hand-computed cases, and the budget on the 2B host."""
import functools
import itertools

import numpy as np
import pytest

from qwengpu import isa
from qwengpu.circuit import CircuitError
from qwengpu.circuit.check import MLP_HOST, draw_words, run_with_text
from qwengpu.circuit.host import QWEN35_2B, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import encode, models_by_dtype
from qwengpu.machine import atomic

OPS = list(atomic.ATOM_OPS)          # the circuit's atomics (not the fp32 add yet: issue 32)
EDGES = [0, 1, 2, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, 0xFFFF_FFFE, 0xFFFF_FFFF]
RANDOM = {"float32": 40, "bfloat16": 8}      # random cases per op on top of the edge pairs


def compile_atomic(host, at=0):
    c = Circuit(host, circuit_width(host, 300))
    op = {o: c.input(f"op.{o}", 1) for o in OPS}
    old, b, cc = (c.input(n, 32) for n in ("old", "b", "c"))
    inputs = c.layout.high_water()
    new, end = atomic.build_atomic(c, at, op, old, b, cc)
    return c, op, (old, b, cc), new, end, inputs


@functools.lru_cache(maxsize=None)
def compiled():
    return compile_atomic(MLP_HOST)


model = models_by_dtype(lambda: compiled()[0])


def operands(rng, n_random: int) -> np.ndarray:
    """[3, n]: every (old, b) pair of EDGES, old == b, b = old +- 1 and random words."""
    pairs = list(itertools.product(EDGES, EDGES))
    x = np.stack([draw_words(rng, len(pairs) + 3 * n_random) for _ in range(3)])
    x[:2, :len(pairs)] = np.array(pairs, dtype=np.uint64).T
    k = len(pairs)
    x[1, k:k + n_random] = x[0, k:k + n_random]                                      # b == old
    near = x[0, k + n_random:k + 2 * n_random] + rng.choice(np.array([1, 0xFFFF_FFFF], dtype=np.uint64), n_random)
    x[1, k + n_random:k + 2 * n_random] = near & np.uint64(0xFFFF_FFFF)               # b = old +- 1
    return x


def want(op: str, x: np.ndarray) -> np.ndarray:
    if op == "none":
        return np.zeros(x.shape[1], dtype=np.uint64)
    f = isa.ATOM_SEMANTICS[isa.AtomOp[op]]
    return np.array([f(*(int(v) for v in x[:, i])) for i in range(x.shape[1])], dtype=np.uint64)


def run_atomic(dtype, x, which, text=0.1):
    """One token per case (op flag from `which`), text tokens interleaved: the last hidden state."""
    c, op, ins, new, end, _ = compiled()
    values = {op[o]: (which == o).astype(np.uint64) for o in OPS}
    values.update(zip(ins, x))
    hs, emb = run_with_text(model(dtype), c, encode(c, values, x.shape[1]), fraction=text)   # text tokens untouched
    assert len(hs) - 1 == end
    return hs[-1], emb


def read_new(out):
    new = compiled()[3]
    raw = out[:, list(new.dims)]
    assert np.isin(raw, (0.0, 1.0)).all(), "result dims not exactly 0/1"
    return ((raw > 0.5).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_op_exact(dtype):
    rng = np.random.default_rng(len(dtype))
    names = OPS + ["none"]
    xs = [operands(rng, RANDOM[dtype]) for _ in names]
    x = np.concatenate(xs, axis=1)
    expected = np.concatenate([want(o, xi) for o, xi in zip(names, xs)])
    which = np.repeat(names, [xi.shape[1] for xi in xs])
    out, emb = run_atomic(dtype, x, which)
    got = read_new(out)
    bad = np.flatnonzero(got != expected)
    assert not len(bad), [(which[i], *(hex(int(v)) for v in x[:, i]), hex(int(got[i])), hex(int(expected[i])))
                          for i in bad[:6]]
    # inputs pass through untouched; every temporary is cleared back to exactly 0
    c, new = compiled()[0], compiled()[3]
    rest = [d for d in range(c.layout.n, c.layout.total) if d not in new.dims]
    assert np.array_equal(out[:, rest], emb[:, rest].astype(np.float32).astype(out.dtype))


def test_known_values():
    """Hand-computed cases (old, b, c, new)."""
    cases = [("ADD", 0xFFFF_FFFF, 1, 0, 0), ("ADD", 0x0FFF_FFFF, 0x0000_0001, 0, 0x1000_0000),
             ("EXCH", 5, 9, 0, 9), ("MIN", 0x8000_0000, 1, 0, 0x8000_0000), ("MINU", 0x8000_0000, 1, 0, 1),
             ("MAX", 0xFFFF_FFFF, 0, 0, 0), ("MAXU", 0xFFFF_FFFF, 0, 0, 0xFFFF_FFFF),
             ("AND", 0xF0F0, 0xFF00, 0, 0xF000), ("OR", 0xF0F0, 0xFF00, 0, 0xFFF0), ("XOR", 0xF0F0, 0xFF00, 0, 0x0FF0),
             ("INC", 3, 10, 0, 4), ("INC", 10, 10, 0, 0), ("INC", 11, 10, 0, 0), ("INC", 0x7FFF_FFFF, 0xFFFF_FFFF, 0,
                                                                                    0x8000_0000),
             ("DEC", 0, 10, 0, 10), ("DEC", 11, 10, 0, 10), ("DEC", 10, 10, 0, 9), ("DEC", 0x8000_0000, 0xFFFF_FFFF, 0,
                                                                                   0x7FFF_FFFF),
             ("DEC", 1, 0, 0, 0), ("CAS", 7, 7, 42, 42), ("CAS", 7, 8, 42, 7), ("CAS", 0, 0x100, 1, 0)]
    x = np.array([[o, b, cc] for _, o, b, cc, _ in cases], dtype=np.uint64).T
    out, _ = run_atomic("float32", x, np.array([k[0] for k in cases]), text=0.0)
    assert read_new(out).tolist() == [k[-1] for k in cases]


def test_wrapping_ops_small_grid():
    """INC, DEC and CAS on every (old, b) of small and top-of-range values, by the PTX rules
    written out here: inc wraps to 0 at old >= b, dec reloads b at old == 0 or old > b."""
    vals = [0, 1, 2, 3, 4, 0xFFFF_FFFD, 0xFFFF_FFFE, 0xFFFF_FFFF]
    grid = [(o, b) for o in vals for b in vals]
    rows, expected = [], []
    for old, b in grid:
        rows += [("INC", old, b), ("DEC", old, b), ("CAS", old, b)]
        expected += [0 if old >= b else old + 1, b if old == 0 or old > b else old - 1,
                     0xC0FFEE if old == b else old]
    x = np.array([[old, b, 0xC0FFEE] for _, old, b in rows], dtype=np.uint64).T
    out, _ = run_atomic("float32", x, np.array([r[0] for r in rows]), text=0.0)
    assert read_new(out).tolist() == expected


def test_budget_on_2b_host():
    c, op, ins, new, end, inputs = compile_atomic(QWEN35_2B, at=2)
    counts = [layer.neuron_count for layer in c.layers]
    assert end == 2 + atomic.ATOMIC_LAYERS and atomic.ATOMIC_LAYERS <= 4
    assert counts[:2] == [0, 0] and len(counts) == end             # nothing before `at`
    assert max(counts) <= 3000, counts
    assert c.layout.high_water() - inputs <= 120                   # result + temporaries
    assert new.born < end
    for f in c.layout.fields:                     # every temporary is released by the last layer
        if f.born >= 0 and f is not new:
            assert f.died < end, f
    assert all(f.died > end for f in (*op.values(), *ins))         # inputs are not cleared


def test_bad_input_named():
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 300))
    op = {o: c.input(o, 1) for o in OPS if o != "CAS"}
    old, b, cc = (c.input(n, 32) for n in ("old", "b", "c"))
    with pytest.raises(CircuitError, match="CAS"):
        atomic.build_atomic(c, 0, op, old, b, cc)
    op["CAS"] = c.input("wide", 2)
    with pytest.raises(CircuitError, match="flag CAS has 2 dims"):
        atomic.build_atomic(c, 0, op, old, b, cc)
    op["CAS"] = c.input("cas", 1)
    with pytest.raises(CircuitError, match="short"):
        atomic.build_atomic(c, 0, op, old, b, c.input("short", 16))
