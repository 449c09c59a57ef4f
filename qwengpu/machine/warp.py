"""Warp ops across the 4 lanes: SHFL (PTX shfl.sync with the 32-lane `c` encoding) and VOTE.

Both run beside the ALU on the same operands (a, b, c per lane) and the running warp's
active mask. Semantics: isa.shfl_source_lane and interp._shfl / interp._vote.

SHFL, lane l reading lane s != l (s in 0..3, s active), by mode:
    UP    b == l - s  and s >= max_lane
    DOWN  b == s - l  and s <= max_lane
    BFLY  b == l ^ s  and s <= max_lane
    IDX   (l & seg) | (b & ~seg) == s  and s <= max_lane
with b, c, seg the low 5 bits of b, c, c >> 8 and max_lane = (l & seg) | (c & ~seg); any
other case (out of range, inactive source, own lane) reads the lane's own value.
    X    max_lane and IDX's source bits per lane; VOTE predicates
    X+1  [max_lane >= s]; VOTE per-member terms
    X+2  one selector per (lane, source); VOTE: some member yes, some no
    X+3  the selected values; VOTE results
"""
from __future__ import annotations

from qwengpu.circuit import gadgets as G
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.plan import WARP_LAYERS

LANES = 4
SHFL_MODES = ("IDX", "UP", "DOWN", "BFLY")
VOTE_MODES = ("ALL", "ANY", "UNI", "BALLOT", "ACTIVEMASK")


def _low5(f: Field, lo: int = 0) -> list[int]:
    return list(f.dims[lo:lo + 5])


def _select_bits(c, at, l, seg, other, name) -> Field:
    """(l & seg) | (other & ~seg), bitwise over 5 bits (l is a constant)."""
    out = c.field(name, 5, at)
    for i in range(5):
        if l >> i & 1:          # seg_i or other_i
            G.step(c, at, {seg[i]: 1, other[i]: 1}, 1, {out[i]: 1})
        else:                   # other_i and not seg_i
            G.relu(c, at, {other[i]: 1, seg[i]: -1}, 0, {out[i]: 1})
    return out


def build_warp(c: Circuit, at: int, shfl: dict[str, Field], vote: dict[str, Field], a: list[Field],
               b: list[Field], cc: list[Field], mask: Field) -> tuple[list[Field], int]:
    """Per lane the SHFL/VOTE result (0 when no flag is set); returns (results, end)."""
    X = at
    out = [c.field(f"warp.r{l}", 32, X + 3) for l in range(LANES)]     # every write is at X + 3
    _shuffle(c, X, shfl, a, b, cc, mask, out)
    _vote(c, X, vote, a, b, mask, out)
    return out, X + WARP_LAYERS


def _shuffle(c, X, shfl, a, b, cc, mask, out):
    fl = {m: shfl[m][0] for m in SHFL_MODES}
    sel = {}
    for l in range(LANES):
        seg, bv, cv = _low5(cc[l], 8), _low5(b[l]), _low5(cc[l])
        max_lane = _select_bits(c, X, l, seg, cv, f"shfl.max{l}")
        idx = _select_bits(c, X, l, seg, bv, f"shfl.idx{l}")
        value = {d: 1 << i for i, d in enumerate(max_lane.dims)}
        ge = c.field(f"shfl.ge{l}", LANES, X + 1)         # ge[s] = [max_lane >= s]
        for s in range(LANES):
            G.step(c, X + 1, value, s, {ge[s]: 1})
        for s in range(LANES):
            if s == l:
                continue
            fld = sel[l, s] = c.field(f"shfl.sel{l}.{s}", 1, X + 2)
            # s <= max_lane is ge[s]; s >= max_lane is 1 - ge[s + 1]
            cases = []
            if s < l:
                cases.append(("UP", G.equals(bv, l - s), {ge[s + 1]: -1}, 0))
            else:
                cases.append(("DOWN", G.equals(bv, s - l), {ge[s]: 1}, 1))
            cases.append(("BFLY", G.equals(bv, l ^ s), {ge[s]: 1}, 1))
            cases.append(("IDX", G.equals(list(idx.dims), s), {ge[s]: 1}, 1))
            for mode, (terms, const), range_terms, range_need in cases:
                need = 5 + range_need + 2          # the match, the range test, the flag, the mask
                G.relu(c, X + 2, {**terms, **range_terms, fl[mode]: 1, mask[s]: 1},
                       const - need + 1, {fld[0]: 1})
        for f in (max_lane, idx, ge):
            c.clear(f, X + 2)
    any_shfl = {fl[m]: 1 for m in SHFL_MODES}
    for l in range(LANES):
        others = [sel[l, s][0] for s in range(LANES) if s != l]
        for i in range(32):
            for s in range(LANES):
                if s != l:
                    G.relu(c, X + 3, {sel[l, s][0]: 1, a[s][i]: 1}, -1, {out[l][i]: 1})
            G.relu(c, X + 3, {a[l][i]: 1, **any_shfl, **{d: -1 for d in others}}, -1, {out[l][i]: 1})
    for fld in sel.values():
        c.clear(fld, X + 3)


def _vote(c, X, vote, a, b, mask, out):
    fl = {m: vote[m][0] for m in VOTE_MODES}
    pred = c.field("vote.pred", LANES, X)
    for l in range(LANES):
        G.step(c, X, {d: 1 for d in a[l].dims}, 1, {pred[l]: 1})
    for r in range(LANES):
        good = c.field(f"vote.good{r}", LANES, X + 1)       # members voting yes / no
        bad = c.field(f"vote.bad{r}", LANES, X + 1)
        for l in range(LANES):
            G.relu(c, X + 1, {b[r][l]: 1, mask[l]: 1, pred[l]: 1}, -2, {good[l]: 1})
            G.relu(c, X + 1, {b[r][l]: 1, mask[l]: 1, pred[l]: -1}, -1, {bad[l]: 1})
        has = c.field(f"vote.has{r}", 2, X + 2)            # [some yes], [some no]
        G.step(c, X + 2, {d: 1 for d in good.dims}, 1, {has[0]: 1})
        G.step(c, X + 2, {d: 1 for d in bad.dims}, 1, {has[1]: 1})
        c.clear(bad, X + 2)
        # the results, all at X + 3 (where the result field is born): UNI is all yes or all no
        for l in range(LANES):
            G.relu(c, X + 3, {fl["BALLOT"]: 1, good[l]: 1}, -1, {out[r][l]: 1})
            G.relu(c, X + 3, {fl["ACTIVEMASK"]: 1, mask[l]: 1}, -1, {out[r][l]: 1})
        G.relu(c, X + 3, {fl["ALL"]: 1, has[1]: -1}, 0, {out[r][0]: 1})
        G.relu(c, X + 3, {fl["ANY"]: 1, has[0]: 1}, -1, {out[r][0]: 1})
        G.step(c, X + 3, {fl["UNI"]: 2, has[0]: -1, has[1]: -1}, 1, {out[r][0]: 1})
        for f in (good, has):
            c.clear(f, X + 3)
    c.clear(pred, X + 1)
