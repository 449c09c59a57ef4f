"""Warp status and pending writeback (L2; the CTA pass's initial masks at L1): each warp's status
in three registers (CT1's half, CT2's, and its wait bit, which CT2 sets at a barrier and the
warp's next EXEC clears), the running warp's status (its mask ANDed with alive: lanes that
exit leave the mask with CT2 alone), the pending instruction that
VAL/ST/AT passes write back, and the lanes a VALU pass writes."""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.residual import Field
from qwengpu.machine.plan import L_ROM, L_STATUS
from qwengpu.machine.wiring import flag_if, match, part, view
from qwengpu.machine.words import CONFIG, STATUS, WARP_BITS


@dataclass
class Status:
    """One warp's status fields (bits): CT1's half (pc, mask, sp), then CT2's."""
    pc: Field      # 7   top-of-stack pc
    mask: Field    # 4   top-of-stack mask as its last CT1 wrote it: read ANDed with alive
    sp: Field      # 3   depth of the top entry
    alive: Field   # 4   lanes that have not exited
    phase: Field   # 2   barriers passed, mod 4
    wait: Field    # 1   arrived at a barrier, not yet run since

    @classmethod
    def of(cls, field: Field) -> "Status":
        return cls(**{name: part(field, STATUS, name) for name in STATUS.fields})


def build_status(m) -> None:
    """Adds the warp statuses, the running warp's, and the pending writeback to machine m."""
    c, f, k, L = m.c, m.f, m.k, L_STATUS
    width = STATUS.width
    # L1 MLP: what a CTA pass writes into every warp's status (initial masks)
    masks = [bit for w in range(isa.MAX_WARPS) for bit in CONFIG.bits("mask", w)]
    m.init_all = c.field("init_all", len(masks), L_ROM)
    for i, bit in enumerate(masks):
        G.relu(c, L_ROM, {m.config[bit]: 1, k["CTA"]: 1}, -1, {m.init_all[i]: 1})
    # L1 MLP: the warp an EXEC runs (its wait bit clears: a warp runs only once released)
    runs = c.field("runs", isa.MAX_WARPS, L_ROM)
    for w in range(isa.MAX_WARPS):
        G.relu(c, L_ROM, {f["W"][w]: 1, k["EXEC"]: 1}, -1, {runs[w]: 1})
    m.status = []
    for w in range(isa.MAX_WARPS):      # three registers: CT1's half, CT2's but wait, and wait
        init = view(m.init_all, isa.LANES * w, isa.LANES * (w + 1))
        st = Status.of(c.field(f"status{w}", width, L))
        registers = (("CT1", B.bits(f["PC"]) + B.bits(f["MASK"], init) + B.bits(f["SP"]), (st.pc, st.mask, st.sp),
                      [m.ct1h[w]]),
                     ("CT2", B.bits(f["ALIVE"], init) + B.bits(f["PHASE"]), (st.alive, st.phase), [m.cur1h[w]]),
                     ("wait", B.bits(f["WAIT"]), (st.wait,), [m.cur1h[w], runs[w]]))
        for name, data, fields, written in registers:
            bank = B.register(c, L, f"status{w}.{name}", len(data))
            B.write_bits(c, bank, m.zero, data, written + [k["CTA"]])
            B.read_into(c, bank, m.zero, [d for fld in fields for d in fld.dims])
        m.status.append(st)
    c.clear(runs, L)
    # MLP: the running warp's status (EXEC passes), its mask ANDed with alive
    cs = c.field("cur_status", width, L)
    for w, st in enumerate(m.status):
        alive = dict(zip(st.mask.dims, st.alive.dims))
        for i, d in enumerate(sum((list(getattr(st, n).dims) for n in STATUS.fields), [])):
            also = {alive[d]: 1} if d in alive else {}
            G.relu(c, L, {d: 1, f["W"][w]: 1, **also}, -1 - len(also), {cs[i]: 1})
    m.cs = Status.of(cs)
    # pending writeback: what VAL and ST passes need of the EXEC pass before them; its destination
    # register in a row by slot parity, so that a continuing token (inputs.py) reads its pass's
    # (m.wb_row) while it writes the next pass's
    m.pdst = c.field("pdst", 4, L)
    m.patom = c.field("patom", 6, L)        # the pending instruction is an ATOM, its dst != r0, its op
    data = (B.bits(f["WB"]) + B.bits(f["PC"]) + B.bits(f["SLOT"])
            + B.bits(m.op["ATOM"]) + B.bits(m.dst_nz) + B.bits(m.w0["mod"]))
    readers = [k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"], k["ST"], k["AT"], k["AW"], k["PART"]]
    pend = B.register(c, L, "pending", len(data))
    B.write_bits(c, pend, m.zero, data, [k["EXEC"]])
    B.read_into(c, pend, m.zero, f["WB"].dims + f["PC"].dims + f["SLOT"].dims + m.patom.dims, enable=readers)
    dst = B.declare_bank(c, L, "pending.dst", 2, m.pdst.width)
    B.write_bits(c, dst, [f["SLOT"].dims[1::2]], B.bits(m.w0["dst"]), [k["EXEC"]])
    B.read_into(c, dst, B.bits(m.wb_row), m.pdst.dims, enable=readers + [f["CONT"][0]])
    m.has_wb = c.field("has_wb", 1, L)
    G.relu(c, L, {m.has_result[0]: 1, m.dst_nz[0]: 1}, -1, {m.has_wb[0]: 1})
    # a VALU, VALA or VALQ pass writes every active lane of the pending warp: its status mask is the
    # EXEC pass's mask (a status changes only at block ends)
    m.valu_lane = c.field("valu_lane", isa.LANES, L)
    for w, st in enumerate(m.status):
        t, k0 = match(f["WB"], w)
        for l in range(isa.LANES):
            whole = {k["VALU"]: 1, k["VALA"]: 1, k["VALQ"]: 1, m.cont_whole[0]: 1}
            flag_if(c, L, [(t, k0, WARP_BITS), (whole, 0, 1), ({st.mask[l]: 1, st.alive[l]: 1}, 0, 2)],
                    {m.valu_lane[l]: 1})
    c.clear(m.wb_row, L)
    c.clear(m.cont_whole, L)
