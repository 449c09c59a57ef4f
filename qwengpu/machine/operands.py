"""Operands: the register file, a replica per operand and lane at each layer that reads it, which
VAL/VALU passes write.

    L3   the pre-ALU's operands a, b, c (a pair's first instruction: encoding.py) = register +
         the pre-immediate on the one operand PRE.imm names
    L8   the fixed values: this warp's special-register table row and the CONST word SRC.word
         (the parameter bank, written by the prompt's CONST words), made exact
    L9   the terminator's condition register (TERM.cond) for the branch unit
    L10  the ALU's operands = register + immediate, plus the pre-ALU's result on the operands
         ROM0.fwd names (their register field is r0), and on the terminator's condition where
         ROM0.tfwd says, plus the fixed value SRC names (encoding.Fixed; register field r0)
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import INT_SCALE, Field
from qwengpu.machine.plan import L_EXEC, L_FIXED, L_IMM, L_PRE_REG, L_REG
from qwengpu.machine.wiring import view
from qwengpu.machine.words import SREG, SREG_FIELDS, SRC_WORD, TERM, WORD_BITS

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
    (the pre-ALU's result, readable from L_REG) + the fixed value SRC names; and the
    terminator's condition m.tcond."""
    c, L = m.c, L_REG
    abc = m.a, m.b, m.cc = _registers(m, L, "", [m.w0[q] for q in OPERANDS])
    for q, operands in enumerate(abc):
        fwd = view(m.w0["fwd"], q, q + 1)
        for l in range(isa.LANES):
            for i in range(32):
                G.add_exact(c, L, m.words[1 + q][i], {operands[l][i]: 1})     # 0 for a register operand
                G.add_exact(c, L, pre_r[l][i], {operands[l][i]: 1}, fwd)
    _condition(m, pre_r)
    _fixed(m, {"a": m.a, "b": m.b, "c": m.cc, "cond": m.tcond})
    for fld in (*m.pre_abc[0], *m.pre_abc[1], *m.pre_abc[2]):     # the pre-ALU has read them
        c.clear(fld, L)
    for done in (*pre_r, *(m.w0[q] for q in (*OPERANDS, "fwd", "tfwd")), *m.words[1:4], m.valu_lane, *m.ap_data):
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


def _fixed(m, targets: dict[str, list[Field]]) -> None:
    """The fixed values (encoding.Fixed): at L_FIXED this warp's special-register table row
    (m.sregs: its thread block's, its lanes' tids) and the CONST word SRC.word (m.param), made
    exact; at L_REG each into the operands (a field per lane) whose SRC flag (m.fixed) names it.
    The terminator's condition (a popcount: only whether it is 0 matters) takes a special register's
    bits, each counted once."""
    c, L = m.c, L_REG
    m.sregs = sr = c.field("sregs", WORD_BITS * len(SREG), L_FIXED)
    row = B.bits(m.f["WB"]) + B.bits(m.cta)
    for j in range(len(SREG)):
        bank = declare_bank(c, L_FIXED, f"sreg{j}", SREG_ROWS, WORD_BITS)
        B.write_bits(c, bank, B.bits(view(m.latch, 0, 6)), B.bits(m.staged), [m.put[f"SREG{j}"]])
        B.read_into(c, bank, row, sr.dims[WORD_BITS * j: WORD_BITS * (j + 1)], enable=[m.k["EXEC"]])
    m.param = c.field("param", WORD_BITS, L_FIXED)
    bank = declare_bank(c, L_FIXED, "param", isa.CONST_WORDS, WORD_BITS)
    B.write_bits(c, bank, B.bits(view(m.latch, 0, m.src_word.width)), B.bits(m.staged), [m.put["CONST"]])
    B.read_into(c, bank, B.bits(m.src_word), m.param.dims, enable=[m.k["EXEC"]])
    for fld in (sr, m.param):
        G.requantize(c, L_FIXED, fld)
    c.clear(m.src_word, L_FIXED + 1)

    def sreg_bits(r, lane) -> list[int | bool]:     # a dim per bit, or the bit itself when it is constant
        if r == isa.SReg.LANEID:
            return [bool(lane >> i & 1) for i in range(2)]
        if r == isa.SReg.WARPID:
            return list(m.f["WB"].dims)
        j, name = SREG_FIELDS[r]
        copy = lane if SREG[j][name].count > 1 else 0            # tid fields have a copy per lane
        return [sr[WORD_BITS * j + b] for b in SREG[j].bits(name, copy)]

    for q, lanes in targets.items():
        flags = m.fixed[q]
        for l, operand in enumerate(lanes):
            for r in isa.SReg:
                flag = flags[1 + int(r)][0]
                for i, bit in enumerate(sreg_bits(r, l)):
                    out = {operand[0] if q == "cond" else operand[i]: 1}
                    if bit is True:
                        G.relu(c, L, {flag: 1}, 0, out)
                    elif bit is not False:
                        G.relu(c, L, {flag: 1, bit: 1}, -1, out)
            if q != "cond":
                for i in range(WORD_BITS):
                    G.relu(c, L, {flags[SRC_WORD][0]: 1, m.param[i]: 1}, -1, {operand[i]: 1})
    for done in (sr, m.param, *(f for flags in m.fixed.values() for f in flags.values())):
        c.clear(done, L)             # read by this layer's MLP only
