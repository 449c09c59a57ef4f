"""The next token (docs/machine.md, "Sequences"), decided in the last four circuit layers.

    E1  nonzero parts above k of each lane's value (none above part 0 for a whole word,
        tokens.whole_word: its VAL/VALU(0) carries it all); lanes after the current one that are
        active; the lowest active lane; whether the active lanes' values differ; lane 0's
        value + s * l (VALA); the next thread block's index; whether this block was the last;
        whether another warp of the thread block, and this one after its terminator, has a live lane
    E2  the first such lane, and whether it and the next are a VALP pair; whether no lane of
        the thread block lives on; the VAL(l, k) -> VAL(l, k + 1) and VALU(k) -> VALU(k + 1)
        cases; for each VALA stride, the bits where an active lane is not lane 0's + s * l
    E3  one flag per case: next VAL lane, VALU(0), VALA, VALQ, ST lane, LD lane, EXEC(w, pc, s + 1); at
        a block's end, right after a terminator's EXEC (no writeback tokens) or after its
        pass's last writeback token, CT1 when the top of stack's mask or depth changed (and a
        lane is alive: branch.build_status_change), else CT2 when the warp's alive lanes or phase
        did (but where no lane of the thread block lives on: what CT2's pass would emit), else
        the scheduler's EXEC; CTA(c + 1), the copy-out's first or next COPY, HALT, FAULT (CT2
        after a CT1 when both changed: no flag)
    E4  the output code: every feature dim gets 2 * next - 1, the input's features and the
        anchor are cleared, so the tied head's argmax is exactly the next token

Interface: `build_next_token(c, tokens, registers, decoded, status, results, update, copy,
memory, queues, atomic, schedule, next_pc)` reads what the pass computed (the lanes' results and
mask, the thread block, the terminator's new status, the queues' heads, the atomic's new value,
the scheduler's choice and its pc, a fault) and writes the next token's features; layers L_NEXT
to L_NEXT + 3 (E1-E4), each stage a function returning what the next one reads.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import LaneResults
from qwengpu.machine.atomic import AtomicResult
from qwengpu.machine.branch import StatusUpdate
from qwengpu.machine.copy_unit import CopyOut
from qwengpu.machine.fetch import Decoded
from qwengpu.machine.inputs import Registers, TokenInputs
from qwengpu.machine.lsu import Memory
from qwengpu.machine.plan import L_NEXT
from qwengpu.machine.scheduler import NextPc, Schedule
from qwengpu.machine.status import Status, WarpStatus
from qwengpu.machine.tokens import AP_STRIDES, FEATURES, KINDS, P_BITS, Q_BITS, SLOTS, TOP_BITS
from qwengpu.machine.wiring import all_hold, match
from qwengpu.machine.words import CONFIG, COPY0, CT2, CTA_BITS, GROUP_BITS, PARTS, PC_BITS, WARP_BITS, WORD_BITS
from qwengpu.machine.writeback import Queues

E1, E2, E3, E4 = L_NEXT, L_NEXT + 1, L_NEXT + 2, L_NEXT + 3
LANES = range(isa.LANES)
MORE = range(len(PARTS) - 1)          # parts after which a word may go on


def build_next_token(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded, status: WarpStatus,
                     results: LaneResults, update: StatusUpdate, copy: CopyOut, memory: Memory, queues: Queues,
                     atomic: AtomicResult, schedule: Schedule, next_pc: NextPc) -> None:
    """The emission layers, the circuit's last four: the next token's features."""
    facts = _e1_facts(c, tokens, registers, decoded, status, results, update, memory, queues, atomic)
    cases = _e2_cases(c, tokens, status, results, facts)
    flags = _e3_flags(c, tokens, decoded, status, update, copy, memory, queues, schedule, facts, cases)
    _e4_output_code(c, tokens, status, results, update, copy, queues, atomic, schedule, next_pc, facts, cases, flags)


def _part_is(tokens: TokenInputs, j: int) -> dict[int, int]:
    """k one-hot of a VAL token: SE is the thermometer [j >= k]."""
    se = tokens.features["SE"]
    return {se[j]: 1, **({se[j - 1]: -1} if j else {})}


# ---- E1 ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Facts:
    """E1: what the next token depends on of the lanes' values, the lanes and the thread block."""
    nz: dict[tuple[int, int], Field]    # (lane l, part j): l's value has bits above part j
    whole: list[Field]                  # lane l's value is a whole word (tokens.whole_word)
    cand: Field                         # active lanes after the current one(s)
    six: Field                          # lane l's value is below 2 ** P_BITS (VALP)
    next_cta: Field                     # the next thread block's index
    nzn: list[Field]                    # the atomic's new value has bits above part j
    low: Field                          # the lowest active lane
    mixed: Field                        # bits on which two active lanes' values differ
    ahead: dict[tuple[int, int], Field]  # (stride s, lane l): part 0 of lane 0's value + s * l
    wide: Field                         # active lanes with bits above part 0
    wideq: Field                        # ... above VALQ's Q_BITS
    slow: Field                         # the last EXEC pass's load is written back lane by lane (LD passes)
    others: Field                       # live lanes in the thread block's other warps
    lives: dict[str, Field]             # this warp keeps a live lane: "now" (its terminator), "q" (queued)
    last: Field                         # this thread block is the last


def _e1_facts(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded, status: WarpStatus,
              results: LaneResults, update: StatusUpdate, memory: Memory, queues: Queues,
              atomic: AtomicResult) -> _Facts:
    r, mask = results.r, status.running.mask
    nz, whole, cand, six = _lane_values(c, tokens, r, mask)
    next_cta = c.field("next_cta", CTA_BITS, E1)
    G.basis(c, E1, {d: 1 << i for i, d in enumerate(registers.cta.dims)}, 0,
            [(lambda v, i=i: (v + 1) >> i & 1, {next_cta[i]: 1}) for i in range(CTA_BITS)],
            values=list(range(1 << CTA_BITS)))
    nzn = [c.field(f"nzn.{j}", 1, E1) for j in MORE]           # the atomic's new value, parts above j
    for j, fld in enumerate(nzn):
        G.step(c, E1, {d: 1 for d in atomic.new.dims[PARTS[j].stop:]}, 1, {fld[0]: 1})
    low, mixed = _lowest_and_mixed(c, tokens, r, mask)
    ahead, wide, wideq = _progressions(c, r, mask)
    others, lives, last = _thread_block(c, tokens, registers, decoded, status, update, queues)
    slow = c.field("ld.slow", 1, E1)
    q = B.register(c, E1, "ld.slow", 1)
    B.write_bits(c, q, tokens.zero, B.bits(memory.slow), [tokens.kind["EXEC"], tokens.kind["COPY"]])
    B.read_into(c, q, tokens.zero, slow.dims)
    c.clear(memory.slow, E1)
    return _Facts(nz=nz, whole=whole, cand=cand, six=six, next_cta=next_cta, nzn=nzn, low=low, mixed=mixed,
                  ahead=ahead, wide=wide, wideq=wideq, slow=slow, others=others, lives=lives, last=last)


def _lane_values(c: Circuit, tokens: TokenInputs, r: list[Field], mask: Field):
    """nz, whole, cand, six (_Facts)."""
    f, k = tokens.features, tokens.kind
    nz = {(l, j): c.field(f"nz{l}.{j}", 1, E1) for l in LANES for j in MORE}
    for (l, j), fld in nz.items():
        G.step(c, E1, {d: 1 for d in r[l].dims[PARTS[j].stop:]}, 1, {fld[0]: 1})
    # a whole word (its bits above part 0 all ones, or only its top bits nonzero): its VAL/VALU(0)
    # carries it all, and no part follows
    whole = [c.field(f"whole{l}", 1, E1) for l in LANES]
    for l in LANES:
        high = {d: 1 for d in r[l].dims[PARTS[0].stop:]}
        G.step(c, E1, high, len(high), {whole[l][0]: 1, nz[l, 0][0]: -1})
        top = {d: 1 for d in r[l].dims[WORD_BITS - TOP_BITS:]}
        low = {d: -TOP_BITS for d in r[l].dims[:WORD_BITS - TOP_BITS]}
        G.step(c, E1, {**top, **low}, 1, {whole[l][0]: 1, nz[l, 0][0]: -1})
    cand = c.field("cand", 4, E1)          # active lanes after the current one(s) (all of them on EXEC, COPY)
    for l in LANES:
        after = {f["LANE"][i]: 1 for i in range(l)}      # a VALP names two lanes, l among them maybe
        G.step(c, E1, {**after, k["EXEC"]: 1, k["COPY"]: 1, mask[l]: 3, f["LANE"][l]: -3}, 4, {cand[l]: 1})
    six = c.field("six", isa.LANES, E1)    # each lane's value is below 2 ** P_BITS (VALP)
    for l in LANES:
        G.relu(c, E1, *all_hold({d: -1 for d in r[l].dims[P_BITS:]}, 0, 0), {six[l]: 1})
    return nz, whole, cand, six


def _lowest_and_mixed(c: Circuit, tokens: TokenInputs, r: list[Field], mask: Field):
    """low (EXEC and VALU passes) and mixed (EXEC and COPY passes: 0 means one VALU token per part)."""
    k = tokens.kind
    low = c.field("low", isa.LANES, E1)
    for l in LANES:
        G.relu(c, E1, {mask[l]: 1, **{mask[i]: -1 for i in range(l)}}, 0, {low[l]: 1})
    mixed = c.field("mixed", 1, E1, kind="int", vmax=32 * len(LANES) * (len(LANES) - 1) // 2)
    for l in LANES:
        for l2 in range(l + 1, len(LANES)):
            both = {mask[l]: 1, mask[l2]: 1, k["EXEC"]: 1, k["COPY"]: 1}
            for i in range(32):
                for x, y in ((r[l][i], r[l2][i]), (r[l2][i], r[l][i])):
                    G.relu(c, E1, {**both, x: 1, y: -1}, -3, {mixed[0]: 1})
    return low, mixed


def _progressions(c: Circuit, r: list[Field], mask: Field):
    """EXEC and COPY passes, for VALA: part 0 of lane 0's value plus s * l for each stride s and
    lane l >= 1 (E2 compares it with lane l's), and how many active lanes have bits above part 0
    (wide) and above VALQ's Q_BITS (wideq)."""
    low_bits = PARTS[0]
    lane0 = [r[0][i] for i in low_bits]
    ahead = {(s, l): c.field(f"ap.sum{s}.{l}", len(low_bits), E1) for s in AP_STRIDES for l in LANES[1:]}
    for (s, l), fld in ahead.items():
        G.plus_constant(c, E1, lane0, s * l, fld)
    wide = c.field("ap.wide", 1, E1, kind="int", vmax=len(LANES))
    wideq = c.field("q.wide", 1, E1, kind="int", vmax=len(LANES))
    for l in LANES:
        for fld, lo in ((wide, low_bits.stop), (wideq, Q_BITS)):
            high = {d: 1 for d in r[l].dims[lo:]}
            G.step(c, E1, {**high, mask[l]: len(high)}, 1 + len(high), {fld[0]: 1})
    return ahead, wide, wideq


def _thread_block(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded, status: WarpStatus,
                  update: StatusUpdate, queues: Queues):
    """others, lives and last (_Facts): a live lane in another warp of the thread block (this pass's
    warp: WB); when there is none and this warp's last lanes exit, the block end emits what CT2's
    pass would: CTA, COPY or HALT."""
    others = c.field("others", 1, E1, kind="int", vmax=isa.MAX_WARPS * (isa.MAX_WARPS - 1))
    big = isa.LANES + 1                    # a warp match outweighs every alive count
    for w, st in enumerate(status.warps):
        for cur in (v for v in range(isa.MAX_WARPS) if v != w):
            t, k0 = match(tokens.features["WB"], cur)
            G.step(c, E1, G.add_terms(G.ones(st.alive), {d: big * v for d, v in t.items()}),
                   big * (WARP_BITS - k0) + 1, {others[0]: 1})
    lives = {name: c.field(f"lives.{name}", 1, E1) for name in ("now", "q")}   # the warp keeps a live lane
    for fld, alive in ((lives["now"], update.new.alive), (lives["q"], queues.ct2["ALIVE"])):
        G.step(c, E1, G.ones(alive), 1, {fld[0]: 1})
    last = c.field("last", 1, E1)          # this thread block is the last: cta == ncta - 1
    diff = {**{d: 1 << i for i, d in enumerate(registers.cta.dims)},
            **{decoded.config[b]: -(1 << i) for i, b in enumerate(CONFIG.bits("last_cta"))}}
    G.step(c, E1, diff, 0, {last[0]: 1})
    G.step(c, E1, diff, 1, {last[0]: -1})
    return others, lives, last


# ---- E2 ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Cases:
    """E2: which token may come next."""
    ends_cta: dict[str, Field]          # no lane of the thread block lives on: "now", "q" (as _Facts.lives)
    first: Field                        # the first lane of _Facts.cand
    vn: dict[tuple[int, int], Field]    # (lane l, part j): VAL(l, j) -> VAL(l, j + 1)
    un: list[Field]                     # VALU(j) -> VALU(j + 1)
    split: Field                        # the active lanes' values are not all equal
    off: dict[int, Field]               # stride s: bits on which a lane is not lane 0's + s * l
    pn: list[Field]                     # PART(j) -> PART(j + 1) of the atomic's new value
    small: Field                        # every active lane's value is below 2 ** Q_BITS (VALQ)
    two: Field                          # another active lane after the first
    three: Field                        # ... and one after a pair
    pairable: Field                     # the first lane and the next make a VALP
    first_of: dict[int, Field]          # pair p: its lanes 2p, 2p + 1 make that VALP
    u_more: Field                       # the lowest lane's value goes on after part 0


def _e2_cases(c: Circuit, tokens: TokenInputs, status: WarpStatus, results: LaneResults, facts: _Facts) -> _Cases:
    ends_cta = {name: c.field(f"ends_cta.{name}", 1, E2) for name in facts.lives}
    for name, fld in ends_cta.items():
        G.relu(c, E2, *all_hold({facts.others[0]: -1, facts.lives[name][0]: -1}, 0, 0), {fld[0]: 1})
    c.clear(facts.others, E2)
    for fld in facts.lives.values():
        c.clear(fld, E2)
    first, vn, un = _next_parts(c, tokens, facts)
    split, off = _alike(c, results.r, status.running.mask, facts)
    pn = [c.field(f"pn.{j}", 1, E2) for j in MORE]             # PART(j) -> PART(j + 1) of the new value
    for j, fld in enumerate(pn):
        G.relu(c, E2, {tokens.kind["PART"]: 1, **_part_is(tokens, j), facts.nzn[j][0]: 1}, -2, {fld[0]: 1})
    small, two, three, pairable, first_of, u_more = _packing(c, facts)
    return _Cases(ends_cta=ends_cta, first=first, vn=vn, un=un, split=split, off=off, pn=pn, small=small,
                  two=two, three=three, pairable=pairable, first_of=first_of, u_more=u_more)


def _next_parts(c: Circuit, tokens: TokenInputs, facts: _Facts):
    """first, vn, un (_Cases)."""
    f, k, cand, nz = tokens.features, tokens.kind, facts.cand, facts.nz
    first = c.field("first", 4, E2)
    for l in LANES:
        G.relu(c, E2, {cand[l]: 1, **{cand[i]: -1 for i in range(l)}}, 0, {first[l]: 1})
    vn = {(l, j): c.field(f"vn{l}.{j}", 1, E2) for l in LANES for j in MORE}
    for (l, j), fld in vn.items():
        G.relu(c, E2, {k["VAL"]: 1, f["LANE"][l]: 1, **_part_is(tokens, j), nz[l, j][0]: 1}, -3, {fld[0]: 1})
    un = [c.field(f"un.{j}", 1, E2) for j in MORE]              # VALU(j) -> VALU(j + 1)
    for j, fld in enumerate(un):
        for l in LANES:
            G.relu(c, E2, {k["VALU"]: 1, facts.low[l]: 1, **_part_is(tokens, j), nz[l, j][0]: 1}, -3, {fld[0]: 1})
    return first, vn, un


def _alike(c: Circuit, r: list[Field], mask: Field, facts: _Facts):
    """split, and for each stride the bits on which an active lane l >= 1 is not lane 0's + s * l (off)."""
    split = c.field("split", 1, E2)
    G.step(c, E2, {facts.mixed[0]: 1}, 1, {split[0]: 1})
    c.clear(facts.mixed, E2)
    low_bits = PARTS[0]
    off = {s: c.field(f"ap.off{s}", 1, E2, kind="int", vmax=len(LANES) * len(low_bits)) for s in AP_STRIDES}
    for (s, l), fld in facts.ahead.items():
        for i, d in zip(low_bits, fld.dims):
            for x, y in ((d, r[l][i]), (r[l][i], d)):
                G.relu(c, E2, {x: 1, y: -1, mask[l]: 1}, -1, {off[s][0]: 1})
        c.clear(fld, E2)
    return split, off


def _packing(c: Circuit, facts: _Facts):
    """small, two, three, pairable, first_of, u_more (_Cases): the lanes that one VALQ or VALP
    carries, and whether more lanes or parts follow the first."""
    cand, six = facts.cand, facts.six
    small = c.field("q.small", 1, E2)
    G.const_one(c, E2, {small[0]: 1})
    G.step(c, E2, {facts.wideq[0]: 1}, 1, {small[0]: -1})
    c.clear(facts.wideq, E2)
    # for continuing tokens: another active lane after the first, the lowest lane's value goes on after part 0
    two = c.field("cand.two", 1, E2)
    G.step(c, E2, {cand[l]: 1 for l in LANES}, 2, {two[0]: 1})
    three = c.field("cand.three", 1, E2)   # ... and one after a pair
    G.step(c, E2, {cand[l]: 1 for l in LANES}, 3, {three[0]: 1})
    # lane by lane, the first lane and the next one write one VALP: the first is even (lanes 2p
    # and 2p + 1), the next is active too, and both values are small
    pairable = c.field("pairable", 1, E2)
    first_of = {p: c.field(f"pair{p}", 1, E2) for p in range(isa.LANES // 2)}
    for p, fld in first_of.items():
        lo, hi = 2 * p, 2 * p + 1
        terms = {cand[lo]: 1, cand[hi]: 1, six[lo]: 1, six[hi]: 1, **{cand[i]: -1 for i in range(lo)}}
        G.relu(c, E2, *all_hold(terms, 0, 4), {fld[0]: 1, pairable[0]: 1})
    c.clear(six, E2)
    u_more = c.field("u.more", 1, E2)
    for l in LANES:
        G.relu(c, E2, {facts.low[l]: 1, facts.nz[l, 0][0]: 1}, -1, {u_more[0]: 1})
    return small, two, three, pairable, first_of, u_more


# ---- E3 ----------------------------------------------------------------------------------------
FLAGS = ("vlane", "ulane", "qlane", "st", "at", "atval", "apart", "aw", "ld", "ldval", "nexec", "ct1now", "ct1q",
         "ct2now", "ct2q", "sched", "cta", "copy0", "copy", "halt", "fault")


@dataclass(frozen=True)
class _Flags:
    """E3: one flag per case of the next token."""
    flag: dict[str, Field]              # FLAGS: the token's case
    alane: dict[int, Field]             # stride s: VALA(s)
    follows: int                        # a CT2 follows this CT1 (the control queue's CT2 changed)
    nopend: Field                       # the pass continues: no terminator ran or runs, no copy-out, atomic, fault
    goes_on: dict[str, Field]           # "un", "vn", "vlane": a part follows the one emitted


def _e3_flags(c: Circuit, tokens: TokenInputs, decoded: Decoded, status: WarpStatus, update: StatusUpdate,
              copy: CopyOut, memory: Memory, queues: Queues, schedule: Schedule, facts: _Facts,
              cases: _Cases) -> _Flags:
    flag = {name: c.field(f"next.{name}", 1, E3) for name in FLAGS}
    alane = _value_flags(c, tokens, status, memory, facts, cases, flag)
    ends = _writeback_flags(c, tokens, decoded, status, memory, queues, facts, cases, flag)
    follows = _block_end_flags(c, tokens, decoded, status, update, copy, memory, queues, schedule, facts, cases,
                               flag, ends)
    nopend, goes_on = _continuing(c, tokens, decoded, status, memory, queues, facts, cases)
    return _Flags(flag=flag, alane=alane, follows=follows, nopend=nopend, goes_on=goes_on)


def _value_flags(c: Circuit, tokens: TokenInputs, status: WarpStatus, memory: Memory, facts: _Facts, cases: _Cases,
                 flag: dict[str, Field]) -> dict[int, Field]:
    """After an EXEC with a result: VALU(0) when the lanes' values are equal, else VALA(s) when
    they are lane 0's + s * lane with lane 0 active and all in part 0 (when they differ, at most
    one s fits: returned, a flag per stride), else VALQ when all are small, else VAL(first lane,
    0); the same for a COPY's words. A load that reads lane by lane (slow) emits LD(first lane)."""
    k, fault, anyc = tokens.kind, memory.fault[0], {cases.first[l]: 1 for l in LANES}
    slow = facts.slow[0]
    G.relu(c, E3, {status.has_wb[0]: 1, slow: 1, **anyc, fault: -1}, -2, {flag["ld"][0]: 1})
    alane = {s: c.field(f"next.alane{s}", 1, E3) for s in AP_STRIDES}
    vlane, qlane, split, small = flag["vlane"][0], flag["qlane"][0], cases.split[0], cases.small[0]
    for has in ({status.has_wb[0]: 1, slow: -1}, {k["COPY"]: 1}):
        differ = {**has, **anyc, split: 1, fault: -1}
        G.relu(c, E3, differ, -2, {vlane: 1})
        G.relu(c, E3, {**differ, small: 1}, -3, {qlane: 1, vlane: -1})
        G.relu(c, E3, {**has, **anyc, split: -1, fault: -1}, -1, {flag["ulane"][0]: 1})
        for s, fld in alane.items():
            fits = {**differ, status.running.mask[0]: 1, cases.off[s][0]: -1, facts.wide[0]: -1}
            G.relu(c, E3, fits, -3, {fld[0]: 1})
            G.relu(c, E3, {**fits, small: -1}, -3, {vlane: -1})     # VALA, not VALQ, when both fit
            G.relu(c, E3, {**fits, small: 1}, -4, {qlane: -1})
    for fld in (facts.wide, cases.small, *cases.off.values()):
        c.clear(fld, E3)
    return alane


def _writeback_flags(c: Circuit, tokens: TokenInputs, decoded: Decoded, status: WarpStatus, memory: Memory,
                     queues: Queues, facts: _Facts, cases: _Cases, flag: dict[str, Field]) -> tuple[dict[int, int], ...]:
    """The writeback's next token: the next lane's VAL or VALP, ST, AT, an atomic's VAL, PART and
    AW, the next LD and an LD's VAL; after the copy-out's last word the next COPY or HALT. Returns
    the terms of each token that ends a result (VAL, VALU, VALA, VALQ, VALP)."""
    k, fault, anyc = tokens.kind, memory.fault[0], {cases.first[l]: 1 for l in LANES}
    no_vn, no_c = {fld[0]: -1 for fld in cases.vn.values()}, {d: -1 for d in anyc}
    patom, pdst = status.patom[0], status.patom[1]
    # the pending instruction's "atomic" bit (patom) is the last EXEC pass's: in the copy-out that
    # may be an atomic whose pass also ran the warp's last terminator, so copying overrides it
    copying, copy_last = queues.copying, queues.copy_last
    G.relu(c, E3, {k["VAL"]: 1, **no_vn, **anyc, patom: -1, facts.slow[0]: -1}, -1, {flag["vlane"][0]: 1})
    G.relu(c, E3, {k["VAL"]: 1, **no_vn, **anyc, patom: -1, facts.slow[0]: 1}, -2, {flag["ld"][0]: 1})
    G.relu(c, E3, {k["LD"]: 1}, 0, {flag["ldval"][0]: 1})
    G.relu(c, E3, {k["VALP"]: 1, **anyc}, -1, {flag["vlane"][0]: 1})
    G.relu(c, E3, {k["VAL"]: 1, **no_vn, **anyc, patom: 1, copying: 1}, -3, {flag["vlane"][0]: 1})
    G.relu(c, E3, {k["ST"]: 1, decoded.op["ST"][0]: 1, **anyc, fault: -1}, -1, {flag["st"][0]: 1})
    G.relu(c, E3, {k["AW"]: 1, decoded.op["ATOM"][0]: 1, **anyc, fault: -1}, -1, {flag["at"][0]: 1})
    G.relu(c, E3, {k["AT"]: 1, pdst: 1}, -1, {flag["atval"][0]: 1})
    G.relu(c, E3, {k["AT"]: 1, pdst: -1}, 0, {flag["apart"][0]: 1})
    G.relu(c, E3, {k["VAL"]: 1, patom: 1, **no_vn, copying: -1}, -1, {flag["apart"][0]: 1})
    G.relu(c, E3, {k["PART"]: 1, **{fld[0]: -1 for fld in cases.pn}}, 0, {flag["aw"][0]: 1})
    # a VAL, VALU, VALA, VALQ or VALP that ends a result: the warp's next instruction, or in the copy-out the next
    # group (COPY) or HALT after the last
    ends = ({k["VAL"]: 1, **no_vn, **no_c}, {k["VALU"]: 1, **{fld[0]: -1 for fld in cases.un}}, {k["VALA"]: 1},
            {k["VALQ"]: 1}, {k["VALP"]: 1, **no_c})
    for end in ends:
        G.relu(c, E3, {**end, copying: 1, copy_last: -1}, -1, {flag["copy"][0]: 1})
        G.relu(c, E3, {**end, copying: 1, copy_last: 1}, -2, {flag["halt"][0]: 1})
    return ends


def _block_end_flags(c: Circuit, tokens: TokenInputs, decoded: Decoded, status: WarpStatus, update: StatusUpdate,
                     copy: CopyOut, memory: Memory, queues: Queues, schedule: Schedule, facts: _Facts,
                     cases: _Cases, flag: dict[str, Field], ends: tuple[dict[int, int], ...]) -> int:
    """The warp's next EXEC, or the block's end: when the EXEC pass before ran the terminator too
    (tpend), after its writeback's last token, or now after an EXEC pass without writeback tokens
    that ran it: CT1 when the top of stack's mask or depth changed, else CT2 when the other half
    did, else the scheduler's EXEC (its warp's new pc is in build_warp_pcs's registers); the
    scheduler's EXEC after CTA, CT2 and a CT1 no CT2 follows, or the next CTA, the copy-out or
    HALT. Returns the dim that says a CT2 follows a CT1."""
    k, fault, last, no_c = tokens.kind, memory.fault[0], facts.last[0], {cases.first[l]: -1 for l in LANES}
    patom, copying, pend = status.patom[0], queues.copying, queues.tpend[0]
    any_copy = copy.copy0[COPY0.bits("any").start]

    def thread_block_ends(terms, n):
        """CTA(c + 1), or after the last thread block the copy-out's first COPY or HALT, where
        `terms` sum to n."""
        G.relu(c, E3, {**terms, last: -1}, 1 - n, {flag["cta"][0]: 1})
        G.relu(c, E3, {**terms, last: 1, any_copy: 1}, -1 - n, {flag["copy0"][0]: 1})
        G.relu(c, E3, {**terms, last: 1, any_copy: -1}, -n, {flag["halt"][0]: 1})
    sched_ok = {schedule.found[0]: 1, schedule.deadlock[0]: -1}   # FAULT replaces a deadlock's EXEC
    q1, q2 = queues.changed["CT1"][0], queues.changed["CT2"][0]
    for terms in ({**ends[0], patom: -1, copying: -1}, *({**end, copying: -1} for end in ends[1:]),
                  {k["ST"]: 1, **no_c}, {k["AW"]: 1, **no_c}):
        G.relu(c, E3, {**terms, pend: -1}, 0, {flag["nexec"][0]: 1})
        G.relu(c, E3, {**terms, pend: 1, q1: 1}, -2, {flag["ct1q"][0]: 1})
        G.relu(c, E3, {**terms, pend: 1, q1: -1, q2: 1, cases.ends_cta["q"][0]: -1}, -2, {flag["ct2q"][0]: 1})
        thread_block_ends({**terms, pend: 1, q1: -1, q2: 1, cases.ends_cta["q"][0]: 1}, 4)
        G.relu(c, E3, {**terms, pend: 1, q1: -1, q2: -1, **sched_ok}, -2, {flag["sched"][0]: 1})
    # an EXEC pass without writeback tokens: the warp's next EXEC, or the block's end now when
    # it ran the terminator (CT1, CT2 or the scheduler's EXEC, as above)
    term_flags = {decoded.op[t][0]: 1 for t in ("JMP", "BRC", "BAR", "EXIT")}
    quiet = {status.has_wb[0]: -1, decoded.op["ST"][0]: -1, decoded.op["ATOM"][0]: -1, fault: -1}
    n1, n2 = update.changed["CT1"][0], update.changed["CT2"][0]
    G.relu(c, E3, {k["EXEC"]: 1, **quiet, **{d: -1 for d in term_flags}}, 0, {flag["nexec"][0]: 1})
    G.relu(c, E3, {**quiet, **term_flags, n1: 1}, -1, {flag["ct1now"][0]: 1})
    G.relu(c, E3, {**quiet, **term_flags, n1: -1, n2: 1, cases.ends_cta["now"][0]: -1}, -1, {flag["ct2now"][0]: 1})
    thread_block_ends({**quiet, **term_flags, n1: -1, n2: 1, cases.ends_cta["now"][0]: 1}, 3)
    G.relu(c, E3, {**quiet, **term_flags, n1: -1, n2: -1, **sched_ok}, -1, {flag["sched"][0]: 1})
    # the scheduler's token follows CTA, CT2, and CT1 when no CT2 follows it
    follows = q2
    sched_pass = {k["CT2"]: 1, k["CTA"]: 1, k["CT1"]: 1, follows: -1}
    G.relu(c, E3, {**sched_pass, **sched_ok}, -1, {flag["sched"][0]: 1})
    G.relu(c, E3, {**sched_pass, schedule.done[0]: 1, last: -1}, -1, {flag["cta"][0]: 1})
    # after the last thread block: the copy-out's first group, or HALT when there is none
    G.relu(c, E3, {**sched_pass, schedule.done[0]: 1, last: 1, any_copy: 1}, -3, {flag["copy0"][0]: 1})
    G.relu(c, E3, {**sched_pass, schedule.done[0]: 1, last: 1, any_copy: -1}, -2, {flag["halt"][0]: 1})
    G.relu(c, E3, {k[n]: 1 for n in ("LATCH", "PART", "PUT", "HALT", "FAULT")}, 0, {flag["halt"][0]: 1})
    G.relu(c, E3, {**sched_pass, schedule.deadlock[0]: 1}, -1, {flag["fault"][0]: 1})
    G.relu(c, E3, {fault: 1}, 0, {flag["fault"][0]: 1})
    return follows


def _continuing(c: Circuit, tokens: TokenInputs, decoded: Decoded, status: WarpStatus, memory: Memory,
                queues: Queues, facts: _Facts, cases: _Cases) -> tuple[Field, dict[str, Field]]:
    """Continuing: the token emitted is its pass's last writeback token and the pass does not end
    the block (no terminator ran, or runs: tpend), nor is it the copy-out, an atomic's or a
    fault's (nopend); and whether a part follows the one emitted (goes_on)."""
    term_flags = {decoded.op[t][0]: 1 for t in ("JMP", "BRC", "BAR", "EXIT")}
    nopend = c.field("next.nopend", 1, E3)
    G.relu(c, E3, {**{d: -1 for d in term_flags}, queues.tpend[0]: -1, queues.copying: -1, memory.fault[0]: -1,
                   status.patom[0]: -1, tokens.kind["COPY"]: -1}, 1, {nopend[0]: 1})
    goes_on = {name: c.field(f"next.more.{name}", 1, E3) for name in ("un", "vn", "vlane", "ld")}   # a part follows
    nz = facts.nz
    for j, fld in enumerate(cases.un[:-1]):
        for l in LANES:
            G.relu(c, E3, {fld[0]: 1, facts.low[l]: 1, nz[l, j + 1][0]: 1}, -2, {goes_on["un"][0]: 1})
    for (l, j), fld in cases.vn.items():
        if j + 1 in MORE:
            G.relu(c, E3, {fld[0]: 1, nz[l, j + 1][0]: 1}, -1, {goes_on["vn"][0]: 1})
    for l in LANES:
        G.relu(c, E3, {cases.first[l]: 1, nz[l, 0][0]: 1}, -1, {goes_on["vlane"][0]: 1})
        G.relu(c, E3, {tokens.features["LANE"][l]: 1, tokens.kind["LD"]: 1, nz[l, 0][0]: 1}, -2, {goes_on["ld"][0]: 1})
    return nopend, goes_on


# ---- E4 ----------------------------------------------------------------------------------------
class _Code:
    """E4's neurons: feature (name, i) of the next token, written as 2 * next - 1."""

    def __init__(self, c: Circuit, tokens: TokenInputs, facts: _Facts):
        self.c, self.whole = c, facts.whole
        self.feat = {name: list(tokens.features[name].dims) for name in FEATURES}

    def emit(self, name: str, i: int, terms: dict[int, int], bias: int) -> None:
        """feature (name, i) of the next token is relu(terms + bias) (exactly 0 or 1)."""
        G.relu(self.c, E4, terms, bias, {self.feat[name][i]: 2})

    def kind(self, name: str, terms: dict[int, int], bias: int = 0) -> None:
        self.emit("kind", KINDS.index(name), terms, bias)

    def payload(self, case: int, j: int, sources, but: int | None = None) -> None:
        """SE and SD of a token carrying part j of a word on `case` (and not `but`): the word of
        `sources` (word, gate dims, lane) whose gate dims are all on (at most one is); for part 0
        of a lane's word (VAL, VALU), all of a whole word."""
        when = {case: 1, **({but: -1} if but is not None else {})}
        for jj in range(j, len(PARTS)):
            self.emit("SE", jj, when, 0)
        for word, gate, l in sources:
            for i in PARTS[j]:
                self.emit("SD", i, {**when, **{d: 1 for d in gate}, word[i]: 1}, -1 - len(gate))
            for i in range(PARTS[1].start, WORD_BITS) if j == 0 and l is not None else ():
                self.emit("SD", i, {**when, **{d: 1 for d in gate}, self.whole[l][0]: 1, word[i]: 1}, -2 - len(gate))

    def finish(self) -> None:
        """Every feature dim: - 1 and minus what the pass put there; the anchor leaves the residual."""
        c, lay = self.c, self.c.layout
        every = [d for name in FEATURES for d in self.feat[name]]
        G.const_one(c, E4, {d: -1 for d in every})
        for d in every:
            G.relu(c, E4, {d: 1}, 0, {d: -1})
        G.const_one(c, E4, {d: -lay.anchor_value for d in lay.anchor.dims})


def _e4_output_code(c: Circuit, tokens: TokenInputs, status: WarpStatus, results: LaneResults, update: StatusUpdate,
                    copy: CopyOut, queues: Queues, atomic: AtomicResult, schedule: Schedule, next_pc: NextPc,
                    facts: _Facts, cases: _Cases, flags: _Flags) -> None:
    code = _Code(c, tokens, facts)
    fl = {n: v[0] for n, v in flags.flag.items()}
    _emit_values(code, status, results, facts, cases, flags, fl)
    _emit_memory_tokens(code, tokens, results, atomic, cases, fl)
    _emit_exec(code, tokens, schedule, next_pc, fl)
    _emit_block_end(code, tokens, update, copy, queues, facts, flags, fl)
    _emit_cont(code, cases, flags, fl)
    code.finish()


def _emit_values(code: _Code, status: WarpStatus, results: LaneResults, facts: _Facts, cases: _Cases, flags: _Flags,
                 fl: dict[str, int]) -> None:
    """The writeback's VAL, VALP, VALU, VALA and VALQ tokens."""
    r, kind, emit, payload = results.r, code.kind, code.emit, code.payload
    # VAL(l, k + 1, part k + 1 of lane l)
    for (l, j), fld in cases.vn.items():
        kind("VAL", {fld[0]: 1})
        emit("LANE", l, {fld[0]: 1}, 0)
        payload(fld[0], j + 1, [(r[l], (), l)])
    # VAL(l', 0, part 0 of lane l') for the first active lane l' after the current one, or
    # VALP(p, both values) when that lane and the next are a pair of small values
    vlane, pair, first = fl["vlane"], cases.pairable[0], cases.first
    kind("VAL", {vlane: 1, pair: -1})
    for l in LANES:
        emit("LANE", l, {vlane: 1, first[l]: 1, pair: -1}, -1)
    payload(vlane, 0, [(r[l], (first[l],), l) for l in LANES], but=pair)
    kind("VALP", {vlane: 1, pair: 1}, -1)
    for p, fld in cases.first_of.items():
        for l in (2 * p, 2 * p + 1):
            emit("LANE", l, {vlane: 1, fld[0]: 1}, -1)
            for i in range(P_BITS):
                emit("SD", P_BITS * (l % 2) + i, {vlane: 1, fld[0]: 1, r[l][i]: 1}, -2)
    # VALU(0, part 0) and VALU(k + 1, part k + 1) of the lowest active lane's value
    low = facts.low
    kind("VALU", {fl["ulane"]: 1})
    payload(fl["ulane"], 0, [(r[l], (low[l],), l) for l in LANES])
    for j, fld in enumerate(cases.un):
        kind("VALU", {fld[0]: 1})
        payload(fld[0], j + 1, [(r[l], (low[l],), l) for l in LANES])
    # VALA(s, part 0 of lane 0's value)
    for i, fld in enumerate(flags.alane.values()):
        kind("VALA", {fld[0]: 1})
        emit("STRIDE", i, {fld[0]: 1}, 0)
        payload(fld[0], 0, [(r[0], (), None)])
    # VALQ(each active lane's value in its Q_BITS bits)
    kind("VALQ", {fl["qlane"]: 1})
    for jj in range(len(PARTS)):
        emit("SE", jj, {fl["qlane"]: 1}, 0)
    for l in LANES:
        for i in range(Q_BITS):
            emit("SD", Q_BITS * l + i, {fl["qlane"]: 1, status.running.mask[l]: 1, r[l][i]: 1}, -2)


def _emit_memory_tokens(code: _Code, tokens: TokenInputs, results: LaneResults, atomic: AtomicResult,
                        cases: _Cases, fl: dict[str, int]) -> None:
    """ST(l'), AT(l') and LD(l'); an atomic, lane l: VAL(l, 0, old), then PART(k, new) for each
    part up to the highest nonzero, then AW(l); an LD(l) pass: VAL(l, 0, the word it read)."""
    kind, emit, payload, lane = code.kind, code.emit, code.payload, tokens.features["LANE"]
    for name in ("st", "at", "ld"):
        kind(name.upper(), {fl[name]: 1})
        for l in LANES:
            emit("LANE", l, {fl[name]: 1, cases.first[l]: 1}, -1)
    for name in ("atval", "ldval"):
        kind("VAL", {fl[name]: 1})
        for l in LANES:
            emit("LANE", l, {fl[name]: 1, lane[l]: 1}, -1)
        payload(fl[name], 0, [(results.r[l], (lane[l],), l) for l in LANES])
    kind("PART", {fl["apart"]: 1})
    payload(fl["apart"], 0, [(atomic.new, (), None)])
    for j, fld in enumerate(cases.pn):
        kind("PART", {fld[0]: 1})
        payload(fld[0], j + 1, [(atomic.new, (), None)])
    kind("AW", {fl["aw"]: 1})
    for l in LANES:
        emit("LANE", l, {fl["aw"]: 1, atomic.lane[l]: 1}, -1)


def _emit_exec(code: _Code, tokens: TokenInputs, schedule: Schedule, next_pc: NextPc, fl: dict[str, int]) -> None:
    """EXEC(w, pc, s + 1) of the current warp, or the scheduler's EXEC(w', pc', 0)."""
    f, kind, emit, chosen = tokens.features, code.kind, code.emit, schedule.warp
    kind("EXEC", {fl["nexec"]: 1})
    kind("EXEC", {fl["sched"]: 1})
    wb = f["WB"]
    for w in range(isa.MAX_WARPS):
        terms = {fl["nexec"]: 1, **{wb[i]: (1 if w >> i & 1 else -1) for i in range(WARP_BITS)}}
        emit("W", w, terms, -sum(w >> i & 1 for i in range(WARP_BITS)))
        emit("W", w, {fl["sched"]: 1, chosen[w]: 1}, -1)
    for i in range(WARP_BITS):
        emit("WB", i, {fl["nexec"]: 1, wb[i]: 1}, -1)
        emit("WB", i, {fl["sched"]: 1, **{chosen[w]: 1 for w in range(isa.MAX_WARPS) if w >> i & 1}}, -1)
    for i in range(PC_BITS):
        emit("PC", i, {fl["nexec"]: 1, f["PC"][i]: 1}, -1)
        emit("PC", i, {fl["sched"]: 1, next_pc.pc[i]: 1}, -1)
    for s in range(SLOTS - 1):
        emit("SLOT", s + 1, {fl["nexec"]: 1, f["SLOT"][s]: 1}, -1)
    emit("SLOT", 0, {fl["sched"]: 1}, 0)


def _emit_block_end(code: _Code, tokens: TokenInputs, update: StatusUpdate, copy: CopyOut, queues: Queues,
                    facts: _Facts, flags: _Flags, fl: dict[str, int]) -> None:
    """CT1, CT2, COPY, CTA, HALT and FAULT."""
    kind, emit, ns = code.kind, code.emit, update.new
    # CT1(new pc, mask, stack depth) after a terminator: right after its EXEC pass (from the new
    # status it computed) or after the last token of that pass's writeback (from the control queue);
    # CT2 after CT1 if its half changed
    for case, payload1 in ((fl["ct1now"], {"PC": ns.pc, "MASK": ns.mask, "SP": ns.sp}), (fl["ct1q"], queues.ct1)):
        kind("CT1", {case: 1})
        for name, fld in payload1.items():
            for i, d in enumerate(fld.dims):
                emit(name, i, {case: 1, d: 1}, -1)
    # CT2(alive, phase, wait) after such a CT1, or at a block end whose CT1's half did not change
    for case, payload2, bias in (({tokens.kind["CT1"]: 1, flags.follows: 1}, queues.ct2, -1),
                                 ({fl["ct2q"]: 1}, queues.ct2, 0), ({fl["ct2now"]: 1}, _ct2_payload(ns), 0)):
        kind("CT2", case, bias)
        for name, fld in payload2.items():
            for i, d in enumerate(fld.dims):
                emit(name, i, {**case, d: 1}, bias - 1)
    # COPY(the first group) or COPY(the next group)
    kind("COPY", {fl["copy0"]: 1})
    kind("COPY", {fl["copy"]: 1})
    first_group = [copy.copy0[b] for b in COPY0.bits("group")]
    for i in range(GROUP_BITS):
        emit("CG", i, {fl["copy0"]: 1, first_group[i]: 1}, -1)
        emit("CG", i, {fl["copy"]: 1, queues.copy_next[i]: 1}, -1)
    # CTA(c + 1), HALT, FAULT
    kind("CTA", {fl["cta"]: 1})
    for i in range(CTA_BITS):
        emit("CTA", i, {fl["cta"]: 1, facts.next_cta[i]: 1}, -1)
    kind("HALT", {fl["halt"]: 1})
    kind("FAULT", {fl["fault"]: 1})


def _ct2_payload(status: Status) -> dict[str, Field]:
    return {name.upper(): getattr(status, name) for name in CT2.fields}


def _emit_cont(code: _Code, cases: _Cases, flags: _Flags, fl: dict[str, int]) -> None:
    """CONT: the VAL, VALU, VALA or VALQ emitted is the last writeback token of a pass that continues."""
    vlane, pair, nopend, goes_on = fl["vlane"], cases.pairable[0], flags.nopend[0], flags.goes_on
    no_c = {cases.first[l]: -1 for l in LANES}
    ends_pass = (({fl["ulane"]: 1}, {cases.u_more[0]: -1}), ({fld[0]: 1 for fld in cases.un}, {goes_on["un"][0]: -1}),
                 ({fld[0]: 1 for fld in flags.alane.values()}, {}), ({fl["qlane"]: 1}, {}),
                 ({fld[0]: 1 for fld in cases.vn.values()}, {goes_on["vn"][0]: -1, **no_c}),
                 ({fl["ldval"]: 1}, {goes_on["ld"][0]: -1, **no_c}),
                 ({vlane: 1}, {goes_on["vlane"][0]: -1, cases.two[0]: -1, pair: -1}))
    for case, more_follows in ends_pass:
        code.emit("CONT", 0, {**case, **more_follows, nopend: 1}, -1)
    code.emit("CONT", 0, {vlane: 1, pair: 1, cases.three[0]: -1, nopend: 1}, -2)      # VALP
