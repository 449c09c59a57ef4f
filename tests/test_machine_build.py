"""The compiled machine's shape on the 2B host and its vocabulary (no model run here)."""
import numpy as np
import pytest

from qwengpu import isa
from qwengpu.circuit.host import QWEN35_2B
from qwengpu.machine.build import MODEL_OPS, machine_for_host
from qwengpu.machine.fpu import FPU_OPCODES
from qwengpu.machine.tokens import KINDS, Token, Vocab


@pytest.fixture(scope="module")
def machine():
    return machine_for_host(QWEN35_2B)


def test_fits_the_2b_host(machine):
    c = machine.c
    assert len(c.layers) <= 45, f"{len(c.layers)} circuit layers; issue 32's limit is 45 (the reference system's)"
    assert c.layout.width == 2048 and c.layout.total == 4096       # the residual grows by 2048
    assert max(lay.neuron_count for lay in c.layers) <= QWEN35_2B.intermediate
    assert max(lay.heads_used for lay in c.layers) <= QWEN35_2B.gdn_heads
    global_words = sum(b.rows for b in machine.global_banks)
    assert global_words == isa.GLOBAL_WORDS


def test_every_layer_is_silent_and_bf16_exact(machine):
    for lay in machine.c.layers[:3] + machine.c.layers[-3:]:     # weights() enforces both rules
        w = lay.weights()
        assert not np.any(w["mlp.gate_proj.weight"][:, :QWEN35_2B.hidden])


def test_vocabulary_codes_are_distinct_and_the_exact_token_wins():
    v = Vocab()
    m = v.matrix
    assert len({row.tobytes() for row in m}) == len(v)
    # the top layer leaves 2 * f(next) - 1 on the feature dims: the next token scores |f(next)|,
    # every other token at least 1 less
    rng = np.random.default_rng(0)
    for i in rng.choice(len(v), 200, replace=False):
        h = 2 * m[i] - 1
        scores = m @ h
        assert scores[i] == m[i].sum()
        assert np.sort(scores)[-2] <= scores[i] - 1


def test_token_round_trip_and_names():
    v = Vocab(first_id=1000)
    t = Token("EXEC", (2, 17, 3))
    assert v.token(v.id(t)) == t
    assert str(t) == "EXEC w2 B17.3"
    assert len({v.name(t) for t in v.tokens}) == len(v)
    assert {t.kind for t in v.tokens} == set(KINDS)
    with pytest.raises(ValueError, match="not a GPU token"):
        v.token(5)


def test_model_ops_cover_the_isa_except_division_mulhi_and_floats():
    missing = {op.name for op in isa.Op} - MODEL_OPS
    floats = {op.name for op in isa.Op if op.kind is isa.Kind.FLOAT} - set(FPU_OPCODES)  # FDIV, FSQRT: micro-coded
    assert set(FPU_OPCODES) <= MODEL_OPS                                                # the FPU's (fpu.py)
    assert missing <= {"DIV", "DIVU", "REM", "REMU", "MULHI", "MULHIU"} | floats, missing
    assert {f"ATOM.{a.name}" for a in isa.AtomOp} - MODEL_OPS == {"ATOM.FADD"}


@pytest.mark.parametrize("hint, need, reported, widths", [
    (1965, 1965, 1965, [2048]),                       # the hint is right: one build
    (1000, 1965, 1965, [1024, 1280, 1536, 1792, 2048]),  # too low: the next valid widths until one fits
    (3000, 1965, 1965, [3072, 2048]),                 # too high: the high water names the smaller width
    (3000, 1965, 1700, [3072, 1792]),                 # ... which does not fit after all: the wider one stays
])
def test_the_width_search_builds_from_the_hint_to_the_smallest_width_that_fits(monkeypatch, hint, need, reported,
                                                                                 widths):
    """_fitting_width against fake builds that fit exactly when C >= need and report a high water
    of `reported`; the 2B host's valid widths are 256 apart here (n + C = t * 4**m)."""
    from types import SimpleNamespace
    from qwengpu.circuit import ResidualFullError
    from qwengpu.machine import build
    tried = []

    def fake_machine(host, width):
        tried.append(width)
        if width < need:
            raise ResidualFullError(f"residual full at {width}")
        return SimpleNamespace(c=SimpleNamespace(layout=SimpleNamespace(high_water=lambda: reported)))
    monkeypatch.setattr(build, "_machine", fake_machine)
    monkeypatch.setattr(build, "HIGH_WATER_HINT", hint)
    build._fitting_width.cache_clear()
    try:
        width = build._fitting_width(QWEN35_2B)
    finally:
        build._fitting_width.cache_clear()
    assert list(dict.fromkeys(tried)) == widths and width == min(w for w in widths if w >= need)
