"""The translator's memory, atomic and warp instructions and barriers: ld/st/atom/red in
the space an address points into (spaces.py; in windowed mode, a generic address the run
time dispatches), 8/16-bit accesses on their words, shfl/vote, bar.
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain import ptx
from qwengpu.toolchain.cfg import VTerm
from qwengpu.toolchain.spaces import STATE_SPACES, WINDOW_SHIFT, WINDOWS, home
from qwengpu.toolchain.translate.core import M32, TranslatorBase, type_mask

Op, Imm, Term = isa.Op, isa.Imm, isa.Term
SPACES = {"global": isa.Space.GLOBAL, "shared": isa.Space.SHARED, "const": isa.Space.CONST}


class MemoryOps(TranslatorBase):
    """op_<name> for loads, stores, atomics, warp operations and barriers."""

    # -- where an access goes --------------------------------------------------
    def space_of(self, ins, parts, addr) -> str | None:
        """The state space an access goes to; None: a generic address whose space only
        the run time knows (windowed mode: see `generic`)."""
        for s in STATE_SPACES:
            if s in parts[1:]:
                return home(s)
        base = addr.base if isinstance(addr, ptx.Addr) else addr
        if isinstance(base, ptx.Sym) and base.name in self.lay.symbols:
            return home(self.lay.symbols[base.name][0])
        return self.spaces.of(base.name) if isinstance(base, ptx.Reg) else None

    def located(self, ins, parts, addr) -> tuple[str | None, object, int]:
        """(space or None, base operand, byte offset) of a non-param access."""
        space = self.space_of(ins, parts, addr)
        base, off = self.address(addr)
        generic = not any(s in parts[1:] for s in STATE_SPACES) and isinstance(addr, ptx.Addr) \
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
            return self.read1(addr, 32), 0
        return self.read1(addr.base, 32), addr.offset

    # -- loads, stores, atomics ------------------------------------------------
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
        field_mask = self.emit(Op.SHL, Imm(type_mask(bits)), shift)
        self.emit(Op.ATOM, word, self.emit(Op.XOR, field_mask, Imm(M32)), Imm(0), mod=(space, isa.AtomOp.AND),
                  result=False)
        self.emit(Op.ATOM, word, self.emit(Op.SHL, vals[0], shift), Imm(0), mod=(space, isa.AtomOp.OR),
                  result=False)

    ATOMS = {"add": isa.AtomOp.ADD, "exch": isa.AtomOp.EXCH, "and": isa.AtomOp.AND, "or": isa.AtomOp.OR,
             "xor": isa.AtomOp.XOR, "inc": isa.AtomOp.INC, "dec": isa.AtomOp.DEC, "cas": isa.AtomOp.CAS}

    def op_atom(self, ins, parts, has_dst=True):
        bits, signed = self.itype(parts)
        if bits != 32:
            self.unsupported(f"{ins.opcode}: only 32-bit atomics are supported")
        name = next((p for p in parts[1:] if p in self.ATOMS or p in ("min", "max", "sub")), None)
        if name is None:
            self.unsupported(f"{ins.opcode}: unknown atomic operation")
        if name in ("min", "max"):
            aop = isa.AtomOp[name.upper() + ("" if signed else "U")]
        else:
            aop = self.ATOMS["add" if name == "sub" else name]
        self.atomic(ins, parts, aop, has_dst, negate=name == "sub")

    def atomic(self, ins, parts, aop: isa.AtomOp, has_dst: bool, negate: bool = False) -> None:
        """An atom (has_dst) or red of operation `aop`; `negate`: b's negation is the operand."""
        ops = ins.operands
        d, addr, rest = (ops[0], ops[1], ops[2:]) if has_dst else (None, ops[0], ops[1:])
        space, base, off = self.located(ins, parts, addr)
        if space not in ("global", "shared", None):
            self.unsupported(f"{ins.opcode}: atomics on .{space} are not supported")
        b = self.read1(rest[0], 32)
        c = self.read1(rest[1], 32) if len(rest) > 1 else Imm(0)
        if negate:
            b = self.emit(Op.SUB, Imm(0), b)

        def atom(sp, base, off):
            a = base if off == 0 else self.emit(Op.ADD, base, Imm(off))
            return [self.emit(Op.ATOM, a, b, c, mod=(SPACES[sp], aop), result=d is not None)]
        old = atom(space, base, off) if space else self.generic(base, off, ("shared",), atom)
        if d is not None:
            self.put(d, old, 32)

    def op_red(self, ins, parts):
        self.op_atom(ins, parts, has_dst=False)

    # -- barriers, fences, warp operations -------------------------------------
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
