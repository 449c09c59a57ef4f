"""Operands: the register file, a replica per operand and lane at each layer that reads it, which
VAL/VALU passes write.

    L_PRE_REG  the pre-ALU's operands a, b, c (a pair's first instruction: encoding.py) = register
               + the pre-immediate on the one operand PRE.imm names
    L_FIXED    the fixed values: this warp's special-register table row and the CONST word SRC.word
               (the parameter bank, written by the prompt's CONST words), made exact
    L_IMM      the terminator's condition register (TERM.cond) for the branch unit
    L_REG      the ALU's operands = register + immediate, plus the pre-ALU's result on the operands
               PRE.fwd names (their register field is r0), and on the terminator's condition where
               PRE.tfwd says, plus the fixed value SRC names (encoding.Fixed; register field r0)

Interface: `build_pre_operands(c, tokens, registers, decoded, status)` returns the pre-ALU's
`Operands`; `build_alu_operands(..., pre, pre_result)` (after the pre-ALU: execute.py) the ALU's,
with the terminator's condition. Both read the register file's write side (the staged word or a
lane's VALA/VALQ/VALP word, at the pending warp's destination: Registers, WarpStatus) and the
instruction's register fields (Decoded). Read-once fields are cleared by L_EXEC.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import INT_SCALE, Field
from qwengpu.machine.alu import LaneResults
from qwengpu.machine.fetch import Decoded
from qwengpu.machine.inputs import Registers, TokenInputs
from qwengpu.machine.plan import L_EXEC, L_FIXED, L_IMM, L_PRE_REG, L_REG, L_SRC
from qwengpu.machine.status import WarpStatus
from qwengpu.machine.wiring import flag_if, match, view
from qwengpu.machine.words import SREG, SREG_BLOCK_WORD, SREG_FIELDS, SRC_WORD, TERM, WARP_BITS, WORD_BITS

BLOCK_ROWS = 128        # the special-register table's block word: a bank of 128 thread blocks' rows
BLOCK_BANKS = 2         # ... and the banks: thread blocks 0-127 and 128-255 (CTA bit 7 picks)
REG_ROWS = 128          # a lane's register file: a row per warp (WB) and register (5 bits)
OPERANDS = "abc"
FORWARDING = ("fwd", "tfwd")   # PRE's fields for the main instruction: which operands take the pre-ALU's result


@dataclass(frozen=True)
class Operands:
    """Operands a, b, c of an ALU (a 32-bit field per lane, exact)."""
    a: list[Field]
    b: list[Field]
    cc: list[Field]


@dataclass(frozen=True)
class AluOperands(Operands):
    """The ALU's operands, and the terminator's condition beside them."""
    cond: list[Field]          # per lane, TERM.cond's popcount (an int field): only whether it is 0 matters


class _RegisterFile:
    """The lanes' register files, a replica per reader: VAL, VALU, VALA, VALQ and VALP passes write
    every replica (the staged word, or the lane's VALA/VALQ/VALP word) at the pending destination."""

    def __init__(self, c: Circuit, tokens: TokenInputs, registers: Registers, status: WarpStatus):
        self.c, self.tokens, self.registers, self.status = c, tokens, registers, status

    def replica(self, layer: int, name: str, lane: int) -> B.Bank:
        registers, status = self.registers, self.status
        bank = declare_bank(self.c, layer, name, REG_ROWS, 32)
        B.write_bits(self.c, bank, B.bits(self.tokens.features["WB"]) + B.bits(status.pdst),
                     B.bits(registers.staged, registers.ap_data[lane]),
                     [registers.val_lane[lane], status.valu_lane[lane]])
        return bank

    def read(self, layer: int, tag: str, names: list[Field]) -> list[list[Field]]:
        """Operands a, b, c (a field per lane, requantized) = this warp's registers that the
        instruction's fields `names` name, read at `layer`."""
        c, wb = self.c, self.tokens.features["WB"]
        out = []
        for q, name in zip(OPERANDS, names):
            key = B.bits(wb) + B.bits(name)
            lanes = [c.field(f"{tag}{q}{l}", 32, layer) for l in range(isa.LANES)]
            for l, fld in enumerate(lanes):
                B.read_into(c, self.replica(layer, f"reg.{tag}{q}{l}", l), key, fld.dims,
                            enable=[self.tokens.kind["EXEC"]])
                G.requantize(c, layer, fld)         # exact operands: see gadgets.requantize
            out.append(lanes)
        return out


def build_pre_operands(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded,
                       status: WarpStatus) -> Operands:
    """The pre-ALU's operands at L_PRE_REG: register + the pre-immediate where PRE.imm says."""
    L, pw = L_PRE_REG, decoded.pre_fields
    abc = _RegisterFile(c, tokens, registers, status).read(L, "pre.", [pw[q] for q in OPERANDS])
    for q, operands in enumerate(abc):
        for l in range(isa.LANES):
            for i in range(32):
                G.add_exact(c, L, decoded.pre_imm[i], {operands[l][i]: 1}, view(pw["imm"], q, q + 1))
    for name, fld in pw.items():
        if name not in FORWARDING:          # the main instruction's: read at L_REG
            c.clear(fld, L + 1)
    c.clear(decoded.pre_imm, L + 1)
    return Operands(*abc)


def build_alu_operands(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded,
                       status: WarpStatus, pre: Operands, pre_result: LaneResults) -> AluOperands:
    """The ALU's operands at L_REG: register + immediate + the forwarded pre-ALU's result (readable
    from L_REG) + the fixed value SRC names; and the terminator's condition."""
    L, w0, pre_r = L_REG, decoded.rom0, pre_result.r
    fwd_all, tfwd = (decoded.pre_fields[name] for name in FORWARDING)
    register_file = _RegisterFile(c, tokens, registers, status)
    abc = register_file.read(L, "", [w0[q] for q in OPERANDS])
    for q, operands in enumerate(abc):
        fwd = view(fwd_all, q, q + 1)
        for l in range(isa.LANES):
            for i in range(32):
                G.add_exact(c, L, decoded.imm[q][i], {operands[l][i]: 1})     # 0 for a register operand
                G.add_exact(c, L, pre_r[l][i], {operands[l][i]: 1}, fwd)
    cond = _condition(c, tokens, decoded, register_file, pre_r, tfwd)
    _fixed(c, tokens, registers, decoded, dict(zip(("a", "b", "c", "cond"), (*abc, cond))))
    for fld in (*pre.a, *pre.b, *pre.cc):     # the pre-ALU has read them
        c.clear(fld, L)
    for done in (*pre_r, *(w0[q] for q in OPERANDS), fwd_all, tfwd, *decoded.imm, status.valu_lane,
                 *registers.ap_data):
        c.clear(done, L_EXEC)
    return AluOperands(*abc, cond=cond)


def _condition(c: Circuit, tokens: TokenInputs, decoded: Decoded, register_file: _RegisterFile,
               pre_r: list[Field], tfwd: Field) -> list[Field]:
    """Per lane, the popcount of the terminator's condition (only whether it is 0 matters), from a
    register-file replica at L_IMM (TERM.cond; r0 when forwarded), plus the pre-ALU's result where
    PRE.tfwd says, for the branch unit at L_BRANCH."""
    tcond = [c.field(f"tcond{l}", 1, L_IMM, kind="int", vmax=32) for l in range(isa.LANES)]
    key = B.bits(tokens.features["WB"]) + B.bits(decoded.term_fields["cond"])
    for l, fld in enumerate(tcond):
        bank = register_file.replica(L_IMM, f"reg.t{l}", l)
        B.read_into(c, bank, key, fld.dims * 32, enable=[tokens.kind["EXEC"]])    # every bit into one dim
        c.layer(L_IMM).out[fld[0], :] *= INT_SCALE                           # an int field holds value * INT_SCALE
        for b in pre_r[l].dims:
            G.add_exact(c, L_REG, b, {fld[0]: 1}, tfwd)
    # the TERM word's kind, slot and condition register are read (its targets stay for the branch unit)
    c.clear(view(decoded.term, TERM["op"].offset, WORD_BITS, "term.tail"), L_IMM + 1)
    return tcond


def _fixed(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded,
           targets: dict[str, list[Field]]) -> None:
    """The fixed values (encoding.Fixed), each into the operands (a field per lane) whose SRC flag
    (Decoded.fixed) names it, at L_REG. The terminator's condition (a popcount: only whether it is
    0 matters) takes a special register's bits, each counted once."""
    sr, param = _fixed_values(c, tokens, registers, decoded)
    wb, L = tokens.features["WB"], L_REG

    def sreg_bits(r, lane) -> list[int | bool]:     # a dim per bit, or the bit itself when it is constant
        if r == isa.SReg.LANEID:
            return [bool(lane >> i & 1) for i in range(2)]
        if r == isa.SReg.WARPID:
            return list(wb.dims)
        j, name = SREG_FIELDS[r]
        copy = lane if SREG[j][name].count > 1 else 0            # tid fields have a copy per lane
        return [sr[WORD_BITS * j + b] for b in SREG[j].bits(name, copy)]

    for q, lanes in targets.items():
        flags = decoded.fixed[q]
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
                    G.relu(c, L, {flags[SRC_WORD][0]: 1, param[i]: 1}, -1, {operand[i]: 1})
    for done in (sr, param, *(f for flags in decoded.fixed.values() for f in flags.values())):
        c.clear(done, L)             # read by this layer's MLP only


def _block_rows(c: Circuit, tokens: TokenInputs, registers: Registers, out) -> None:
    """The special-register table's block word into `out` at L_FIXED: bank b holds thread blocks
    128 b .. 128 b + 127, a row each; a PUT writes the bank its latch's bit 7 names, an EXEC reads
    the one its thread block's (registers.cta) bit 7 names (flags from L_SRC's MLP)."""
    row_bits = BLOCK_ROWS.bit_length() - 1
    put, exec_ = tokens.put[f"SREG{SREG_BLOCK_WORD}"], tokens.kind["EXEC"]
    writes, reads = c.field("sreg.bw", BLOCK_BANKS, L_SRC), c.field("sreg.br", BLOCK_BANKS, L_SRC)
    for b in range(BLOCK_BANKS):
        flag_if(c, L_SRC, [({put: 1}, 0, 1), (*match(view(registers.latch, row_bits, row_bits + 1), b), 1)],
                {writes[b]: 1})
        flag_if(c, L_SRC, [({exec_: 1}, 0, 1), (*match(view(registers.cta, row_bits, row_bits + 1), b), 1)],
                {reads[b]: 1})
        bank = declare_bank(c, L_FIXED, f"sreg{SREG_BLOCK_WORD}.{b}", BLOCK_ROWS, WORD_BITS)
        B.write_bits(c, bank, B.bits(view(registers.latch, 0, row_bits)), B.bits(registers.staged), [writes[b]])
        B.read_into(c, bank, B.bits(view(registers.cta, 0, row_bits)), out, enable=[reads[b]])
    for flags in (writes, reads):
        c.clear(flags, L_FIXED)


def _fixed_values(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded) -> tuple[Field, Field]:
    """At L_FIXED, made exact: this warp's rows of the special-register table (its lanes' tids and
    the launch's shape, a row per warp; its thread block's indices, a row per block) and the
    CONST word SRC.word (the parameter bank)."""
    exec_, latch, staged = tokens.kind["EXEC"], registers.latch, registers.staged
    sr = c.field("sregs", WORD_BITS * len(SREG), L_FIXED)
    for j in range(len(SREG)):
        out = sr.dims[WORD_BITS * j: WORD_BITS * (j + 1)]
        if j == SREG_BLOCK_WORD:
            _block_rows(c, tokens, registers, out)
            continue
        bank = declare_bank(c, L_FIXED, f"sreg{j}", isa.MAX_WARPS, WORD_BITS)
        B.write_bits(c, bank, B.bits(view(latch, 0, WARP_BITS)), B.bits(staged), [tokens.put[f"SREG{j}"]])
        B.read_into(c, bank, B.bits(tokens.features["WB"]), out, enable=[exec_])
    param = c.field("param", WORD_BITS, L_FIXED)
    bank = declare_bank(c, L_FIXED, "param", isa.LANE_CONST_WORDS, WORD_BITS)
    B.write_bits(c, bank, B.bits(view(latch, 0, decoded.src_word.width)), B.bits(staged), [tokens.put["CONST"]])
    B.read_into(c, bank, B.bits(decoded.src_word), param.dims, enable=[exec_])
    for fld in (sr, param):
        G.requantize(c, L_FIXED, fld)
    c.clear(decoded.src_word, L_FIXED + 1)
    return sr, param
