"""The machine: every stage of docs/machine.md compiled into one circuit.

The build runs the stages in layer order (docs/machine.md, "Layer map", has the table):
registers written by tokens (L0), ROM fetch and decode (L1-L2), warp status and pending
writeback (L2), operands from the register file (L3), ALU + warp unit + SIMT control +
scheduler (L4-L9), store queue and memory (Lq..Lq+3), result/control queues, the atomic
unit and its queue, then the next-token logic and output code (emit.py). A GDN part reads
its layer's input; the layer's MLP sees what the GDN added. Registers and queues whose value
has several exclusive sources (a PUT or an ST writes memory) sum them (circuit.memory.bits).
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from qwengpu import isa
from qwengpu.errors import MachineLimitError
from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit.host import HostSpec, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import Field
from qwengpu.circuit.weights import CircuitWeights
from qwengpu.machine.alu import ALU_OPS, build_alu
from qwengpu.machine.warp import SHFL_MODES, VOTE_MODES, build_warp
from qwengpu.machine.tokens import FEATURES, KINDS, PUT_TARGETS, SLOTS, Vocab
from qwengpu.machine.words import (CONFIG, COPY0, COPYROW, CT1, CT2, CTA_BITS, GROUP_BITS, OPCODES, PARTS, PC_BITS,
                                   ROM0, ROM3, SPACES, SREG, SREG_FIELDS, STATUS, TID_BITS, WARP_BITS, WORD_BITS, Word)

L_IN, L_ROM, L_STATUS, L_REG, L_EXEC = 0, 1, 2, 3, 4
ROW_BITS = 7                                   # 128 rows per GDN head
# each space's word address bits, as its banks hold it: global memory is 8 heads of 128 rows
# (GROUPS), shared memory 2 (SHARED_GROUPS), CONST 1
ADDRESS_BITS = {isa.Space.GLOBAL: 10, isa.Space.SHARED: 8, isa.Space.CONST: 7}
GA, SA = ADDRESS_BITS[isa.Space.GLOBAL], ADDRESS_BITS[isa.Space.SHARED]      # word address bits
GROUPS, SHARED_GROUPS = 1 << GA - ROW_BITS, 1 << SA - ROW_BITS
TERMS = tuple(t.name for t in isa.Term)
OP_BITS = ROM0["op"].width

SREG_ROWS = 64          # the special-register table: a row per warp (WB, 2 bits) and thread block (4 bits)
REG_ROWS = 64           # a lane's register file: a row per warp (WB) and register (4 bits)


def check_limits() -> None:
    """MachineLimitError naming the first isa limit the circuit cannot follow, its value and what
    the machine supports. isa is read at call time; what words.py, tokens.py and this module
    derived from it (field widths, SLOTS, LATCH_BITS, GROUPS) was fixed when they were imported,
    so a limit changed later is judged against those. The vocabulary (tokens.all_tokens) follows
    MAX_GRID_BLOCKS and ROM_BLOCKS at build time: a smaller limit leaves tokens out."""
    for name, allowed, why in _supported_limits():
        value = getattr(isa, name)
        if value not in allowed:
            can = f"exactly {allowed.start}" if len(allowed) == 1 else f"{allowed.start}..{allowed.stop - 1}"
            raise MachineLimitError(f"isa.{name} = {value}, but the machine supports {can}: {why}")


def _supported_limits() -> list[tuple[str, range, str]]:
    """(isa constant, the values the circuit can follow, why)."""
    def exactly(n):
        return range(n, n + 1)

    def upto(*bounds):
        return range(1, min(bounds) + 1)

    regs, blocks = REG_ROWS >> WARP_BITS, SREG_ROWS >> WARP_BITS        # per warp
    reg_bits, target_bits = ROM0["dst"].width, ROM3["target"].width
    return [
        ("LANES", exactly(4), "every per-lane unit, bank replica and lane mask is built for 4 lanes"),
        ("MAX_WARPS", exactly(4), "the scheduler, its round-robin turn and the warp fields are built for 4 warps"),
        ("MAX_BLOCK_THREADS", upto(4 * 4, 1 << TID_BITS),
         f"a thread block is at most 4 warps of 4 lanes, its thread indices {TID_BITS}-bit fields of SREG0..1"),
        ("NUM_REGS", upto(regs, 1 << reg_bits),
         f"the register file has rows for {regs} registers per warp, ROM words name them in {reg_bits} bits"),
        ("MAX_GRID_BLOCKS", upto(1 << CTA_BITS, blocks),
         f"thread block indices are {CTA_BITS}-bit fields, the special-register table has rows for {blocks}"),
        ("ROM_BLOCKS", upto(1 << PC_BITS, 1 << ROW_BITS, 1 << target_bits),
         f"pcs are {PC_BITS}-bit fields (the ROM has a row for each), branch targets {target_bits}-bit fields "
         f"of ROM word 3, and a bank has at most {1 << ROW_BITS} rows"),
        ("BLOCK_SLOTS", exactly(SLOTS - 1),
         "the ROM's slots and the EXEC slot field were sized when qwengpu.machine.tokens was imported"),
    ] + [(f"{space.name}_WORDS", exactly(1 << bits),
          f"{space.value} memory's banks hold {1 << bits} words, its fault check bounds {bits}-bit word addresses")
         for space, bits in ADDRESS_BITS.items()]


def view(field: Field, lo: int, hi: int, name: str = "") -> Field:
    return Field(name or f"{field.name}[{lo}:{hi}]", field.dims[lo:hi], field.kind, field.born)


def part(field: Field, word: Word, name: str, i: int = 0) -> Field:
    """Copy i of field `name` of the packed word that `field` holds (words.py)."""
    bits = word.bits(name, i)
    return view(field, bits.start, bits.stop, f"{field.name}.{name}")


def match(bits: Field, value: int) -> tuple[dict[int, int], int]:
    """Terms and constant of sum_j (bit_j == value_j): equals len(bits) exactly on a match."""
    terms, const = {}, 0
    for j, d in enumerate(bits.dims):
        if value >> j & 1:
            terms[d] = 1
        else:
            terms[d] = -1
            const += 1
    return terms, const


def flag_if(c: Circuit, at: int, conds: list[tuple[dict[int, int], int, int]], out: dict[int, float]) -> None:
    """out += [every (terms, const, need) holds: sum(terms) + const == need] (each sum <= need)."""
    terms, const, need = {}, 0, 0
    for t, k, n in conds:
        terms = G.add_terms(terms, t)
        const, need = const + k, need + n
    G.relu(c, at, terms, const - need + 1, out)


@dataclass
class Status:
    pc: Field
    mask: Field
    sp: Field
    alive: Field
    phase: Field
    wait: Field

    @classmethod
    def of(cls, field: Field) -> "Status":
        return cls(**{name: part(field, STATUS, name) for name in STATUS.fields})


class Machine:
    """The compiled machine for one host shape: circuit, vocabulary, and where state lives."""

    def __init__(self, host: HostSpec, width: int | None = None):
        check_limits()
        self.host = host
        self.vocab = Vocab()
        self.c = c = Circuit(host, width or circuit_width(host, 6000, limit=8192))
        self.f = {name: c.input(name, w) for name, w in FEATURES.items()}
        self.zero = [[c.input("zero", 1)[0]]]          # an always-0 dim: the row-0 address
        self.k = {name: self.f["kind"][i] for i, name in enumerate(KINDS)}
        self.put = {name: self.f["PT"][i] for i, name in enumerate(PUT_TARGETS)}
        self._registers()
        self._fetch()
        self._status_and_pending()
        self._operands()
        self._execute()
        self._copy_out()
        self._memory()
        self._queues()
        self._atomic()
        self._emit()

    # ---- L0: registers written by tokens ------------------------------------------------------------
    def _registers(self):
        c, f, k = self.c, self.f, self.k
        self.staged = c.field("staged", 32, L_IN)
        for j, bits in enumerate(PARTS):
            bank = B.register(c, L_IN, f"stage{j}", len(bits))
            B.write_bits(c, bank, self.zero, B.bits(view(f["SD"], bits.start, bits.stop)), [f["SE"][j]])
            B.read_into(c, bank, self.zero, self.staged.dims[bits.start: bits.stop],
                        enable=[k["PUT"], k["VAL"], k["VALU"], k["AW"]])
        self.latch = self._register("latch", f["V"], k["LATCH"], [k["PUT"]])
        self.cur = self._register("cur", f["WB"], k["EXEC"], [k["CT1"], k["CT2"]])
        self.cta = self._register("cta", f["CTA"], k["CTA"], None)
        # L0 MLP: per-lane enables
        self.val_lane = c.field("val_lane", 4, L_IN)
        self.q_addr = c.field("q_addr", 4, L_IN)     # store queue lane reads: ST, AT, AW passes
        self.q_data = c.field("q_data", 4, L_IN)     # ST, AT
        self.q_b = c.field("q_b", 4, L_IN)           # AT
        # the warp that ended a block, one-hot: ct1h on its CT1 pass, cur1h on its CT2 pass
        self.ct1h, self.cur1h = c.field("ct1h", 4, L_IN), c.field("cur1h", 4, L_IN)
        for l in range(4):
            G.relu(c, L_IN, {f["LANE"][l]: 1, k["VAL"]: 1}, -1, {self.val_lane[l]: 1})
            G.relu(c, L_IN, {f["LANE"][l]: 1, k["ST"]: 1, k["AT"]: 1, k["AW"]: 1}, -1, {self.q_addr[l]: 1})
            G.relu(c, L_IN, {f["LANE"][l]: 1, k["ST"]: 1, k["AT"]: 1}, -1, {self.q_data[l]: 1})
            G.relu(c, L_IN, {f["LANE"][l]: 1, k["AT"]: 1}, -1, {self.q_b[l]: 1})
            t, k0 = match(self.cur, l)
            flag_if(c, L_IN, [(t, k0, 2), ({k["CT1"]: 1}, 0, 1)], {self.ct1h[l]: 1})
            flag_if(c, L_IN, [(t, k0, 2), ({k["CT2"]: 1}, 0, 1)], {self.cur1h[l]: 1})

    def _register(self, name, data: Field, write_en: int, read_en) -> Field:
        bank = B.register(self.c, L_IN, name, data.width)
        out = self.c.field(name, data.width, L_IN)
        B.write_bits(self.c, bank, self.zero, B.bits(data), [write_en])
        B.read_into(self.c, bank, self.zero, out.dims, enable=read_en)
        return out

    # ---- L1-L2: ROM fetch and decode -----------------------------------------------------------------
    def _fetch(self):
        c, f = self.c, self.f
        config = declare_bank(c, L_ROM, "config", 1, 32)
        self.config = c.field("config", 32, L_ROM)
        B.write_bits(c, config, self.zero, B.bits(self.staged), [self.put["CONFIG"]])
        B.read_into(c, config, self.zero, self.config.dims)
        self.words = []
        row = B.bits(view(self.latch, 0, PC_BITS))          # the ROM has a row per pc value
        for j in range(4):
            layer = L_ROM if j < 3 else L_STATUS      # GDN heads: L1 holds the config and 3 words per slot
            word = c.field(f"w{j}", 32, layer)
            for s in range(SLOTS):
                bank = declare_bank(c, layer, f"rom{s}.{j}", 1 << PC_BITS, 32)
                B.write_bits(c, bank, row, B.bits(self.staged), [self.put[f"ROM{s}.{j}"]])
                B.read_into(c, bank, B.bits(f["PC"]), word.dims, enable=[f["SLOT"][s]])
            self.words.append(word)
        w0 = self.words[0]
        self.w0 = {name: part(w0, ROM0, name) for name in ROM0.fields}
        self.tw = {name: view(self.words[3], f.offset, f.offset + f.width, f"term.{name}")
                   for name, f in ROM3.fields.items()}
        self._decode()

    def _decode(self):
        """L1 MLP: one flag per opcode in use, ALU op flags (LD/ST address = ADD, S2R = MOV)."""
        c, L = self.c, L_ROM
        names = list(ALU_OPS) + ["S2R", "LD", "ST", "ATOM"] + list(TERMS)
        self.op = {n: c.field(f"op.{n}", 1, L) for n in names}
        for n in names:
            G.relu(c, L, *self._is_op(n), {self.op[n][0]: 1})
        self.alu_op = {n: self.op[n] for n in ALU_OPS}
        for n, alias in (("LD", "ADD"), ("ST", "ADD"), ("S2R", "MOV"), ("ATOM", "MOV")):
            G.relu(c, L, *self._is_op(n), {self.op[alias][0]: 1})
        # loads and stores by space; S2R by special register
        self.ld_space = c.field("ld_space", 3, L)
        self.st_space = c.field("st_space", 3, L)          # ST and ATOM
        for g in range(len(SPACES)):
            for name, out in (("LD", self.ld_space), ("ST", self.st_space), ("ATOM", self.st_space)):
                t, k0 = self._is_op_terms(name)
                t2, k2 = match(self.w0["space"], g)
                flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["space"].width)], {out[g]: 1})
        G.relu(c, L, {self.k["COPY"]: 1}, 0, {self.ld_space[0]: 1})     # a COPY pass loads from global
        self.sreg = c.field("sreg", len(isa.SReg), L)
        for r in isa.SReg:
            t, k0 = self._is_op_terms("S2R")
            t2, k2 = match(self.w0["mod"], int(r))
            flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["mod"].width)], {self.sreg[int(r)]: 1})
        self.has_result = c.field("has_result", 1, L)
        for n in list(ALU_OPS) + ["S2R", "LD", "SHFL", "VOTE"]:
            G.relu(c, L, *self._is_op(n), {self.has_result[0]: 1})
        self.warp_op = {}                           # SHFL / VOTE by mode
        for name, modes in (("SHFL", SHFL_MODES), ("VOTE", VOTE_MODES)):
            for i, mode in enumerate(modes):
                fld = self.warp_op[f"{name}.{mode}"] = c.field(f"op.{name}.{mode}", 1, L)
                t, k0 = self._is_op_terms(name)
                t2, k2 = match(self.w0["mod"], i)
                flag_if(c, L, [(t, k0, OP_BITS), (t2, k2, ROM0["mod"].width)], {fld[0]: 1})
        self.dst_nz = c.field("dst_nz", 1, L)
        G.step(c, L, {d: 1 for d in self.w0["dst"].dims}, 1, {self.dst_nz[0]: 1})
        # this warp's initial mask (the depth-0 stack entry), on EXEC passes
        self.init_mask = c.field("init_mask", 4, L)
        for w in range(isa.MAX_WARPS):
            for i, bit in enumerate(CONFIG.bits("mask", w)):
                G.relu(c, L, {self.config[bit]: 1, self.f["W"][w]: 1}, -1, {self.init_mask[i]: 1})

    def _is_op_terms(self, name):
        return match(self.w0["op"], OPCODES.index(name))

    def _is_op(self, name):
        t, k0 = self._is_op_terms(name)
        return t, k0 - (OP_BITS - 1)     # relu(matches - (OP_BITS - 1)): 1 exactly on a match of every bit

    # ---- L2: warp status, pending writeback ------------------------------------------------------------
    def _status_and_pending(self):
        c, f, k, L = self.c, self.f, self.k, L_STATUS
        width = STATUS.width
        # L1 MLP: what a CTA pass writes into every warp's status (initial masks)
        masks = [bit for w in range(isa.MAX_WARPS) for bit in CONFIG.bits("mask", w)]
        self.init_all = c.field("init_all", len(masks), L_ROM)
        for i, bit in enumerate(masks):
            G.relu(c, L_ROM, {self.config[bit]: 1, k["CTA"]: 1}, -1, {self.init_all[i]: 1})
        self.status = []
        for w in range(isa.MAX_WARPS):      # two registers: CT1's half and CT2's, each written by its token
            init = view(self.init_all, isa.LANES * w, isa.LANES * (w + 1))
            out = c.field(f"status{w}", width, L)
            halves = ((CT1, B.bits(f["PC"]) + B.bits(f["MASK"], init) + B.bits(f["SP"]), self.ct1h[w]),
                      (CT2, B.bits(f["ALIVE"], init) + B.bits(f["PHASE"]) + B.bits(f["WAIT"]), self.cur1h[w]))
            lo = 0
            for word, data, written in halves:
                bank = B.register(c, L, f"status{w}.{word.name}", word.width)
                B.write_bits(c, bank, self.zero, data, [written, k["CTA"]])
                B.read_into(c, bank, self.zero, out.dims[lo: lo + word.width])
                lo += word.width
            self.status.append(Status.of(out))
        # MLP: the running warp's status (EXEC passes)
        cs = c.field("cur_status", width, L)
        for w, st in enumerate(self.status):
            for i, d in enumerate(sum((list(getattr(st, n).dims) for n in STATUS.fields), [])):
                G.relu(c, L, {d: 1, f["W"][w]: 1}, -1, {cs[i]: 1})
        self.cs = Status.of(cs)
        # pending writeback: what VAL and ST passes need of the EXEC pass before them
        self.pdst = c.field("pdst", 4, L)
        self.patom = c.field("patom", 6, L)        # the pending instruction is an ATOM, its dst != r0, its op
        data = (B.bits(f["WB"]) + B.bits(self.w0["dst"]) + B.bits(f["PC"]) + B.bits(f["SLOT"])
                + B.bits(self.op["ATOM"]) + B.bits(self.dst_nz) + B.bits(self.w0["mod"]))
        pend = B.register(c, L, "pending", len(data))
        B.write_bits(c, pend, self.zero, data, [k["EXEC"]])
        B.read_into(c, pend, self.zero, f["WB"].dims + self.pdst.dims + f["PC"].dims + f["SLOT"].dims + self.patom.dims,
               enable=[k["VAL"], k["VALU"], k["ST"], k["AT"], k["AW"], k["PART"]])
        self.has_wb = c.field("has_wb", 1, L)
        G.relu(c, L, {self.has_result[0]: 1, self.dst_nz[0]: 1}, -1, {self.has_wb[0]: 1})
        # a VALU pass writes every active lane of the pending warp: its status mask is the
        # EXEC pass's mask (a status changes only at block ends)
        self.valu_lane = c.field("valu_lane", isa.LANES, L)
        for w, st in enumerate(self.status):
            t, k0 = match(f["WB"], w)
            for l in range(isa.LANES):
                flag_if(c, L, [(t, k0, WARP_BITS), ({k["VALU"]: 1}, 0, 1), ({st.mask[l]: 1}, 0, 1)],
                        {self.valu_lane[l]: 1})

    # ---- L3: special registers, register file, operands ------------------------------------------------
    def _operands(self):
        c, f, k, L = self.c, self.f, self.k, L_REG
        srow = B.bits(f["WB"]) + B.bits(self.cta)
        self.sregs = c.field("sregs", WORD_BITS * len(SREG), L)
        for j in range(len(SREG)):
            bank = declare_bank(c, L, f"sreg{j}", SREG_ROWS, WORD_BITS)
            B.write_bits(c, bank, B.bits(view(self.latch, 0, 6)), B.bits(self.staged), [self.put[f"SREG{j}"]])
            B.read_into(c, bank, srow, self.sregs.dims[WORD_BITS * j: WORD_BITS * (j + 1)], enable=[self.op["S2R"][0]])
        wkey = B.bits(f["WB"]) + B.bits(self.pdst)
        self.a, self.b, self.cc = ([c.field(f"{q}{l}", 32, L) for l in range(4)] for q in "abc")
        imms = self.words[1:]
        for q, (regs, operands) in enumerate(zip("abc", (self.a, self.b, self.cc))):
            key = B.bits(f["WB"]) + B.bits(self.w0[regs])
            for l in range(4):
                bank = declare_bank(c, L, f"reg.{regs}{l}", REG_ROWS, 32)
                B.write_bits(c, bank, wkey, B.bits(self.staged), [self.val_lane[l], self.valu_lane[l]])
                B.read_into(c, bank, key, operands[l].dims, enable=[k["EXEC"]])
                for i in range(32):            # immediate (0 for a register operand)
                    G.relu(c, L, {imms[q][i]: 1}, 0, {operands[l][i]: 1})
        self._s2r()
        for done in (self.sregs, self.words[0], self.words[1], self.words[2], self.valu_lane):   # read by this layer only
            c.clear(done, L + 1)

    def _s2r(self):
        """A of S2R = the selected special register (the table row is this warp's, this block's)."""
        c, L, S = self.c, L_REG, isa.SReg
        sr = self.sregs

        def field_bits(r, lane):         # tid fields have a copy per lane
            j, name = SREG_FIELDS[r]
            copy = lane if SREG[j][name].count > 1 else 0
            return [sr[WORD_BITS * j + b] for b in SREG[j].bits(name, copy)]

        for l in range(4):
            for r in S:
                sel = self.sreg[int(r)]
                if r == S.LANEID:
                    for i in range(2):
                        if l >> i & 1:
                            G.relu(c, L, {sel: 1}, 0, {self.a[l][i]: 1})
                elif r == S.WARPID:
                    for i in range(2):
                        G.relu(c, L, {sel: 1, self.f["WB"][i]: 1}, -1, {self.a[l][i]: 1})
                else:
                    for i, d in enumerate(field_bits(r, l)):
                        G.relu(c, L, {sel: 1, d: 1}, -1, {self.a[l][i]: 1})

    # ---- L4..: ALU and control -------------------------------------------------------------------------
    def _execute(self):
        from qwengpu.machine.control import build_scheduler, build_terminator
        c = self.c
        nwarps = part(self.config, CONFIG, "nwarps")
        turn = c.field("turn", 4, L_STATUS)
        for w in range(4):      # round robin from the warp after the one that ended its block
            G.relu(c, L_STATUS, {self.ct1h[(w - 1) % 4]: 1, self.cur1h[(w - 1) % 4]: 1}, 0, {turn[w]: 1})
        G.relu(c, L_STATUS, {self.k["CTA"]: 1}, 0, {turn[0]: 1})
        self.sched, sched_end = build_scheduler(c, L_STATUS + 1, self.status, nwarps, turn)
        wo = self.warp_op
        warp_r, warp_end = build_warp(c, L_EXEC, {m: wo[f"SHFL.{m}"] for m in SHFL_MODES},
                                      {m: wo[f"VOTE.{m}"] for m in VOTE_MODES}, self.a, self.b, self.cc, self.cs.mask)
        self.r, alu_end = build_alu(c, L_EXEC, self.alu_op, self.a, self.b, self.cc)
        if warp_end > alu_end - 1:
            raise CircuitError(f"the warp unit ends at L{warp_end}, after the ALU's last layer L{alu_end - 1}")
        for l in range(4):             # the warp unit's result joins the ALU's (at most one is nonzero)
            G.copy_bits(c, alu_end - 1, warp_r[l], Field("r", self.r[l].dims, "bits", alu_end - 1))
            c.clear(warp_r[l], alu_end - 1)
        term = {t: self.op[t] for t in TERMS}
        self.ns, ctl_end = build_terminator(
            c, L_EXEC, L_EXEC + 2, wbits=self.f["WB"], term=term, target=self.tw["target"],
            fallthrough=self.tw["fallthrough"], reconv=self.tw["reconv"], rvalid=self.tw["rvalid"],
            cond=self.a, old=self.cs, init_mask=self.init_mask)
        self.exec_end = max(alu_end, ctl_end, sched_end)
        self._ct2_change(self.exec_end)

    def _ct2_change(self, at):
        """Whether a terminator changes CT2's half of the warp's status (alive, phase, wait): only
        then does CT2 follow CT1. Layer at: the bits that differ; at + 1: whether any does."""
        c = self.c
        diff = c.field("ct2.diff", 1, at, kind="int", vmax=CT2.width)
        for name in CT2.fields:
            for new, old in zip(getattr(self.ns, name).dims, getattr(self.cs, name).dims):
                G.relu(c, at, {new: 1, old: -1}, 0, {diff[0]: 1})
                G.relu(c, at, {old: 1, new: -1}, 0, {diff[0]: 1})
        self.ct2_changed = c.field("ct2_changed", 1, at + 1)
        G.step(c, at + 1, {diff[0]: 1}, 1, {self.ct2_changed[0]: 1})
        c.clear(diff, at + 1)

    # ---- copy-out: COPY(g) loads group g's words, every lane it copies (qwengpu/machine/copyout.py) ----
    def _copy_out(self):
        c, k, g, L = self.c, self.k, self.f["CG"], L_EXEC
        high = GROUP_BITS - ROW_BITS                          # group bits above a bank's row
        banks = 1 << high
        rd, wr = c.field("copy.rd", banks, L_IN), c.field("copy.wr", banks, L_IN)
        for b in range(banks):          # the table's bank of this COPY's group, and of a PUT's row
            t, k0 = match(view(g, ROW_BITS, GROUP_BITS), b)
            flag_if(c, L_IN, [({k["COPY"]: 1}, 0, 1), (t, k0, high)], {rd[b]: 1})
            t, k0 = match(view(self.latch, ROW_BITS, GROUP_BITS), b)
            flag_if(c, L_IN, [({self.put["COPYTAB"]: 1}, 0, 1), (t, k0, high)], {wr[b]: 1})
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
            B.write_bits(c, bank, B.bits(view(self.latch, 0, ROW_BITS)), B.bits(view(self.staged, 0, COPYROW.width)),
                         [wr[b]])
            B.read_into(c, bank, B.bits(view(g, 0, ROW_BITS)), row.dims, enable=[rd[b]])
        start = B.register(c, L, "copy0", COPY0.width)
        self.copy0 = c.field("copy0", COPY0.width, L)
        B.write_bits(c, start, self.zero, B.bits(view(self.staged, 0, COPY0.width)), [self.put["COPY0"]])
        B.read_into(c, start, self.zero, self.copy0.dims)
        explicit = c.field("copy.explicit", 1, L)             # a row left 0: every lane, then g + 1
        G.step(c, L, {d: 1 for d in row.dims}, 1, {explicit[0]: 1})
        # L + 1: the lanes to copy join the status mask (0 on a COPY pass), the next group
        self.copy_next = c.field("copy.next", GROUP_BITS, L + 1)
        mask, after = part(row, COPYROW, "mask"), part(row, COPYROW, "next")
        for l in range(isa.LANES):
            G.relu(c, L + 1, {mask[l]: 1}, 0, {self.cs.mask[l]: 1})
            G.relu(c, L + 1, {k["COPY"]: 1, explicit[0]: -1}, 0, {self.cs.mask[l]: 1})
        for i in range(GROUP_BITS):
            G.relu(c, L + 1, {after[i]: 1}, 0, {self.copy_next[i]: 1})
            G.relu(c, L + 1, {inc[i]: 1, explicit[0]: -1}, 0, {self.copy_next[i]: 1})
        self.copy_row = row
        c.clear(explicit, L + 2)
        c.clear(inc, L + 2)
        # each lane's address: word LANES * g + l, as a byte address where the ALU's result goes
        at = self.exec_end - 1
        for l in range(isa.LANES):
            for i in range(2):
                if l >> i & 1:
                    G.relu(c, at, {k["COPY"]: 1}, 0, {self.r[l][2 + i]: 1})
            for i in range(GROUP_BITS):
                G.relu(c, at, {k["COPY"]: 1, g[i]: 1}, -1, {self.r[l][4 + i]: 1})

    # ---- memory ------------------------------------------------------------------------------------------
    def _memory(self):
        c, f, k = self.c, self.f, self.k
        Lq = self.exec_end
        self.L_q = Lq
        # store queue: word address + space, and data, per lane
        self.ma, self.md, self.mb = c.field("ma", GA + len(SPACES), Lq), c.field("md", 32, Lq), c.field("mb", 32, Lq)
        for l in range(4):
            addr = B.register(c, Lq, f"st.addr{l}", GA + len(SPACES))
            data = B.register(c, Lq, f"st.data{l}", 32)
            value = B.register(c, Lq, f"st.b{l}", 32)
            B.write_bits(c, addr, self.zero, B.bits(view(self.r[l], 2, 2 + GA)) + B.bits(self.st_space),
                    [self.op["ST"][0], self.op["ATOM"][0]])
            B.write_bits(c, data, self.zero, B.bits(self.cc[l]), [self.op["ST"][0], self.op["ATOM"][0]])
            B.write_bits(c, value, self.zero, B.bits(self.b[l]), [self.op["ATOM"][0]])
            B.read_into(c, addr, self.zero, self.ma.dims, enable=[self.q_addr[l]])
            B.read_into(c, data, self.zero, self.md.dims, enable=[self.q_data[l]])
            B.read_into(c, value, self.zero, self.mb.dims, enable=[self.q_b[l]])
        # Lq MLP: write enables (ST passes and prompt PUTs) and load enables per lane
        waddr = B.bits(view(self.ma, 0, GA), self.latch)
        wdata = B.bits(self.md, self.staged)
        mspace = view(self.ma, GA, GA + len(SPACES))        # one-hot: global, shared, const
        gw = c.field("gw", GROUPS, Lq)
        for g in range(GROUPS):
            t, k0 = match(view(self.ma, ROW_BITS, GA), g)
            flag_if(c, Lq, [({k["ST"]: 1, k["AW"]: 1, mspace[0]: 1}, 0, 2), (t, k0, GA - ROW_BITS)], {gw[g]: 1})
            t, k0 = match(view(self.latch, ROW_BITS, GA), g)
            flag_if(c, Lq, [({self.put["GLOBAL"]: 1}, 0, 1), (t, k0, GA - ROW_BITS)], {gw[g]: 1})
        sw = c.field("sw", SHARED_GROUPS, Lq)
        for g in range(SHARED_GROUPS):
            t, k0 = match(view(self.ma, ROW_BITS, SA), g)
            flag_if(c, Lq, [({k["ST"]: 1, k["AW"]: 1, mspace[1]: 1}, 0, 2), (t, k0, SA - ROW_BITS)], {sw[g]: 1})
            t, k0 = match(view(self.latch, ROW_BITS, SA), g)
            flag_if(c, Lq, [({self.put["SHARED"]: 1}, 0, 1), (t, k0, SA - ROW_BITS)], {sw[g]: 1})
        lg = [c.field(f"lg{l}", GROUPS + SHARED_GROUPS, Lq) for l in range(4)]
        for l in range(4):
            for g in range(GROUPS):
                t, k0 = match(view(self.r[l], 2 + ROW_BITS, 2 + GA), g)
                flag_if(c, Lq, [({self.ld_space[0]: 1}, 0, 1), (t, k0, GA - ROW_BITS)], {lg[l][g]: 1})
                t, k0 = match(view(self.ma, ROW_BITS, GA), g)
                flag_if(c, Lq, [({k["AT"]: 1, f["LANE"][l]: 1, mspace[0]: 1}, 0, 3), (t, k0, GA - ROW_BITS)],
                        {lg[l][g]: 1})
            for g in range(SHARED_GROUPS):
                t, k0 = match(view(self.r[l], 2 + ROW_BITS, 2 + SA), g)
                flag_if(c, Lq, [({self.ld_space[1]: 1}, 0, 1), (t, k0, SA - ROW_BITS)], {lg[l][GROUPS + g]: 1})
                t, k0 = match(view(self.ma, ROW_BITS, SA), g)
                flag_if(c, Lq, [({k["AT"]: 1, f["LANE"][l]: 1, mspace[1]: 1}, 0, 3), (t, k0, SA - ROW_BITS)],
                        {lg[l][GROUPS + g]: 1})
        self._faults(Lq)
        self.loaded = [c.field(f"loaded{l}", 32, Lq + 1) for l in range(4)]
        self.global_banks = []
        wrow = waddr[:ROW_BITS]
        for g in range(GROUPS):
            bank = declare_bank(c, Lq + 1 + g // 4, f"global{g}", 1 << ROW_BITS, 32, replicas=4)
            self.global_banks.append(bank)
            B.write_bits(c, bank, wrow, wdata, [gw[g]])
            for l in range(4):
                B.read_into(c, bank, self._lane_row(l), self.loaded[l].dims, l, [lg[l][g]])
        Lm = Lq + 3
        for g in range(SHARED_GROUPS):
            bank = declare_bank(c, Lm, f"shared{g}", 1 << ROW_BITS, 32, replicas=4)
            B.write_bits(c, bank, wrow, wdata, [sw[g]])
            for l in range(4):
                B.read_into(c, bank, self._lane_row(l), self.loaded[l].dims, l,
                       [lg[l][GROUPS + g]])
        const = declare_bank(c, Lm, "const", 1 << ROW_BITS, 32, replicas=4)
        B.write_bits(c, const, wrow, wdata, [self.put["CONST"]])
        for l in range(4):
            B.read_into(c, const, self._lane_row(l), self.loaded[l].dims, l,
                   [self.ld_space[2]])
        # Lm MLP: a load's result replaces its address
        is_ld = sum(([self.ld_space[g]] for g in range(3)), [])
        for l in range(4):
            for i in range(32):
                G.relu(c, Lm, {self.r[l][i]: 1, **{d: 1 for d in is_ld}}, -1, {self.r[l][i]: -1})
            G.copy_bits(c, Lm, self.loaded[l], Field("r", self.r[l].dims, "bits", Lm))
            c.clear(self.loaded[l], Lm)
        self.L_r = Lm + 1

    def _faults(self, Lq):
        """A load, store or atomic of an active lane at a misaligned or out-of-range address (or a
        store to CONST) makes the pass emit FAULT instead of its next token."""
        c = self.c
        limits = {g: 2 + ADDRESS_BITS[space] for g, space in enumerate(SPACES)}     # byte address bits
        bad = c.field("bad", 16, Lq)
        for l in range(4):
            for g, top in limits.items():
                flags = {self.ld_space[g]: 64, self.st_space[g]: 64}
                out_of_range = {self.r[l][i]: 1 for i in [0, 1] + list(range(top, 32))}
                G.step(c, Lq, {**out_of_range, **flags, self.cs.mask[l]: 64}, 129, {bad[4 * l + g]: 1})
            G.relu(c, Lq, {self.st_space[2]: 1, self.cs.mask[l]: 1}, -1, {bad[4 * l + 3]: 1})
        self.fault = c.field("fault", 1, Lq + 1)
        G.step(c, Lq + 1, {d: 1 for d in bad.dims}, 1, {self.fault[0]: 1})
        c.clear(bad, Lq + 1)

    def _lane_row(self, l):
        """Lane l's memory row: its address register on EXEC passes, the store queue's on AT passes."""
        return B.bits(view(self.r[l], 2, 2 + ROW_BITS), view(self.ma, 0, ROW_BITS))

    # ---- result and control queues -----------------------------------------------------------------------
    def _queues(self):
        c, k, L = self.c, self.k, self.L_r
        for l in range(4):
            bank = B.register(c, L, f"result{l}", 32)
            B.write_bits(c, bank, self.zero, B.bits(self.r[l]), [k["EXEC"], k["AT"], k["COPY"]])
            B.read_into(c, bank, self.zero, self.r[l].dims, enable=[k["VAL"], k["VALU"], k["ST"]])
        mq = B.register(c, L, "mask", 4)
        B.write_bits(c, mq, self.zero, B.bits(self.cs.mask), [k["EXEC"], k["COPY"]])
        B.read_into(c, mq, self.zero, self.cs.mask.dims, enable=[k["VAL"], k["VALU"], k["ST"], k["AW"]])
        ns = self.ns
        ctl = c.field("ctl", CT2.width + 1, L)          # CT2's payload, and whether it changed
        cq = B.register(c, L, "ctl", CT2.width + 1)
        B.write_bits(c, cq, self.zero, sum((B.bits(getattr(ns, name)) for name in CT2.fields), [])
                     + B.bits(self.ct2_changed), [self.op[t][0] for t in TERMS])
        B.read_into(c, cq, self.zero, ctl.dims, enable=[k["CT1"]])
        self.ctq = {name.upper(): part(ctl, CT2, name) for name in CT2.fields}     # FEATURES' names
        self.ct2_follows = view(ctl, CT2.width, CT2.width + 1, "ct2_follows")
        # after a COPY pass its words' tokens: then the next group, or HALT after the last
        copyq = c.field("copyq", GROUP_BITS + 2, L)
        q = B.register(c, L, "copyq", GROUP_BITS + 2)
        B.write_bits(c, q, self.zero, B.bits(self.copy_next) + B.bits(part(self.copy_row, COPYROW, "last")) + [[k["COPY"]]],
                     [k["COPY"]])
        B.read_into(c, q, self.zero, copyq.dims, enable=[k["VAL"], k["VALU"]])
        c.clear(self.copy_next, L + 1)
        c.clear(self.copy_row, L + 1)
        self.copyq = {"next": view(copyq, 0, GROUP_BITS, "copy.next"), "last": copyq.dims[GROUP_BITS],
                      "copying": copyq.dims[GROUP_BITS + 1]}

    # ---- atomics: old (this lane's load) -> new, kept for the VAL/PART passes that follow --------------
    def _atomic(self):
        from qwengpu.machine.atomic import build_atomic
        c, k, L = self.c, self.k, self.L_r
        old = c.field("atom.old", 32, L)
        for l in range(4):                  # on AT(l) passes only lane l's r (the old value) is nonzero
            for i in range(32):
                G.relu(c, L, {self.r[l][i]: 1, k["AT"]: 1}, -1, {old[i]: 1})
        flags = {}
        for i, a in enumerate(isa.AtomOp):
            flags[a.name] = c.field(f"atom.{a.name}", 1, L)
            t, k0 = match(view(self.patom, 2, 6), i)
            flag_if(c, L, [(t, k0, 4), ({k["AT"]: 1}, 0, 1)], {flags[a.name][0]: 1})
        new, end = build_atomic(c, L + 1, flags, old, self.mb, self.md)
        c.clear(old, end)
        for fld in flags.values():
            c.clear(fld, end)
        self.new, self.alane = new, c.field("atom.lane", 4, end)
        q = B.register(c, end, "atom", 32)
        ql = B.register(c, end, "atom.lane", 4)
        B.write_bits(c, q, self.zero, B.bits(new), [k["AT"]])
        B.write_bits(c, ql, self.zero, B.bits(self.f["LANE"]), [k["AT"]])
        B.read_into(c, q, self.zero, new.dims, enable=[k["VAL"], k["PART"]])
        B.read_into(c, ql, self.zero, self.alane.dims, enable=[k["VAL"], k["PART"]])
        self.L_e = end

    # ---- the next token ------------------------------------------------------------------------------------
    def _emit(self):
        from qwengpu.machine.emit import build_emit
        self.top = build_emit(self)

    # ---- host side -----------------------------------------------------------------------------------------
    def embeddings(self) -> np.ndarray:
        """[len(vocab), C] circuit dims of every GPU token (anchor + features)."""
        lay = self.c.layout
        out = np.zeros((len(self.vocab), lay.width))
        out[:, [d - lay.n for d in lay.anchor.dims]] = lay.anchor_value
        dims = [d - lay.n for name in FEATURES for d in self.f[name].dims]
        out[:, dims] = self.vocab.matrix
        return out

    def fingerprint(self) -> str:
        """sha256 of the compiled circuit (every GDN matrix and neuron) and the vocabulary: a merged
        checkpoint built from another version of the machine has another fingerprint."""
        h = hashlib.sha256(f"C={self.c.layout.width};V={len(self.vocab)}".encode())
        h.update(self.embeddings().astype(np.float32).tobytes())
        for lay in self.c.layers:
            for a in (lay.qkv, lay.z, lay.b, lay.out):
                h.update(a.tobytes())
            h.update(repr(lay.neurons).encode())
        return h.hexdigest()

    def read_global(self, cache, layer_offset: int = 0) -> np.ndarray:
        """Global memory (uint32[GLOBAL_WORDS]) from the recurrent states of a DynamicCache."""
        from qwengpu.circuit.check import read_rows
        mem = np.zeros(isa.GLOBAL_WORDS, dtype=np.uint32)
        for g, bank in enumerate(self.global_banks):
            state = cache.get_recurrent_state(layer_offset + bank.layer)[0].float().cpu().numpy()
            for row, word in read_rows(state, bank).items():
                mem[(g << ROW_BITS) + row] = word
        return mem


def machine_for_host(host: HostSpec, width: int | None = None) -> Machine:
    """The machine for `host`; `width` None sizes the circuit with a probe build first (a wide
    one: seconds and gigabytes), a merged checkpoint's recorded circuit_width skips that."""
    check_limits()                                  # before the caches: isa may have changed since
    return _machine(host, _fitting_width(host) if width is None else width)


@functools.lru_cache(maxsize=4)
def _fitting_width(host: HostSpec) -> int:
    probe = Machine(host)                           # measure the residual it needs, then size C to fit
    return circuit_width(host, probe.c.layout.high_water(), limit=8192)


@functools.lru_cache(maxsize=4)
def _machine(host: HostSpec, width: int) -> Machine:
    return Machine(host, width)


def machine_for(text_config: dict, width: int | None = None) -> Machine:
    return machine_for_host(HostSpec.from_config(text_config), width)


def machine_source_digest() -> str:
    """sha256 of every qwengpu source file: a machine built from the same sources is the same
    machine (it is deterministic), so a merged checkpoint that records this digest needs no
    fingerprint check (which builds the machine)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")) + sorted(root.rglob("*.c")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


# ---- the circuit handed to the merge -------------------------------------------------------------------
MODEL_OPS = frozenset(ALU_OPS) | {"S2R", "LD", "ST", "ATOM", "SHFL", "VOTE"} | set(TERMS)     # what the model engine runs


class LazyLayer(Mapping):
    """One circuit layer's weights, computed when first read (one layer is kept at a time, so a
    merge streams the circuit instead of holding every layer's dense matrices)."""
    _last: tuple = (None, None)

    def __init__(self, layer, intermediate: int):
        self.layer, self.intermediate = layer, intermediate

    def _weights(self) -> dict:
        if LazyLayer._last[0] is not self:
            LazyLayer._last = (None, None)
            LazyLayer._last = (self, self.layer.weights(self.intermediate))
        return LazyLayer._last[1]

    def __getitem__(self, name):
        return self._weights()[name]

    def __iter__(self):
        return iter(self._weights())

    def __len__(self):
        return len(self._weights())


def circuit_weights(m: Machine) -> CircuitWeights:
    intermediate = max(lay.neuron_count for lay in m.c.layers)
    return CircuitWeights(
        width=m.c.layout.width, layers=[LazyLayer(lay, intermediate) for lay in m.c.layers],
        token_names=[m.vocab.name(t) for t in m.vocab.tokens], token_embeddings=m.embeddings(),
        info={"circuit": f"qwengpu machine v1 ({len(m.c.layers)} layers)"})

