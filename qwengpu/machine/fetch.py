"""ROM fetch and decode: the config register and the ROM (GDN heads, read at the pass's pc and slot:
word 0 of every slot and the pre-ALU's PRE word at L_ROM, TERM at L_STATUS, the pre-immediate at
L_PRE_REG, word 4 (SRC) at L_SRC, words 1-3, the immediates, at L_IMM where the ALU's operands
are read); the L_ROM MLP decodes word 0 into one flag per opcode in use, the space of a load or
store, the rounding mode of a rounded FPU op (fpu.ROUNDED_OPS: ROM0.mod, its isa.Rnd index), FSET's
comparison (ROM0.mod, its isa.FCmp index), and the
warp's initial mask, and the PRE word into the pre-ALU's op flags; the L_SRC MLP decodes SRC into
a flag per operand and fixed source. The TERM bank holds each pc's terminator;
the L_STATUS MLP sets the terminator's flag (op["JMP"/"BRC"/"BAR"/"EXIT"]) on the EXEC pass whose
slot is the one that runs it (TERM.slot: encoding.py), and 0 on every other pass.

Interface: `build_fetch(c, tokens, registers)` reads the token (its pc, slot, kind, PUT target)
and the staged word and latch a PUT writes the ROM with, and returns `Decoded`. Layers L_ROM to
L_IMM (plan.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import ALU_OPS
from qwengpu.machine.fpu import FPU_OPCODES, FSET_OPS, ROUNDED_OPS, ROUNDINGS
from qwengpu.machine.inputs import Registers, TokenInputs
from qwengpu.machine.plan import L_IMM, L_PRE_REG, L_ROM, L_SRC, L_STATUS
from qwengpu.machine.tokens import ROM_WORDS, SLOTS
from qwengpu.machine.warp import SHFL_MODES, VOTE_MODES
from qwengpu.machine.wiring import all_hold, flag_if, match, part, view
from qwengpu.machine.words import CONFIG, OPCODES, PC_BITS, PRE, PRE_SLOTS, ROM0, SPACES, SRC, SRC_WORD, TERM

TERMS = tuple(t.name for t in isa.Term)
OP_BITS = ROM0["op"].width
WORD_LAYERS = (L_ROM, L_IMM, L_IMM, L_IMM, L_SRC)     # where each ROM word is read
FIXED_OPERANDS = ("a", "b", "c", "cond")           # the SRC fields


@dataclass(frozen=True)
class Decoded:
    """The running pass's instruction, read from the ROM and decoded, and the config register."""
    config: Field                       # the launch's CONFIG word
    rom0: dict[str, Field]              # ROM word 0's fields (words.ROM0)
    imm: list[Field]                    # ROM words 1-3: the ALU's immediates, at L_IMM
    pre: Field                          # the pre-ALU's PRE word
    pre_fields: dict[str, Field]        # its fields (words.PRE)
    pre_imm: Field                      # the pre-ALU's immediate, at L_PRE_REG
    term: Field                         # the TERM word
    term_fields: dict[str, Field]       # its fields (words.TERM)
    src_word: Field                     # SRC.word: the CONST word a fixed operand reads
    fixed: dict[str, dict[int, Field]]  # operand (FIXED_OPERANDS) -> SRC value -> flag, from L_SRC + 1
    op: dict[str, Field]                # a flag per opcode in use, and per terminator (TERMS, at L_STATUS)
    alu_op: dict[str, Field]            # the ALU's op flags (LD, ST: ADD; ATOM: MOV)
    fpu_op: dict[str, Field]            # the FPU's op flags (fpu.FPU_OPS: FSET's by comparison), exact from L_ROM + 1
    fpu_rnd: dict[str, Field]           # the rounding mode, one-hot (fpu.ROUNDINGS) on a ROUNDED_OPS pass, else 0
    pre_op: dict[str, Field]            # the pre-ALU's op flags
    warp_op: dict[str, Field]           # SHFL and VOTE by mode ("SHFL.IDX", ...)
    exits: Field                        # a BRC's taken lanes exit (TERM.exits)
    rvalid: Field                       # the terminator has a reconvergence point (TERM.reconv is not its pc)
    ld_space: Field                     # one-hot: a load's space (a COPY loads from global)
    st_space: Field                     # one-hot: a store's or atomic's space
    has_result: Field                   # the instruction has a register result
    dst_nz: Field                       # its destination is not r0
    init_mask: Field                    # the running warp's initial mask (EXEC passes)


def build_fetch(c: Circuit, tokens: TokenInputs, registers: Registers) -> Decoded:
    """The config register, the ROM's read and the decoded flags."""
    f, rom = tokens.features, _Rom(c, tokens, registers)
    bank = declare_bank(c, L_ROM, "config", 1, 32)
    config = c.field("config", 32, L_ROM)
    B.write_bits(c, bank, tokens.zero, B.bits(registers.staged), [tokens.put["CONFIG"]])
    B.read_into(c, bank, tokens.zero, config.dims)
    # word 0 at L_ROM; the immediates at L_IMM, where the ALU's operands need them
    words = [rom.word(j, WORD_LAYERS[j]) for j in range(ROM_WORDS)]
    # the pre-ALU's instruction (PRE word at L_ROM, its immediate at L_PRE_REG, where its operands are read)
    pre = c.field("pre", PRE.width, L_ROM)
    pre_imm = c.field("pre.imm", 32, L_PRE_REG)
    for s in range(PRE_SLOTS):
        rom.read(f"PRE{s}.0", L_ROM, pre, f["SLOT"][s])
        rom.read(f"PRE{s}.1", L_PRE_REG, pre_imm, f["SLOT"][s])
    pre_fields = {name: part(pre, PRE, name) for name in PRE.fields}
    rom0 = {name: part(words[0], ROM0, name) for name in ROM0.fields}
    term = c.field("term", 32, L_STATUS)
    rom.read("TERM", L_STATUS, term, tokens.kind["EXEC"])
    term_fields = {name: part(term, TERM, name) for name in TERM.fields}
    flags = _decode(c, tokens, config, rom0, pre_fields)
    exits, rvalid = _decode_term(c, tokens, term_fields, flags["op"])
    fixed, src_word = _decode_src(c, words[4])
    for name in ("op", "dst", "space", "mod"):       # decoded, and kept by the pending writeback (L_STATUS)
        c.clear(rom0[name], L_PRE_REG)
    return Decoded(config=config, rom0=rom0, imm=words[1:4], pre=pre, pre_fields=pre_fields, pre_imm=pre_imm,
                   term=term, term_fields=term_fields, src_word=src_word, fixed=fixed, exits=exits, rvalid=rvalid,
                   **flags)


class _Rom:
    """The ROM's banks: a row per pc, which PUT(target) writes and EXEC passes read."""

    def __init__(self, c: Circuit, tokens: TokenInputs, registers: Registers):
        self.c, self.tokens, self.registers = c, tokens, registers

    def read(self, target: str, layer: int, word: Field, enable: int) -> None:
        """A bank that PUT(target) writes and passes with `enable` read into word."""
        c, tokens = self.c, self.tokens
        bank = declare_bank(c, layer, target.lower(), 1 << PC_BITS, 32)
        B.write_bits(c, bank, B.bits(view(self.registers.latch, 0, PC_BITS)), B.bits(self.registers.staged),
                     [tokens.put[target]])
        B.read_into(c, bank, B.bits(tokens.features["PC"]), word.dims, enable=[enable])

    def word(self, j: int, layer: int) -> Field:
        """Word j of the running pass's ROM slot, read at `layer`."""
        word = self.c.field(f"w{j}", 32, layer)
        for s in range(isa.BLOCK_SLOTS):
            self.read(f"ROM{s}.{j}", layer, word, self.tokens.features["SLOT"][s])
        return word


def _decode_term(c: Circuit, tokens: TokenInputs, term_fields: dict[str, Field],
                 op: dict[str, Field]) -> tuple[Field, Field]:
    """L_STATUS MLP: the terminator's flag (into op), 1 on the EXEC pass of the slot that runs it
    (TERM.slot); returns the flag beside BRC's that its taken lanes exit (TERM.exits), and whether
    it has a reconvergence point: TERM.reconv differs from the pass's pc (words.TERM)."""
    L, tw = L_STATUS, term_fields
    op_bits, slot_bits = TERM["op"].width, TERM["slot"].width
    exits = c.field("op.BRC.exits", 1, L)
    te, ke = match(tw["exits"], 1)
    for i, name in enumerate(TERMS):
        op[name] = c.field(f"op.{name}", 1, L)
        t, k0 = match(tw["op"], i)
        for s in range(SLOTS):       # SLOT is the pending writeback's on VAL/ST/AT passes: EXEC gates it
            t2, k2 = match(tw["slot"], s)
            conds = [(t, k0, op_bits), (t2, k2, slot_bits),
                     ({tokens.features["SLOT"][s]: 1, tokens.kind["EXEC"]: 1}, 0, 2)]
            flag_if(c, L, conds, {op[name][0]: 1})
            if name == "BRC":
                flag_if(c, L, conds + [(te, ke, 1)], {exits[0]: 1})
    rvalid = c.field("term.rvalid", 1, L)
    pc = tokens.features["PC"]
    apart = G.add_terms({tw["reconv"][i]: 1 << i for i in range(PC_BITS)}, {pc[i]: -(1 << i) for i in range(PC_BITS)})
    for sign in (1, -1):                 # reconv - pc >= 1 or pc - reconv >= 1
        G.step(c, L, {d: sign * k for d, k in apart.items()}, 1, {rvalid[0]: 1})
    return exits, rvalid


def _decode_src(c: Circuit, w4: Field) -> tuple[dict[str, dict[int, Field]], Field]:
    """L_SRC MLP: fixed[q][v], 1 when operand q (a, b, c, the terminator's condition) is fixed
    value v of SRC (1 + r: special register r; SRC_WORD: the CONST word SRC.word, returned too);
    the flags exact from L_SRC + 1."""
    fixed = {}
    for q in FIXED_OPERANDS:
        bits = part(w4, SRC, q)
        flags = fixed[q] = {v: c.field(f"fixed.{q}{v}", 1, L_SRC) for v in range(1, SRC_WORD + 1)}
        for v, fld in flags.items():
            G.relu(c, L_SRC, *all_hold(*match(bits, v), bits.width), {fld[0]: 1})
            G.requantize(c, L_SRC + 1, fld)
        c.clear(bits, L_SRC + 1)
    src_word = part(w4, SRC, "word")
    c.clear(view(w4, SRC.width, 32, "w4.tail"), L_SRC + 1)
    return fixed, src_word


def _decode(c: Circuit, tokens: TokenInputs, config: Field, rom0: dict[str, Field],
            pre_fields: dict[str, Field]) -> dict:
    """L_ROM MLP: one flag per instruction opcode in use, ALU op flags (LD/ST address = ADD), the
    FPU's and its rounding mode, the pre-ALU's, spaces, warp ops, the initial mask: Decoded's
    fields of these names."""
    L, k = L_ROM, tokens.kind
    names = list(ALU_OPS) + ["LD", "ST", "ATOM"] + [n for n in FPU_OPCODES if n != "FSET"]
    op = {n: c.field(f"op.{n}", 1, L) for n in names}
    for n in names:
        G.relu(c, L, *_is_op(rom0, n), {op[n][0]: 1})
    alu_op = {n: op[n] for n in ALU_OPS}
    fpu_op = {n: op[n] for n in FPU_OPCODES if n != "FSET"}
    # ROM0.mod holds the rounding mode's index in isa.Rnd and FSET's comparison's in isa.FCmp (encoding.instr_words)
    fpu_rnd = {m: c.field(f"rnd.{m}", 1, L) for m in ROUNDINGS}
    for n in ROUNDED_OPS:
        t, k0 = _is_op_terms(rom0, n)
        for m, fld in fpu_rnd.items():
            t2, k2 = match(rom0["mod"], list(isa.Rnd).index(isa.Rnd[m]))
            flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["mod"].width)], {fld[0]: 1})
    t, k0 = _is_op_terms(rom0, "FSET")
    for n, cmp in zip(FSET_OPS, isa.FCmp):
        fld = fpu_op[n] = c.field(f"op.{n}", 1, L)
        t2, k2 = match(rom0["mod"], list(isa.FCmp).index(cmp))
        flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["mod"].width)], {fld[0]: 1})
    for n, alias in (("LD", "ADD"), ("ST", "ADD"), ("ATOM", "MOV")):
        G.relu(c, L, *_is_op(rom0, n), {op[alias][0]: 1})
    # the pre-ALU's op flags (a pre slot holds only ALU ops; NOP: none is set)
    pre_op = {n: c.field(f"pre.{n}", 1, L) for n in ALU_OPS}
    for n, fld in pre_op.items():
        t, k0 = match(pre_fields["op"], OPCODES.index(n))
        G.relu(c, L, *all_hold(t, k0, OP_BITS), {fld[0]: 1})
    fset = [fpu_op[n] for n in FSET_OPS]
    for fld in [*op.values(), *fset, *fpu_rnd.values(), *pre_op.values(), pre_fields["fwd"], pre_fields["tfwd"],
                pre_fields["imm"]]:                       # exact flags: the ALU's and the FPU's gated units
        G.requantize(c, L + 1, fld)                       # multiply their error
    # loads and stores by space
    ld_space = c.field("ld_space", 3, L)
    st_space = c.field("st_space", 3, L)          # ST and ATOM
    for g in range(len(SPACES)):
        for name, out in (("LD", ld_space), ("ST", st_space), ("ATOM", st_space)):
            t, k0 = _is_op_terms(rom0, name)
            t2, k2 = match(rom0["space"], g)
            flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["space"].width)], {out[g]: 1})
    G.relu(c, L, {k["COPY"]: 1}, 0, {ld_space[0]: 1})     # a COPY pass loads from global
    has_result = c.field("has_result", 1, L)
    for n in list(ALU_OPS) + ["LD", "SHFL", "VOTE"] + list(FPU_OPCODES):
        G.relu(c, L, *_is_op(rom0, n), {has_result[0]: 1})
    warp_op = {}                           # SHFL / VOTE by mode
    for name, modes in (("SHFL", SHFL_MODES), ("VOTE", VOTE_MODES)):
        for i, mode in enumerate(modes):
            fld = warp_op[f"{name}.{mode}"] = c.field(f"op.{name}.{mode}", 1, L)
            t, k0 = _is_op_terms(rom0, name)
            t2, k2 = match(rom0["mod"], i)
            flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["mod"].width)], {fld[0]: 1})
    dst_nz = c.field("dst_nz", 1, L)
    G.step(c, L, {d: 1 for d in rom0["dst"].dims}, 1, {dst_nz[0]: 1})
    # this warp's initial mask (the depth-0 stack entry), on EXEC passes
    init_mask = c.field("init_mask", 4, L)
    for w in range(isa.MAX_WARPS):
        for i, bit in enumerate(CONFIG.bits("mask", w)):
            G.relu(c, L, {config[bit]: 1, tokens.features["W"][w]: 1}, -1, {init_mask[i]: 1})
    return dict(op=op, alu_op=alu_op, fpu_op=fpu_op, fpu_rnd=fpu_rnd, pre_op=pre_op, warp_op=warp_op,
                ld_space=ld_space, st_space=st_space, has_result=has_result, dst_nz=dst_nz, init_mask=init_mask)


def _is_op_terms(rom0: dict[str, Field], name: str):
    return match(rom0["op"], OPCODES.index(name))


def _is_op(rom0: dict[str, Field], name: str):
    t, k0 = _is_op_terms(rom0, name)
    return all_hold(t, k0, OP_BITS)      # a neuron's terms and bias: 1 exactly on a match of every bit
