"""The copy-out unit, circuit side (copyout.py is the host side; docs/machine.md, "Copy-out"): a
COPY(g) pass is a load by every lane it copies. L0-L1: the table bank's enables and g + 1; L4:
group g's row of the copy-out table and COPY0; L5: the row's lanes join the pass's mask, the
next group; the ALU's last layer (L16): the address of word 4g + l replaces lane l's result."""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.machine.lsu import ROW_BITS
from qwengpu.machine.plan import EXEC_END, L_IN, L_PRE, L_ROM
from qwengpu.machine.wiring import flag_if, match, part, view
from qwengpu.machine.words import COPY0, COPYROW, GROUP_BITS


def build_copy_unit(m) -> None:
    """Adds the copy-out table, COPY0, the next group (copy_next) and the lanes' addresses to machine m."""
    c, k, g, L = m.c, m.k, m.f["CG"], L_PRE
    high = GROUP_BITS - ROW_BITS                          # group bits above a bank's row
    banks = 1 << high
    rd, wr = c.field("copy.rd", banks, L_IN), c.field("copy.wr", banks, L_IN)
    for b in range(banks):          # the table's bank of this COPY's group, and of a PUT's row
        t, k0 = match(view(g, ROW_BITS, GROUP_BITS), b)
        flag_if(c, L_IN, [({k["COPY"]: 1}, 0, 1), (t, k0, high)], {rd[b]: 1})
        t, k0 = match(view(m.latch, ROW_BITS, GROUP_BITS), b)
        flag_if(c, L_IN, [({m.put["COPYTAB"]: 1}, 0, 1), (t, k0, high)], {wr[b]: 1})
    carry = c.field("copy.carry", GROUP_BITS, L_IN)      # carry[i]: bits 0..i-1 of g are all 1
    for i in range(1, GROUP_BITS):
        G.step(c, L_IN, {g[j]: 1 for j in range(i)}, i, {carry[i]: 1})
    inc = c.field("copy.inc", GROUP_BITS, L_ROM)          # g + 1 (COPY passes)
    G.relu(c, L_ROM, {k["COPY"]: 1, g[0]: -1}, 0, {inc[0]: 1})
    for i in range(1, GROUP_BITS):                        # bit i: g_i xor carry_i
        G.relu(c, L_ROM, {g[i]: 1, carry[i]: 1}, 0, {inc[i]: 1})
        G.relu(c, L_ROM, {g[i]: 1, carry[i]: 1}, -1, {inc[i]: -2})
    c.clear(carry, L_ROM + 1)
    row = c.field("copy.row", COPYROW.width, L)
    for b in range(banks):
        bank = declare_bank(c, L, f"copytab{b}", 1 << ROW_BITS, COPYROW.width)
        B.write_bits(c, bank, B.bits(view(m.latch, 0, ROW_BITS)), B.bits(view(m.staged, 0, COPYROW.width)),
                     [wr[b]])
        B.read_into(c, bank, B.bits(view(g, 0, ROW_BITS)), row.dims, enable=[rd[b]])
    start = B.register(c, L, "copy0", COPY0.width)
    m.copy0 = c.field("copy0", COPY0.width, L)
    B.write_bits(c, start, m.zero, B.bits(view(m.staged, 0, COPY0.width)), [m.put["COPY0"]])
    B.read_into(c, start, m.zero, m.copy0.dims)
    explicit = c.field("copy.explicit", 1, L)             # a row left 0: every lane, then g + 1
    G.step(c, L, {d: 1 for d in row.dims}, 1, {explicit[0]: 1})
    # L + 1: the lanes to copy join the status mask (0 on a COPY pass), the next group
    m.copy_next = c.field("copy.next", GROUP_BITS, L + 1)
    mask, after = part(row, COPYROW, "mask"), part(row, COPYROW, "next")
    for l in range(isa.LANES):
        G.relu(c, L + 1, {mask[l]: 1}, 0, {m.cs.mask[l]: 1})
        G.relu(c, L + 1, {k["COPY"]: 1, explicit[0]: -1}, 0, {m.cs.mask[l]: 1})
    for i in range(GROUP_BITS):
        G.relu(c, L + 1, {after[i]: 1}, 0, {m.copy_next[i]: 1})
        G.relu(c, L + 1, {inc[i]: 1, explicit[0]: -1}, 0, {m.copy_next[i]: 1})
    m.copy_row = row
    c.clear(explicit, L + 2)
    c.clear(inc, L + 2)
    # each lane's address: word LANES * g + l, as a byte address where the ALU's result goes
    at = EXEC_END - 1
    for l in range(isa.LANES):
        for i in range(2):
            if l >> i & 1:
                G.relu(c, at, {k["COPY"]: 1}, 0, {m.r[l][2 + i]: 1})
        for i in range(GROUP_BITS):
            G.relu(c, at, {k["COPY"]: 1, g[i]: 1}, -1, {m.r[l][4 + i]: 1})
