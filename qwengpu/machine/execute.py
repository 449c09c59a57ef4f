"""The execute stage (L2-L17): wires the scheduler (scheduler.py; its round-robin turn at L2), the
pre-ALU (alu.py, L4-L9: a pair's first instruction, encoding.py), the ALU's operands and the
terminator's condition with the pre-ALU's result forwarded (operands.py, L9-L10), and the
terminator with its SIMT stack and status change (branch.py), the warp unit and the ALU (warp.py,
alu.py), all three from L11, to the machine's operands and status, at the plan's layers
(plan.py). Each is recorded as a unit of its own (Machine.footprint)."""
from __future__ import annotations

from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import build_alu
from qwengpu.machine.branch import build_status_change, build_terminator
from qwengpu.machine.fetch import TERMS
from qwengpu.machine.operands import build_alu_operands
from qwengpu.machine.plan import (EXEC_END, L_BRANCH, L_CHANGE, L_EXEC, L_PRE, L_REG, L_SCHED, L_STACK,
                                  L_STATUS)
from qwengpu.machine.scheduler import build_scheduler
from qwengpu.machine.warp import SHFL_MODES, VOTE_MODES, build_warp
from qwengpu.machine.wiring import part, view
from qwengpu.machine.words import CONFIG, TERM


def build_execute(m) -> None:
    """Adds the scheduler's choice, the lanes' results r and the terminator's new status to machine m."""
    c = m.c
    with m.unit("scheduler"):
        nwarps = part(m.config, CONFIG, "nwarps")
        turn = c.field("turn", 4, L_STATUS)
        for w in range(4):      # round robin from the warp after the one that ends its block
            G.relu(c, L_STATUS, {m.ender[(w - 1) % 4]: 1}, 0, {turn[w]: 1})
        G.relu(c, L_STATUS, {m.k["CTA"]: 1}, 0, {turn[0]: 1})
        m.sched, sched_end = build_scheduler(c, L_SCHED, m.status, nwarps, turn)
    with m.unit("pre_alu"):
        pre_r, pre_end = build_alu(c, L_PRE, m.pre_op, *m.pre_abc, name="pre")
    if pre_end != L_REG:
        raise CircuitError(f"the pre-ALU's result is readable from L{pre_end}; the plan reads it at L{L_REG}")
    with m.unit("operands"):
        build_alu_operands(m, pre_r)
    with m.unit("warp"):
        wo = m.warp_op
        warp_r, warp_end = build_warp(c, L_EXEC, {mode: wo[f"SHFL.{mode}"] for mode in SHFL_MODES},
                                      {mode: wo[f"VOTE.{mode}"] for mode in VOTE_MODES}, m.a, m.b, m.cc, m.cs.mask)
    with m.unit("alu"):
        m.r, alu_end = build_alu(c, L_EXEC, m.alu_op, m.a, m.b, m.cc)
        if warp_end > alu_end - 1:
            raise CircuitError(f"the warp unit ends at L{warp_end}, after the ALU's last layer L{alu_end - 1}")
        for l in range(4):             # the warp unit's result joins the ALU's (at most one is nonzero)
            G.copy_bits(c, alu_end - 1, warp_r[l], Field("r", m.r[l].dims, "bits", alu_end - 1))
            c.clear(warp_r[l], alu_end - 1)
    with m.unit("branch"):
        term = {t: m.op[t] for t in TERMS}
        m.ns, ctl_end = build_terminator(
            c, L_BRANCH, L_STACK, wbits=m.f["WB"], term=term, exits=m.exits, target=m.tw["target"],
            fallthrough=m.tw["fallthrough"], reconv=m.tw["reconv"], rvalid=m.tw["rvalid"],
            cond=m.tcond, old=m.cs, init_mask=m.init_mask)
        for fld in m.tcond:            # read by the terminator's first layer only
            c.clear(fld, L_BRANCH + 1)
        c.clear(view(m.term, 0, TERM["op"].offset), L_STACK)    # TERM's targets: last read by the stack writes
        m.changed = build_status_change(c, L_CHANGE, m.ns, m.cs)
    end = max(alu_end, warp_end, ctl_end, sched_end)
    if end != EXEC_END:
        raise CircuitError(f"the execute stage ends at L{end}, the plan has L{EXEC_END}")
