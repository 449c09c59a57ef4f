"""The 4-lane ALU stage through the stock Qwen3.5 layers, fp32 and bf16, checked against
isa.ALU_SEMANTICS: every op on random and edge operands (different per lane), flags all
zero -> 0, temporaries cleared, and the per-layer budget on the 2B host."""
import functools

import numpy as np
import pytest

from qwengpu import isa
from qwengpu.circuit import CircuitError
from qwengpu.circuit.check import MLP_HOST, draw_words, run_with_text
from qwengpu.circuit.host import QWEN35_2B, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import encode, models_by_dtype
from qwengpu.machine import alu

LANES = 4
PER_OP = {"float32": 20, "bfloat16": 10}       # cases per op (bf16 matmuls are slow on CPU)
SMALL_EDGES = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF]
AMOUNTS = [0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 30, 31, 32, 33, 63, 64, 255, 256, 0x8000_0000, 0xFFFF_FFFF]


def compile_alu(host, at=0, width=900):
    c = Circuit(host, circuit_width(host, width, limit=4096))
    op = {o: c.input(f"op.{o}", 1) for o in alu.ALU_OPS}
    ops = [[c.input(f"x{k}.{lane}", 32) for lane in range(LANES)] for k in range(3)]
    inputs = c.layout.high_water()
    r, end = alu.build_alu(c, at, op, *ops)
    return c, op, ops, r, end, inputs


@functools.lru_cache(maxsize=None)
def compiled():
    return compile_alu(MLP_HOST)


model = models_by_dtype(lambda: compiled()[0])


def operands(op: str, rng, n: int) -> np.ndarray:
    """[3, LANES, n] operands: every pair of SMALL_EDGES spread over the lanes of the first
    cases (op 'none', all flags 0, gets them too), then uniform words with a quarter edge
    values; shift amounts (and BFE positions, lengths) mostly small or clamped; SEL
    conditions often 0."""
    x = np.stack([np.stack([draw_words(rng, n) for _ in range(LANES)]) for _ in range(3)])
    pairs = [(p, q) for p in SMALL_EDGES for q in SMALL_EDGES]
    for k, (p, q) in enumerate(pairs):
        case, lane = divmod(k, LANES)
        x[0, lane, case], x[1, lane, case] = p, q
    def amounts():
        amount = rng.integers(0, 40, (LANES, n)).astype(np.uint64)
        edge = rng.random((LANES, n)) < 0.4
        amount[edge] = rng.choice(np.array(AMOUNTS, dtype=np.uint64), edge.sum())
        return amount
    if op in ("SHL", "SHR", "SRA", "BFE", "BFEU"):
        x[1] = amounts()
    if op in ("BFE", "BFEU"):                     # position b & 0xFF, length cc & 0xFF
        x[2] = amounts()
    if op == "SEL":
        x[0, rng.random((LANES, n)) < 0.4] = 0
    if op in ("DIVR", "DIVQ"):                    # ties a == b pass the test
        tie = rng.random((LANES, n)) < 0.3
        x[1, tie] = x[0, tie]
    if op in ("DIVR4", "DIVQ4"):                  # b near a / j for j = 1, 2, 3 (a digit's edges), or 4a
        j = rng.integers(1, 5, (LANES, n)).astype(np.uint64)
        near = (x[0] // j + rng.integers(0, 2, (LANES, n)).astype(np.uint64)) % np.uint64(2 ** 32)
        x[1] = np.where(rng.random((LANES, n)) < 0.6, near, x[1])
    return x


def want(op: str, x: np.ndarray) -> np.ndarray:
    if op == "none":
        return np.zeros(x.shape[1:], dtype=np.uint64)
    f, arity = isa.ALU_SEMANTICS[op], isa.Op[op].arity
    return np.array([[f(*(int(x[k, lane, i]) for k in range(arity))) for i in range(x.shape[2])]
                     for lane in range(LANES)], dtype=np.uint64)


def batch(per_op, seed):
    """Every op (and 'none': all flags 0) on per_op cases each, as one token sequence."""
    rng = np.random.default_rng(seed)
    names = list(alu.ALU_OPS) + ["none"]
    xs = [operands(o, rng, per_op) for o in names]
    x = np.concatenate(xs, axis=2)
    expected = np.concatenate([want(o, xi) for o, xi in zip(names, xs)], axis=1)
    which = np.repeat(names, per_op)
    return x, expected, which


def run_alu(dtype, x, which, text=0.1):
    c, op, ops, r, end, _ = compiled()
    n = x.shape[2]
    values = {op[o]: (which == o).astype(np.uint64) for o in alu.ALU_OPS}
    for k in range(3):
        for lane in range(LANES):
            values[ops[k][lane]] = x[k, lane]
    hs, emb = run_with_text(model(dtype), c, encode(c, values, n), fraction=text)   # text tokens untouched
    assert len(hs) - 1 == end
    return hs[-1], emb


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_op_exact(dtype):
    c, op, ops, r, end, _ = compiled()
    x, expected, which = batch(PER_OP[dtype], seed=len(dtype))
    out, emb = run_alu(dtype, x, which)
    for lane in range(LANES):
        raw = out[:, list(r[lane].dims)]
        assert np.isin(raw, (0.0, 1.0)).all(), f"{dtype}: lane {lane} result not exactly 0/1"
        got = ((raw > 0.5).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
        bad = np.flatnonzero(got != expected[lane])
        assert not len(bad), [(which[i], hex(int(x[0, lane, i])), hex(int(x[1, lane, i])),
                               hex(int(x[2, lane, i])), hex(int(got[i])), hex(int(expected[lane, i])))
                              for i in bad[:5]]
    # inputs pass through untouched; every temporary is cleared back to exactly 0
    result_dims = {d for f in r for d in f.dims}
    inputs = [d for d in range(c.layout.n, c.layout.total) if d not in result_dims]
    assert np.array_equal(out[:, inputs], emb[:, inputs].astype(np.float32).astype(out.dtype))


def test_known_values():
    """Hand-computed cases, one op per token, lane values differ."""
    cases = [("MUL", [(0xFFFF_FFFF, 0xFFFF_FFFF, 0, 1), (0x1234_5678, 16, 0, 0x2345_6780),
                      (0x10000, 0x10000, 0, 0), (7, 6, 0, 42)]),
             ("SUB", [(0, 1, 0, 0xFFFF_FFFF), (5, 3, 0, 2), (0x8000_0000, 1, 0, 0x7FFF_FFFF), (3, 3, 0, 0)]),
             ("SRA", [(0x8000_0000, 31, 0, 0xFFFF_FFFF), (0x8000_0000, 32, 0, 0xFFFF_FFFF),
                      (0x7FFF_FFFF, 100, 0, 0), (0xF0, 4, 0, 0xF)]),
             ("SHL", [(1, 31, 0, 0x8000_0000), (1, 32, 0, 0), (3, 0, 0, 3), (0xFFFF_FFFF, 1 << 31, 0, 0)]),
             ("SEL", [(0, 1, 2, 2), (0x8000_0000, 1, 2, 1), (1, 5, 6, 5), (0, 0, 9, 9)]),
             ("SETLT", [(0xFFFF_FFFF, 0, 0, 1), (0, 0xFFFF_FFFF, 0, 0), (3, 3, 0, 0), (2, 3, 0, 1)]),
             ("CLZ", [(0, 0, 0, 32), (1, 0, 0, 31), (0x8000_0000, 0, 0, 0), (0xFFFF, 0, 0, 16)]),
             ("BFE", [(0x0000_8000, 8, 8, 0xFFFF_FF80), (0x1234_5678, 28, 8, 1), (0xF0, 4, 0, 0),
                      (0x8000_0000, 40, 3, 0xFFFF_FFFF)]),
             ("BFEU", [(0xABCD, 4, 8, 0xBC), (0xFFFF_FFFF, 0, 256 + 5, 0x1F), (0xFFFF_FFFF, 30, 100, 3),
                       (0x8000_0000, 31, 1, 1)]),
             ("POPC", [(0xFFFF_FFFF, 0, 0, 32), (0, 0, 0, 0), (0x8000_0001, 0, 0, 2), (0xFF, 0, 0, 8)]),
             ("DIVR4", [(7, 3, 0, 1), (9, 3, 0, 0), (0xFFFF_FFFF, 0x8000_0000, 0, 0x7FFF_FFFF), (2, 3, 0, 2)]),
             ("DIVQ4", [(9, 3, 5, 23), (8, 3, 0xFFFF_FFFF, 0xFFFF_FFFE), (0xFFFF_FFFF, 0x5555_5555, 0, 3),
                        (0xFFFF_FFFE, 0x5555_5555, 1, 6)])]
    x = np.zeros((3, LANES, len(cases)), dtype=np.uint64)
    expected = np.zeros((LANES, len(cases)), dtype=np.uint64)
    for i, (_, lanes) in enumerate(cases):
        for lane, (p, q, s, res) in enumerate(lanes):
            x[:, lane, i] = (p, q, s)
            expected[lane, i] = res
    out, _ = run_alu("float32", x, np.array([o for o, _ in cases]), text=0.0)
    r = compiled()[3]
    for lane in range(LANES):
        got = ((out[:, list(r[lane].dims)] > 0.5).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
        assert got.tolist() == expected[lane].tolist()


def test_budget_on_2b_host():
    c, op, ops, r, end, inputs = compile_alu(QWEN35_2B, at=2)
    counts = [layer.neuron_count for layer in c.layers]
    assert end == 2 + alu.ALU_LAYERS and alu.ALU_LAYERS <= 8
    assert counts[:2] == [0, 0] and len(counts) == end             # nothing before `at`
    assert max(counts) <= 5000, counts
    assert c.layout.high_water() - inputs <= 1100
    assert all(f.born <= end - 1 for f in r)
    for f in c.layout.fields:                     # every temporary is released by the last layer
        if f.born >= 0 and f not in r:
            assert f.died < end, f


def test_required_ops_present_and_bad_input_named():
    required = ("MOV ADD SUB MUL AND OR XOR SHL SHR SRA MIN MAX MINU MAXU SETEQ SETNE SETLT SETLE "
                "SETGT SETGE SETLTU SETLEU SETGTU SETGEU SEL").split()
    assert set(required) <= set(alu.ALU_OPS) <= set(isa.ALU_SEMANTICS)
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 900))
    op = {o: c.input(o, 1) for o in alu.ALU_OPS if o != "MUL"}
    ops = [[c.input(f"x{k}{lane}", 32) for lane in range(LANES)] for k in range(3)]
    with pytest.raises(CircuitError, match="MUL"):
        alu.build_alu(c, 0, op, *ops)
    op["MUL"] = c.input("wide", 2)
    with pytest.raises(CircuitError, match=r"flag MUL is bits\[2\]"):
        alu.build_alu(c, 0, op, *ops)


def test_every_op_exact_with_read_noise():
    """In the machine the operands come out of GDN reads: a word reads as (1 - delta) times
    its bits, delta = O(1e-7) (docs/circuit.md). Every op must still round to its exact
    result there (the next token's argmax requantizes it): a unit that amplifies the noise
    (DIVR's gate once did, by 31) fails here. Per operand word delta up to 1e-7."""
    c, op, ops, r, end, _ = compiled()
    x, expected, which = batch(PER_OP["float32"], seed=7)
    values = {op[o]: (which == o).astype(np.uint64) for o in alu.ALU_OPS}
    for k in range(3):
        for lane in range(LANES):
            values[ops[k][lane]] = x[k, lane]
    emb = encode(c, values, len(which))
    rng = np.random.default_rng(3)
    for f in (f for k in range(3) for f in ops[k]):
        emb[:, list(f.dims)] *= 1 - rng.uniform(0, 1e-7, (len(which), 1))
    hs, _ = run_with_text(model("float32"), c, emb, fraction=0.0)
    for lane in range(LANES):
        raw = hs[-1][:, list(r[lane].dims)].astype(np.float64)
        got = ((np.rint(raw) == 1).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
        bad = np.flatnonzero((got != expected[lane]) | (np.abs(raw - np.rint(raw)).max(axis=1) >= 0.5))
        assert not len(bad), [(which[i], hex(int(x[0, lane, i])), hex(int(x[1, lane, i])), hex(int(got[i])),
                               hex(int(expected[lane, i]))) for i in bad[:5]]


def test_radix4_step_noise_no_worse_than_an_addition():
    """DIVR4's result comes out of a second subtraction of a first one's result (u - b or u - 2b,
    u = a - b). Without u requantized in between, the second carry resolution amplified the
    first's noise 1000-fold (0.14 here) and a division came out wrong in the model; with its bits
    resolved in place in r, it amplified the noise the other units leave there (0.014). Same
    operands with the same read noise: DIVR4's worst bit error stays within twice that of SUB,
    ADD or DIVR."""
    c, op, ops, r, end, _ = compiled()
    rng = np.random.default_rng(11)
    b = draw_words(rng, 64) >> np.uint64(2)                 # 3b < 2**32: every digit k reachable
    a = (b * rng.integers(2, 4, 64).astype(np.uint64) + rng.integers(0, 2 ** 20, 64).astype(np.uint64)) % 2 ** 32
    n = len(a)
    errors = {}
    for name in ("SUB", "ADD", "DIVR", "DIVR4"):
        values = {op[o]: np.full(n, int(o == name), dtype=np.uint64) for o in alu.ALU_OPS}
        for lane in range(LANES):
            values[ops[0][lane]], values[ops[1][lane]], values[ops[2][lane]] = a, b, np.zeros(n, np.uint64)
        emb = encode(c, values, n)
        noise = np.random.default_rng(3)
        for f in (f for k in range(3) for f in ops[k]):
            emb[:, list(f.dims)] *= 1 - noise.uniform(0, 1e-7, (n, 1))
        hs, _ = run_with_text(model("float32"), c, emb, fraction=0.0)
        raw = np.stack([hs[-1][:, list(r[lane].dims)] for lane in range(LANES)]).astype(np.float64)
        errors[name] = np.abs(raw - np.rint(raw)).max()
    assert errors["DIVR4"] <= 2 * max(errors["SUB"], errors["ADD"], errors["DIVR"]), errors
