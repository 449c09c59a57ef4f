"""Writeback (WRITEBACK_LAYERS from L_WB; the result banks at L_RESULTQ, after the FPU): the queues
that hold an EXEC, AT or COPY pass's outcome for the passes that write it back: each lane's
result and the mask (for VAL/VALU/ST), the
terminator's CT1 and CT2 payloads and whether each half changed (for CT1, or for the
VAL/VALU/VALA/VALQ/VALP/ST/AW that ends a folded pass's writeback), whether the last EXEC pass ran
a terminator, and the copy-out's next group (for VAL/VALU/VALA/VALQ/VALP).

Interface: `build_writeback(c, tokens, decoded, status, results, update, copy)` writes the
lanes' results, the running warp's mask, the terminator's StatusUpdate and the copy-out's next
group and row into the queues, and reads the results and mask back into the same fields on the
passes that write them back; returns the other queues' heads as `Queues`.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import LaneResults
from qwengpu.machine.branch import StatusUpdate
from qwengpu.machine.copy_unit import CopyOut
from qwengpu.machine.fetch import TERMS, Decoded
from qwengpu.machine.inputs import TokenInputs
from qwengpu.machine.plan import L_RESULTQ, L_WB
from qwengpu.machine.status import WarpStatus
from qwengpu.machine.wiring import part, view
from qwengpu.machine.words import COPYROW, CT1, CT2, GROUP_BITS


@dataclass(frozen=True)
class Queues:
    """The heads of the control and copy queues, on the passes that read them."""
    ct1: dict[str, Field]      # the terminator's CT1 payload, by feature name (PC, MASK, SP)
    ct2: dict[str, Field]      # its CT2 payload (ALIVE, PHASE, WAIT)
    changed: dict[str, Field]  # "CT1", "CT2": whether that half changed
    tpend: Field               # the last EXEC pass ran a terminator
    copy_next: Field           # the copy-out's next group
    copy_last: int             # that COPY's group was the last (a dim)
    copying: int               # the pass before was a COPY (a dim)


def build_writeback(c: Circuit, tokens: TokenInputs, decoded: Decoded, status: WarpStatus, results: LaneResults,
                    update: StatusUpdate, copy: CopyOut) -> Queues:
    """The result, mask, control and copy queues."""
    k, L, zero, mask = tokens.kind, L_WB, tokens.zero, status.running.mask
    terminators = [decoded.op[t][0] for t in TERMS]
    for l in range(4):                  # after the FPU wrote r (plan.L_RESULTQ)
        bank = B.register(c, L_RESULTQ, f"result{l}", 32)
        B.write_bits(c, bank, zero, B.bits(results.r[l]), [k["EXEC"], k["AT"], k["LD"], k["COPY"]])
        B.read_into(c, bank, zero, results.r[l].dims, enable=[k["VAL"], k["VALU"], k["VALP"], k["ST"]])
    mq = B.register(c, L, "mask", 4)
    B.write_bits(c, mq, zero, B.bits(mask), [k["EXEC"], k["COPY"]])
    B.read_into(c, mq, zero, mask.dims, enable=[k["VAL"], k["VALU"], k["VALP"], k["ST"], k["AW"], k["LD"]])
    ns, w1, w2 = update.new, CT1.width, CT2.width
    ctl = c.field("ctl", w1 + w2 + 2, L)            # CT1's payload, CT2's, and whether each half changed
    cq = B.register(c, L, "ctl", w1 + w2 + 2)
    B.write_bits(c, cq, zero, sum((B.bits(getattr(ns, name)) for name in (*CT1.fields, *CT2.fields)), [])
                 + B.bits(update.changed["CT1"]) + B.bits(update.changed["CT2"]), terminators)
    # read by CT1 (CT2's half) and by the passes that may end a folded pass's writeback; bits
    # unused on a pass are harmless there (every reader is gated by the pass's kind)
    B.read_into(c, cq, zero, ctl.dims,
                enable=[k["CT1"], k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"], k["ST"], k["AW"]])
    head, tail = view(ctl, 0, w1), view(ctl, w1, w1 + w2)
    # whether the last EXEC pass ran a terminator: its writeback's last token emits CT1 (from
    # the control queue) instead of the warp's next EXEC. Written on every EXEC pass (0 when it ran none).
    tpend = c.field("tpend", 1, L)
    tq = B.register(c, L, "tpend", 1)
    B.write_bits(c, tq, zero, B.bits(*(decoded.op[t] for t in TERMS)), [k["EXEC"]])
    B.read_into(c, tq, zero, tpend.dims,
                enable=[k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"], k["ST"], k["AW"], k["LD"]])
    # after a COPY pass its words' tokens: then the next group, or HALT after the last
    copyq = c.field("copyq", GROUP_BITS + 2, L)
    q = B.register(c, L, "copyq", GROUP_BITS + 2)
    B.write_bits(c, q, zero, B.bits(copy.next) + B.bits(part(copy.row, COPYROW, "last")) + [[k["COPY"]]],
                 [k["COPY"]])
    B.read_into(c, q, zero, copyq.dims, enable=[k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"]])
    c.clear(copy.next, L + 1)
    c.clear(copy.row, L + 1)
    return Queues(ct1={name.upper(): part(head, CT1, name) for name in CT1.fields},    # FEATURES' names
                  ct2={name.upper(): part(tail, CT2, name) for name in CT2.fields},
                  changed={"CT1": view(ctl, w1 + w2, w1 + w2 + 1, "ct1_changed.q"),
                           "CT2": view(ctl, w1 + w2 + 1, w1 + w2 + 2, "ct2_changed.q")},
                  tpend=tpend, copy_next=view(copyq, 0, GROUP_BITS, "copy.next"),
                  copy_last=copyq.dims[GROUP_BITS], copying=copyq.dims[GROUP_BITS + 1])
