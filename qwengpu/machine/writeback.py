"""Writeback (plan.py: L21-L22): the queues that hold an EXEC, AT or COPY pass's outcome for
the passes that write it back: each lane's result and the mask (for VAL/VALU/ST), the
terminator's CT1 and CT2 payloads and whether each half changed (for CT1, or for the
VAL/VALU/VALA/VALQ/VALP/ST/AW that ends a folded pass's writeback), whether the last EXEC pass ran
a terminator, and the copy-out's next group (for VAL/VALU/VALA/VALQ/VALP)."""
from __future__ import annotations

from qwengpu.circuit import memory as B
from qwengpu.machine.fetch import TERMS
from qwengpu.machine.plan import L_WB
from qwengpu.machine.wiring import part, view
from qwengpu.machine.words import COPYROW, CT1, CT2, GROUP_BITS


def build_writeback(m) -> None:
    """Adds the result, mask, control and copy queues to machine m."""
    c, k, L = m.c, m.k, L_WB
    for l in range(4):
        bank = B.register(c, L, f"result{l}", 32)
        B.write_bits(c, bank, m.zero, B.bits(m.r[l]), [k["EXEC"], k["AT"], k["COPY"]])
        B.read_into(c, bank, m.zero, m.r[l].dims, enable=[k["VAL"], k["VALU"], k["VALP"], k["ST"]])
    mq = B.register(c, L, "mask", 4)
    B.write_bits(c, mq, m.zero, B.bits(m.cs.mask), [k["EXEC"], k["COPY"]])
    B.read_into(c, mq, m.zero, m.cs.mask.dims, enable=[k["VAL"], k["VALU"], k["VALP"], k["ST"], k["AW"]])
    ns, w1, w2 = m.ns, CT1.width, CT2.width
    ctl = c.field("ctl", w1 + w2 + 2, L)            # CT1's payload, CT2's, and whether each half changed
    cq = B.register(c, L, "ctl", w1 + w2 + 2)
    B.write_bits(c, cq, m.zero, sum((B.bits(getattr(ns, name)) for name in (*CT1.fields, *CT2.fields)), [])
                 + B.bits(m.changed["CT1"]) + B.bits(m.changed["CT2"]), [m.op[t][0] for t in TERMS])
    # read by CT1 (CT2's half) and by the passes that may end a folded pass's writeback; bits
    # unused on a pass are harmless there (every reader is gated by the pass's kind)
    B.read_into(c, cq, m.zero, ctl.dims,
                enable=[k["CT1"], k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"], k["ST"], k["AW"]])
    head, tail = view(ctl, 0, w1), view(ctl, w1, w1 + w2)
    m.ct1q = {name.upper(): part(head, CT1, name) for name in CT1.fields}   # FEATURES' names
    m.ctq = {name.upper(): part(tail, CT2, name) for name in CT2.fields}
    m.changedq = {"CT1": view(ctl, w1 + w2, w1 + w2 + 1, "ct1_changed.q"),
                  "CT2": view(ctl, w1 + w2 + 1, w1 + w2 + 2, "ct2_changed.q")}
    # whether the last EXEC pass ran a terminator: its writeback's last token emits CT1 (from
    # ct1q) instead of the warp's next EXEC. Written on every EXEC pass (0 when it ran none).
    m.tpend = c.field("tpend", 1, L)
    tq = B.register(c, L, "tpend", 1)
    B.write_bits(c, tq, m.zero, B.bits(*(m.op[t] for t in TERMS)), [k["EXEC"]])
    B.read_into(c, tq, m.zero, m.tpend.dims,
                enable=[k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"], k["ST"], k["AW"]])
    # after a COPY pass its words' tokens: then the next group, or HALT after the last
    copyq = c.field("copyq", GROUP_BITS + 2, L)
    q = B.register(c, L, "copyq", GROUP_BITS + 2)
    B.write_bits(c, q, m.zero, B.bits(m.copy_next) + B.bits(part(m.copy_row, COPYROW, "last")) + [[k["COPY"]]],
                 [k["COPY"]])
    B.read_into(c, q, m.zero, copyq.dims, enable=[k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"]])
    c.clear(m.copy_next, L + 1)
    c.clear(m.copy_row, L + 1)
    m.copyq = {"next": view(copyq, 0, GROUP_BITS, "copy.next"), "last": copyq.dims[GROUP_BITS],
                  "copying": copyq.dims[GROUP_BITS + 1]}
