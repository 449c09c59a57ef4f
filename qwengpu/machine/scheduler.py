"""The warp scheduler (SCHEDULER_LAYERS from L_SCHED; the round-robin turn at L_STATUS, execute.py):
the next warp to run, or that the thread block is done, or a deadlock at a barrier; and each
warp's next pc (at L_NEXT), which the scheduler's EXEC carries. It reproduces qwengpu/interp.py
exactly (`run_block`'s barrier release and `_next_runnable`).

Interface: `build_scheduler(c, at, statuses, nwarps, turn)` reads the 4 warps' Status and
one-hot nwarps and turn, and returns ({"found", "warp", "deadlock", "done"}, end) (the machine
passes it on as `Schedule`: execute.build_schedule). `build_warp_pcs(c, tokens, decoded, update,
schedule)` keeps each warp's next pc, written by its terminator's pass (the branch unit's
`StatusUpdate`), and returns the chosen warp's as `NextPc`; layers L_NEXT - 1 and L_NEXT.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as Mem
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.branch import StatusUpdate
from qwengpu.machine.fetch import TERMS, Decoded
from qwengpu.machine.inputs import TokenInputs
from qwengpu.machine.plan import L_NEXT, SCHEDULER_LAYERS
from qwengpu.machine.status import Status
from qwengpu.machine.words import PC_BITS, PHASES

LANES = isa.LANES
WARPS = isa.MAX_WARPS


@dataclass(frozen=True)
class Schedule:
    """The scheduler's choice (build_scheduler's fields)."""
    found: Field        # some warp is runnable
    warp: Field         # one-hot: the warp chosen
    deadlock: Field     # a deadlock at a barrier (FAULT)
    done: Field         # no warp of the thread block is live
    end: int            # the first layer whose MLP may read them


@dataclass(frozen=True)
class NextPc:
    """The chosen warp's pc, for the scheduler's EXEC."""
    pc: Field


def build_scheduler(c: Circuit, at: int, statuses: list[Status], nwarps: Field,
                    turn: Field) -> tuple[dict[str, Field], int]:
    """Pick the next warp like interp's `_next_runnable`: the first runnable warp from `turn` on.

    runnable(i) = i < nwarps, alive_i != 0, and (wait_i == 0 or released_i), where released_i:
    every live warp j has phase_j in {phase_i, phase_i + 1} (mod 4).

    Why this is interp's barrier release (warps whose live lanes reach each barrier
    together): phase counts a warp's barriers. interp releases the waiting warps when every
    live thread has arrived, i.e. every live warp has reached the barrier numbered phase_i,
    after which no warp can pass the next barrier before all have reached it again; so live
    phases never spread by more than one, and mod 4 tells p - 1, p and p + 1 apart. A warp
    waiting at barrier p (its phase) is released iff no live warp is still at p - 1; live warps
    already at p + 1 were released from p and ran on. A warp that exits leaves the condition,
    like interp's `live -= ...`. The bit `wait` stays 1 until the warp runs again, which is
    exactly when interp's `waiting` matters.

    `turn` may name any of the 4 warps: warps >= nwarps are never runnable, so a turn of
    nwarps (the warp after the last) searches from warp 0, like interp's turn mod nwarps.

    deadlock: some warp i < nwarps is at a divergent barrier (wait_i, and alive_i has lanes
    that are not in mask_i, the lanes that arrived: see _new_top), or none is runnable while
    some live warp waits.
    A divergent barrier can never complete: the lanes that did not arrive are live and parked
    on the warp's own stack, and the warp waits until they arrive (interp's
    `_check_arrival`). The phase rule alone would release the warp (it tracks warps, not
    lanes). Since it is caught at the CT2 of that BAR, the second case is unreachable (a
    barrier that every warp reaches with all its live lanes releases), but it stays.
    `found` may be 1 together with deadlock: FAULT wins (next_token.py).

    Layers: at: live_i, live-and-waiting, the count of live lanes that did not arrive at
    the barrier their warp waits at, a weighted count of live warps whose phase is 2 or 3
    ahead of phase_i;  at + 1: runnable_i, done, partial (that count >= 1);  at + 2: the
    choice, deadlock. The chosen warp's pc comes later, from `build_warp_pcs`.
    Returns ({"found", "warp" (one-hot bits), "deadlock", "done"}, end)."""
    if len(statuses) != WARPS or nwarps.width != WARPS or turn.width != WARPS:
        raise CircuitError(f"scheduler: needs {WARPS} statuses, nwarps and turn of {WARPS} dims")
    live, waiting, behind, divergent = _liveness(c, at, statuses, nwarps)
    runnable = c.field("sched.runnable", WARPS, at + 1)
    done = c.field("sched.done", 1, at + 1)
    for i, s in enumerate(statuses):    # live and not (waiting and some live warp is behind)
        big = 3 * WARPS + 1
        G.step(c, at + 1, {live[i]: big, s.wait[0]: 1 - big, behind[i]: -1}, 1, {runnable[i]: 1})
    G.relu(c, at + 1, G.ones(live, k=-1), 1, {done[0]: 1})
    partial = c.field("sched.partial", 1, at + 1)      # some warp is at a divergent barrier
    G.step(c, at + 1, G.ones(divergent), 1, {partial[0]: 1})
    c.clear(live, at + 1)
    c.clear(behind, at + 1)
    c.clear(divergent, at + 1)
    out = _choose(c, at + 2, runnable, turn, waiting, partial)
    out["done"] = done
    c.clear(runnable, at + 2)
    c.clear(waiting, at + 2)
    c.clear(partial, at + 2)
    return out, at + SCHEDULER_LAYERS


def _liveness(c, at, statuses, nwarps):
    live = c.field("sched.live", WARPS, at)
    waiting = c.field("sched.waiting", WARPS, at)
    behind = c.field("sched.behind", WARPS, at, kind="int", vmax=(WARPS - 1) * LANES)
    exists = [{nwarps[k]: 1 for k in range(i, WARPS)} for i in range(WARPS)]   # [i < nwarps]
    for i, s in enumerate(statuses):
        G.step(c, at, G.add_terms(G.ones(s.alive), {d: LANES + 1 for d in exists[i]}), LANES + 2,
               {live[i]: 1})
        G.step(c, at, G.add_terms(G.ones(s.alive), {d: LANES + 1 for d in exists[i]},
                                  {s.wait[0]: LANES + 1}), 2 * LANES + 3, {waiting[i]: 1})
    # lanes that are live but did not arrive, of warps i < nwarps that wait: relu(alive - mask + wait +
    # [i < nwarps] - 2) is 1 exactly when all four hold, else <= 0
    divergent = c.field("sched.divergent", 1, at, kind="int", vmax=WARPS * LANES)
    for i, s in enumerate(statuses):
        for l in range(LANES):
            G.relu(c, at, G.add_terms({s.alive[l]: 1, s.mask[l]: -1, s.wait[0]: 1}, exists[i]), -2,
                   {divergent[0]: 1})
    k = LANES + 1     # a mismatch costs more than the alive count can give
    for i, si in enumerate(statuses):
        for j, sj in enumerate(statuses):
            if i == j:
                continue
            for q in range(PHASES):
                for r in ((q + 2) % PHASES, (q + 3) % PHASES):     # j is 2 or 3 ahead of i: j is behind
                    ti, bi = G.is_value(si.phase, q)
                    tj, bj = G.is_value(sj.phase, r)
                    terms = G.add_terms({d: k * v for d, v in ti.items()}, {d: k * v for d, v in tj.items()},
                                        {d: k for d in exists[j]}, G.ones(sj.alive))
                    G.relu(c, at, terms, k * (bi + bj - 1), {behind[i]: 1})
    return live, waiting, behind, divergent


def _choose(c, at, runnable, turn, waiting, partial) -> dict[str, Field]:
    """For each turn t and warp i: i is chosen iff turn == t, i is runnable and no warp between
    t and i (cyclically) is."""
    found = c.field("sched.found", 1, at)
    warp = c.field("sched.warp", WARPS, at)
    deadlock = c.field("sched.deadlock", 1, at)
    for t in range(WARPS):
        for i in range(WARPS):
            between = {runnable[(t + k) % WARPS]: -1 for k in range((i - t) % WARPS)}
            chosen = G.add_terms({turn[t]: 1, runnable[i]: 1}, between)
            G.relu(c, at, chosen, -1, {warp[i]: 1, found[0]: 1})
    # a divergent barrier (partial outweighs every runnable warp), or none runnable but some live warp waits
    G.step(c, at, G.add_terms(G.ones(waiting), G.ones(runnable, k=-WARPS), G.ones(partial, k=WARPS * WARPS + 1)), 1,
           {deadlock[0]: 1})
    return {"found": found, "warp": warp, "deadlock": deadlock}


def build_warp_pcs(c: Circuit, tokens: TokenInputs, decoded: Decoded, update: StatusUpdate,
                   schedule: Schedule) -> NextPc:
    """Each warp's next pc (L_NEXT): written in the pass that runs the warp's terminator (its
    new pc, at any block end; CT1 comes only when the top of stack's mask or depth changes),
    0 on a CTA pass; the scheduler's choice reads it for its EXEC.
    L_NEXT - 1: which warp's register a terminator writes, the gated pc; L_NEXT: the registers
    and the chosen warp's pc."""
    f, k = tokens.features, tokens.kind
    at, ran = L_NEXT - 1, {decoded.op[t][0]: 1 for t in TERMS}     # exactly one terminator flag on its pass
    writes = c.field("pcs.write", WARPS, at)
    for w in range(WARPS):
        G.relu(c, at, {f["W"][w]: 1, **ran}, -1, {writes[w]: 1})
    new = c.field("pcs.new", PC_BITS, at)
    for b, d in enumerate(update.new.pc.dims):
        G.relu(c, at, {d: 1, **ran}, -1, {new[b]: 1})
    pc = c.field("sched.pc", PC_BITS, L_NEXT)
    for w in range(WARPS):
        reg = Mem.register(c, L_NEXT, f"pc{w}", PC_BITS)
        Mem.write_bits(c, reg, tokens.zero, Mem.bits(new), [writes[w], k["CTA"]])
        held = c.field(f"pcs.{w}", PC_BITS, L_NEXT)
        Mem.read_into(c, reg, tokens.zero, held.dims)
        for b in range(PC_BITS):
            G.relu(c, L_NEXT, {schedule.warp[w]: 1, held[b]: 1}, -1, {pc[b]: 1})
        c.clear(held, L_NEXT)
    c.clear(writes, L_NEXT)
    c.clear(new, L_NEXT)
    return NextPc(pc)
