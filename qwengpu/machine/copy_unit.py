"""The copy-out unit, circuit side (copyout.py is the host side; docs/machine.md, "Copy-out"): a
COPY(g) pass is a load by every lane it copies. L_IN-L_ROM: the table bank's enables and g + 1;
L_PRE: group g's row of the copy-out table and COPY0; L_PRE + 1: the row's lanes join the pass's
mask, the next group; the ALU's last layer (EXEC_END - 1): the address of word 4g + l replaces
lane l's result.

Interface: `build_copy_unit(c, tokens, registers, status, results)` reads the token (COPY's group,
a PUT's target) and the staged word and latch a PUT writes the table with; it adds the lanes to
copy into the running warp's mask (WarpStatus.running.mask) and their addresses into the ALU's
results, and returns `CopyOut` for the writeback's copy queue and the next token.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import LaneResults
from qwengpu.machine.inputs import Registers, TokenInputs
from qwengpu.machine.lsu import ROW_BITS
from qwengpu.machine.plan import EXEC_END, L_IN, L_PRE, L_ROM
from qwengpu.machine.status import WarpStatus
from qwengpu.machine.wiring import flag_if, match, part, view
from qwengpu.machine.words import COPY0, COPYROW, GROUP_BITS


@dataclass(frozen=True)
class CopyOut:
    """The copy-out's registers, for the passes after a COPY."""
    copy0: Field        # the COPY0 register: the first group, whether there is any (words.COPY0)
    next: Field         # the group after this COPY's
    row: Field          # this group's row of the copy-out table (words.COPYROW)


def build_copy_unit(c: Circuit, tokens: TokenInputs, registers: Registers, status: WarpStatus,
                    results: LaneResults) -> CopyOut:
    """The copy-out table, COPY0, the next group and the lanes' addresses."""
    k, g = tokens.kind, tokens.features["CG"]
    rd, wr, inc = _group_arithmetic(c, tokens, registers)
    row, copy0, explicit = _table(c, tokens, registers, rd, wr)
    # L_PRE + 1: the lanes to copy join the status mask (0 on a COPY pass), the next group
    L, mask_out = L_PRE + 1, status.running.mask
    copy_next = c.field("copy.next", GROUP_BITS, L)
    mask, after = part(row, COPYROW, "mask"), part(row, COPYROW, "next")
    for l in range(isa.LANES):
        G.relu(c, L, {mask[l]: 1}, 0, {mask_out[l]: 1})
        G.relu(c, L, {k["COPY"]: 1, explicit[0]: -1}, 0, {mask_out[l]: 1})
    for i in range(GROUP_BITS):
        G.relu(c, L, {after[i]: 1}, 0, {copy_next[i]: 1})
        G.relu(c, L, {inc[i]: 1, explicit[0]: -1}, 0, {copy_next[i]: 1})
    c.clear(explicit, L + 1)
    c.clear(inc, L + 1)
    # each lane's address: word LANES * g + l, as a byte address where the ALU's result goes
    at, r = EXEC_END - 1, results.r
    for l in range(isa.LANES):
        for i in range(2):
            if l >> i & 1:
                G.relu(c, at, {k["COPY"]: 1}, 0, {r[l][2 + i]: 1})
        for i in range(GROUP_BITS):
            G.relu(c, at, {k["COPY"]: 1, g[i]: 1}, -1, {r[l][4 + i]: 1})
    return CopyOut(copy0=copy0, next=copy_next, row=row)


def _group_arithmetic(c: Circuit, tokens: TokenInputs, registers: Registers) -> tuple[Field, Field, Field]:
    """L_IN: the table's bank a COPY reads (rd) and a PUT writes (wr); L_ROM: g + 1 (inc)."""
    k, g = tokens.kind, tokens.features["CG"]
    high = GROUP_BITS - ROW_BITS                          # group bits above a bank's row
    banks = 1 << high
    rd, wr = c.field("copy.rd", banks, L_IN), c.field("copy.wr", banks, L_IN)
    for b in range(banks):          # the table's bank of this COPY's group, and of a PUT's row
        t, k0 = match(view(g, ROW_BITS, GROUP_BITS), b)
        flag_if(c, L_IN, [({k["COPY"]: 1}, 0, 1), (t, k0, high)], {rd[b]: 1})
        t, k0 = match(view(registers.latch, ROW_BITS, GROUP_BITS), b)
        flag_if(c, L_IN, [({tokens.put["COPYTAB"]: 1}, 0, 1), (t, k0, high)], {wr[b]: 1})
    carry = c.field("copy.carry", GROUP_BITS, L_IN)      # carry[i]: bits 0..i-1 of g are all 1
    for i in range(1, GROUP_BITS):
        G.step(c, L_IN, {g[j]: 1 for j in range(i)}, i, {carry[i]: 1})
    inc = c.field("copy.inc", GROUP_BITS, L_ROM)          # g + 1 (COPY passes)
    G.relu(c, L_ROM, {k["COPY"]: 1, g[0]: -1}, 0, {inc[0]: 1})
    for i in range(1, GROUP_BITS):                        # bit i: g_i xor carry_i
        G.relu(c, L_ROM, {g[i]: 1, carry[i]: 1}, 0, {inc[i]: 1})
        G.relu(c, L_ROM, {g[i]: 1, carry[i]: 1}, -1, {inc[i]: -2})
    c.clear(carry, L_ROM + 1)
    return rd, wr, inc


def _table(c: Circuit, tokens: TokenInputs, registers: Registers, rd: Field, wr: Field) -> tuple[Field, Field, Field]:
    """L_PRE: group g's row of the copy-out table, COPY0, and whether the row is explicit (a row
    left 0: every lane, then g + 1)."""
    L, g, zero = L_PRE, tokens.features["CG"], tokens.zero
    row = c.field("copy.row", COPYROW.width, L)
    for b in range(rd.width):
        bank = declare_bank(c, L, f"copytab{b}", 1 << ROW_BITS, COPYROW.width)
        B.write_bits(c, bank, B.bits(view(registers.latch, 0, ROW_BITS)),
                     B.bits(view(registers.staged, 0, COPYROW.width)), [wr[b]])
        B.read_into(c, bank, B.bits(view(g, 0, ROW_BITS)), row.dims, enable=[rd[b]])
    start = B.register(c, L, "copy0", COPY0.width)
    copy0 = c.field("copy0", COPY0.width, L)
    B.write_bits(c, start, zero, B.bits(view(registers.staged, 0, COPY0.width)), [tokens.put["COPY0"]])
    B.read_into(c, start, zero, copy0.dims)
    explicit = c.field("copy.explicit", 1, L)
    G.step(c, L, {d: 1 for d in row.dims}, 1, {explicit[0]: 1})
    return row, copy0, explicit
