"""The branch unit (plan.py): the terminator of a machine block (JMP, BRC, BAR, EXIT)
with the SIMT stack kept in GDN heads, and which halves of the warp's status it changes.
It reproduces qwengpu/interp.py exactly (`_Machine._terminate`, `_Warp.settle`/`exit_lanes`).

Interface: `build_terminator(c, at, bank_layer, ...)` reads the running warp's Status, the
terminator's flags and TERM fields and each lane's condition, and returns the new Status and the
first layer that may read it; `build_status_change(c, at, new, old)` returns whether each half
(CT1, CT2) changes, 2 layers. The machine wires both at L_BRANCH, L_STACK and L_CHANGE
(execute.build_branch_unit) and passes them on as `StatusUpdate`.

The stack of warp w lives in STACK_DEPTH "pc" heads (depth d: the entry's pc) and
STACK_DEPTH - 1 "meta" heads (depth d >= 1: reconv, rvalid, mask); every row is keyed
by the warp. Depth 0's meta is constant: it never reconverges (reconv -1) and its mask
is the warp's initial mask. A warp's Status (CT tokens) says which depth is the top.

Lazy exits. interp's EXIT removes the exiting lanes from every entry at once
(`exit_lanes`); here EXIT only clears them from `alive`, and every mask read from the
stack is ANDed with alive. The two agree: an entry's eager mask is always its pushed mask
minus the lanes that exited since (exits only ever remove lanes), which is exactly
pushed mask & alive. interp then drops empty entries and pops entries at their reconv
point from the top; here settling takes the highest depth <= the top whose entry is
non-empty and not at its reconv point. That is the same entry: scanning down from the
top, interp discards exactly the entries that are empty (removed) or at reconv
(popped) until it meets one that is neither. Empty entries that interp removes below
the new top are skipped here whenever the scan reaches them (their mask & alive stays
0), so every later pass agrees too. Rows above the top hold stale entries (from earlier
passes or thread blocks) and are never trusted: a pass only reads depths <= the top, and
a push writes both heads of the depths it uses.

Reconv -1. A divergent BRC without a reconv point leaves interp's top entry at pc -1, which
7 bits cannot hold: the entry keeps whatever the reconv field holds. That entry can only
become the top again with live lanes when interp faults ("reached reconvergence point -1"):
the pushed entries above it never pop (their reconv is -1 too), so they only go when all
their lanes exit, and then the entry's own mask (their union) is empty as well.

Exactness of reads. GDN reads are exact in bf16 but 1 - O(1e-7) in fp32, and an MLP
neuron with a kink at a noisy point gives a noisy output. So the layer that reads the
stack first requantizes every read bit with an always-on neuron relu(x + 128) - 128: its
pre-activation 128 * (128 + x) is about 2**14, where the fp32 ulp (2**-9) dwarfs the read
error (128 * 1e-7), so rounding snaps it to the exact integer. Only the next layer's
threshold neurons see the bits. (Checked: without it fp32 outputs are off by ~5e-7.)
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as Mem
from qwengpu.circuit.layer import Z_GATE, Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.status import Status
from qwengpu.machine.words import CT2, PC_BITS, SP_BITS, STACK_DEPTH

LANES = isa.LANES
WARPS = isa.MAX_WARPS
META_BITS = PC_BITS + 1 + LANES          # reconv (7), rvalid (1), mask (4)
REQUANT = 128                            # offset of the requantizing neurons
FAR = 2 * (1 << PC_BITS) + 2             # pushes a pc difference far below zero (|D| <= 127)
TERMS = ("JMP", "BRC", "BAR", "EXIT")


@dataclass(frozen=True)
class StatusUpdate:
    """What the running warp's terminator does to its status."""
    new: Status                 # the status after the terminator and settle
    changed: dict[str, Field]   # "CT1", "CT2": whether that half changes (its token is emitted)
    end: int                    # the first layer whose MLP may read `new`


# ---------------------------------------------------------------------------
# linear terms
# ---------------------------------------------------------------------------
def _value(field: Field) -> dict[int, int]:
    """The field's binary value as linear terms."""
    return {d: 1 << j for j, d in enumerate(field.dims)}


def _gated(c: Circuit, at: int, terms: dict[int, int], bias: int, gate, out: dict[int, float]) -> None:
    """out += relu(sum(terms) + bias + gate): the gate's sum is 0 (open) or <= -1 (shut), so for
    arguments that never exceed 1 a shut gate gives 0. gate None: never open."""
    if gate is not None:
        G.relu(c, at, G.add_terms(terms, gate[0]), bias + gate[1], out)


def _hat(c: Circuit, at: int, terms: dict[int, int], bias: int, out: dict[int, float]) -> None:
    """out += coef * [x == 0] for an integer x = sum(terms) + bias: relu(x+1) - 2 relu(x) + relu(x-1)."""
    for shift, k in ((1, 1), (0, -2), (-1, 1)):
        G.relu(c, at, terms, bias + shift, {d: k * v for d, v in out.items()})


# ---------------------------------------------------------------------------
# terminator
# ---------------------------------------------------------------------------
def build_terminator(c: Circuit, at: int, bank_layer: int, *, wbits: Field, term: dict[str, Field],
                     exits: Field, target: Field, fallthrough: Field, reconv: Field, rvalid: Field,
                     cond: list[Field], old: Status, init_mask: Field) -> tuple[Status, int]:
    """The end of a machine block for the running warp (wbits): JMP, BRC (maybe divergent),
    BAR or EXIT per `term`, as interp's `_terminate` followed by settle. A BRC with `exits` (its
    target -1) exits its taken lanes like EXIT and leaves none taken, so the stack sends the
    others to fallthrough without a push, as interp does. Layers:
    at: taken lanes, alive', phase', wait';  bank_layer - 1: stack writes (data, enables) and
    the depth range;  bank_layer: GDN write + read of the stack, requantize;  + 1: which
    depths are live entries;  + 2: the new top (pc, mask, sp). Returns (Status, end)."""
    if bank_layer < at + 2:
        raise CircuitError(f"terminator: the stack bank layer must be >= at + 2 = {at + 2}; got {bank_layer}")
    if len(cond) != LANES or set(term) != set(TERMS):
        raise CircuitError(f"terminator: needs {LANES} cond fields and term flags {TERMS}")
    alive, phase, wait, taken = _front(c, at, term, exits, old, cond)
    c.clear(exits, at + 1)
    data = _stack_writes(c, bank_layer - 1, term, old, taken, target, fallthrough, reconv, rvalid)
    c.clear(taken, bank_layer - 1)
    pcs, metas = _stack_read(c, bank_layer, wbits, data, alive)
    valid = _live_entries(c, bank_layer + 1, pcs, metas, data["range"], alive)
    c.clear(data["range"], bank_layer + 1)
    pc, mask, sp = _new_top(c, bank_layer + 2, valid, pcs, metas, alive, init_mask, term["BAR"][0], old.mask)
    for f in [valid, *pcs, *metas[1:]]:
        c.clear(f, bank_layer + 2)
    return Status(pc, mask, sp, alive, phase, wait), bank_layer + 3


def _front(c, at, term, exits, old: Status, cond):
    """taken lanes (a BRC's, unless they exit), alive' = alive & ~mask on EXIT and & ~(the lanes
    taken) on a BRC whose taken lanes exit, phase' = phase + BAR, wait' = BAR."""
    brc, ex, bar, brx = term["BRC"][0], term["EXIT"][0], term["BAR"][0], exits[0]
    taken = c.field("ctl.taken", LANES, at)
    for l in range(LANES):      # BRC and not exits and lane active and cond != 0
        G.step(c, at, G.add_terms(G.ones(cond[l]), {old.mask[l]: 33, brc: 33, brx: -33}), 67, {taken[l]: 1})
    alive = c.field("ctl.alive", LANES, at)
    for l in range(LANES):      # alive and not (EXIT and active) and not (exits and active and cond != 0)
        G.relu(c, at, {old.alive[l]: 1}, 0, {alive[l]: 1})
        G.relu(c, at, {old.alive[l]: 1, old.mask[l]: 1, ex: 1}, -2, {alive[l]: -1})
        G.step(c, at, G.add_terms(G.ones(cond[l]), {old.alive[l]: 33, old.mask[l]: 33, brx: 33}), 100,
               {alive[l]: -1})
    phase = c.field("ctl.phase", 2, at)
    p0, p1 = old.phase
    G.relu(c, at, {p0: 1, bar: 1}, 0, {phase[0]: 1})           # p0 xor BAR
    G.relu(c, at, {p0: 1, bar: 1}, -1, {phase[0]: -2, phase[1]: 1})   # carry into p1
    G.relu(c, at, {p1: 1}, 0, {phase[1]: 1})
    G.relu(c, at, {p1: 1, p0: 1, bar: 1}, -2, {phase[1]: -2})
    wait = c.field("ctl.wait", 1, at)
    G.relu(c, at, {bar: 1}, 0, {wait[0]: 1})
    return alive, phase, wait, taken


def _stack_writes(c, at, term, old: Status, taken, target, fallthrough, reconv, rvalid) -> dict:
    """Write data and enables for every stack head, and `range`: which depths d >= 1 are at or
    below the virtual top (sp, or sp + 2 after a divergent BRC).

    nt = active lanes not taken, tk = taken lanes: for a BRC, all-taken is [nt == 0], none-taken
    is [tk == 0], divergent is the rest. Every neuron carries a [sp == e] gate (0 or <= -1)."""
    jmp, brc, bar = term["JMP"][0], term["BRC"][0], term["BAR"][0]
    anyterm = {term[k][0]: 1 for k in TERMS}
    nt = G.add_terms(G.ones(old.mask), G.ones(taken, k=-1))
    tk = G.ones(taken)
    D = STACK_DEPTH
    pc_data = [c.field(f"ctl.pcw{d}", PC_BITS, at) for d in range(D)]
    meta_data = [None] + [c.field(f"ctl.metaw{d}", META_BITS, at) for d in range(1, D)]
    enable = c.field("ctl.we", 2 * D - 1, at)          # pc heads 0..6, then meta heads 1..6
    rng = c.field("ctl.range", D, at)                    # dim 0 unused (depth 0 is always in range)
    for d in range(D):
        top, push1, push2 = (G.is_value(old.sp, e) for e in (d, d - 1, d - 2))
        for gate in (top, push1, push2):
            _gated(c, at, anyterm, 0, gate, {enable[d]: 1})
        for i in range(PC_BITS):
            out = {pc_data[d][i]: 1}
            tg, ft, rc = target[i], fallthrough[i], reconv[i]
            # top entry: JMP/BAR/all-taken -> target, none-taken -> fallthrough, divergent -> reconv
            _gated(c, at, {tg: 1, jmp: 1, bar: 1}, -1, top, out)
            _gated(c, at, G.add_terms({tg: 1, brc: 1}, {k: -v for k, v in nt.items()}), -1, top, out)
            _gated(c, at, G.add_terms({ft: 1, brc: 1}, {k: -v for k, v in tk.items()}), -1, top, out)
            _divergent(c, at, {rc: 1}, -1, brc, nt, tk, top, out)
            _gated(c, at, {ft: 1}, 0, push1, out)          # pushed not-taken entry
            _gated(c, at, {tg: 1}, 0, push2, out)          # pushed taken entry
        if d == 0:
            continue
        for gate in (push1, push2):
            _gated(c, at, anyterm, 0, gate, {enable[D + d - 1]: 1})
        meta = meta_data[d]
        for i in range(PC_BITS):
            for gate in (push1, push2):
                _gated(c, at, {reconv[i]: 1}, 0, gate, {meta[i]: 1})
        for gate in (push1, push2):
            _gated(c, at, {rvalid[0]: 1}, 0, gate, {meta[PC_BITS]: 1})
        for l in range(LANES):
            _gated(c, at, {old.mask[l]: 1, taken[l]: -1}, 0, push1, {meta[PC_BITS + 1 + l]: 1})
            _gated(c, at, {taken[l]: 1}, 0, push2, {meta[PC_BITS + 1 + l]: 1})
        # range: sp >= d, or a divergent BRC pushed depth d
        G.step(c, at, _value(old.sp), d, {rng[d]: 1})
        for gate in (push1, push2):
            _divergent(c, at, {}, 0, brc, nt, tk, gate, {rng[d]: 1})
    return {"pc": pc_data, "meta": meta_data, "enable": enable, "range": rng}


def _divergent(c, at, terms, bias, brc, nt, tk, gate, out) -> None:
    """out += [sum(terms) + bias == 1 and BRC is divergent] (= BRC - all-taken - none-taken) when
    gate is 0 (sum(terms) + bias <= 1)."""
    _gated(c, at, G.add_terms(terms, {brc: 1}), bias, gate, out)
    neg = {d: -v for d, v in out.items()}
    _gated(c, at, G.add_terms(terms, {brc: 1}, {d: -v for d, v in nt.items()}), bias, gate, neg)
    _gated(c, at, G.add_terms(terms, {brc: 1}, {d: -v for d, v in tk.items()}), bias, gate, neg)


def _stack_read(c, at, wbits, data, alive) -> tuple[list[Field], list[Field]]:
    """GDN of layer `at`: write this warp's rows, then read all of them (the read sees the
    writes); the MLP requantizes the reads. Mask columns are gated by alive' in the read
    itself (the output gate silu(z) is 32 or 0 per column), so they come out ANDed with alive."""
    D, en = STACK_DEPTH, data["enable"]
    pc_banks = [Mem.declare_bank(c, at, f"stack.pc{d}", WARPS, PC_BITS) for d in range(D)]
    meta_banks = [Mem.declare_bank(c, at, f"stack.meta{d}", WARPS, META_BITS) for d in range(1, D)]
    raw = []
    for d, bank in enumerate(pc_banks):
        Mem.write(c, bank, wbits, data["pc"][d], _one(en, d))
        raw.append(Mem.read(c, bank, wbits))
    for d, bank in enumerate(meta_banks, start=1):
        Mem.write(c, bank, wbits, data["meta"][d], _one(en, D + d - 1))
        raw.append(Mem.read(c, bank, wbits))
        for l in range(LANES):
            _gate_column(c, bank, PC_BITS + 1 + l, alive[l])
    for f in [*data["pc"], *data["meta"][1:], en]:
        c.clear(f, at)
    exact = []
    for f in raw:
        q = c.field(f.name + ".q", f.width, at)
        for s, d in zip(f.dims, q.dims):
            G.relu(c, at, {s: 1}, REQUANT, {d: 1})
        exact.append(q)
    G.const_one(c, at, {d: -REQUANT for q in exact for d in q.dims})
    for f in raw:
        c.clear(f, at)
    return exact[:D], [None] + exact[D:]          # depth 0 has no meta head


def _one(field: Field, i: int) -> Field:
    """A 1-dim view of dim i of a field (for memory's enable argument)."""
    return Field(f"{field.name}[{i}]", (field[i],), "bits", field.born, field.died)


def _gate_column(c, bank, bit: int, gate_dim: int) -> None:
    """The read of data bit `bit` of bank is multiplied by a 0/1 residual dim (silu(32 x) = 32 x)."""
    lay = c.layer(bank.layer)
    dv = c.host.value_dim
    for (s, lo, hi), h in zip(bank.slices(), bank.replicas[0]):
        if lo <= bit < hi:
            row = lay.z[h * dv + 2 * (bit - lo)]
            row[:] = 0.0
            row[gate_dim] = Z_GATE * Mem.READ


def _live_entries(c, at, pcs, metas, rng, alive) -> Field:
    """valid[d]: depth d is in range, its mask & alive' is non-empty and it is not at its
    reconv point: [in range and mask != 0] - [in range, mask != 0, rvalid, pc == reconv],
    the second term as hats over D = pc - reconv pushed far negative unless the rest holds."""
    valid = c.field("ctl.valid", STACK_DEPTH, at)
    G.step(c, at, G.ones(alive), 1, {valid[0]: 1})          # depth 0 never reconverges
    for d in range(1, STACK_DEPTH):
        pc, meta, inr = pcs[d], metas[d], rng[d]
        reconv, rv, mask = meta.dims[:PC_BITS], meta[PC_BITS], meta.dims[PC_BITS + 1:]
        msum = {m: 1 for m in mask}
        G.step(c, at, G.add_terms(msum, {inr: LANES}), LANES + 1, {valid[d]: 1})
        diff = G.add_terms(_value(pc), {r: -(1 << i) for i, r in enumerate(reconv)})
        at_reconv = G.add_terms(diff, {inr: FAR, rv: FAR})
        _hat(c, at, at_reconv, -2 * FAR, {valid[d]: -1})
        _hat(c, at, G.add_terms(at_reconv, {m: -FAR for m in mask}), -2 * FAR, {valid[d]: 1})
    return valid


def _new_top(c, at, valid, pcs, metas, alive, init_mask, bar, arrived) -> tuple[Field, Field, Field]:
    """The highest valid depth is the new top: its pc, mask & alive', and depth.

    After a BAR the mask is instead the lanes that arrived (the old mask). When those are all
    of the warp's live lanes this is the same mask: every entry below the top holds a superset
    of the top's lanes, and & alive' keeps at most the live ones. When they are not (a
    divergent barrier, a sure deadlock: the other lanes wait on this warp's stack while the
    warp waits at the barrier), the status keeps which lanes arrived, and the scheduler sees
    mask != alive in it (build_scheduler)."""
    pc = c.field("ctl.pc", PC_BITS, at)
    mask = c.field("ctl.mask", LANES, at)
    sp = c.field("ctl.sp", SP_BITS, at)
    for d in range(STACK_DEPTH):
        higher = {valid[e]: -1 for e in range(d + 1, STACK_DEPTH)}
        is_top = G.add_terms({valid[d]: 1}, higher)
        for i in range(PC_BITS):
            G.relu(c, at, G.add_terms(is_top, {pcs[d][i]: 1}), -1, {pc[i]: 1})
        for l in range(LANES):      # (not after a BAR)
            if d == 0:
                G.relu(c, at, G.add_terms(is_top, {init_mask[l]: 1, alive[l]: 1, bar: -1}), -2, {mask[l]: 1})
            else:
                G.relu(c, at, G.add_terms(is_top, {metas[d][PC_BITS + 1 + l]: 1, bar: -1}), -1, {mask[l]: 1})
        if d:
            G.relu(c, at, is_top, 0, {sp[j]: 1 for j in range(SP_BITS) if d >> j & 1})
    for l in range(LANES):          # after a BAR: the lanes that arrived
        G.relu(c, at, {bar: 1, arrived[l]: 1}, -1, {mask[l]: 1})
    return pc, mask, sp


# ---------------------------------------------------------------------------
# CT2's half of the status
# ---------------------------------------------------------------------------
def build_status_change(c: Circuit, at: int, new: Status, old: Status) -> dict[str, Field]:
    """Whether a terminator changes each half of the warp's status: CT1's top of stack (its
    mask, as read ANDed with the new alive, or depth; a new pc alone rides the warp's next EXEC,
    and lanes that exit without a new top leave with CT2), unless no lane of the warp is
    left alive (a dead warp's top of stack is never read again), and CT2's (alive, phase, wait).
    Only a changed half is written by its token. Layer at: the bits that differ, whether any
    lane is alive; at + 1: whether a half changes (the returned flags, by token name)."""
    live = c.field("ctl.live", 1, at)
    G.step(c, at, G.ones(new.alive), 1, {live[0]: 1})
    changed = {}
    for word, names in (("CT1", ("mask", "sp")), ("CT2", CT2.fields)):
        most = sum(getattr(new, n).width for n in names)
        diff = c.field(f"{word.lower()}.diff", 1, at, kind="int", vmax=most)
        for name in names:
            # the mask is read ANDed with alive: a mask bit differs when new != old & new alive
            # (new mask lanes are alive), so lanes that exit change CT2's half alone
            alive = dict(zip(new.mask.dims, new.alive.dims)) if name == "mask" else {}
            for n, o in zip(getattr(new, name).dims, getattr(old, name).dims):
                also = {alive[n]: 1} if alive else {}
                G.relu(c, at, {n: 1, o: -1}, 0, {diff[0]: 1})
                G.relu(c, at, {o: 1, n: -1, **also}, -len(also), {diff[0]: 1})
        changed[word] = c.field(f"{word.lower()}_changed", 1, at + 1)
        if word == "CT1":       # diff >= 1 and live: diff + (most + 1) live >= most + 2
            G.step(c, at + 1, {diff[0]: 1, live[0]: most + 1}, most + 2, {changed[word][0]: 1})
        else:
            G.step(c, at + 1, {diff[0]: 1}, 1, {changed[word][0]: 1})
        c.clear(diff, at + 1)
    c.clear(live, at + 1)
    return changed
