"""The translator's ALU instructions: data movement, integer arithmetic, shifts, bit
operations and comparisons, at 8 to 64 bits (64-bit values: pairs.py; division:
division.py).
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain import ptx
from qwengpu.toolchain.ptx import TYPE_BITS
from qwengpu.toolchain.spaces import WINDOWS, home
from qwengpu.toolchain.translate.core import M32, TranslatorBase, type_mask

Op, Imm = isa.Op, isa.Imm


class AluOps(TranslatorBase):
    """op_<name> for the PTX ALU instructions (core.PURE_OPS)."""

    # -- data movement ---------------------------------------------------------
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
        space = next((home(p) for p in parts[1:] if home(p) in WINDOWS), "global")
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

    # -- integer arithmetic ----------------------------------------------------
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

    def op_min(self, ins, parts):
        signed = self.itype(parts)[1]
        self.binary(ins, parts, Op.MIN if signed else Op.MINU, lambda a, b: self.minmax64(a, b, signed, True),
                    signed_inputs=True)

    def op_max(self, ins, parts):
        signed = self.itype(parts)[1]
        self.binary(ins, parts, Op.MAX if signed else Op.MAXU, lambda a, b: self.minmax64(a, b, signed, False),
                    signed_inputs=True)

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
            out = self.negate_if(av, self.emit(Op.SRA, av[1], Imm(31)))
        else:
            x = self.sext(av[0], bits)
            out = [self.trunc(self.emit(Op.MAX, x, self.emit(Op.SUB, Imm(0), x)), bits)]
        self.put(d, out, bits)

    def op_not(self, ins, parts):
        bits, _ = self.itype(parts)
        d, a = ins.operands
        m = 1 if bits == 1 else type_mask(bits)
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

    def op_setp(self, ins, parts):
        bits, signed = self.itype(parts)
        d, a, b = ins.operands[:3]
        self.set_predicate(ins, parts, self.compare(parts[1], self.read(a, bits), self.read(b, bits), bits, signed))

    def set_predicate(self, ins, parts, flag) -> None:
        """setp's destination (p, or the pair p|q of flag and its inverse) from the comparison's
        flag, combined with the optional predicate source (setp.cmp.and/or/xor)."""
        boolop = next((p for p in parts[2:] if p in ("and", "or", "xor")), None)
        ops = ins.operands
        d = ops[0]
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
