"""ROM fetch and decode: the config register and the ROM (GDN heads, read at the pass's pc and slot:
word 0 of every slot and the pre-ALU's PRE word at L1, TERM at L2, the pre-immediate at L3, word
4 (SRC) at L7, words 1-3, the immediates, at L9 where the ALU's operands are read); the L1 MLP
decodes word 0 into one flag per opcode in use, the space of a load or store, and the warp's
initial mask, and the PRE word into the pre-ALU's op flags; the L7 MLP decodes SRC into a flag
per operand and fixed source (m.fixed). The TERM bank holds each pc's
terminator; the L2 MLP sets the terminator's flag (m.op["JMP"/"BRC"/"BAR"/"EXIT"]) on the EXEC
pass whose slot is the one that runs it (TERM.slot: encoding.py), and 0 on every other pass."""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.machine.alu import ALU_OPS
from qwengpu.machine.plan import L_IMM, L_PRE_REG, L_ROM, L_SRC, L_STATUS
from qwengpu.machine.tokens import ROM_WORDS, SLOTS
from qwengpu.machine.warp import SHFL_MODES, VOTE_MODES
from qwengpu.machine.wiring import all_hold, flag_if, match, part, view
from qwengpu.machine.words import CONFIG, OPCODES, PC_BITS, PRE, PRE_SLOTS, ROM0, SPACES, SRC, SRC_WORD, TERM

TERMS = tuple(t.name for t in isa.Term)
OP_BITS = ROM0["op"].width
WORD_LAYERS = (L_ROM, L_IMM, L_IMM, L_IMM, L_SRC)     # where each ROM word is read
FIXED_OPERANDS = ("a", "b", "c", "cond")           # the SRC fields


def build_fetch(m) -> None:
    """Adds the config register, the ROM's read and the decoded flags to machine m."""
    c, f = m.c, m.f
    config = declare_bank(c, L_ROM, "config", 1, 32)
    m.config = c.field("config", 32, L_ROM)
    B.write_bits(c, config, m.zero, B.bits(m.staged), [m.put["CONFIG"]])
    B.read_into(c, config, m.zero, m.config.dims)
    # word 0 at L_ROM; the immediates at L_IMM, where the ALU's operands need them
    m.words = [_rom_word(m, j, WORD_LAYERS[j]) for j in range(ROM_WORDS)]
    # the pre-ALU's instruction (PRE word at L1, its immediate at L_PRE_REG, where its operands are read)
    m.pre = c.field("pre", PRE.width, L_ROM)
    m.pre_imm = c.field("pre.imm", 32, L_PRE_REG)
    for s in range(PRE_SLOTS):
        _rom(m, f"PRE{s}.0", L_ROM, m.pre, f["SLOT"][s])
        _rom(m, f"PRE{s}.1", L_PRE_REG, m.pre_imm, f["SLOT"][s])
    m.pw = {name: part(m.pre, PRE, name) for name in PRE.fields}
    w0 = m.words[0]
    m.w0 = {name: part(w0, ROM0, name) for name in ROM0.fields}
    m.term = term = c.field("term", 32, L_STATUS)
    _rom(m, "TERM", L_STATUS, term, m.k["EXEC"])
    m.tw = {name: part(term, TERM, name) for name in TERM.fields}
    _decode(m)
    _decode_term(m)
    _decode_src(m)
    for name in ("op", "dst", "space", "mod"):       # decoded, and kept by the pending writeback (L_STATUS)
        c.clear(m.w0[name], L_PRE_REG)


def _rom(m, target: str, layer: int, word, enable) -> None:
    """A ROM bank (a row per pc) that PUT(target) writes and EXEC passes with `enable` read into word."""
    c = m.c
    bank = declare_bank(c, layer, target.lower(), 1 << PC_BITS, 32)
    B.write_bits(c, bank, B.bits(view(m.latch, 0, PC_BITS)), B.bits(m.staged), [m.put[target]])
    B.read_into(c, bank, B.bits(m.f["PC"]), word.dims, enable=[enable])


def _rom_word(m, j: int, layer: int):
    """Word j of the running pass's ROM slot, read at `layer`."""
    word = m.c.field(f"w{j}", 32, layer)
    for s in range(isa.BLOCK_SLOTS):
        _rom(m, f"ROM{s}.{j}", layer, word, m.f["SLOT"][s])
    return word


def _decode_term(m):
    """L2 MLP: the terminator's flag, 1 on the EXEC pass of the slot that runs it (TERM.slot), and
    m.exits beside BRC's when its taken lanes exit (TERM.exits)."""
    c, L = m.c, L_STATUS
    op_bits, slot_bits = TERM["op"].width, TERM["slot"].width
    m.exits = c.field("op.BRC.exits", 1, L)
    te, ke = match(m.tw["exits"], 1)
    for i, name in enumerate(TERMS):
        m.op[name] = c.field(f"op.{name}", 1, L)
        t, k0 = match(m.tw["op"], i)
        for s in range(SLOTS):       # SLOT is the pending writeback's on VAL/ST/AT passes: EXEC gates it
            t2, k2 = match(m.tw["slot"], s)
            conds = [(t, k0, op_bits), (t2, k2, slot_bits), ({m.f["SLOT"][s]: 1, m.k["EXEC"]: 1}, 0, 2)]
            flag_if(c, L, conds, {m.op[name][0]: 1})
            if name == "BRC":
                flag_if(c, L, conds + [(te, ke, 1)], {m.exits[0]: 1})


def _decode_src(m):
    """L_SRC MLP: m.fixed[q][v], 1 when operand q (a, b, c, the terminator's condition) is fixed
    value v of SRC (1 + r: special register r; SRC_WORD: the CONST word m.src_word); the flags
    exact from L_SRC + 1."""
    c, w4 = m.c, m.words[4]
    m.fixed = {}
    for q in FIXED_OPERANDS:
        bits = part(w4, SRC, q)
        flags = m.fixed[q] = {v: c.field(f"fixed.{q}{v}", 1, L_SRC) for v in range(1, SRC_WORD + 1)}
        for v, fld in flags.items():
            G.relu(c, L_SRC, *all_hold(*match(bits, v), bits.width), {fld[0]: 1})
            G.requantize(c, L_SRC + 1, fld)
        c.clear(bits, L_SRC + 1)
    m.src_word = part(w4, SRC, "word")
    c.clear(view(w4, SRC.width, 32, "w4.tail"), L_SRC + 1)


def _decode(m):
    """L1 MLP: one flag per instruction opcode in use, ALU op flags (LD/ST address = ADD)."""
    c, L = m.c, L_ROM
    names = list(ALU_OPS) + ["LD", "ST", "ATOM"]
    m.op = {n: c.field(f"op.{n}", 1, L) for n in names}
    for n in names:
        G.relu(c, L, *_is_op(m, n), {m.op[n][0]: 1})
    m.alu_op = {n: m.op[n] for n in ALU_OPS}
    for n, alias in (("LD", "ADD"), ("ST", "ADD"), ("ATOM", "MOV")):
        G.relu(c, L, *_is_op(m, n), {m.op[alias][0]: 1})
    # the pre-ALU's op flags (a pre slot holds only ALU ops; NOP: none is set)
    m.pre_op = {n: c.field(f"pre.{n}", 1, L) for n in ALU_OPS}
    for n, fld in m.pre_op.items():
        t, k0 = match(m.pw["op"], OPCODES.index(n))
        G.relu(c, L, *all_hold(t, k0, OP_BITS), {fld[0]: 1})
    for fld in [*m.op.values(), *m.pre_op.values(), m.w0["fwd"], m.w0["tfwd"], m.pw["imm"]]:   # exact flags: the ALU's gated units
        G.requantize(c, L + 1, fld)                                 # multiply their error
    # loads and stores by space
    m.ld_space = c.field("ld_space", 3, L)
    m.st_space = c.field("st_space", 3, L)          # ST and ATOM
    for g in range(len(SPACES)):
        for name, out in (("LD", m.ld_space), ("ST", m.st_space), ("ATOM", m.st_space)):
            t, k0 = _is_op_terms(m, name)
            t2, k2 = match(m.w0["space"], g)
            flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["space"].width)], {out[g]: 1})
    G.relu(c, L, {m.k["COPY"]: 1}, 0, {m.ld_space[0]: 1})     # a COPY pass loads from global
    m.has_result = c.field("has_result", 1, L)
    for n in list(ALU_OPS) + ["LD", "SHFL", "VOTE"]:
        G.relu(c, L, *_is_op(m, n), {m.has_result[0]: 1})
    m.warp_op = {}                           # SHFL / VOTE by mode
    for name, modes in (("SHFL", SHFL_MODES), ("VOTE", VOTE_MODES)):
        for i, mode in enumerate(modes):
            fld = m.warp_op[f"{name}.{mode}"] = c.field(f"op.{name}.{mode}", 1, L)
            t, k0 = _is_op_terms(m, name)
            t2, k2 = match(m.w0["mod"], i)
            flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["mod"].width)], {fld[0]: 1})
    m.dst_nz = c.field("dst_nz", 1, L)
    G.step(c, L, {d: 1 for d in m.w0["dst"].dims}, 1, {m.dst_nz[0]: 1})
    # this warp's initial mask (the depth-0 stack entry), on EXEC passes
    m.init_mask = c.field("init_mask", 4, L)
    for w in range(isa.MAX_WARPS):
        for i, bit in enumerate(CONFIG.bits("mask", w)):
            G.relu(c, L, {m.config[bit]: 1, m.f["W"][w]: 1}, -1, {m.init_mask[i]: 1})


def _is_op_terms(m, name):
    return match(m.w0["op"], OPCODES.index(name))


def _is_op(m, name):
    t, k0 = _is_op_terms(m, name)
    return all_hold(t, k0, OP_BITS)      # a neuron's terms and bias: 1 exactly on a match of every bit
