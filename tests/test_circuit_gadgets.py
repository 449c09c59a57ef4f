"""MLP gadgets through the stock Qwen3.5 layers (transformers), checked against isa.ALU_SEMANTICS.

Inputs are GPU-token embeddings; outputs are read from the residual stream after the
gadget's last layer. Exact means bit-exact: every output dim is exactly 0.0 or 1.0, in
fp32 and in bf16."""
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwengpu import isa
from qwengpu.circuit.check import EDGES, _ideal, compile_spec, interleave_text, run_cases, specs
from qwengpu.circuit.model import build_model, encode, run_decode

DTYPES = ("float32", "bfloat16")
SPECS = {s.name: s for s in specs()}
u32 = st.integers(0, 0xFFFF_FFFF)


@functools.lru_cache(maxsize=None)
def compiled(name):
    return compile_spec(SPECS[name])


@functools.lru_cache(maxsize=None)
def model(name, dtype):
    return build_model(compiled(name)[0], dtype)


def run(name, dtype, cols, text=False, decode_path=False):
    """Outputs (one array per output field) and the worst deviation from the ideal 0/1 values."""
    c, fields, outs = compiled(name)
    cols = [np.asarray(col, dtype=np.uint64) for col in cols]
    x = encode(c, dict(zip(fields, cols)), len(cols[0]))
    is_text = np.zeros(len(x), bool)
    if text:
        x, is_text = interleave_text(x, c.layout.n, np.random.default_rng(1), fraction=0.3)
    hs = run_decode(model(name, dtype), x[None])[0][:, 0] if decode_path else run_cases(model(name, dtype), c, x)
    for layer in range(len(hs)):                  # text tokens pass every layer bit-identical
        assert np.array_equal(hs[layer][is_text], hs[0][is_text])
    gpu = hs[-1][~is_text]
    ref = [SPECS[name].ref(*(int(col[i]) for col in cols)) for i in range(len(cols[0]))]
    got, worst = [], 0.0
    for k, out in enumerate(outs):
        raw = gpu[:, list(out.dims)]
        worst = max(worst, float(np.abs(raw - _ideal(out, [r[k] for r in ref])).max()))
        assert np.isin(raw, (0.0, 1.0)).all(), f"{name}: {dtype} output not exactly 0/1"
        bits = (raw > 0.5).astype(np.uint64)
        got.append((bits << np.arange(out.width, dtype=np.uint64)).sum(axis=1))
    return got, worst


def expect(op, *cols):
    return [isa.ALU_SEMANTICS[op](*(int(c[i]) for c in cols)) for i in range(len(cols[0]))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["ADD", "SUB", "SETLT", "SETGEU", "SETEQ", "MIN", "MAXU", "XOR", "OR"])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(st.tuples(u32, u32), min_size=24, max_size=24))
def test_binary_ops_on_hypothesis_words(op, dtype, pairs):
    a, b = zip(*pairs)
    (got,), worst = run(op, dtype, [a, b], text=True)
    assert got.tolist() == expect(op, a, b)
    assert worst == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=2, deadline=None)
@given(pairs=st.lists(st.tuples(u32, u32), min_size=24, max_size=24))
def test_mul_low_on_hypothesis_words(dtype, pairs):
    a, b = zip(*pairs)
    (got,), worst = run("MUL", dtype, [a, b], text=True)
    assert got.tolist() == expect("MUL", a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mul_exhaustive_nibble_pairs_and_edges(dtype):
    """Every nibble x nibble product in the lowest and in the top nibble, and all edge pairs."""
    n = np.arange(256, dtype=np.uint64)
    edges = np.array(EDGES, dtype=np.uint64)
    a = np.concatenate([n >> np.uint64(4), (n >> np.uint64(4)) << np.uint64(28), np.repeat(edges, len(edges))])
    b = np.concatenate([n & np.uint64(15), n & np.uint64(15), np.tile(edges, len(edges))])
    (got,), _ = run("MUL", dtype, [a, b])
    assert got.tolist() == expect("MUL", a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["SHL", "SHR", "SRA"])
@settings(max_examples=2, deadline=None)
@given(a=u32, extra=st.lists(u32, min_size=4, max_size=4))
def test_shifts_every_amount_and_clamping(op, dtype, a, extra):
    amounts = list(range(64)) + extra + [0xFFFF_FFFF, 0x8000_0000, 0x20]
    values = [a] * len(amounts)
    (got,), _ = run(op, dtype, [values, amounts])
    assert got.tolist() == expect(op, values, amounts)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_sub_exhaustive_nibble_pairs_with_long_carry_chains(dtype):
    """All 16 x 16 nibble pairs, in the lowest and highest nibble, with all-ones above and below."""
    n = np.arange(256)
    lo, hi = (n >> 4).astype(np.uint64), (n & 15).astype(np.uint64)
    a = np.concatenate([lo, lo | np.uint64(0xFFFF_FFF0), lo << np.uint64(28), (lo << np.uint64(28)) | np.uint64(0x0FFF_FFFF)])
    b = np.concatenate([hi, hi, hi << np.uint64(28), hi << np.uint64(28)])
    for op in ("ADD", "SUB"):
        (got,), _ = run(op, dtype, [a, b])
        assert got.tolist() == expect(op, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_with_carry_in_and_out(dtype):
    edges = np.array(EDGES, dtype=np.uint64)
    a, b = np.repeat(edges, len(edges)), np.tile(edges, len(edges))
    for cin in (0, 1):
        (s, co), _ = run("ADDC", dtype, [a, b, np.full(len(a), cin)])
        full = [int(x) + int(y) + cin for x, y in zip(a, b)]
        assert s.tolist() == [f & 0xFFFF_FFFF for f in full]
        assert co.tolist() == [f >> 32 for f in full]
    (d, nb), _ = run("SUBC", dtype, [a, b])
    assert d.tolist() == expect("SUB", a, b)
    assert nb.tolist() == [int(x >= y) for x, y in zip(a, b)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["SETLT", "SETLE", "SETGT", "SETGE", "SETLTU", "SETLEU", "SETGTU", "SETGEU",
                                "SETEQ", "SETNE", "MIN", "MAX", "MINU", "MAXU"])
def test_compare_exhaustive_on_edge_values(op, dtype):
    edges = np.array(EDGES, dtype=np.uint64)
    a, b = np.repeat(edges, len(edges)), np.tile(edges, len(edges))
    (got,), _ = run(op, dtype, [a, b])
    assert got.tolist() == expect(op, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_domain_gadgets_exhaustive(dtype):
    for op, f in (("and", lambda a, b: a & b), ("or", lambda a, b: a | b), ("xor", lambda a, b: a ^ b),
                  ("nand", lambda a, b: 1 - (a & b)), ("nor", lambda a, b: 1 - (a | b)),
                  ("xnor", lambda a, b: 1 - (a ^ b))):
        (got,), _ = run(f"gate.{op}", dtype, [[0, 0, 1, 1], [0, 1, 0, 1]])
        assert got.tolist() == [f(a, b) for a, b in ((0, 0), (0, 1), (1, 0), (1, 1))]
    v = np.arange(32)
    (onehot,), _ = run("onehot.encode", dtype, [v])
    assert onehot.tolist() == [1 << int(i) for i in v]
    (bits,), _ = run("onehot.decode", dtype, [v])
    assert bits.tolist() == v.tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_select_mux_copy_clear(dtype):
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 1 << 32, 40, dtype=np.uint64), rng.integers(0, 1 << 32, 40, dtype=np.uint64)
    cond = np.array([0, 1, 0x8000_0000, 0xFFFF_FFFF] * 10, dtype=np.uint64)
    (got,), _ = run("SEL", dtype, [cond, a, b])
    assert got.tolist() == expect("SEL", cond, a, b)
    k = np.arange(40) % 4
    xs = [rng.integers(0, 1 << 32, 40, dtype=np.uint64) for _ in range(4)]
    (got,), _ = run("mux4", dtype, [k] + xs)
    assert got.tolist() == [int(xs[int(k[i])][i]) for i in range(40)]
    (got,), _ = run("MOV", dtype, [a])
    assert got.tolist() == a.tolist()
    (got,), worst = run("CLEAR", dtype, [a])
    assert got.tolist() == [0] * 40 and worst < 1e-4


def test_decode_path_gives_the_same_results():
    a = [0xFFFF_FFFF, 7, 0x8000_0000, 12345]
    b = [1, 0xFFFF_FFF9, 0x8000_0000, 0xDEAD_BEEF]
    for dtype in DTYPES:
        (got,), _ = run("ADD", dtype, [a, b], decode_path=True)
        assert got.tolist() == expect("ADD", a, b)


def test_gadgets_compose_across_layers_with_field_reuse():
    """s = a + b; wrapped = s <u a; out = wrapped ? a : s; then s's dims are reused."""
    from qwengpu.circuit import gadgets as G
    from qwengpu.circuit.check import MLP_HOST
    from qwengpu.circuit.host import circuit_width
    from qwengpu.circuit.layer import Circuit
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 448))
    a, b = c.input("a", 32), c.input("b", 32)
    s, _ = G.add(c, 0, a, b)
    wrapped = G.compare(c, 2, "SETLTU", s, a)
    out = G.select(c, 4, wrapped, a, s)
    c.clear(s, 4)
    high_water = c.layout.high_water()
    again = G.gate(c, 5, "xor", out, b, name="again")
    assert set(again.dims) & set(s.dims)          # cleared at layer 4, reused by a layer-5 field
    assert c.layout.high_water() == high_water    # ... without taking a fresh dim
    assert "again" in c.layout.layout_map()
    rng = np.random.default_rng(5)
    av, bv = rng.integers(0, 1 << 32, 300, dtype=np.uint64), rng.integers(0, 1 << 32, 300, dtype=np.uint64)
    x = encode(c, {a: av, b: bv}, 300)
    for dtype in DTYPES:
        hs = run_cases(build_model(c, dtype), c, x)
        total = [(int(p) + int(q)) & 0xFFFF_FFFF for p, q in zip(av, bv)]
        want_out = [int(p) if t < int(p) else t for p, t in zip(av, total)]
        raw = hs[-1][:, list(again.dims)]
        assert np.isin(raw, (0.0, 1.0)).all()
        got = ((raw > 0.5).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
        assert got.tolist() == [o ^ int(q) for o, q in zip(want_out, bv)]


@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_add_compiled_for_the_2b_host_runs_exactly_at_full_width(dtype):
    """The 2B shape: N = 2048 + 1024 = 3072 (three anchors), 16 GDN heads of 128 x 128."""
    from qwengpu.circuit.host import QWEN35_2B
    c, (a, b), (s,) = compile_spec(SPECS["ADD"], QWEN35_2B)
    assert c.layout.total == 3072 and c.layout.anchor.width == 3
    rng = np.random.default_rng(11)
    av, bv = rng.integers(0, 1 << 32, 64, dtype=np.uint64), rng.integers(0, 1 << 32, 64, dtype=np.uint64)
    x = encode(c, {a: av, b: bv}, 64)
    x, is_text = interleave_text(x, c.layout.n, rng, fraction=0.25)
    hs = run_cases(build_model(c, dtype), c, x)
    assert all(np.array_equal(hs[k][is_text], hs[0][is_text]) for k in range(len(hs)))
    raw = hs[-1][~is_text][:, list(s.dims)]
    assert np.isin(raw, (0.0, 1.0)).all()
    got = ((raw > 0.5).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
    assert got.tolist() == expect("ADD", av, bv)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["plus1.gated", "plus3.gated", "plus24.gated", "plus31.gated", "plus24"])
def test_plus_constant_on_every_12_bit_value(name, dtype):
    """(a + k) mod 2 ** 12 on all 4096 values (and, gated, 0 whenever the gate is shut), against
    Python's arithmetic."""
    k = int(name.split(".")[0][4:])
    a = np.arange(4096, dtype=np.uint64)
    if name.endswith("gated"):
        a, g = np.concatenate([a, a]), np.repeat(np.array([1, 0], np.uint64), 4096)
        (got,), worst = run(name, dtype, [a, g], text=True)
        assert got.tolist() == [(int(x) + k) % 4096 * int(y) for x, y in zip(a, g)]
    else:
        (got,), worst = run(name, dtype, [a], text=True)
        assert got.tolist() == [(int(x) + k) % 4096 for x in a]
    assert worst == 0.0
