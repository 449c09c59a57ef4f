"""Lower a parsed PTX kernel to an isa.Program.

Pipeline (docs/lowering.md describes each stage):
  1. layout      parameters -> CONST words, .const/.global/.shared variables -> addresses
  2. spaces      where each register's address points (for generic ld/st/atom)
  3. translate   PTX instructions -> virtual IR (unbounded virtual registers,
                 basic blocks with machine terminators); 64-bit values become
                 register pairs, 8/16-bit values live zero-extended in one register
  4. clean up    constant/copy propagation, dead-code elimination, CFG
                 simplification, redundant masks, address adds into LD/ST,
                 if-conversion (off by default),
                 branches on values, fold-friendly order (cfg.py)
  5. regalloc    liveness, interference graph, colouring into r1..r15,
                 rematerialisation and spilling (regalloc.py)
  6. blocks      balance pure instructions across barriers, pack into machine
                 blocks (<= BLOCK_SLOTS instructions, in order but for one move
                 that lets a BRC fold into the last instruction's pass),
                 fold empty jumps, reconvergence = immediate post-dominator
                 (with the return-path rule)
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.errors import CompileError, UnsupportedError
from qwengpu.toolchain import ptx
from qwengpu.toolchain.blocks import machine_program
from qwengpu.toolchain.inline import inline_calls
from qwengpu.toolchain.layout import Layout, layout
from qwengpu.toolchain.lint import shuffle_warnings
from qwengpu.toolchain.microcode import EXPANDABLE, MODEL_EXPANSIONS, expand_ops
from qwengpu.toolchain.cfg import (VBlock, VInstr, VTerm, branch_on_values, drop_redundant_masks,
                                   eliminate_dead_code, fold_address_adds, fold_friendly, hoist_loads, if_convert,
                                   propagate_constants, propagate_copies, simplify, simplify_cfg)
from qwengpu.toolchain.ptx import plain_name
from qwengpu.toolchain.regalloc import allocate_registers
from qwengpu.toolchain.spaces import STATE_SPACES, WINDOW_SHIFT, WINDOWS, Spaces, address_spaces
from qwengpu.toolchain.writes import kernel_writes

__all__ = ["lower", "find_kernel", "plain_name", "EXPANDABLE", "MODEL_EXPANSIONS"]

Op, Imm, Term = isa.Op, isa.Imm, isa.Term
M32 = isa.MASK32
TYPE_BITS = ptx.TYPE_BITS
SREG_INDEX = {f"%{r}.{c}": isa.SReg[f"{r.upper()}_{c.upper()}"] for r in ("tid", "ntid", "ctaid", "nctaid")
              for c in "xyz"} | {"%laneid": isa.SReg.LANEID, "%warpid": isa.SReg.WARPID}
SPACES = {"global": isa.Space.GLOBAL, "shared": isa.Space.SHARED, "const": isa.Space.CONST}


def _mask(bits: int) -> int:
    return (1 << bits) - 1 if bits < 32 else M32


# ---------------------------------------------------------------------------
# Kernel lookup
# ---------------------------------------------------------------------------
def find_kernel(module: ptx.Module, kernel_name: str) -> ptx.Function:
    kernels = module.kernels
    if kernel_name in kernels:
        return kernels[kernel_name]
    found = [k for n, k in kernels.items() if plain_name(n) == kernel_name]
    if len(found) == 1:
        return found[0]
    listing = ", ".join(sorted(plain_name(n) for n in kernels)) or "none"
    if found:
        raise CompileError(f"kernel name {kernel_name} is ambiguous: {', '.join(k.name for k in found)}")
    raise CompileError(f"no kernel named {kernel_name} in the PTX; available kernels: {listing}")


def _constant_registers(fn: ptx.Function) -> dict[str, Imm]:
    """PTX registers defined exactly once, by an unpredicated `mov` of an integer immediate."""
    defs: dict[str, list] = {}
    for ins in fn.body:
        if isinstance(ins, ptx.Instruction) and ins.operands and isinstance(ins.operands[0], ptx.Reg):
            defs.setdefault(ins.operands[0].name, []).append(ins)
    return {r: Imm(d[0].operands[1].value & M32) for r, d in defs.items()
            if len(d) == 1 and d[0].parts[0] == "mov" and d[0].pred is None and len(d[0].operands) == 2
            and isinstance(d[0].operands[1], ptx.Imm) and not d[0].operands[1].is_float}


# ---------------------------------------------------------------------------
# Translation
# ---------------------------------------------------------------------------
class _Translator:
    def __init__(self, module: ptx.Module, fn: ptx.Function, lay: Layout, spaces: Spaces):
        self.module, self.fn, self.lay, self.spaces = module, fn, lay, spaces
        self.blocks: list[VBlock] = [VBlock()]
        self.cur = 0
        self.labels: dict[str, int] = {}
        self.nvreg = 0
        self.regs: dict[str, list[int]] = {}
        self.temps: set[int] = set()
        self.alias: dict[int, int] = {}
        self.guard = None          # (pred vreg, negated) while lowering a predicated ALU op
        self.pending: list[tuple[int, int]] = []
        self.ins: ptx.Instruction | None = None
        self.ptx_constants = _constant_registers(fn)

    # -- errors ----------------------------------------------------------------
    def unsupported(self, what: str):
        line = self.ins.line if self.ins else self.fn.line
        raise UnsupportedError(f"{self.module.where(line)}: {what} (kernel {plain_name(self.fn.name)})")

    # -- virtual registers -----------------------------------------------------
    def new_vreg(self) -> int:
        self.nvreg += 1
        return self.nvreg

    def reg_bits(self, name: str) -> int:
        return TYPE_BITS[self.fn.regs[name]]

    def vregs(self, name: str) -> list[int]:
        if name not in self.regs:
            n = 2 if self.reg_bits(name) == 64 else 1
            self.regs[name] = [self.new_vreg() for _ in range(n)]
        return self.regs[name]

    # -- emission --------------------------------------------------------------
    @property
    def block(self) -> VBlock:
        return self.blocks[self.cur]

    def emit(self, op: Op, *srcs, mod=None, dst: int | None = None, result: bool = True):
        srcs = [self.alias.get(s, s) if isinstance(s, int) else s for s in srcs]
        if op.kind is isa.Kind.ALU and op is not Op.MOV:
            folded = simplify(op, srcs)
            if folded is not None:
                return folded if dst is None else self.emit(Op.MOV, folded, dst=dst)
        if dst is None and result:
            dst = self.new_vreg()
            self.temps.add(dst)
        self.block.instrs.append(VInstr(op, dst, list(srcs), mod, self.ins.line if self.ins else 0))
        return dst

    def assign(self, target: int, value) -> None:
        value = self.alias.get(value, value) if isinstance(value, int) else value
        last = self.block.instrs[-1] if self.block.instrs else None
        if isinstance(value, int) and value in self.temps and last is not None and last.dst == value:
            last.dst = target          # write the result straight into the register
            self.temps.discard(value)
            self.alias[value] = target
        elif value != target:
            self.emit(Op.MOV, value, dst=target)

    def terminate(self, term: VTerm) -> None:
        if self.block.term is None:
            self.block.term = term

    def new_block(self) -> int:
        self.blocks.append(VBlock())
        return len(self.blocks) - 1

    def switch_to(self, b: int) -> None:
        """Continue in block b; an unterminated current block falls through to it."""
        self.terminate(VTerm(Term.JMP, b))
        self.cur = b

    def label_block(self, name: str) -> int:
        if name not in self.labels:
            self.labels[name] = self.new_block()
        return self.labels[name]

    # -- operands --------------------------------------------------------------
    def sym_address(self, name: str) -> int:
        if name not in self.lay.symbols:
            self.unsupported(f"unknown symbol {name}")
        return self.lay.symbols[name][1]

    def read(self, o, bits: int) -> list:
        """Operand value at `bits`: one canonical (zero-extended) word, or a
        (lo, hi) pair for 64 bits."""
        if isinstance(o, ptx.Imm):
            if o.is_float:
                self.unsupported("floating-point operands are not supported")
            v = o.value
            return [Imm(v & M32), Imm((v >> 32) & M32)] if bits == 64 else [Imm(v & _mask(bits))]
        if isinstance(o, ptx.Reg):
            vs, rw = self.vregs(o.name), self.reg_bits(o.name)
            if bits == 64:
                return list(vs) if rw == 64 else [vs[0], Imm(0)]
            v = vs[0]
            if bits < 32 and rw > bits:
                v = self.emit(Op.AND, v, Imm(_mask(bits)))
            return [v]
        if isinstance(o, ptx.SpecialReg):
            if o.name not in SREG_INDEX:
                why = ptx.UNSUPPORTED_SREGS.get(o.name, "the machine lacks it")
                self.unsupported(f"special register {o.name} is not supported: {why}")
            v = self.emit(Op.S2R, Imm(int(SREG_INDEX[o.name])))
            return [v, Imm(0)] if bits == 64 else [v]
        if isinstance(o, ptx.Sym) or isinstance(o, ptx.Addr) and isinstance(o.base, ptx.Sym):
            name, off = (o.name, 0) if isinstance(o, ptx.Sym) else (o.base.name, o.offset)
            a = Imm(self.sym_address(name) + off)
            return [a, Imm(0)] if bits == 64 else [a]
        if isinstance(o, ptx.Not):
            return [self.emit(Op.XOR, self.read(o.reg, 1)[0], Imm(1))]
        self.unsupported(f"operand {o} is not supported here")

    def read1(self, o, bits: int):
        return self.read(o, bits)[0]

    def put(self, o, values: list, bits: int, signed: bool = False) -> None:
        """Write a result computed at `bits` (canonical) into register o,
        extending or truncating to the register's width."""
        if isinstance(o, ptx.Sink):
            return
        if not isinstance(o, ptx.Reg):
            self.unsupported(f"destination {o} is not a register")
        rw = self.reg_bits(o.name)
        lo = values[0]
        if rw == 64:
            if bits == 64:
                out = list(values)
            else:
                if signed:
                    lo = self.sext(lo, bits)
                out = [lo, self.emit(Op.SRA, lo, Imm(31)) if signed else Imm(0)]
        elif rw == 32:
            out = [self.sext(lo, bits) if signed and bits < 32 else lo]
        elif rw == 1:
            out = [lo]
        else:
            if bits < rw and signed:
                lo = self.emit(Op.AND, self.sext(lo, bits), Imm(_mask(rw)))
            elif bits > rw:
                lo = self.emit(Op.AND, lo, Imm(_mask(rw)))
            out = [lo]
        targets = self.vregs(o.name)
        if self.guard is not None:       # predicated: compute into temporaries, SEL afterwards
            temps = [self.new_vreg() for _ in targets]
            self.pending += list(zip(targets, temps))
            targets = temps
        for k, (t, v) in enumerate(zip(targets, out)):
            if v in out[k + 1:]:        # the same value goes to two halves: copy, don't rename
                self.emit(Op.MOV, v, dst=t)
            else:
                self.assign(t, v)

    # -- small helpers ---------------------------------------------------------
    def sext(self, v, bits: int):
        return v if bits >= 32 else self.emit(Op.BFE, v, Imm(0), Imm(bits))

    def ext(self, v, bits: int, signed: bool):
        return self.sext(v, bits) if signed else v

    def trunc(self, v, bits: int):
        return v if bits >= 32 else self.emit(Op.AND, v, Imm(_mask(bits)))

    # -- the body --------------------------------------------------------------
    def run(self) -> list[VBlock]:
        for item in self.fn.body:
            if isinstance(item, ptx.Label):
                self.switch_to(self.label_block(item.name))
                continue
            self.ins = item
            if self.block.term is not None:     # code after ret/bra: unreachable unless labelled
                self.cur = self.new_block()
            self.instruction(item)
        self.ins = None
        self.terminate(VTerm(Term.EXIT))
        for b in self.blocks:
            if b.term is None:
                b.term = VTerm(Term.EXIT)
        return self.blocks

    def instruction(self, ins: ptx.Instruction) -> None:
        parts = ins.parts
        base = parts[0]
        handler = getattr(self, f"op_{base}", None)
        if handler is None:
            self.unsupported(f"instruction {ins.opcode} is not supported")
        floats = [p for p in parts[1:] if p in ("f16", "f32", "f64", "bf16", "f16x2")]
        if floats:
            self.unsupported(f"floating point ({ins.opcode}) is not supported")
        for bad in ("sat", "cc"):
            if bad in parts[1:]:
                self.unsupported(f"{ins.opcode}: .{bad} is not supported")
        if base in ("addc", "subc"):
            self.unsupported(f"{ins.opcode}: carry chains are not supported")
        if ins.pred is None:
            handler(ins, parts)
        elif base in _PURE_OPS:
            self.guarded_alu(ins, parts, handler)
        elif base == "bra":
            handler(ins, parts)
        else:
            self.guarded_region(ins, parts, handler)

    def pred_vreg(self, ins) -> int:
        return self.vregs(ins.pred.name)[0]

    def guarded_alu(self, ins, parts, handler) -> None:
        """@p d = op(...): compute into temporaries, then d = p ? new : d."""
        p = self.pred_vreg(ins)
        self.guard, self.pending = (p, ins.pred_negated), []
        handler(ins, parts)
        self.guard = None
        for real, temp in self.pending:
            a, b = (real, temp) if ins.pred_negated else (temp, real)
            self.emit(Op.SEL, p, a, b, dst=real)
        self.pending = []

    def guarded_region(self, ins, parts, handler) -> None:
        """@p op with side effects: a conditional region around it."""
        p = self.pred_vreg(ins)
        then, join = self.new_block(), self.new_block()
        t, f = (join, then) if ins.pred_negated else (then, join)
        self.terminate(VTerm(Term.BRC, t, p, f))
        self.cur = then
        handler(ins, parts)
        self.switch_to(join)

    # -- types -----------------------------------------------------------------
    def itype(self, parts, k: int = -1) -> tuple[int, bool]:
        types = [p for p in parts[1:] if p in TYPE_BITS]
        if not types:
            self.unsupported(f"{'.'.join(parts)} has no type")
        t = types[k]
        return TYPE_BITS[t], t.startswith("s")

    # ========================================================================
    # Data movement
    # ========================================================================
    def op_mov(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        if isinstance(d, ptx.Vec):       # unpack: mov.b64 {lo, hi}, %rd
            n = len(d.items)
            self.unpack(d.items, self.read(a, bits), bits // n)
        elif isinstance(a, ptx.Vec):     # pack: mov.b64 %rd, {lo, hi}
            n = len(a.items)
            self.put(d, self.pack([self.read1(x, bits // n) for x in a.items], bits // n, bits), bits)
        else:
            self.put(d, self.read(a, bits), bits)

    def pack(self, items: list, ebits: int, bits: int) -> list:
        words = []
        per = 32 // ebits if ebits < 32 else 1
        for w in range(0, len(items), per):
            acc = Imm(0)
            for k, v in enumerate(items[w:w + per]):
                acc = self.emit(Op.OR, acc, self.emit(Op.SHL, v, Imm(k * ebits)))
            words.append(acc)
        return words

    def unpack(self, dsts, words: list, ebits: int) -> None:
        for k, d in enumerate(dsts):
            if ebits >= 32:
                self.put(d, [words[k]], 32)
            else:
                per = 32 // ebits
                w = words[k // per]
                self.put(d, [self.emit(Op.BFEU, w, Imm((k % per) * ebits), Imm(ebits))], ebits)

    def op_cvta(self, ins, parts):
        """cvta.X moves a space-X address into X's generic window, cvta.to.X back
        (windows exist only in windowed mode; else generic == space address)."""
        bits, _ = self.itype(parts)
        d, a = ins.operands
        v = self.read(a, bits)
        space = next((p for p in parts[1:] if p in WINDOWS), "global")
        if self.spaces.windowed and WINDOWS[space]:
            v[0] = self.emit(Op.SUB if "to" in parts else Op.ADD, v[0], Imm(WINDOWS[space]))
        self.put(d, v, bits)

    def op_cvt(self, ins, parts):
        types = [p for p in parts[1:] if p in TYPE_BITS]
        if len(types) != 2:
            self.unsupported(f"{ins.opcode}: expected cvt.dtype.stype")
        db, ds = TYPE_BITS[types[0]], types[0].startswith("s")
        sb, ss = TYPE_BITS[types[1]], types[1].startswith("s")
        d, a = ins.operands
        v = self.read(a, sb)
        if db == 64:
            if sb == 64:
                out = v
            else:
                lo = self.ext(v[0], sb, ss)
                out = [lo, self.emit(Op.SRA, lo, Imm(31)) if ss else Imm(0)]
        else:
            lo = v[0]
            if sb < db and ss:
                lo = self.sext(lo, sb)
            out = [self.trunc(lo, db)]
        self.put(d, out, db, ds)

    def op_selp(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a, b, c = ins.operands
        p = self.read1(c, 1)
        av, bv = self.read(a, bits), self.read(b, bits)
        self.put(d, [self.emit(Op.SEL, p, x, y) for x, y in zip(av, bv)], bits)

    def op_slct(self, ins, parts):
        bits, _ = self.itype(parts, 0)
        d, a, b, c = ins.operands
        f = self.emit(Op.SETGE, self.read1(c, 32), Imm(0))
        av, bv = self.read(a, bits), self.read(b, bits)
        self.put(d, [self.emit(Op.SEL, f, x, y) for x, y in zip(av, bv)], bits)

    # ========================================================================
    # Integer arithmetic
    # ========================================================================
    def binary(self, ins, parts, op32, op64=None, signed_inputs=False):
        bits, signed = self.itype(parts)
        d, a, b = ins.operands
        av, bv = self.read(a, bits), self.read(b, bits)
        if bits == 64:
            if op64 is None:
                self.unsupported(f"{ins.opcode}: 64-bit form is not supported")
            out = op64(av, bv)
        elif bits == 1:
            out = [self.emit(op32, av[0], bv[0])]
        else:
            x, y = av[0], bv[0]
            if signed_inputs and signed:
                x, y = self.sext(x, bits), self.sext(y, bits)
            out = [self.trunc(self.emit(op32, x, y), bits)]
        self.put(d, out, bits)

    def op_add(self, ins, parts):
        self.binary(ins, parts, Op.ADD, self.add64)

    def op_sub(self, ins, parts):
        self.binary(ins, parts, Op.SUB, self.sub64)

    def op_and(self, ins, parts):
        self.binary(ins, parts, Op.AND, lambda a, b: [self.emit(Op.AND, x, y) for x, y in zip(a, b)])

    def op_or(self, ins, parts):
        self.binary(ins, parts, Op.OR, lambda a, b: [self.emit(Op.OR, x, y) for x, y in zip(a, b)])

    def op_xor(self, ins, parts):
        self.binary(ins, parts, Op.XOR, lambda a, b: [self.emit(Op.XOR, x, y) for x, y in zip(a, b)])

    def op_div(self, ins, parts):
        signed = self.itype(parts)[1]
        self.binary(ins, parts, Op.DIV if signed else Op.DIVU, lambda a, b: self.divmod64(a, b, signed)[0],
                    signed_inputs=True)

    def op_rem(self, ins, parts):
        signed = self.itype(parts)[1]
        self.binary(ins, parts, Op.REM if signed else Op.REMU, lambda a, b: self.divmod64(a, b, signed)[1],
                    signed_inputs=True)

    def divmod64(self, n, d, signed):
        """64-bit division on magnitudes, then the C signs (quotient negative
        when the signs differ, remainder with the dividend's sign)."""
        if not signed:
            return self.udivmod64(n, d)
        sn, sd = self.emit(Op.SRA, n[1], Imm(31)), self.emit(Op.SRA, d[1], Imm(31))
        q, r = self.udivmod64(self.negate_if(n, sn), self.negate_if(d, sd))
        return self.negate_if(q, self.emit(Op.XOR, sn, sd)), self.negate_if(r, sn)

    def udivmod64(self, n, d):
        """Unsigned 64-bit n / d and n % d. Divisors from 1 to 2^31 (the common
        case: a 64-bit type holding a small value) go by 32-bit pieces, which
        cost a few instructions per quotient bit instead of the 64-bit loop's
        dozen-odd; the rest (d = 0, d > 2^31) take the 64-bit loop."""
        e = self.emit
        q, r = [self.new_vreg(), self.new_vreg()], [self.new_vreg(), self.new_vreg()]

        def into_qr(path, *args):       # a path whose quotient and remainder go into q and r
            def run():
                qv, rv = path(*args)
                for dst, v in zip(q + r, qv + rv):
                    e(Op.MOV, v, dst=dst)
            return run
        narrow = e(Op.AND, e(Op.SETEQ, d[1], Imm(0)), e(Op.SETLTU, e(Op.SUB, d[0], Imm(1)), Imm(1 << 31)))
        self.branch(narrow, into_qr(self.udivmod64_by_word, n, d[0]), into_qr(self.udivmod64_loop, n, d))
        return q, r

    def branch(self, cond, taken, other) -> None:
        """taken() where cond holds, other() where not, both going on in one block
        after; a constant cond (say, from a constant divisor) emits only the path
        it picks, in place."""
        if isinstance(cond, Imm):
            (taken if cond.value else other)()
            return
        yes, no, after = self.new_block(), self.new_block(), self.new_block()
        self.terminate(VTerm(Term.BRC, yes, cond, no))
        for block, path in ((yes, taken), (no, other)):
            self.cur = block
            path()
            self.terminate(VTerm(Term.JMP, after))
        self.cur = after

    def udivmod64_by_word(self, n, d):
        """n / d for 1 <= d <= 2^31, schoolbook on words: the high word by a
        32-bit division (DIVU/REMU, micro-coded where the engine lacks them),
        then the low word with that remainder h < d in front: h:lo / d. When
        h = 0 that is a 32-bit division too; else a loop of radix-4 steps
        (two quotient bits each) for d <= 2^30, radix-2 steps for larger d,
        where the remainder has no room for two more bits (word_steps)."""
        e = self.emit
        qh, h = e(Op.DIVU, n[1], d), e(Op.REMU, n[1], d)
        ql, rl = self.new_vreg(), self.new_vreg()

        def word():
            e(Op.MOV, e(Op.DIVU, n[0], d), dst=ql)
            e(Op.MOV, e(Op.REMU, n[0], d), dst=rl)

        def steps():
            e(Op.MOV, h, dst=rl)
            e(Op.MOV, n[0], dst=ql)
            left = e(Op.MOV, Imm(32), dst=self.new_vreg())     # bits to go: set here, either loop counts it down
            self.branch(e(Op.SETLEU, d, Imm(1 << 30)),
                        lambda: self.word_steps(ql, rl, d, left, 2), lambda: self.word_steps(ql, rl, d, left, 1))
        self.branch(h, steps, word)
        return [ql, qh], [rl, Imm(0)]

    def word_steps(self, q, r, d, left, bits):
        """r:q / d for r < d, a loop of radix-2^bits steps that leaves the
        quotient in q and the remainder in r (`left` = 32 counts the bits to
        go). A step shifts r:q left by bits (DIVQ/DIVQ4 of q by 2^(32 - bits)
        is q's top bits), then q's new low digit is r / d, which r < 2^bits d
        keeps below 2^bits, and r loses that many d (DIVQ, DIVR or DIVQ4,
        DIVR4). r < d before a step must keep 2^bits r + 2^bits - 1 within 32
        bits: d <= 2^31 for radix 2, d <= 2^30 for radix 4. So d stays put (no
        aligned divisor shifts), and the step count is a constant every lane
        shares."""
        e = self.emit
        qop, rop = (Op.DIVQ, Op.DIVR) if bits == 1 else (Op.DIVQ4, Op.DIVR4)
        loop, done = self.new_block(), self.new_block()
        self.switch_to(loop)
        e(qop, q, Imm(1 << 32 - bits), r, dst=r)    # r = 2^bits r + q's top bits
        e(qop, r, d, q, dst=q)                      # q = 2^bits q + r / d
        e(rop, r, d, dst=r)                         # r -= (r / d) d
        e(Op.SUB, left, Imm(bits), dst=left)
        self.terminate(VTerm(Term.BRC, loop, left, done))
        self.cur = done

    def udivmod64_loop(self, n, d):
        """Restoring division with the divisor aligned under the dividend's top
        bit: clz(d) - clz(n) + 1 steps instead of 64, each `if r >= ds: r -= ds`
        with the quotient bit shifted into q, then ds >>= 1. q starts as a
        sentinel bit that reaches bit 63 at the last step, so no counter
        register is live in the loop. n < d (and d = 0) skip the loop: q = 0
        (d = 0: all ones, as 64 steps would give), r = n."""
        e = self.emit
        d_zero = e(Op.SETEQ, e(Op.OR, d[0], d[1]), Imm(0))
        q = [e(Op.SUB, Imm(0), d_zero, dst=self.new_vreg()), e(Op.SUB, Imm(0), d_zero, dst=self.new_vreg())]
        r = [e(Op.MOV, n[0], dst=self.new_vreg()), e(Op.MOV, n[1], dst=self.new_vreg())]
        run = e(Op.AND, e(Op.XOR, d_zero, Imm(1)), e(Op.XOR, self.cmp64("lo", n, d), Imm(1)))
        if isinstance(run, Imm):        # a branch tests a register (a constant one folds away later)
            run = e(Op.MOV, run, dst=self.new_vreg())
        setup, loop, after = self.new_block(), self.new_block(), self.new_block()
        self.terminate(VTerm(Term.BRC, setup, run, after))
        self.cur = setup
        s = e(Op.SUB, self.clz64(d), self.clz64(n))
        ds = [e(Op.MOV, x, dst=self.new_vreg()) for x in self.shift64("shl", d, s)]
        for x, v in zip(q, self.shift64("shl", [Imm(1), Imm(0)], e(Op.SUB, Imm(63), s))):
            e(Op.MOV, v, dst=x)
        self.switch_to(loop)
        last = e(Op.SHR, q[1], Imm(31))             # the sentinel is at bit 63
        borrow = e(Op.SETLTU, r[0], ds[0])
        lt = e(Op.OR, e(Op.SETLTU, r[1], ds[1]), e(Op.AND, e(Op.SETEQ, r[1], ds[1]), borrow))   # r < ds
        e(Op.SEL, lt, r[0], e(Op.SUB, r[0], ds[0]), dst=r[0])
        e(Op.SEL, lt, r[1], e(Op.SUB, e(Op.SUB, r[1], ds[1]), borrow), dst=r[1])
        e(Op.DIVQ, q[0], Imm(1 << 31), q[1], dst=q[1])    # q <<= 1 shifting in ~lt: 2 q1 + [q0 >= 2^31]
        e(Op.DIVQ, Imm(0), lt, q[0], dst=q[0])            # 2 q0 + [0 >= lt]
        e(Op.OR, e(Op.SHR, ds[0], Imm(1)), e(Op.SHL, ds[1], Imm(31)), dst=ds[0])
        e(Op.SHR, ds[1], Imm(1), dst=ds[1])
        self.terminate(VTerm(Term.BRC, after, last, loop))
        self.cur = after
        return q, r

    def clz64(self, a):
        hz = self.emit(Op.SETEQ, a[1], Imm(0))
        return self.emit(Op.SEL, hz, self.emit(Op.ADD, self.emit(Op.CLZ, a[0]), Imm(32)), self.emit(Op.CLZ, a[1]))

    def negate_if(self, x, sign):
        """x when sign == 0, -x when sign == -1 (two's complement, 64-bit)."""
        flipped = [self.emit(Op.XOR, x[0], sign), self.emit(Op.XOR, x[1], sign)]
        return self.sub64(flipped, [sign, sign])

    def mulhi64(self, a, b, signed):
        """High 64 bits of the 128-bit product, from 32-bit partial products."""
        a0, a1 = a
        b0, b1 = b
        p00h = self.emit(Op.MULHIU, a0, b0)
        p01l, p01h = self.emit(Op.MUL, a0, b1), self.emit(Op.MULHIU, a0, b1)
        p10l, p10h = self.emit(Op.MUL, a1, b0), self.emit(Op.MULHIU, a1, b0)
        p11l, p11h = self.emit(Op.MUL, a1, b1), self.emit(Op.MULHIU, a1, b1)

        def add_carry(x, y):
            s = self.emit(Op.ADD, x, y)
            return s, self.emit(Op.SETLTU, s, y)
        s, c1 = add_carry(p00h, p01l)          # column 1 (bits 32..63): only its carries matter
        s, c = add_carry(s, p10l)
        c1 = self.emit(Op.ADD, c1, c)
        t, c2 = add_carry(p01h, p10h)          # column 2 (bits 64..95)
        t, c = add_carry(t, p11l)
        c2 = self.emit(Op.ADD, c2, c)
        lo, c = add_carry(t, c1)
        c2 = self.emit(Op.ADD, c2, c)
        out = [lo, self.emit(Op.ADD, p11h, c2)]
        if signed:      # signed high half: subtract b when a < 0 and a when b < 0
            sa, sb = self.emit(Op.SRA, a1, Imm(31)), self.emit(Op.SRA, b1, Imm(31))
            out = self.sub64(out, [self.emit(Op.AND, b0, sa), self.emit(Op.AND, b1, sa)])
            out = self.sub64(out, [self.emit(Op.AND, a0, sb), self.emit(Op.AND, a1, sb)])
        return out

    def op_min(self, ins, parts):
        signed = self.itype(parts)[1]
        self.binary(ins, parts, Op.MIN if signed else Op.MINU, lambda a, b: self.minmax64(a, b, signed, True),
                    signed_inputs=True)

    def op_max(self, ins, parts):
        signed = self.itype(parts)[1]
        self.binary(ins, parts, Op.MAX if signed else Op.MAXU, lambda a, b: self.minmax64(a, b, signed, False),
                    signed_inputs=True)

    def add64(self, a, b):
        lo = self.emit(Op.ADD, a[0], b[0])
        carry = self.emit(Op.SETLTU, lo, a[0])
        return [lo, self.emit(Op.ADD, self.emit(Op.ADD, a[1], b[1]), carry)]

    def sub64(self, a, b):
        borrow = self.emit(Op.SETLTU, a[0], b[0])
        lo = self.emit(Op.SUB, a[0], b[0])
        return [lo, self.emit(Op.SUB, self.emit(Op.SUB, a[1], b[1]), borrow)]

    def mul64(self, a, b):
        lo = self.emit(Op.MUL, a[0], b[0])
        hi = self.emit(Op.MULHIU, a[0], b[0])
        hi = self.emit(Op.ADD, hi, self.emit(Op.MUL, a[0], b[1]))
        return [lo, self.emit(Op.ADD, hi, self.emit(Op.MUL, a[1], b[0]))]

    def minmax64(self, a, b, signed, is_min):
        lt = self.cmp64("lt" if signed else "lo", a, b)
        x, y = (a, b) if is_min else (b, a)
        return [self.emit(Op.SEL, lt, x[0], y[0]), self.emit(Op.SEL, lt, x[1], y[1])]

    def op_mul(self, ins, parts):
        self.multiply(ins, parts, addend=None)

    def op_mad(self, ins, parts):
        self.multiply(ins, parts, addend=ins.operands[3])

    def op_mul24(self, ins, parts):
        self.multiply(ins, parts, addend=None, bits24=True)

    def op_mad24(self, ins, parts):
        self.multiply(ins, parts, addend=ins.operands[3], bits24=True)

    def multiply(self, ins, parts, addend, bits24=False):
        mode = next((p for p in parts[1:] if p in ("lo", "hi", "wide")), "lo")
        bits, signed = self.itype(parts)
        d, a, b = ins.operands[:3]
        av, bv = self.read(a, bits), self.read(b, bits)
        if bits24:
            if mode != "lo":
                self.unsupported(f"{ins.opcode} is not supported")
            av = [self.emit(Op.BFE if signed else Op.BFEU, av[0], Imm(0), Imm(24))]
            bv = [self.emit(Op.BFE if signed else Op.BFEU, bv[0], Imm(0), Imm(24))]
        if mode == "wide":
            if bits == 32:
                out = [self.emit(Op.MUL, av[0], bv[0]), self.emit(Op.MULHI if signed else Op.MULHIU, av[0], bv[0])]
            elif bits < 32:
                out = [self.trunc(self.emit(Op.MUL, self.ext(av[0], bits, signed), self.ext(bv[0], bits, signed)),
                                  2 * bits)]
            else:
                self.unsupported(f"{ins.opcode} (128-bit result) is not supported")
            rbits = 2 * bits
        elif bits == 64:
            out, rbits = (self.mulhi64(av, bv, signed) if mode == "hi" else self.mul64(av, bv)), 64
        elif mode == "hi":
            if bits == 32:
                out = [self.emit(Op.MULHI if signed else Op.MULHIU, av[0], bv[0])]
            else:
                p = self.emit(Op.MUL, self.ext(av[0], bits, signed), self.ext(bv[0], bits, signed))
                out = [self.trunc(self.emit(Op.SHR, p, Imm(bits)), bits)]
            rbits = bits
        else:
            out, rbits = [self.trunc(self.emit(Op.MUL, av[0], bv[0]), bits)], bits
        if addend is not None:
            c = self.read(addend, rbits)
            out = self.add64(out, c) if rbits == 64 else [self.trunc(self.emit(Op.ADD, out[0], c[0]), rbits)]
        self.put(d, out, rbits)

    def op_neg(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        av = self.read(a, bits)
        if bits == 64:
            out = self.sub64([Imm(0), Imm(0)], av)
        else:
            out = [self.trunc(self.emit(Op.SUB, Imm(0), av[0]), bits)]
        self.put(d, out, bits)

    def op_abs(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        av = self.read(a, bits)
        if bits == 64:
            sign = self.emit(Op.SRA, av[1], Imm(31))
            x = [self.emit(Op.XOR, av[0], sign), self.emit(Op.XOR, av[1], sign)]
            out = self.sub64(x, [sign, sign])
        else:
            x = self.sext(av[0], bits)
            out = [self.trunc(self.emit(Op.MAX, x, self.emit(Op.SUB, Imm(0), x)), bits)]
        self.put(d, out, bits)

    def op_not(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        m = 1 if bits == 1 else _mask(bits)
        self.put(d, [self.emit(Op.XOR, v, Imm(m if bits < 64 else M32)) for v in self.read(a, bits)], bits)

    def op_cnot(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        av = self.read(a, bits)
        x = self.emit(Op.OR, av[0], av[1]) if bits == 64 else av[0]
        self.put(d, [self.emit(Op.SETEQ, x, Imm(0))] + ([Imm(0)] if bits == 64 else []), bits)

    # -- shifts ----------------------------------------------------------------
    def op_shl(self, ins, parts):
        self.shift(ins, parts, "shl")

    def op_shr(self, ins, parts):
        bits, signed = self.itype(parts)
        self.shift(ins, parts, "sra" if signed else "shr")

    def shift(self, ins, parts, kind):
        bits, _ = self.itype(parts)
        d, a, b = ins.operands
        av, n = self.read(a, bits), self.read1(b, 32)
        if bits == 64:
            out = self.shift64(kind, av, n)
        else:
            x = av[0]
            if kind == "sra":
                x = self.sext(x, bits)
            op = {"shl": Op.SHL, "shr": Op.SHR, "sra": Op.SRA}[kind]
            out = [self.trunc(self.emit(op, x, n), bits)]
        self.put(d, out, bits)

    def shift64(self, kind, a, n):
        lo, hi = a
        if isinstance(n, Imm):        # constant amount: pick the halves at compile time
            k = min(n.value, 64)
            if kind == "shl":
                if k >= 32:
                    return [Imm(0), self.emit(Op.SHL, lo, Imm(k - 32))]
                return [self.emit(Op.SHL, lo, Imm(k)),
                        self.emit(Op.OR, self.emit(Op.SHL, hi, Imm(k)), self.emit(Op.SHR, lo, Imm(32 - k)))]
            fill = Imm(0) if kind == "shr" else self.emit(Op.SRA, hi, Imm(31))
            hop = Op.SHR if kind == "shr" else Op.SRA
            if k >= 32:
                return [self.emit(hop, hi, Imm(min(k - 32, 32))) if k < 64 else fill, fill]
            return [self.emit(Op.OR, self.emit(Op.SHR, lo, Imm(k)), self.emit(Op.SHL, hi, Imm(32 - k))),
                    self.emit(hop, hi, Imm(k))]
        # variable amount: ISA shifts give 0 (SRA: the sign) for amounts >= 32,
        # so the "wrong" half of each formula vanishes on its own.
        up = self.emit(Op.SUB, Imm(32), n)         # 32 - n (huge when n > 32)
        down = self.emit(Op.SUB, n, Imm(32))       # n - 32 (huge when n < 32)
        if kind == "shl":
            hi2 = self.emit(Op.OR, self.emit(Op.SHL, hi, n), self.emit(Op.SHR, lo, up))
            hi2 = self.emit(Op.OR, hi2, self.emit(Op.SHL, lo, down))
            return [self.emit(Op.SHL, lo, n), hi2]
        lo2 = self.emit(Op.OR, self.emit(Op.SHR, lo, n), self.emit(Op.SHL, hi, up))
        if kind == "shr":
            return [self.emit(Op.OR, lo2, self.emit(Op.SHR, hi, down)), self.emit(Op.SHR, hi, n)]
        big = self.emit(Op.SETGEU, n, Imm(32))
        lo2 = self.emit(Op.SEL, big, self.emit(Op.SRA, hi, down), lo2)
        return [lo2, self.emit(Op.SRA, hi, n)]

    def op_shf(self, ins, parts):
        """Funnel shift: shf.{l,r}.{wrap,clamp}.b32 d, a, b, c over the pair b:a."""
        d, a, b, c = ins.operands
        av, bv, n = self.read1(a, 32), self.read1(b, 32), self.read1(c, 32)
        n = self.emit(Op.AND, n, Imm(31)) if "wrap" in parts else self.emit(Op.MINU, n, Imm(32))
        back = self.emit(Op.SUB, Imm(32), n)
        if "l" in parts:
            out = self.emit(Op.OR, self.emit(Op.SHL, bv, n), self.emit(Op.SHR, av, back))
        else:
            out = self.emit(Op.OR, self.emit(Op.SHR, av, n), self.emit(Op.SHL, bv, back))
        self.put(d, [out], 32)

    # -- bit operations --------------------------------------------------------
    def op_popc(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        av = self.read(a, bits)
        v = self.emit(Op.POPC, av[0])
        if bits == 64:
            v = self.emit(Op.ADD, v, self.emit(Op.POPC, av[1]))
        self.put(d, [v], 32)

    def op_clz(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        av = self.read(a, bits)
        if bits == 64:
            v = self.clz64(av)
        else:
            v = self.emit(Op.CLZ, av[0])
        self.put(d, [v], 32)

    def op_brev(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        av = self.read(a, bits)
        out = [self.emit(Op.BREV, av[1]), self.emit(Op.BREV, av[0])] if bits == 64 else [self.emit(Op.BREV, av[0])]
        self.put(d, out, bits)

    def op_bfe(self, ins, parts):
        bits, signed = self.itype(parts)
        d, a, b, c = ins.operands
        if bits == 64:
            self.put(d, self.bfe64(ins, self.read(a, 64), self.read1(b, 32), self.read1(c, 32), signed), 64)
            return
        self.put(d, [self.emit(Op.BFE if signed else Op.BFEU, self.read1(a, 32), self.read1(b, 32),
                               self.read1(c, 32))], 32)

    def bfe64(self, ins, a, pos, ln, signed):
        """64-bit bfe with immediate position and length: move the field to
        the top, then shift it back down (arithmetic shift: sign fill)."""
        if not (isinstance(pos, Imm) and isinstance(ln, Imm)):
            self.unsupported(f"{ins.opcode} with a register position/length is not supported")
        p, length = pos.value & 0xFF, ln.value & 0xFF
        if length == 0:
            return [Imm(0), Imm(0)]
        valid = min(length, max(0, 64 - p))
        if valid == 0:
            return self.shift64("sra", a, Imm(63)) if signed else [Imm(0), Imm(0)]
        top = self.shift64("shl", a, Imm(64 - p - valid))
        return self.shift64("sra" if signed else "shr", top, Imm(64 - valid))

    def op_bfi(self, ins, parts):
        """bfi d, a, b, pos, len: b with bits [pos, pos+len) taken from a."""
        bits, _ = self.itype(parts)
        d, a, b, c, n = ins.operands
        av, bv = self.read(a, bits), self.read(b, bits)
        pos, ln = self.read1(c, 32), self.read1(n, 32)
        if isinstance(pos, Imm) and isinstance(ln, Imm):
            p, length = pos.value & 0xFF, ln.value & 0xFF
            m = (((1 << length) - 1) << p) & ((1 << bits) - 1)
            moved = self.shift64("shl", av, Imm(p)) if bits == 64 else [self.emit(Op.SHL, av[0], Imm(p))]
            out = []
            for k, (x, y) in enumerate(zip(moved, bv)):
                mk = (m >> (32 * k)) & M32
                out.append(self.emit(Op.OR, self.emit(Op.AND, y, Imm(~mk & M32)), self.emit(Op.AND, x, Imm(mk))))
        elif bits == 32:
            pos = self.emit(Op.AND, pos, Imm(0xFF))
            ln = self.emit(Op.AND, ln, Imm(0xFF))
            ones = self.emit(Op.SUB, self.emit(Op.SHL, Imm(1), ln), Imm(1))
            m = self.emit(Op.SHL, ones, pos)
            keep = self.emit(Op.AND, bv[0], self.emit(Op.XOR, m, Imm(M32)))
            out = [self.emit(Op.OR, keep, self.emit(Op.AND, self.emit(Op.SHL, av[0], pos), m))]
        else:
            self.unsupported(f"{ins.opcode} with a register position/length is not supported")
        self.put(d, out, bits)

    def op_prmt(self, ins, parts):
        """prmt.b32 d, a, b, sel (default mode): byte i of d is byte sel[4i+2:4i] of {b, a},
        or that byte's sign bit replicated when sel bit 4i+3 is set."""
        if parts[1:] != ["b32"]:
            self.unsupported(f"{ins.opcode}: only the default prmt mode is supported")
        d, a, b, c = ins.operands
        sel = self.known_constant(c) or self.read1(c, 32)
        src = [self.read1(a, 32), self.read1(b, 32)]
        acc = Imm(0)
        for i in range(4):
            if isinstance(sel, Imm):
                s = (sel.value >> (4 * i)) & 0xF
                word, pos, sign = src[(s & 7) // 4], Imm(8 * (s & 3)), Imm(s >> 3)
            else:       # a run-time selector: the same choice made with ALU ops
                s = self.emit(Op.BFEU, sel, Imm(4 * i), Imm(4))
                word = self.emit(Op.SEL, self.emit(Op.BFEU, s, Imm(2), Imm(1)), src[1], src[0])
                pos = self.emit(Op.SHL, self.emit(Op.AND, s, Imm(3)), Imm(3))
                sign = self.emit(Op.SHR, s, Imm(3))
            v = self.emit(Op.BFEU, word, pos, Imm(8))
            v = self.emit(Op.SEL, sign, self.emit(Op.AND, self.emit(Op.SRA, self.emit(Op.SHL, v, Imm(24)), Imm(31)),
                                                 Imm(0xFF)), v)
            acc = self.emit(Op.OR, acc, self.emit(Op.SHL, v, Imm(8 * i)))
        self.put(d, [acc], 32)

    def known_constant(self, o) -> Imm | None:
        """The value of a PTX register whose only definition is a mov of an immediate."""
        return self.ptx_constants.get(o.name) if isinstance(o, ptx.Reg) else None

    # -- comparisons -----------------------------------------------------------
    CMP32 = {"eq": (Op.SETEQ, Op.SETEQ), "ne": (Op.SETNE, Op.SETNE), "lt": (Op.SETLT, Op.SETLTU),
             "le": (Op.SETLE, Op.SETLEU), "gt": (Op.SETGT, Op.SETGTU), "ge": (Op.SETGE, Op.SETGEU),
             "lo": (Op.SETLTU, Op.SETLTU), "ls": (Op.SETLEU, Op.SETLEU), "hi": (Op.SETGTU, Op.SETGTU),
             "hs": (Op.SETGEU, Op.SETGEU)}

    def compare(self, cmp: str, a, b, bits: int, signed: bool):
        if cmp not in self.CMP32:
            self.unsupported(f"comparison .{cmp} is not supported")
        if bits == 64:
            return self.cmp64(cmp if signed or cmp in ("eq", "ne") else
                              {"lt": "lo", "le": "ls", "gt": "hi", "ge": "hs"}.get(cmp, cmp), a, b)
        x, y = a[0], b[0]
        if signed and bits < 32 and cmp not in ("eq", "ne"):
            x, y = self.sext(x, bits), self.sext(y, bits)
        return self.emit(self.CMP32[cmp][0 if signed else 1], x, y)

    def cmp64(self, cmp: str, a, b):
        if cmp in ("eq", "ne"):
            diff = self.emit(Op.OR, self.emit(Op.XOR, a[0], b[0]), self.emit(Op.XOR, a[1], b[1]))
            return self.emit(Op.SETEQ if cmp == "eq" else Op.SETNE, diff, Imm(0))
        swap = cmp in ("gt", "le", "hi", "ls")     # a > b  ==  b < a
        if swap:
            a, b = b, a
        signed = cmp in ("lt", "le", "gt", "ge")
        strict = cmp in ("lt", "gt", "lo", "hi")
        # a < b: high words decide unless equal, then the low words (unsigned)
        hi_lt = self.emit(Op.SETLT if signed else Op.SETLTU, a[1], b[1])
        hi_eq = self.emit(Op.SETEQ, a[1], b[1])
        lo_lt = self.emit(Op.SETLTU, a[0], b[0])
        lt = self.emit(Op.OR, hi_lt, self.emit(Op.AND, hi_eq, lo_lt))
        # a > b is b < a; a <= b is !(b < a); a >= b is !(a < b)
        if strict:
            return lt
        return self.emit(Op.XOR, lt, Imm(1))

    def op_setp(self, ins, parts):
        cmp = parts[1]
        boolop = next((p for p in parts[2:] if p in ("and", "or", "xor")), None)
        bits, signed = self.itype(parts)
        ops = ins.operands
        d, a, b = ops[:3]
        flag = self.compare(cmp, self.read(a, bits), self.read(b, bits), bits, signed)
        inv = None
        if isinstance(d, ptx.Pair):
            inv = self.emit(Op.XOR, flag, Imm(1))
        if boolop:
            c = self.read1(ops[3], 1)
            bop = {"and": Op.AND, "or": Op.OR, "xor": Op.XOR}[boolop]
            flag = self.emit(bop, flag, c)
            if inv is not None:
                inv = self.emit(bop, inv, c)
        if isinstance(d, ptx.Pair):
            self.put(d.first, [flag], 1)
            self.put(d.second, [inv], 1)
        else:
            self.put(d, [flag], 1)

    def op_set(self, ins, parts):
        cmp = parts[1]
        types = [p for p in parts[1:] if p in TYPE_BITS]
        sbits, ssigned = TYPE_BITS[types[-1]], types[-1].startswith("s")
        d, a, b = ins.operands[:3]
        flag = self.compare(cmp, self.read(a, sbits), self.read(b, sbits), sbits, ssigned)
        boolop = next((p for p in parts[2:] if p in ("and", "or", "xor")), None)
        if boolop:
            flag = self.emit({"and": Op.AND, "or": Op.OR, "xor": Op.XOR}[boolop], flag,
                             self.read1(ins.operands[3], 1))
        self.put(d, [self.emit(Op.SUB, Imm(0), flag)], 32)

    # ========================================================================
    # Special registers, memory, warp ops, control flow
    # ========================================================================
    def space_of(self, ins, parts, addr) -> str | None:
        """The state space an access goes to; None: a generic address whose space only
        the run time knows (windowed mode: see `generic`)."""
        for s in STATE_SPACES:
            if s in parts[1:]:
                if s == "local":
                    self.unsupported("local memory (the stack) is not supported")
                return s
        base = addr.base if isinstance(addr, ptx.Addr) else addr
        if isinstance(base, ptx.Sym) and base.name in self.lay.symbols:
            return self.lay.symbols[base.name][0]
        return self.spaces.of(base.name) if isinstance(base, ptx.Reg) else None

    def located(self, ins, parts, addr) -> tuple[str | None, object, int]:
        """(space or None, base operand, byte offset) of a non-param access."""
        space = self.space_of(ins, parts, addr)
        base, off = self.address(addr)
        generic = not any(s in parts[1:] for s in WINDOWS) and isinstance(addr, ptx.Addr) \
            and isinstance(addr.base, ptx.Reg)
        if generic and self.spaces.windowed and space is not None and WINDOWS[space]:
            base = self.emit(Op.SUB, base, Imm(WINDOWS[space]))
        return space, base, off

    def generic(self, base, off: int, spaces: tuple[str, ...], access) -> list:
        """`access(space, base, off)` in whichever of `spaces` the generic address base+off
        falls in: a region per window, global (window 0, the raw address) last, so an
        address in no window faults there. Returns the access's values, merged."""
        full = base if off == 0 else self.emit(Op.ADD, base, Imm(off))
        window = self.emit(Op.SHR, full, Imm(WINDOW_SHIFT))
        join, merged = self.new_block(), None
        for space in spaces:
            here, other = self.new_block(), self.new_block()
            self.terminate(VTerm(Term.BRC, here, self.emit(Op.SETEQ, window, Imm(WINDOWS[space] >> WINDOW_SHIFT)),
                                 other))
            self.cur = here
            merged = self.merge(merged, access(space, self.emit(Op.SUB, full, Imm(WINDOWS[space])), 0))
            self.terminate(VTerm(Term.JMP, join))
            self.cur = other
        merged = self.merge(merged, access("global", full, 0))
        self.switch_to(join)
        return merged

    def merge(self, merged: list | None, values: list | None) -> list | None:
        if values is None:
            return None
        merged = merged or [self.new_vreg() for _ in values]
        for m, v in zip(merged, values):
            self.emit(Op.MOV, v, dst=m)
        return merged

    def address(self, addr) -> tuple:
        """(base operand, byte offset) of a [..] operand."""
        if not isinstance(addr, ptx.Addr):
            addr = ptx.Addr(addr, 0)
        if addr.base is None:
            return Imm(addr.offset), 0
        if isinstance(addr.base, ptx.Sym):
            return Imm(self.sym_address(addr.base.name) + addr.offset), 0
        return self.read1(addr.base, 32), addr.offset

    def elements(self, parts) -> int:
        v = next((p for p in parts if p in ("v2", "v4", "v8")), None)
        return int(v[1:]) if v else 1

    def op_ld(self, ins, parts):
        d, addr = ins.operands
        space = self.space_of(ins, parts, addr)
        bits, signed = self.itype(parts)
        dsts = d.items if isinstance(d, ptx.Vec) else (d,)
        if space == "param":
            self.load_param(d, addr, bits, signed)
            return
        space, base, off = self.located(ins, parts, addr)
        load = lambda sp, b, o: self.load(SPACES[sp], b, o, bits)   # noqa: E731
        for k, dk in enumerate(dsts):
            o = off + k * max(1, bits // 8)
            values = load(space, base, o) if space else self.generic(base, o, ("const", "shared"), load)
            self.put(dk, values, bits, signed)

    def load_param(self, d, addr, bits, signed):
        name = addr.base.name if isinstance(addr, ptx.Addr) else addr.name
        if name not in self.lay.param_bits:
            self.unsupported(f"ld.param from {name}, which is not a kernel parameter")
        byte = self.lay.symbols[name][1]
        off = addr.offset if isinstance(addr, ptx.Addr) else 0
        # a parameter is one CONST word; the high word of a 64-bit one is 0
        lo = self.emit(Op.LD, Imm(byte), Imm(0), mod=isa.Space.CONST) if off < 4 else Imm(0)
        if bits < 32 and off < 4:       # a byte or half of it (ld.param.u8 [p+1])
            lo = self.emit(Op.BFEU, lo, Imm(8 * off), Imm(bits))
        if bits == 64:
            self.put(d, [lo, Imm(0)], 64)
        else:   # ld.param.s8/s16/s32 sign-extends into a wider register, like every other load
            self.put(d, [lo], bits, signed)

    def load(self, space, base, off: int, bits: int) -> list:
        if bits == 64:
            return [self.emit(Op.LD, base, Imm(off), mod=space), self.emit(Op.LD, base, Imm(off + 4), mod=space)]
        if bits == 32:
            return [self.emit(Op.LD, base, Imm(off), mod=space)]
        if isinstance(base, Imm):          # static address: the byte position is known
            a = base.value + off
            w = self.emit(Op.LD, Imm(a & ~3), Imm(0), mod=space)
            return [self.emit(Op.BFEU, w, Imm(8 * (a & 3)), Imm(bits))]
        a = self.emit(Op.ADD, base, Imm(off))
        w = self.emit(Op.LD, self.emit(Op.AND, a, Imm(~3 & M32)), Imm(0), mod=space)
        shift = self.emit(Op.SHL, self.emit(Op.AND, a, Imm(3)), Imm(3))
        return [self.emit(Op.BFEU, w, shift, Imm(bits))]

    def op_st(self, ins, parts):
        addr, v = ins.operands
        space, base, off = self.located(ins, parts, addr)
        if space not in ("global", "shared", None):
            self.unsupported(f"{ins.opcode}: stores to .{space} are not supported")
        bits, _ = self.itype(parts)
        vals = v.items if isinstance(v, ptx.Vec) else (v,)
        for k, x in enumerate(vals):
            o, data = off + k * max(1, bits // 8), self.read(x, bits)
            store = lambda sp, b, o: self.store(SPACES[sp], b, o, bits, data)   # noqa: E731
            if space:
                store(space, base, o)
            else:
                self.generic(base, o, ("shared",), store)

    def store(self, space, base, off: int, bits: int, vals: list) -> None:
        if bits >= 32:
            for k, v in enumerate(vals):
                self.emit(Op.ST, base, Imm(off + 4 * k), v, mod=space, result=False)
            return
        # 8/16-bit store, exact and race-free for the neighbouring bytes:
        # clear the field with an atomic AND, then set it with an atomic OR
        if isinstance(base, Imm):
            a = base.value + off
            word, shift = Imm(a & ~3), Imm(8 * (a & 3))
        else:
            a = self.emit(Op.ADD, base, Imm(off))
            word = self.emit(Op.AND, a, Imm(~3 & M32))
            shift = self.emit(Op.SHL, self.emit(Op.AND, a, Imm(3)), Imm(3))
        field_mask = self.emit(Op.SHL, Imm(_mask(bits)), shift)
        self.emit(Op.ATOM, word, self.emit(Op.XOR, field_mask, Imm(M32)), Imm(0), mod=(space, isa.AtomOp.AND),
                  result=False)
        self.emit(Op.ATOM, word, self.emit(Op.SHL, vals[0], shift), Imm(0), mod=(space, isa.AtomOp.OR),
                  result=False)

    ATOMS = {"add": isa.AtomOp.ADD, "exch": isa.AtomOp.EXCH, "and": isa.AtomOp.AND, "or": isa.AtomOp.OR,
             "xor": isa.AtomOp.XOR, "inc": isa.AtomOp.INC, "dec": isa.AtomOp.DEC, "cas": isa.AtomOp.CAS}

    def op_atom(self, ins, parts, has_dst=True):
        ops = ins.operands
        d, addr, rest = (ops[0], ops[1], ops[2:]) if has_dst else (None, ops[0], ops[1:])
        space, base, off = self.located(ins, parts, addr)
        if space not in ("global", "shared", None):
            self.unsupported(f"{ins.opcode}: atomics on .{space} are not supported")
        bits, signed = self.itype(parts)
        if bits != 32:
            self.unsupported(f"{ins.opcode}: only 32-bit atomics are supported")
        name = next((p for p in parts[1:] if p in self.ATOMS or p in ("min", "max", "sub")), None)
        if name is None:
            self.unsupported(f"{ins.opcode}: unknown atomic operation")
        b = self.read1(rest[0], 32)
        c = self.read1(rest[1], 32) if len(rest) > 1 else Imm(0)
        if name == "sub":
            name, b = "add", self.emit(Op.SUB, Imm(0), b)
        if name in ("min", "max"):
            aop = isa.AtomOp[name.upper() + ("" if signed else "U")]
        else:
            aop = self.ATOMS[name]
        def atom(sp, base, off):
            a = base if off == 0 else self.emit(Op.ADD, base, Imm(off))
            return [self.emit(Op.ATOM, a, b, c, mod=(SPACES[sp], aop), result=d is not None)]
        old = atom(space, base, off) if space else self.generic(base, off, ("shared",), atom)
        if d is not None:
            self.put(d, old, 32)

    def op_red(self, ins, parts):
        self.op_atom(ins, parts, has_dst=False)

    def op_bar(self, ins, parts):
        if "warp" in parts:              # bar.warp.sync: lanes of a warp run in lockstep here
            return
        if "arrive" in parts or "red" in parts:
            self.unsupported(f"{ins.opcode} is not supported (only bar.sync)")
        nxt = self.new_block()
        self.terminate(VTerm(Term.BAR, nxt))
        self.cur = nxt

    op_barrier = op_bar

    def op_membar(self, ins, parts):
        pass        # one memory, executed in order: fences are no-ops

    op_fence = op_membar

    def op_shfl(self, ins, parts):
        mode = next((isa.ShflMode(p) for p in parts[1:] if p in ("idx", "up", "down", "bfly")), None)
        d, a, b, c = ins.operands[:4]
        if isinstance(d, ptx.Pair):
            self.unsupported("shfl with a predicate destination is not supported")
        v = self.emit(Op.SHFL, self.read1(a, 32), self.read1(b, 32), self.read1(c, 32), mod=mode)
        self.put(d, [v], 32)

    def op_vote(self, ins, parts):
        mode = next((isa.VoteMode(p) for p in parts[1:] if p in ("all", "any", "uni", "ballot")), None)
        if mode is None:
            self.unsupported(f"{ins.opcode}: unknown vote mode")
        d, p = ins.operands[:2]
        mask = self.read1(ins.operands[2], 32) if len(ins.operands) > 2 else Imm(M32)
        v = self.emit(Op.VOTE, self.read1(p, 1), mask, mod=mode)
        self.put(d, [v], 32 if mode is isa.VoteMode.BALLOT else 1)

    def op_activemask(self, ins, parts):
        v = self.emit(Op.VOTE, Imm(0), Imm(M32), mod=isa.VoteMode.ACTIVEMASK)
        self.put(ins.operands[0], [v], 32)

    def op_bra(self, ins, parts):
        target = ins.operands[0]
        if not isinstance(target, ptx.Sym):
            self.unsupported("indirect branches are not supported")
        t, nxt = self.label_block(target.name), self.new_block()
        if ins.pred is None:
            self.terminate(VTerm(Term.JMP, t))
        else:
            p = self.pred_vreg(ins)
            self.terminate(VTerm(Term.BRC, nxt, p, t) if ins.pred_negated else VTerm(Term.BRC, t, p, nxt))
        self.cur = nxt

    def op_ret(self, ins, parts):
        self.terminate(VTerm(Term.EXIT))

    op_exit = op_ret

    def op_trap(self, ins, parts):
        self.unsupported("trap is not supported")


_PURE_OPS = {"mov", "cvta", "cvt", "selp", "slct", "add", "sub", "and", "or", "xor", "div", "rem", "min", "max",
             "mul", "mad", "mul24", "mad24", "neg", "abs", "not", "cnot", "shl", "shr", "shf", "popc", "clz",
             "brev", "bfe", "bfi", "prmt", "setp", "set"}


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------
def lower(module: ptx.Module, kernel_name: str, expand: frozenset[str] = frozenset()) -> isa.Program:
    """`expand`: names of ALU ops (from EXPANDABLE) to rewrite into other ops,
    for an engine without them (the model engine: MODEL_EXPANSIONS)."""
    unknown = sorted(set(expand) - EXPANDABLE)
    if unknown:
        raise ValueError(f"cannot expand {', '.join(unknown)}; expandable ops: {', '.join(sorted(EXPANDABLE))}")
    fn = inline_calls(module, find_kernel(module, kernel_name))
    lay = layout(module, fn)
    tr = _Translator(module, fn, lay, address_spaces(fn, lay.symbols))
    blocks = tr.run()
    propagate_constants(blocks)
    propagate_copies(blocks)
    eliminate_dead_code(blocks)
    if any(ins.op.name in expand for b in blocks for ins in b.instrs):   # else: the same program as without
        tr.nvreg = expand_ops(blocks, expand, tr.nvreg)
        propagate_constants(blocks)
        propagate_copies(blocks)
        eliminate_dead_code(blocks)
    drop_redundant_masks(blocks)
    fold_address_adds(blocks)
    blocks = simplify_cfg(blocks)
    tr.nvreg = if_convert(blocks, tr.nvreg)
    blocks = simplify_cfg(blocks)
    branch_on_values(blocks)
    hoist_loads(blocks)
    fold_friendly(blocks)
    alloc = allocate_registers(blocks, plain_name(fn.name), tr.nvreg, lay.shared_words)
    shared_words = isa.SHARED_WORDS if alloc.spill_slots else lay.shared_words
    printf_buffer = next((addr // 4 for name, (space, addr) in lay.symbols.items()
                          if space == "global" and "__qg_printf_buffer" in name), None)
    writes = kernel_writes(fn, lay.params, lay.symbols, lay.static_global_words,
                           lambda ins, addr: tr.space_of(ins, ins.parts, addr))
    shape = isa.Program(plain_name(fn.name), [], lay.params, lay.const_init, lay.global_init, lay.static_global_words,
                        shared_words, alloc.regs_used, printf_buffer, writes)
    prog = machine_program(blocks, lambda v: alloc.colours.get(v, 0), shape)
    isa.check_program(prog)
    prog.warnings = shuffle_warnings(module, fn, tr.ptx_constants)
    return prog
