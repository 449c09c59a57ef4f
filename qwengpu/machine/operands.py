"""Operands (L3-L4): the special-register table and the register file (a replica per operand and
lane) read at the running warp's registers, plus the immediates; S2R's special register into
operand a. VAL/VALU passes write the register file. A fourth replica at L4 reads the terminator's
condition register (TERM.cond) for the branch unit: in a pass that runs an instruction and the
terminator, operand a is the instruction's."""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import INT_SCALE
from qwengpu.machine.plan import L_EXEC, L_REG
from qwengpu.machine.wiring import view
from qwengpu.machine.words import SREG, SREG_FIELDS, TERM, WORD_BITS

SREG_ROWS = 64          # the special-register table: a row per warp (WB, 2 bits) and thread block (4 bits)
REG_ROWS = 64           # a lane's register file: a row per warp (WB) and register (4 bits)


def build_operands(m) -> None:
    """Adds the special registers, the register file and the operands a, b, cc to machine m."""
    c, f, k, L = m.c, m.f, m.k, L_REG
    srow = B.bits(f["WB"]) + B.bits(m.cta)
    m.sregs = c.field("sregs", WORD_BITS * len(SREG), L)
    for j in range(len(SREG)):
        bank = declare_bank(c, L, f"sreg{j}", SREG_ROWS, WORD_BITS)
        B.write_bits(c, bank, B.bits(view(m.latch, 0, 6)), B.bits(m.staged), [m.put[f"SREG{j}"]])
        B.read_into(c, bank, srow, m.sregs.dims[WORD_BITS * j: WORD_BITS * (j + 1)], enable=[m.op["S2R"][0]])
    wkey = B.bits(f["WB"]) + B.bits(m.pdst)
    m.a, m.b, m.cc = ([c.field(f"{q}{l}", 32, L) for l in range(4)] for q in "abc")
    imms = m.words[1:]
    for q, (regs, operands) in enumerate(zip("abc", (m.a, m.b, m.cc))):
        key = B.bits(f["WB"]) + B.bits(m.w0[regs])
        for l in range(4):
            bank = declare_bank(c, L, f"reg.{regs}{l}", REG_ROWS, 32)
            B.write_bits(c, bank, wkey, B.bits(m.staged), [m.val_lane[l], m.valu_lane[l]])
            B.read_into(c, bank, key, operands[l].dims, enable=[k["EXEC"]])
            G.requantize(c, L, operands[l])         # exact operands: see gadgets.requantize
            for i in range(32):            # immediate (0 for a register operand)
                G.relu(c, L, {imms[q][i]: 1}, 0, {operands[l][i]: 1})
    _s2r(m)
    # the terminator's condition, one replica per lane at L4, written as the L3 replicas are (the
    # fields they need are cleared by L4's MLP, after its GDN); the branch unit reads it at L4
    # (only whether it is 0 matters: every bit of a lane's read goes into one dim, its popcount)
    m.tcond = [c.field(f"tcond{l}", 1, L_EXEC, kind="int", vmax=32) for l in range(4)]
    tkey = B.bits(f["WB"]) + B.bits(m.tw["cond"])
    for l in range(4):
        bank = declare_bank(c, L_EXEC, f"reg.t{l}", REG_ROWS, 32)
        B.write_bits(c, bank, wkey, B.bits(m.staged), [m.val_lane[l], m.valu_lane[l]])
        B.read_into(c, bank, tkey, m.tcond[l].dims * 32, enable=[k["EXEC"]])
    for fld in m.tcond:                 # an int field holds value * INT_SCALE
        c.layer(L_EXEC).out[fld[0], :] *= INT_SCALE
    # read by this layer only (word 3 is operand c's immediate; the TERM word's kind, slot and
    # condition register: its targets stay for the branch unit)
    term_tail = view(m.term, TERM["op"].offset, WORD_BITS, "term.tail")
    for done in (m.sregs, m.words[0], m.words[1], m.words[2], m.words[3], m.valu_lane, term_tail):
        c.clear(done, L + 1)


def _s2r(m):
    """A of S2R = the selected special register (the table row is this warp's, this block's)."""
    c, L, S = m.c, L_REG, isa.SReg
    sr = m.sregs

    def field_bits(r, lane):         # tid fields have a copy per lane
        j, name = SREG_FIELDS[r]
        copy = lane if SREG[j][name].count > 1 else 0
        return [sr[WORD_BITS * j + b] for b in SREG[j].bits(name, copy)]

    for l in range(4):
        for r in S:
            sel = m.sreg[int(r)]
            if r == S.LANEID:
                for i in range(2):
                    if l >> i & 1:
                        G.relu(c, L, {sel: 1}, 0, {m.a[l][i]: 1})
            elif r == S.WARPID:
                for i in range(2):
                    G.relu(c, L, {sel: 1, m.f["WB"][i]: 1}, -1, {m.a[l][i]: 1})
            else:
                for i, d in enumerate(field_bits(r, l)):
                    G.relu(c, L, {sel: 1, d: 1}, -1, {m.a[l][i]: 1})
