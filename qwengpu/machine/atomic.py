"""The atomic read-modify-write unit: new = isa.ATOM_SEMANTICS[op](old, b, c) for one lane.

Interface: `build_atomic(c, at, op, old, b, cc)` reads one-dim op flags (one per isa.AtomOp
name, at most one is 1) and 32-bit fields `old`, `b`, `cc`; it returns `new` (exactly 0
when every flag is 0) and the first layer whose MLP may read it. The machine serialises
atomics lane by lane, so one lane is enough; `build_atomic_unit(c, tokens, status, results,
memory)` wires it into the machine (the old value at L_ATOM - 1, where the paged global memory's
last read lands, the unit from L_ATOM, its queue at L_NEXT: plan.py) and returns `AtomicResult`.

Two layers, every op writing straight into `new` with its neurons gated by its flag
(relu(y + K f - K), K = the largest y: relu(y) when f = 1, 0 when f = 0):
  L0  byte order of old against b (gadgets.byte_order, unsigned and signed top
      byte): Lambda = sum_j (gt_j - lt_j) 2**j has the sign of b - old, |Lambda| <= 15;
      ADD's nibble digits Z_m = A_m + B_m -> low bits, generate, propagate (gated basis).
  L1  everything else, each output bit a sum of gated neurons:
      ADD       carry resolution (gadgets.resolve's second layer; zero when L0 was gated off);
      EXCH, AND, OR, XOR   from the bits alone;
      MIN(U), MAX(U)       [old_i and pick old] + [b_i and pick b] (as gadgets.minmax);
      CAS       cnt = differing bytes: [c_i and cnt = 0] + old_i - [old_i and cnt = 0];
      INC, DEC  old + 1 and old - 1 bit by bit (bit i flips when the bits below are all 1,
                resp. all 0), each case ANDed with the Lambda test in one threshold: a
                condition E (1 when true, <= 0 when false) and a Lambda test
                [Lambda >= t] combine as [Lambda + 32 E >= 32 + t], since |Lambda| <= 15.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.gadgets import add_terms, span
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import LaneResults
from qwengpu.machine.inputs import TokenInputs
from qwengpu.machine.lsu import Memory
from qwengpu.machine.plan import ATOMIC_LAYERS, L_ATOM, L_NEXT
from qwengpu.machine.status import WarpStatus
from qwengpu.machine.wiring import flag_if, match, view

WORD = 32
NIBBLES = WORD // 4
ATOM_OPS: tuple[str, ...] = tuple(o.name for o in isa.AtomOp if o is not isa.AtomOp.FADD)   # no fp32 yet
BIG = 32          # weight of a 0/1 condition against Lambda (|Lambda| <= 15 < BIG)


# ---------------------------------------------------------------------------
# Lambda tests (gated neurons: gadgets.gated, gadgets.gated_step)
# ---------------------------------------------------------------------------
def _lam_and(lam: dict[int, int], cond: dict[int, int], cond_bias: int, t: int) -> tuple[dict[int, int], int]:
    """Terms and threshold of [Lambda >= t and E == 1], E = sum(cond) + cond_bias an integer <= 1."""
    return add_terms(lam, {d: BIG * k for d, k in cond.items()}), BIG * (1 - cond_bias) + t


# ---------------------------------------------------------------------------
# layer 0: byte order, ADD's digits
# ---------------------------------------------------------------------------
def _add_digits(c: Circuit, at: int, old: Field, b: Field, flag: Field, name: str) -> Field:
    """Per nibble of Z_m = A_m + B_m (<= 30): low bits z, G = [Z >= 16], P = [Z >= 15],
    e_k = [Z mod 2**k == 2**k - 1], all 0 unless flag. The basis runs over Z + K f - K, which
    is <= -1 when the flag is off, where every function is 0."""
    t = c.field(f"{name}.digits", 9 * NIBBLES, at)
    for m in range(NIBBLES):
        fns = [(lambda v, f=f: f(v) if v >= 0 else 0, out) for f, out in G.nibble_functions(t, m)]
        digit = add_terms(G.nibble(old, m), G.nibble(b, m))
        K = span(c, digit, 0)[1]
        G.basis(c, at, add_terms(digit, {flag[0]: K}), -K, fns)
    return t


# ---------------------------------------------------------------------------
# layer 1: every op into `new`
# ---------------------------------------------------------------------------
def _bitwise(c: Circuit, at: int, op: dict[str, Field], old: Field, b: Field, new: Field) -> None:
    for i, d in enumerate(new.dims):
        x, y = old[i], b[i]
        G.gated(c, at, {y: 1}, 0, {d: 1}, op["EXCH"])
        G.gated(c, at, {x: 1, y: 1}, -1, {d: 1}, op["AND"])
        G.gated(c, at, {x: 1, y: 1}, -1, {d: 1}, op["OR"])        # OR = AND + XOR
        for flag in (op["OR"], op["XOR"]):
            G.gated(c, at, {x: 1, y: -1}, 0, {d: 1}, flag)
            G.gated(c, at, {x: -1, y: 1}, 0, {d: 1}, flag)


def _minmax(c: Circuit, at: int, op: dict[str, Field], old: Field, b: Field, new: Field, lam_u, lam_s) -> None:
    """Lambda >= 0 <=> old <= b: MIN takes old there, MAX takes b."""
    for name, pick_old in (("MIN", lam_s), ("MINU", lam_u), ("MAX", G.neg(lam_s)), ("MAXU", G.neg(lam_u))):
        for i, d in enumerate(new.dims):
            G.gated_step(c, at, add_terms(pick_old, {old[i]: 16}), 16, {d: 1}, op[name])
            G.gated_step(c, at, add_terms(G.neg(pick_old), {b[i]: 16}), 17, {d: 1}, op[name])


def _cas(c: Circuit, at: int, flag: Field, old: Field, cc: Field, new: Field, count: dict[int, int]) -> None:
    """old == b (no differing byte) ? cc : old."""
    for i, d in enumerate(new.dims):
        G.gated(c, at, add_terms({cc[i]: 1}, G.neg(count)), 0, {d: 1}, flag)
        G.gated(c, at, {old[i]: 1}, 0, {d: 1}, flag)
        G.gated(c, at, add_terms({old[i]: 1}, G.neg(count)), 0, {d: -1}, flag)


def _inc(c: Circuit, at: int, flag: Field, old: Field, new: Field, lam_u) -> None:
    """old < b (Lambda >= 1) ? old + 1 : 0. Bit i of old + 1 is old_i xor [z = 0], z = zeros below i:
    [old_i, z >= 1] + [not old_i, z = 0] = [old_i] - [old_i, z = 0] + [not old_i, z = 0]."""
    for i, d in enumerate(new.dims):
        below = {old[j]: 1 for j in range(i)}                     # z = i - sum(below)
        for cond, bias, sign in (({old[i]: 1}, 0, 1),
                                 (add_terms({old[i]: 1}, below), -i, -1),
                                 (add_terms({old[i]: -1}, below), 1 - i, 1)):
            G.gated_step(c, at, *_lam_and(lam_u, cond, bias, 1), {d: sign}, flag)


def _dec(c: Circuit, at: int, flag: Field, old: Field, b: Field, new: Field, lam_u) -> None:
    """old == 0 or old > b ? b : old - 1. Bit i of old - 1 is old_i xor [w = 0], w = ones below i;
    with old != 0 and old <= b (Lambda >= 0):
    [old_i] - [old_i, w = 0] + [not old_i, w = 0] - [old == 0] (old == 0 implies the third)."""
    zero = {d: -1 for d in old.dims}                              # old == 0: sum(zero) + 1 == 1
    for i, d in enumerate(new.dims):
        below = {old[j]: -1 for j in range(i)}                    # w == 0: sum(below) == 0
        G.gated_step(c, at, add_terms(G.neg(lam_u), {b[i]: BIG}), BIG + 1, {d: 1}, flag)   # b_i, old > b
        G.gated(c, at, add_terms({b[i]: 1}, zero), 0, {d: 1}, flag)                       # b_i, old == 0
        for cond, bias, sign in (({old[i]: 1}, 0, 1),
                                 (add_terms({old[i]: 1}, below), 0, -1),
                                 (add_terms({old[i]: -1}, below), 1, 1)):
            G.gated_step(c, at, *_lam_and(lam_u, cond, bias, 0), {d: sign}, flag)
        G.gated(c, at, zero, 1, {d: -1}, flag)                                            # old == 0


# ---------------------------------------------------------------------------
# the unit
# ---------------------------------------------------------------------------
def _check(op: dict[str, Field], old: Field, b: Field, cc: Field, name: str) -> None:
    missing = [o for o in ATOM_OPS if o not in op]
    if missing:
        raise CircuitError(f"{name}: no op flag for {', '.join(missing)} (build_atomic needs one per isa.AtomOp)")
    for o in ATOM_OPS:
        if op[o].width != 1:
            raise CircuitError(f"{name}: op flag {o} has {op[o].width} dims; a flag is 1 dim")
    for f in (old, b, cc):
        if f.width != WORD or f.kind != "bits":
            raise CircuitError(f"{name}: operand {f.name} is {f.kind}[{f.width}]; an operand is bits[{WORD}]")


def build_atomic(c: Circuit, at: int, op: dict[str, Field], old: Field, b: Field, cc: Field,
                 name: str = "atom") -> tuple[Field, int]:
    """new = isa.ATOM_SEMANTICS[AtomOp[o]](old, b, cc) for the op o whose flag is 1 (0 when none
    is). Inputs are born before layer `at`; returns (new, end), new readable from layer `end`."""
    _check(op, old, b, cc, name)
    order, lam_u, lam_s = G.byte_order(c, at, old, b, name)
    count = {order[s]: 1 for s in range(8)}            # differing bytes
    digits = _add_digits(c, at, old, b, op["ADD"], name)
    at1 = at + 1
    new = c.field(f"{name}.new", WORD, at1)
    G.resolve_carries(c, at1, digits, new, NIBBLES)     # ADD
    _bitwise(c, at1, op, old, b, new)
    _minmax(c, at1, op, old, b, new, lam_u, lam_s)
    _cas(c, at1, op["CAS"], old, cc, new, count)
    _inc(c, at1, op["INC"], old, new, lam_u)
    _dec(c, at1, op["DEC"], old, b, new, lam_u)
    c.clear(order, at1)
    c.clear(digits, at1)
    return new, at + ATOMIC_LAYERS


# ---------------------------------------------------------------------------
# in the machine
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class AtomicResult:
    """The atomic queue's head, for the passes after an AT: the new value and its lane."""
    new: Field          # the read-modify-write's new value
    lane: Field         # one-hot: the lane it was for


def build_atomic_unit(c: Circuit, tokens: TokenInputs, status: WarpStatus, results: LaneResults,
                      memory: Memory) -> AtomicResult:
    """The machine's atomic stage: on an AT(l) pass, the loaded word (old, L_ATOM - 1) and the
    pending ATOM's op into the unit (from L_ATOM) with the store queue's b and c, its new value
    and lane kept in a queue (L_NEXT) for the VAL/PART/AW passes that follow."""
    k, L, zero = tokens.kind, L_ATOM - 1, tokens.zero
    old = c.field("atom.old", 32, L)
    for l in range(4):                  # on AT passes only one lane's r (the old value) is nonzero
        for i in range(32):
            G.relu(c, L, {results.r[l][i]: 1, k["AT"]: 1}, -1, {old[i]: 1})
    flags = {}
    for i, a in enumerate(isa.AtomOp):
        if a.name not in ATOM_OPS:
            continue
        flags[a.name] = c.field(f"atom.{a.name}", 1, L)
        t, k0 = match(view(status.patom, 2, 6), i)
        flag_if(c, L, [(t, k0, 4), ({k["AT"]: 1}, 0, 1)], {flags[a.name][0]: 1})
    new, end = build_atomic(c, L_ATOM, flags, old, memory.store_b, memory.store_data)
    if end > L_NEXT:
        raise CircuitError(f"the atomic unit ends at L{end}, after the plan's queue at L{L_NEXT}")
    c.clear(old, end)
    for fld in flags.values():
        c.clear(fld, end)
    lane = c.field("atom.lane", 4, L_NEXT)
    q = B.register(c, L_NEXT, "atom", 32)
    ql = B.register(c, L_NEXT, "atom.lane", 4)
    B.write_bits(c, q, zero, B.bits(new), [k["AT"]])
    B.write_bits(c, ql, zero, B.bits(tokens.features["LANE"]), [k["AT"]])
    B.read_into(c, q, zero, new.dims, enable=[k["VAL"], k["PART"]])
    B.read_into(c, ql, zero, lane.dims, enable=[k["VAL"], k["PART"]])
    return AtomicResult(new, lane)
