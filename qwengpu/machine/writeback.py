"""Writeback (L14-L15): the queues that hold an EXEC, AT or COPY pass's outcome for the passes
that write it back: each lane's result and the mask (for VAL/VALU/ST), the terminator's CT2
payload and whether it changed (for CT1), and the copy-out's next group (for VAL/VALU)."""
from __future__ import annotations

from qwengpu.circuit import memory as B
from qwengpu.machine.fetch import TERMS
from qwengpu.machine.plan import L_WB
from qwengpu.machine.wiring import part, view
from qwengpu.machine.words import COPYROW, CT2, GROUP_BITS


def build_writeback(m) -> None:
    """Adds the result, mask, control and copy queues to machine m."""
    c, k, L = m.c, m.k, L_WB
    for l in range(4):
        bank = B.register(c, L, f"result{l}", 32)
        B.write_bits(c, bank, m.zero, B.bits(m.r[l]), [k["EXEC"], k["AT"], k["COPY"]])
        B.read_into(c, bank, m.zero, m.r[l].dims, enable=[k["VAL"], k["VALU"], k["ST"]])
    mq = B.register(c, L, "mask", 4)
    B.write_bits(c, mq, m.zero, B.bits(m.cs.mask), [k["EXEC"], k["COPY"]])
    B.read_into(c, mq, m.zero, m.cs.mask.dims, enable=[k["VAL"], k["VALU"], k["ST"], k["AW"]])
    ns = m.ns
    ctl = c.field("ctl", CT2.width + 1, L)          # CT2's payload, and whether it changed
    cq = B.register(c, L, "ctl", CT2.width + 1)
    B.write_bits(c, cq, m.zero, sum((B.bits(getattr(ns, name)) for name in CT2.fields), [])
                 + B.bits(m.ct2_changed), [m.op[t][0] for t in TERMS])
    B.read_into(c, cq, m.zero, ctl.dims, enable=[k["CT1"]])
    m.ctq = {name.upper(): part(ctl, CT2, name) for name in CT2.fields}     # FEATURES' names
    m.ct2_follows = view(ctl, CT2.width, CT2.width + 1, "ct2_follows")
    # after a COPY pass its words' tokens: then the next group, or HALT after the last
    copyq = c.field("copyq", GROUP_BITS + 2, L)
    q = B.register(c, L, "copyq", GROUP_BITS + 2)
    B.write_bits(c, q, m.zero, B.bits(m.copy_next) + B.bits(part(m.copy_row, COPYROW, "last")) + [[k["COPY"]]],
                 [k["COPY"]])
    B.read_into(c, q, m.zero, copyq.dims, enable=[k["VAL"], k["VALU"]])
    c.clear(m.copy_next, L + 1)
    c.clear(m.copy_row, L + 1)
    m.copyq = {"next": view(copyq, 0, GROUP_BITS, "copy.next"), "last": copyq.dims[GROUP_BITS],
                  "copying": copyq.dims[GROUP_BITS + 1]}
