"""The translator's core: the PTX function's body, one instruction at a time, into
virtual-IR blocks; PTX registers as virtual registers (a pair for 64 bits, 8/16-bit values
zero-extended in one), operands read and results written at an instruction's type,
predication, labels and branches. The instructions' own translations are alu.py's,
memory.py's (`op_<name>` methods) and floats.py's (`f32_<name>`).
"""
from __future__ import annotations

import re

from qwengpu import isa
from qwengpu.errors import UnsupportedError
from qwengpu.toolchain import ptx
from qwengpu.toolchain.cfg import VBlock, VTerm
from qwengpu.toolchain.division import Division
from qwengpu.toolchain.layout import Layout
from qwengpu.toolchain.ptx import TYPE_BITS, plain_name
from qwengpu.toolchain.spaces import Spaces

Op, Imm, Term = isa.Op, isa.Imm, isa.Term
M32 = isa.MASK32
FLOAT_TYPES = ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64")
SREG_INDEX = {f"%{r}.{c}": isa.SReg[f"{r.upper()}_{c.upper()}"] for r in ("tid", "ntid", "ctaid", "nctaid")
              for c in "xyz"} | {"%laneid": isa.SReg.LANEID, "%warpid": isa.SReg.WARPID}
# the PTX instructions without side effects (alu.py's): guarded by a predicate, one computes
# into temporaries that a SEL commits, where any other takes a conditional region
PURE_OPS = {"mov", "cvta", "cvt", "selp", "slct", "add", "sub", "and", "or", "xor", "div", "rem", "min", "max",
            "mul", "mad", "mul24", "mad24", "neg", "abs", "not", "cnot", "shl", "shr", "shf", "popc", "clz",
            "brev", "bfe", "bfi", "prmt", "setp", "set"}

# CUDA's single-precision math functions (and the C++ overloads that call them): library code
# inlined at the call site, so an instruction of theirs that the machine lacks is reported at a
# user's line that shows no such instruction (sinf's slow path, cbrtf's lg2.approx)
MATH_FUNCTIONS = frozenset("""
    sinf cosf tanf sincosf sinpif cospif sincospif asinf acosf atanf atan2f sinhf coshf tanhf asinhf acoshf
    atanhf expf exp2f exp10f expm1f logf log2f log10f log1pf logbf ilogbf powf sqrtf rsqrtf cbrtf rcbrtf
    hypotf rhypotf norm3df rnorm3df norm4df rnorm4df normf rnormf erff erfcf erfinvf erfcinvf erfcxf
    normcdff normcdfinvf lgammaf tgammaf j0f j1f jnf y0f y1f ynf cyl_bessel_i0f cyl_bessel_i1f fmodf
    remainderf remquof sin cos tan sincos asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2
    exp10 expm1 log log2 log10 log1p pow cbrt hypot erf erfc lgamma tgamma fmod remainder remquo""".split())


def library_note(cuda_line: str) -> str:
    """A note naming the math library functions `cuda_line` calls ('' if none)."""
    names = list(dict.fromkeys(n for n in re.findall(r"\b(\w+)\s*\(", cuda_line) if n in MATH_FUNCTIONS))
    if not names:
        return ""
    return (f"; this line calls {', '.join(names)}, whose CUDA library code may be what uses it "
            "(README, 'Floats', lists the math functions the machine runs)")


def type_mask(bits: int) -> int:
    """The bits of a word that a value of a `bits`-wide type occupies."""
    return (1 << bits) - 1 if bits < 32 else M32


def constant_registers(fn: ptx.Function) -> dict[str, Imm]:
    """PTX registers defined exactly once, by an unpredicated `mov` of an integer immediate."""
    defs: dict[str, list] = {}
    for ins in fn.body:
        if isinstance(ins, ptx.Instruction) and ins.operands and isinstance(ins.operands[0], ptx.Reg):
            defs.setdefault(ins.operands[0].name, []).append(ins)
    return {r: Imm(d[0].operands[1].value & M32) for r, d in defs.items()
            if len(d) == 1 and d[0].parts[0] == "mov" and d[0].pred is None and len(d[0].operands) == 2
            and isinstance(d[0].operands[1], ptx.Imm) and not d[0].operands[1].is_float}


class TranslatorBase(Division):
    """The translator's state and the walk over the body; AluOps and MemoryOps add the
    instructions' handlers (op_<name>), Division, PairArithmetic and Builder what they emit
    with."""

    def __init__(self, module: ptx.Module, fn: ptx.Function, lay: Layout, spaces: Spaces):
        super().__init__([VBlock()])
        self.module, self.fn, self.lay, self.spaces = module, fn, lay, spaces
        self.labels: dict[str, int] = {}
        self.regs: dict[str, list[int]] = {}
        self.temps: set[int] = set()
        self.alias: dict[int, int] = {}
        self.guard = None          # (pred vreg, negated) while lowering a predicated ALU op
        self.pending: list[tuple[int, int]] = []
        self.ins: ptx.Instruction | None = None
        self.ptx_constants = constant_registers(fn)
        self.frame = None          # the running thread's local frame (layout.py), when it has one

    # -- the body --------------------------------------------------------------
    def run(self) -> list[VBlock]:
        if self.lay.frame_bytes:
            self.frame = self.thread_frame()
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
        if any(p in FLOAT_TYPES for p in parts[1:]):
            handler = self.float_handler(ins, parts)        # floats.py
        else:
            handler = getattr(self, f"op_{base}", None)
            if handler is None:
                self.unsupported(f"instruction {ins.opcode} is not supported")
            if "sat" in parts[1:]:
                self.unsupported(f"{ins.opcode}: .sat is not supported")
        if "cc" in parts[1:]:
            self.unsupported(f"{ins.opcode}: .cc is not supported")
        if base in ("addc", "subc"):
            self.unsupported(f"{ins.opcode}: carry chains are not supported")
        if ins.pred is None:
            handler(ins, parts)
        elif base in PURE_OPS:
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

    # -- the instruction at hand -----------------------------------------------
    def unsupported(self, what: str):
        line = self.ins.line if self.ins else self.fn.line
        raise UnsupportedError(f"{self.module.where(line)}: {what} (kernel {plain_name(self.fn.name)})"
                               + library_note(self.module.cuda_line(line)))

    @property
    def line(self) -> int:
        return self.ins.line if self.ins else 0

    # -- PTX registers ---------------------------------------------------------
    def reg_bits(self, name: str) -> int:
        return TYPE_BITS[self.fn.regs[name]]

    def vregs(self, name: str) -> list[int]:
        if name not in self.regs:
            n = 2 if self.reg_bits(name) == 64 else 1
            self.regs[name] = [self.new_vreg() for _ in range(n)]
        return self.regs[name]

    def renamed(self, operand):
        return self.alias.get(operand, operand) if isinstance(operand, int) else operand

    def temporary(self) -> int:
        v = self.new_vreg()
        self.temps.add(v)       # `assign` may rename it to the register it goes into
        return v

    def assign(self, target: int, value) -> None:
        value = self.renamed(value)
        last = self.block.instrs[-1] if self.block.instrs else None
        if isinstance(value, int) and value in self.temps and last is not None and last.dst == value:
            last.dst = target          # write the result straight into the register
            self.temps.discard(value)
            self.alias[value] = target
        elif value != target:
            self.emit(Op.MOV, value, dst=target)

    def thread_frame(self) -> int:
        """The shared byte address of the running thread's local frame: frames lie in thread
        order (warp, then lane) from the layout's local_base."""
        f = self.lay.frame_bytes
        warp = self.emit(Op.MUL, self.emit(Op.S2R, Imm(int(isa.SReg.WARPID))), Imm(isa.LANES * f))
        lane = self.emit(Op.MUL, self.emit(Op.S2R, Imm(int(isa.SReg.LANEID))), Imm(f))
        frame = self.new_vreg()            # not a temporary: `assign` must not rename it
        self.emit(Op.ADD, self.emit(Op.ADD, warp, lane), Imm(self.lay.local_base), dst=frame)
        return frame

    # -- operands --------------------------------------------------------------
    def sym_address(self, name: str) -> int:
        if name not in self.lay.symbols:
            self.unsupported(f"unknown symbol {name}")
        return self.lay.symbols[name][1]

    def read(self, o, bits: int) -> list:
        """Operand value at `bits`: one canonical (zero-extended) word, or a
        (lo, hi) pair for 64 bits."""
        if isinstance(o, ptx.Imm):
            if o.float_bits == 64 or (o.is_float and (bits != 32 or o.value < 0)):
                self.unsupported(f"the float literal {o.value:#x} is not an fp32 operand here (qwengpu runs fp32)")
            v = o.value
            return [Imm(v & M32), Imm((v >> 32) & M32)] if bits == 64 else [Imm(v & type_mask(bits))]
        if isinstance(o, ptx.Reg):
            vs, rw = self.vregs(o.name), self.reg_bits(o.name)
            if bits == 64:
                return list(vs) if rw == 64 else [vs[0], Imm(0)]
            v = vs[0]
            if bits < 32 and rw > bits:
                v = self.emit(Op.AND, v, Imm(type_mask(bits)))
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
            if self.lay.symbols[name][0] == "local":        # an offset in the thread's frame
                a = self.emit(Op.ADD, self.frame, a)
            return [a, Imm(0)] if bits == 64 else [a]
        if isinstance(o, ptx.Not):
            return [self.emit(Op.XOR, self.read(o.reg, 1)[0], Imm(1))]
        self.unsupported(f"operand {o} is not supported here")

    def read1(self, o, bits: int):
        return self.read(o, bits)[0]

    def known_constant(self, o) -> Imm | None:
        """The value of a PTX register whose only definition is a mov of an immediate."""
        return self.ptx_constants.get(o.name) if isinstance(o, ptx.Reg) else None

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
                lo = self.emit(Op.AND, self.sext(lo, bits), Imm(type_mask(rw)))
            elif bits > rw:
                lo = self.emit(Op.AND, lo, Imm(type_mask(rw)))
            out = [lo]
        targets = self.vregs(o.name)
        if self.guard is not None:       # predicated: compute into temporaries, SEL afterwards
            temps = [self.new_vreg() for _ in targets]
            self.pending += list(zip(targets, temps))
            targets = temps
        # a value that is a half written before it (`shl.b64 %rd2, %rd2, 32`: hi = old lo) is
        # copied first, so the halves are assigned as if at once
        out = [self.emit(Op.MOV, v) if self.renamed(v) in targets[:k] else v for k, v in enumerate(out)]
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
        return v if bits >= 32 else self.emit(Op.AND, v, Imm(type_mask(bits)))

    # -- types -----------------------------------------------------------------
    def itype(self, parts, k: int = -1) -> tuple[int, bool]:
        types = [p for p in parts[1:] if p in TYPE_BITS]
        if not types:
            self.unsupported(f"{'.'.join(parts)} has no type")
        t = types[k]
        return TYPE_BITS[t], t.startswith("s")

    # -- control flow ----------------------------------------------------------
    def label_block(self, name: str) -> int:
        if name not in self.labels:
            self.labels[name] = self.new_block()
        return self.labels[name]

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
