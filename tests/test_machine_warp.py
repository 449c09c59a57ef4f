"""SHFL and VOTE across the 4 lanes through the stock model, against isa.shfl_source_lane and
a plain-Python vote (interp's rules), in fp32 and bf16."""
import numpy as np
import pytest

from qwengpu import isa
from qwengpu.circuit.check import MLP_HOST
from qwengpu.circuit.host import circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import build_model, decode, encode, run_prefill
from qwengpu.machine.warp import SHFL_MODES, VOTE_MODES, build_warp

CASES = 160


@pytest.fixture(scope="module")
def unit():
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 900))
    shfl = {m: c.input(f"shfl.{m}", 1) for m in SHFL_MODES}
    vote = {m: c.input(f"vote.{m}", 1) for m in VOTE_MODES}
    a, b, cc = ([c.input(f"{q}{l}", 32) for l in range(4)] for q in "abc")
    mask = c.input("mask", 4)
    out, _ = build_warp(c, 0, shfl, vote, a, b, cc, mask)
    return c, shfl, vote, a, b, cc, mask, out, {d: build_model(c, d) for d in ("float32", "bfloat16")}


def shfl_ref(mode, a, b, c, mask):
    active = {l: a[l] for l in range(4) if mask >> l & 1}
    return [active.get(isa.shfl_source_lane(isa.ShflMode[mode], l, b[l], c[l]), a[l]) for l in range(4)]


def vote_ref(mode, a, b, mask):
    out = []
    for r in range(4):
        members = [l for l in range(4) if (b[r] & mask) >> l & 1]
        votes = [a[l] != 0 for l in members]
        out.append({"ALL": int(all(votes)), "ANY": int(any(votes)), "UNI": int(all(votes) or not any(votes)),
                    "BALLOT": sum(1 << l for l in members if a[l] != 0), "ACTIVEMASK": mask}[mode])
    return out


def draw(rng, mode):
    a = [int(x) for x in rng.choice([0, 1, 7, 0xFFFFFFFF, 0x80000000, int(rng.integers(1 << 32))], 4)]
    b = [int(rng.choice([rng.integers(0, 8), rng.integers(0, 40), rng.integers(1 << 32), 0xF, 0xFFFFFFFF]))
         for _ in range(4)]
    width = int(rng.choice([1, 2, 4, 32]))
    c = [int(rng.choice([(32 - width) << 8 | 0x1F, (32 - width) << 8, 0x1F, int(rng.integers(1 << 16))]))
         for _ in range(4)]
    return a, b, c, int(rng.integers(1, 16))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_shfl_and_vote_match_reference(unit, dtype):
    c, shfl, vote, a, b, cc, mask, out, models = unit
    rng = np.random.default_rng(7)
    modes = [("SHFL", m) for m in SHFL_MODES] + [("VOTE", m) for m in VOTE_MODES] + [(None, None)]
    rows = []
    for i in range(CASES):
        kind, mode = modes[i % len(modes)]
        rows.append((kind, mode, *draw(rng, mode)))
    values = {mask: [r[5] for r in rows]}
    for m in SHFL_MODES:
        values[shfl[m]] = [int(r[0] == "SHFL" and r[1] == m) for r in rows]
    for m in VOTE_MODES:
        values[vote[m]] = [int(r[0] == "VOTE" and r[1] == m) for r in rows]
    for l in range(4):
        values[a[l]] = [r[2][l] for r in rows]
        values[b[l]] = [r[3][l] for r in rows]
        values[cc[l]] = [r[4][l] for r in rows]
    hs, _ = run_prefill(models[dtype], encode(c, values, len(rows))[None])
    final = hs[-1, 0]
    got = [decode(final, out[l]) for l in range(4)]
    for l in range(4):
        assert got[l][1] == 0.0, f"lane {l}: output dims not exactly 0/1 (max error {got[l][1]})"
    for i, (kind, mode, av, bv, cv, m) in enumerate(rows):
        want = (shfl_ref(mode, av, bv, cv, m) if kind == "SHFL" else vote_ref(mode, av, bv, m) if kind == "VOTE"
                else [0, 0, 0, 0])
        assert [int(got[l][0][i]) for l in range(4)] == want, (kind, mode, av, bv, cv, m)
