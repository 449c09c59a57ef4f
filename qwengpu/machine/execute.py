"""The execute stage's units on the machine's ports: the scheduler (scheduler.py; its round-robin
turn at L_STATUS), the pre-ALU (alu.py, from L_PRE: a pair's first instruction, encoding.py), the
warp unit and the ALU (warp.py, alu.py, from L_EXEC), the branch unit (branch.py: the
terminator with its SIMT stack from L_BRANCH, the status change at L_CHANGE) and the FPU (fpu.py:
its float ops (fpu.FPU_OPCODES) on the ALU's operands from L_FPU, beside the ALU and the load/store unit, its
result added into the ALU's at L_RESULTQ - 1). The ALU's operands and the terminator's condition, with
the pre-ALU's result forwarded, are operands.py's.

Interface: each `build_*` here takes the bundles its unit reads and returns the one it drives
(build.py wires them, one unit each in Machine.footprint); `check_execute_end` holds the stage's
last layer to the plan's EXEC_END (the FPU's result is read later, by the result queue at L_RESULTQ).
"""
from __future__ import annotations

from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import LaneResults, build_alu
from qwengpu.machine.branch import StatusUpdate, build_status_change, build_terminator
from qwengpu.machine.fetch import TERMS, Decoded
from qwengpu.machine.fpu import build_fpu
from qwengpu.machine.inputs import Registers, TokenInputs
from qwengpu.machine.operands import AluOperands, Operands
from qwengpu.machine.plan import (EXEC_END, L_BRANCH, L_CHANGE, L_EXEC, L_FPU, L_PRE, L_REG, L_RESULTQ, L_SCHED,
                                  L_STACK, L_STATUS)
from qwengpu.machine.scheduler import Schedule, build_scheduler
from qwengpu.machine.status import WarpStatus
from qwengpu.machine.warp import SHFL_MODES, VOTE_MODES, build_warp
from qwengpu.machine.wiring import part, view
from qwengpu.machine.words import CONFIG, TERM


def build_schedule(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded,
                   status: WarpStatus) -> Schedule:
    """The scheduler's choice among the warps (config's nwarps), round robin from the warp after
    the one that ends its block (Registers.ender; warp 0 on a CTA pass)."""
    nwarps = part(decoded.config, CONFIG, "nwarps")
    turn = c.field("turn", 4, L_STATUS)
    for w in range(4):
        G.relu(c, L_STATUS, {registers.ender[(w - 1) % 4]: 1}, 0, {turn[w]: 1})
    G.relu(c, L_STATUS, {tokens.kind["CTA"]: 1}, 0, {turn[0]: 1})
    choice, end = build_scheduler(c, L_SCHED, status.warps, nwarps, turn)
    return Schedule(**choice, end=end)


def build_pre_alu(c: Circuit, decoded: Decoded, operands: Operands) -> LaneResults:
    """The pre-ALU: a pair's first instruction, its result readable where the ALU's operands are read."""
    r, end = build_alu(c, L_PRE, decoded.pre_op, operands.a, operands.b, operands.cc, name="pre")
    if end != L_REG:
        raise CircuitError(f"the pre-ALU's result is readable from L{end}; the plan reads it at L{L_REG}")
    return LaneResults(r, end)


def build_warp_unit(c: Circuit, decoded: Decoded, operands: AluOperands, status: WarpStatus) -> LaneResults:
    """SHFL and VOTE on the ALU's operands and the running warp's mask."""
    wo = decoded.warp_op
    r, end = build_warp(c, L_EXEC, {mode: wo[f"SHFL.{mode}"] for mode in SHFL_MODES},
                        {mode: wo[f"VOTE.{mode}"] for mode in VOTE_MODES}, operands.a, operands.b, operands.cc,
                        status.running.mask)
    return LaneResults(r, end)


def build_alu_unit(c: Circuit, decoded: Decoded, operands: AluOperands, warp: LaneResults) -> LaneResults:
    """The ALU; the warp unit's result joins its result at its last layer (at most one is nonzero)."""
    r, end = build_alu(c, L_EXEC, decoded.alu_op, operands.a, operands.b, operands.cc)
    if warp.end > end - 1:
        raise CircuitError(f"the warp unit ends at L{warp.end}, after the ALU's last layer L{end - 1}")
    for l in range(4):
        G.copy_bits(c, end - 1, warp.r[l], Field("r", r[l].dims, "bits", end - 1))
        c.clear(warp.r[l], end - 1)
    return LaneResults(r, end)


def build_fpu_unit(c: Circuit, decoded: Decoded, operands: AluOperands, results: LaneResults) -> LaneResults:
    """The FPU: fpu.FPU_OPS (Decoded.fpu_op, rounding mode Decoded.fpu_rnd) on the ALU's
    operands (never cleared) from L_FPU; each lane's result is added into the ALU's result fields (0 on
    a float pass: no ALU op flag is set), readable by the result queue at L_RESULTQ. A float pass is
    no load, store or copy-out, so the load/store unit's reads of r (L_Q, L_LOAD) see 0 there."""
    end = build_fpu(c, L_FPU, decoded.fpu_op, decoded.fpu_rnd, operands.a, operands.b, results.r,
                    operands.cc)
    if end > L_RESULTQ:
        raise CircuitError(f"the FPU's result is readable from L{end}; the result queue reads it at L{L_RESULTQ}")
    return LaneResults(results.r, end)


def build_branch_unit(c: Circuit, tokens: TokenInputs, decoded: Decoded, operands: AluOperands,
                      status: WarpStatus) -> StatusUpdate:
    """The terminator of the running warp's block (its TERM word, its condition), and which halves
    of the status it changes."""
    tw = decoded.term_fields
    new, end = build_terminator(
        c, L_BRANCH, L_STACK, wbits=tokens.features["WB"], term={t: decoded.op[t] for t in TERMS},
        exits=decoded.exits, target=tw["target"], fallthrough=tw["fallthrough"], reconv=tw["reconv"],
        rvalid=decoded.rvalid, cond=operands.cond, old=status.running, init_mask=decoded.init_mask)
    for fld in operands.cond:            # read by the terminator's first layer only
        c.clear(fld, L_BRANCH + 1)
    c.clear(view(decoded.term, 0, TERM["op"].offset), L_STACK)    # TERM's targets: last read by the stack writes
    c.clear(decoded.rvalid, L_STACK)
    changed = build_status_change(c, L_CHANGE, new, status.running)
    return StatusUpdate(new, changed, end)


def check_execute_end(schedule: Schedule, warp: LaneResults, results: LaneResults, update: StatusUpdate) -> None:
    """Every execute result is readable from the plan's EXEC_END, where the load/store unit starts."""
    end = max(results.end, warp.end, update.end, schedule.end)
    if end != EXEC_END:
        raise CircuitError(f"the execute stage ends at L{end}, the plan has L{EXEC_END}")
