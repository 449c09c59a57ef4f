"""Compiled layers: silence rules, bf16-exact weights, determinism, and 2B-shaped resources."""
import pytest

from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as Mem
from qwengpu.circuit.check import compile_banks, compile_spec, specs
from qwengpu.circuit.host import QWEN35_2B, circuit_width
from qwengpu.circuit.layer import Circuit


def small_circuit():
    from qwengpu.circuit.check import MLP_HOST
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 448))
    return c, c.input("a", 32), c.input("b", 32)


def test_a_neuron_reading_a_text_dim_is_refused():
    c, a, b = small_circuit()
    c.layer(0).relu({3: 1}, 0, {a[0]: 1})          # dim 3 is a text dim
    with pytest.raises(CircuitError, match="gate_proj.weight reads a text dim"):
        c.weights()


def test_writing_a_text_dim_is_refused():
    c, a, b = small_circuit()
    c.layer(0).relu({a[0]: 1}, 0, {5: 1.0})
    with pytest.raises(CircuitError, match="down_proj.weight writes a text dim"):
        c.weights()


def test_writing_a_field_before_its_layer_is_refused():
    """The allocator may give a field's dims to another field up to the layer it is allocated
    at (VOTE once wrote its result two layers early, over another field, once the layout moved)."""
    c, a, b = small_circuit()
    early = c.field("early", 4, 1)
    later = c.field("later", 4, 3)
    c.layer(1).relu({a[0]: 1}, 0, {early[0]: 1})             # at its layer: fine
    c.layer(3).relu({a[0]: 1}, 0, {later[0]: 1})
    with pytest.raises(CircuitError, match="writes field 'later', allocated from layer 3"):
        c.layer(2).relu({a[0]: 1}, 0, {later[1]: 1})


def test_clear_subtracts_both_signs():
    """A read can leave a 0 bit at -1e-6; clear must not leave that on the dims for the next field."""
    c, a, b = small_circuit()
    f = c.field("f", 1, 0)
    c.clear(f, 1)
    signs = sorted(sum(k for k in terms.values()) for terms, _, _ in c.layer(1).neurons)
    assert signs == [-1, 1]


def test_weights_not_exact_in_bf16_are_refused():
    c, a, b = small_circuit()
    c.layer(0).relu({a[0]: 257}, 0, {b[0]: 1.0})
    with pytest.raises(CircuitError, match="not exact in bf16"):
        c.weights()


def test_neuron_range_beyond_exact_bf16_is_refused():
    c, a, b = small_circuit()
    with pytest.raises(CircuitError, match="exact range"):
        G.relu(c, 0, {d: 16 for d in a.dims}, 0, {b[0]: 1.0})   # reaches 512


def test_compiling_twice_gives_identical_weights():
    spec = next(s for s in specs() if s.name == "ADD")
    assert compile_spec(spec)[0].digest() == compile_spec(spec)[0].digest()
    assert compile_banks()[0].digest() == compile_banks()[0].digest()


def test_silence_structure_holds_for_every_gadget():
    """Every compiled gadget reads and writes circuit dims only (checked in weights())."""
    for spec in specs():
        c, _, _ = compile_spec(spec)
        w = c.weights()
        n = c.layout.n
        for layer in w:
            assert not layer["mlp.gate_proj.weight"][:, :n].any()
            assert not layer["linear_attn.in_proj_z.weight"][:, :n].any()


@pytest.mark.parametrize("spec", specs(), ids=lambda s: s.name)
def test_every_gadget_fits_a_2b_layer(spec):
    c, _, _ = compile_spec(spec, QWEN35_2B)
    if spec.name == "MUL":                        # the widest gadget: full weight build and checks
        c.weights()
    assert all(layer.neuron_count <= QWEN35_2B.intermediate for layer in c.layers)
    assert c.layout.width <= 1024


def test_bank_uses_2b_heads_and_refuses_too_many():
    c = Circuit(QWEN35_2B, 1024)
    addr, data = c.input("addr", 7), c.input("data", 32)
    bank = Mem.declare_bank(c, 0, "global", 128, 32, replicas=16)   # 16 heads x 128 words
    Mem.write(c, bank, addr, data)
    assert c.layers[0].heads_used == 16
    w = c.weights()[0]
    assert w["linear_attn.in_proj_qkv.weight"].shape == (3 * 16 * 128, 3072)
    with pytest.raises(CircuitError, match="needs 1 GDN heads, 0 of 16 left"):
        Mem.declare_bank(c, 0, "more", 8, 8)


def test_bank_refuses_more_rows_than_a_head():
    c = Circuit(QWEN35_2B, 1024)
    with pytest.raises(CircuitError, match="129 rows; a GDN head has 128"):
        Mem.declare_bank(c, 0, "big", 129, 8)


def test_compact_packs_fields_allocated_out_of_birth_order_and_computes_the_same():
    """A field allocated before earlier-born ones takes dims they could have shared; compact() moves
    every field to the lowest dims free over its lifetime and the weights with it."""
    import numpy as np
    from qwengpu.circuit.check import MLP_HOST
    from qwengpu.circuit.model import build_model, decode, encode, run_prefill
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 448), slack=64)
    a = c.input("a", 32)
    late = c.field("late", 32, 2)            # allocated first: early's dims are not free for it
    early, mid = c.field("early", 32, 0), c.field("mid", 32, 1)
    G.copy_bits(c, 0, a, early)
    G.copy_bits(c, 1, early, mid)
    c.clear(early, 1)
    G.copy_bits(c, 2, mid, late)
    c.clear(mid, 2)
    c.layer(3)                               # the residual after layer 2 is layer 3's input
    with pytest.raises(CircuitError, match="compact"):
        c.weights()
    spread = c.layout.high_water()
    c.compact()
    assert c.layout.high_water() == spread - 32 and set(late.dims) == set(early.dims)
    values = np.random.default_rng(0).integers(0, 1 << 32, 64, dtype=np.uint64)
    hs, _ = run_prefill(build_model(c), encode(c, {a: values}, 64)[None])
    got, err = decode(hs[3][0], late)
    assert (got == values).all() and err < 1e-3


def test_compact_keeps_a_field_whose_part_a_view_released():
    """Clearing a view frees those dims of its field only: a later field may take them, and packing
    must tell the two apart on every layer (the machine clears the TERM word's tail early)."""
    import numpy as np
    from qwengpu.circuit.check import MLP_HOST
    from qwengpu.circuit.model import build_model, decode, encode, run_prefill
    from qwengpu.circuit.residual import Field
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 448), slack=64)
    a = c.input("a", 32)
    wide = c.field("wide", 32, 0)
    G.copy_bits(c, 0, a, wide)
    c.clear(Field("wide.top", wide.dims[16:], "bits", 0), 1)
    other = c.field("other", 16, 2)                      # takes wide's released dims
    assert set(other.dims) == set(wide.dims[16:])
    G.copy_bits(c, 2, Field("wide.low", wide.dims[:16], "bits", 0), other)
    c.layer(3)
    spread = c.layout.high_water()
    c.compact()
    assert c.layout.high_water() == spread              # packing frees the released dims too
    values = np.random.default_rng(1).integers(0, 1 << 32, 64, dtype=np.uint64)
    hs, _ = run_prefill(build_model(c), encode(c, {a: values}, 64)[None])
    low = Field("low", wide.dims[:16], "bits", 0)
    assert (decode(hs[3][0], other)[0] == values % (1 << 16)).all()
    assert (decode(hs[3][0], low)[0] == values % (1 << 16)).all()


def test_split_mlp_keeps_reads_before_writes():
    """A layer split into narrower MLPs (a host with fewer neurons a layer): a neuron that reads
    a dim another writes stays in its part or an earlier one, a cycle of such reads stays whole,
    and a cycle wider than the limit is refused (tests/test_machine_fast.py runs a split circuit)."""
    c, a, b = small_circuit()
    lay = c.layer(0)
    x = c.field("x", 2, 0)
    lay.relu({a[0]: 1}, 0, {x[0]: 1})             # writes x0 ...
    lay.relu({x[0]: 1}, 0, {b[1]: 1})             # ... which this reads: it must not come later
    lay.relu({x[1]: 1}, 0, {x[1]: -1})            # a clear: reads and writes x1
    lay.relu({x[1]: -1}, 0, {x[1]: 1})
    lay.relu({a[2]: 1}, 0, {x[1]: 1})             # a new value on x1 after the clear
    parts = lay.split_mlp(2)
    order = [n for p in parts for n in p.neurons]
    assert sorted(map(repr, order)) == sorted(map(repr, lay.neurons)) and all(len(p.neurons) <= 2 for p in parts)

    def part(terms):
        return next(i for i, p in enumerate(parts) for n in p.neurons if n[0] == terms)
    assert part({x[0]: 1}) <= part({a[0]: 1}) and part({x[1]: 1}) <= part({a[2]: 1})
    assert part({x[1]: 1}) == part({x[1]: -1})      # the clear's pair reads each other's write
    with pytest.raises(CircuitError, match="layer 0: 2 MLP neurons read each other's writes"):
        lay.split_mlp(1)
