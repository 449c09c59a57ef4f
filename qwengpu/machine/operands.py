"""Operands: the register file, a replica per operand and lane at each layer that reads it, which
VAL/VALU passes write.

    L3   the pre-ALU's operands a, b, c (a pair's first instruction: encoding.py) = register +
         the pre-immediate on the one operand PRE.imm names
    L9   the terminator's condition register (TERM.cond) for the branch unit
    L10  the ALU's operands = register + immediate, plus the pre-ALU's result on the operands
         ROM0.fwd names (their register field is r0), and on the terminator's condition where
         ROM0.tfwd says; S2R's special register into operand a
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import INT_SCALE, Field
from qwengpu.machine.plan import L_EXEC, L_IMM, L_PRE_REG, L_REG
from qwengpu.machine.wiring import view
from qwengpu.machine.words import SREG, SREG_FIELDS, TERM, WORD_BITS

SREG_ROWS = 64          # the special-register table: a row per warp (WB, 2 bits) and thread block (4 bits)
REG_ROWS = 64           # a lane's register file: a row per warp (WB) and register (4 bits)
OPERANDS = "abc"


def build_operands(m) -> None:
    """Adds the pre-ALU's operands (m.pre_abc) to machine m."""
    c, L = m.c, L_PRE_REG
    m.pre_abc = _registers(m, L, "pre.", [m.pw[q] for q in OPERANDS])
    for q, operands in enumerate(m.pre_abc):
        for l in range(isa.LANES):
            for i in range(32):
                G.add_exact(c, L, m.pre_imm[i], {operands[l][i]: 1}, view(m.pw["imm"], q, q + 1))
    c.clear(m.pre, L + 1)
    c.clear(m.pre_imm, L + 1)


def build_alu_operands(m, pre_r: list[Field]) -> None:
    """Adds the ALU's operands m.a, m.b, m.cc at L_REG: register + immediate + forwarded pre_r
    (the pre-ALU's result, readable from L_REG), S2R's special register into a; and the
    terminator's condition m.tcond."""
    c, L = m.c, L_REG
    abc = m.a, m.b, m.cc = _registers(m, L, "", [m.w0[q] for q in OPERANDS])
    for q, operands in enumerate(abc):
        fwd = view(m.w0["fwd"], q, q + 1)
        for l in range(isa.LANES):
            for i in range(32):
                G.add_exact(c, L, m.words[1 + q][i], {operands[l][i]: 1})     # 0 for a register operand
                G.add_exact(c, L, pre_r[l][i], {operands[l][i]: 1}, fwd)
    _s2r(m)
    _condition(m, pre_r)
    for fld in (*m.pre_abc[0], *m.pre_abc[1], *m.pre_abc[2]):     # the pre-ALU has read them
        c.clear(fld, L)
    for done in (*pre_r, *(m.w0[q] for q in (*OPERANDS, "fwd", "tfwd")), *m.words[1:], m.sregs, m.valu_lane,
                 *m.ap_data):
        c.clear(done, L_EXEC)


def _condition(m, pre_r: list[Field]) -> None:
    """m.tcond: per lane, the popcount of the terminator's condition (only whether it is 0
    matters), from a register-file replica at L_IMM (TERM.cond; r0 when forwarded), plus the
    pre-ALU's result where ROM0.tfwd says, for the branch unit at L_BRANCH."""
    c = m.c
    m.tcond = [c.field(f"tcond{l}", 1, L_IMM, kind="int", vmax=32) for l in range(isa.LANES)]
    key = B.bits(m.f["WB"]) + B.bits(m.tw["cond"])
    for l, fld in enumerate(m.tcond):
        bank = _register_bank(m, L_IMM, f"reg.t{l}", l)
        B.read_into(c, bank, key, fld.dims * 32, enable=[m.k["EXEC"]])    # every bit into one dim
        c.layer(L_IMM).out[fld[0], :] *= INT_SCALE                           # an int field holds value * INT_SCALE
        for b in pre_r[l].dims:
            G.add_exact(c, L_REG, b, {fld[0]: 1}, view(m.w0["tfwd"], 0, 1))
    # the TERM word's kind, slot and condition register are read (its targets stay for the branch unit)
    c.clear(view(m.term, TERM["op"].offset, WORD_BITS, "term.tail"), L_IMM + 1)


def _register_bank(m, layer: int, name: str, lane: int) -> B.Bank:
    """A replica of one lane's register file; VAL, VALU, VALA and VALQ passes write every replica
    (the staged word, or VALA's or VALQ's word of the lane)."""
    bank = declare_bank(m.c, layer, name, REG_ROWS, 32)
    B.write_bits(m.c, bank, B.bits(m.f["WB"]) + B.bits(m.pdst), B.bits(m.staged, m.ap_data[lane]),
                 [m.val_lane[lane], m.valu_lane[lane]])
    return bank


def _registers(m, layer: int, tag: str, regs: list[Field]) -> list[list[Field]]:
    """Operands a, b, c (a field per lane, requantized) = this warp's registers `regs`, read at `layer`."""
    c = m.c
    out = []
    for q, reg in zip(OPERANDS, regs):
        key = B.bits(m.f["WB"]) + B.bits(reg)
        lanes = [c.field(f"{tag}{q}{l}", 32, layer) for l in range(isa.LANES)]
        for l, fld in enumerate(lanes):
            B.read_into(c, _register_bank(m, layer, f"reg.{tag}{q}{l}", l), key, fld.dims, enable=[m.k["EXEC"]])
            G.requantize(c, layer, fld)         # exact operands: see gadgets.requantize
        out.append(lanes)
    return out


def _s2r(m):
    """A of S2R = the selected special register (the table row is this warp's, this block's)."""
    c, L, S = m.c, L_REG, isa.SReg
    m.sregs = sr = c.field("sregs", WORD_BITS * len(SREG), L)
    srow = B.bits(m.f["WB"]) + B.bits(m.cta)
    for j in range(len(SREG)):
        bank = declare_bank(c, L, f"sreg{j}", SREG_ROWS, WORD_BITS)
        B.write_bits(c, bank, B.bits(view(m.latch, 0, 6)), B.bits(m.staged), [m.put[f"SREG{j}"]])
        B.read_into(c, bank, srow, sr.dims[WORD_BITS * j: WORD_BITS * (j + 1)], enable=[m.op["S2R"][0]])

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
