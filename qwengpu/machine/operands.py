"""Operands: the register file, a replica per operand and lane at each layer that reads it, which
VAL/VALU passes write.

    L3   the pre-ALU's operands a, b, c (a pair's first instruction: encoding.py) = register +
         the pre-immediate on the one operand PRE.imm names
    L4   the terminator's condition register (TERM.cond) for the branch unit
    L10  the ALU's operands = register + immediate, plus the pre-ALU's result on the operands
         ROM0.fwd names (their register field is r0); S2R's special register into operand a
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import INT_SCALE, Field
from qwengpu.machine.plan import L_BRANCH, L_EXEC, L_PRE_REG, L_REG
from qwengpu.machine.wiring import view
from qwengpu.machine.words import SREG, SREG_FIELDS, TERM, WORD_BITS

SREG_ROWS = 64          # the special-register table: a row per warp (WB, 2 bits) and thread block (4 bits)
REG_ROWS = 64           # a lane's register file: a row per warp (WB) and register (4 bits)
OPERANDS = "abc"


def build_operands(m) -> None:
    """Adds the pre-ALU's operands (m.pre_abc) and the terminator's condition (m.tcond) to machine m."""
    c, f, k, L = m.c, m.f, m.k, L_PRE_REG
    m.pre_abc = _registers(m, L, "pre.", [m.pw[q] for q in OPERANDS])
    for q, operands in enumerate(m.pre_abc):
        for l in range(isa.LANES):
            for i in range(32):
                G.relu(c, L, {m.pre_imm[i]: 1, m.pw["imm"][q]: 1}, -1, {operands[l][i]: 1})
    # the terminator's condition, one replica per lane at L4; the branch unit reads it there
    # (only whether it is 0 matters: every bit of a lane's read goes into one dim, its popcount)
    m.tcond = [c.field(f"tcond{l}", 1, L_BRANCH, kind="int", vmax=32) for l in range(4)]
    tkey = B.bits(f["WB"]) + B.bits(m.tw["cond"])
    for l in range(4):
        bank = _register_bank(m, L_BRANCH, f"reg.t{l}", l)
        B.read_into(c, bank, tkey, m.tcond[l].dims * 32, enable=[k["EXEC"]])
    for fld in m.tcond:                 # an int field holds value * INT_SCALE
        c.layer(L_BRANCH).out[fld[0], :] *= INT_SCALE
    # read by these layers only (the TERM word's kind, slot and condition register: its targets
    # stay for the branch unit)
    c.clear(m.pre, L + 1)
    c.clear(m.pre_imm, L + 1)
    c.clear(view(m.term, TERM["op"].offset, WORD_BITS, "term.tail"), L_BRANCH)


def build_alu_operands(m, pre_r: list[Field]) -> None:
    """Adds the ALU's operands m.a, m.b, m.cc at L_REG: register + immediate + forwarded pre_r
    (the pre-ALU's result, readable from L_REG), S2R's special register into a."""
    c, L = m.c, L_REG
    abc = m.a, m.b, m.cc = _registers(m, L, "", [m.w0[q] for q in OPERANDS])
    for q, operands in enumerate(abc):
        fwd = view(m.w0["fwd"], q, q + 1)
        for l in range(isa.LANES):
            for i in range(32):
                G.relu(c, L, {m.words[1 + q][i]: 1}, 0, {operands[l][i]: 1})     # 0 for a register operand
                x = pre_r[l][i]             # forwarded exact: 4x - 1 and 4x - 2 cut at 1 leave 0 or 1
                G.gated(c, L, {x: 4}, -1, {operands[l][i]: 1}, fwd)
                G.gated(c, L, {x: 4}, -2, {operands[l][i]: -1}, fwd)
    _s2r(m)
    for fld in (*m.pre_abc[0], *m.pre_abc[1], *m.pre_abc[2]):     # the pre-ALU has read them
        c.clear(fld, L)
    for done in (*pre_r, *(m.w0[q] for q in (*OPERANDS, "fwd")), *m.words[1:], m.sregs, m.valu_lane):
        c.clear(done, L_EXEC)


def _register_bank(m, layer: int, name: str, lane: int) -> B.Bank:
    """A replica of one lane's register file; VAL and VALU passes write every replica."""
    bank = declare_bank(m.c, layer, name, REG_ROWS, 32)
    B.write_bits(m.c, bank, B.bits(m.f["WB"]) + B.bits(m.pdst), B.bits(m.staged),
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
