"""The 4-lane floating-point unit: FADD, FSUB, FMUL, FFMA, I2F, U2F, F2I, F2U, FRND in all four rounding
modes, FMIN, FMAX and FSET's fourteen comparisons (isa.FLOAT_SEMANTICS), subnormals and special values
included, exact in fp32 and bf16 like every unit (gadgets.py).

Interface: `build_fpu(c, at, op, rnd, a, b, r, cc)` reads one-dim op flags (FPU_OPS: FSET one per
comparison; at most one is 1), the rounding mode's one-hot flags (ROUNDINGS, set for ROUNDED_OPS) and
per-lane 32-bit operands (cc: FFMA's addend, the ALU's third operand), and adds each lane's result
into r (the ALU's result fields, 0 on a float pass) by layer at + FPU_LAYERS - 1. With every op flag
0 it adds nothing. The operands live on past `at` (nothing clears them), so each stage reads them
where the layer budget has room (docs/float-circuit.md has the budget). The operands carry an fp32
read's noise; stages that amplify it (carry resolutions x128, gates) get exact inputs: requantized
fields, or _exact_step where a threshold reads a noisy field.

Each op brings its exact result into one window S of 52 bits, with an exponent G and a constant K
such that S's bit j weighs 2**(j + G - K - 126); a shared back end normalises, rounds and packs
(from +14):

  FADD/FSUB  swap the operands so that |X| >= |Y| (+1), align Y's significand right by the exponent
             difference in two one-hot stages, 4 then 1 (+2, +4), with a sticky bit; X * 8 + Y or
             X * 8 - Y (>= 0) in 28 bits (+6, +7). G = X's exponent, K = 27.
  FMUL       the 24 x 24 bit products summed per column (+2), two in-place column reductions
             (+3, +4), nibble digits (+5), the 48-bit sum (+6, +7). G = ea + eb, K = 174.
  FFMA       after FMUL's exact product P (48 bits in S by +8), like FADD on 48-bit significands: X is
             P or c's 24 bits padded with 24 zeros below, whichever has the higher top bit by the
             exponents alone (d = ea + eb - ec - 126 from a small adder, +4 .. +7; P when c is 0, c
             when P is 0), Y the other, right by k = |d| (one-hots k mod 4 and k div 4, none for
             k >= 52) in two stages (+9, +10) with a sticky at position 0; X * 8 + Y or X * 8 - Y in 52
             bits as nibble digits (+10), bits and generate/propagate (+11), carries and the carry out
             (+12); then |S| (+13: a difference may be negative when the top bits' exponents tie or an
             operand is subnormal, and only then is it exact, with no bit lost to the sticky) and the sign
             X's xor [negative]. G - K = ea + eb - 177 or ec - 51. One rounding: the sticky stands
             for Y's bits below position 1, and every rounding position is >= 2.
  I2F, U2F   |a| (a negative I2F's ~a + 1) as S's digits (+6, +7); G - K = 126.
  FRND       a's significand with the bits below its units bit cleared, plus the mode's increment at
             the units bit, as S's digits straight from a's bits (+5: one threshold per exponent and
             mode, convert()); G - K = E - 24, so the back end packs it exactly (|a| >= 2**23: a
             itself). |a| < 1 leaves S = 0, the zero special with a's sign, and +-1 is added at +17.
  F2I, F2U   not through the back end: |a| rounded to an integer N in the mode, as S's 32 low bits
             (+5: a's significand shifted by E - 150 one nibble a neuron, the increment one threshold
             per exponent and mode; a negative F2I's N - 1 in 32 bits, whose complement is -N),
             saturation (E >= 158, F2U 159, infinities) as a constant in N's place, NaN as N = 0;
             S into r at +14 (complemented for a negative F2I, none of a negative F2U's: 0).
  FSET, FMIN, FMAX  from FADD's magnitude order, the signs and the classes (+2), into r at +3.
  back end   from S (+14): the result's last bit t' = max(p, q') - 23 in S, p the leading one and
             q' = K - G the subnormal floor (one-hot, fine t' mod 4 and coarse t' div 4), the
             hidden bit [p >= q'] and overflow [p >= 254 + K - G]; the significand's shift by the
             fine then the coarse amount with guard and sticky, the biased exponent t' + G - K + 1
             (+15, +16); rounding as an increment of the packed word, whose carry runs from the
             fraction into the exponent (+17); specials (NaN, infinity, zero, overflow) in place
             of the rounded word.

The exponent quantities the back end needs come early from small adders and pattern matches over
the exponent bits; the 48-bit carry resolution is one layer (_carries: a carry into nibble m is
one of m mutually exclusive thresholds with unit weights, where one 2**m-weighted threshold would
leave the exact range). The conversions to integers add no residual field: their digits, S and r
are the other ops' (only their three decoded op flags are new).
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit.gadgets import MAX_POSITIVE, add_terms, neg, span
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import carries_in_place, carry_field, column_bits, digit_bounds, nibble_functions
from qwengpu.machine.plan import FPU_LAYERS

# rounded in the mode ROUNDINGS names
ROUNDED_OPS = ("FADD", "FSUB", "FMUL", "FFMA", "I2F", "U2F", "F2I", "F2U", "FRND")
FSET_OPS = tuple(f"FSET.{cmp.name}" for cmp in isa.FCmp)   # FSET by its comparison (ROM0.mod)
FPU_OPS = ROUNDED_OPS + ("FMIN", "FMAX") + FSET_OPS
FPU_OPCODES = ROUNDED_OPS + ("FMIN", "FMAX", "FSET")      # the isa opcodes the FPU runs
ROUNDINGS = ("RN", "RZ", "RM", "RP")
LANES = 4
WINDOW = 52                 # S: FFMA's sum; the product's 48 bits below; FADD uses the low 28
NIBBLES = 12                # the product's nibbles
WNIBBLES = WINDOW // 4      # FFMA's
FADD_NIBBLES = 7            # FADD's 28 bits (its subtraction's carry out of them is dropped)
INT_NIBBLES = 8             # I2F's and U2F's 32
PAD = 23                    # t' = t + PAD: the last bit's position in S extended by 23 zero bits below
T_MAX = WINDOW + 24         # t' >= T_MAX: every bit of S is below the guard
K_FADD, K_FMUL = 27, 174
K_FFMA_P, K_FFMA_C = 177, 51    # FFMA: S's bit 50 is X's top bit (X * 8), X the product (G = ea + eb) or c (G = ec)
D_ZERO = 381                # FFMA's u = ea + eb + 255 - ec: the exponent difference d = u - 381 (X = P when d >= 0)
K_CLAMP = 52                # FFMA's alignment k = |d| >= 52 leaves only the sticky
H_INT = 126                 # I2F, U2F: S's bit j weighs 2**j, so G - K = 126 (the floor q' below 0, no overflow)
H_FRND = 256 - 24           # FRND: S's bit j weighs 2**(j + E - 150), so G - K = E - 24 (mod 256)
E_ONE = 127                 # the biased exponent of 1.0: F2I's, F2U's and FRND's units bit is significand bit 150 - E
F2I_TOP, F2U_TOP = 157, 158   # the largest E below saturation (|a| < 2**31, < 2**32)
# layer offsets from `at`
SWAP, PRODUCT, ALIGN_FINE, ALIGN_COARSE, DIGITS = 1, 2, 3, 4, 6
FFMA_ALIGN, FFMA_DIGITS, FFMA_BITS, FFMA_CARRIES, FFMA_ABS = 9, 10, 11, 12, 13
H_AT, FLOORS, BACK = 12, 13, 14


def _when(c: Circuit, at: int, terms: dict[int, int], bias: int, out: dict[int, float], on=(), off=(),
          gate=()) -> None:
    """out += relu(y) when every 0/1 dim in `on` is 1, every one in `off` is 0 and, if `gate` (mutually
    exclusive op flags) is given, one of its flags is 1, else 0: relu(y + K (sum(on) + sum(gate) -
    sum(off)) - K (len(on) + [gate])), K the largest y."""
    hi = span(c, terms, bias)[1]
    if hi > MAX_POSITIVE:
        raise CircuitError(f"neuron argument reaches {hi}; exact range is <= {MAX_POSITIVE}")
    if hi > 0:
        flags = add_terms({d: hi for d in on}, {g[0]: hi for g in gate}, {d: -hi for d in off})
        G.raw(c, at, add_terms(terms, flags), bias - hi * (len(on) + bool(gate)), out)


def _step_when(c: Circuit, at: int, terms: dict[int, int], t: int, out: dict[int, float], on=(), off=(),
               gate=()) -> None:
    """out += [sum(terms) >= t] when `on` are all 1, `off` all 0 and a `gate` flag (if any) 1."""
    _when(c, at, terms, 1 - t, out, on, off, gate)
    _when(c, at, terms, -t, {d: -k for d, k in out.items()}, on, off, gate)


def _all_any(c: Circuit, at: int, out: dict[int, float], gate, all_of=(), none_of=(), any_of=(),
             match: tuple[dict[int, int], int] | None = None, any_const: bool = False) -> None:
    """out += [every `all_of` dim 1, every `none_of` 0, `match` (terms, bias: 1 when it holds, <= 0
    otherwise) holding, and some `any_of` dim 1 (or `any_const`)] when a `gate` flag is 1: one step
    sum(any_of) + K (sum(all_of) - sum(none_of) + match) >= K n + 1, K = len(any_of) + 1."""
    any_of = [] if any_const else list(any_of)
    k = len(any_of) + 1
    mt, mb = match if match is not None else ({}, 0)
    n = len(all_of) + len(none_of) + (match is not None)
    terms = add_terms({d: 1 for d in any_of}, {d: k for d in all_of}, {d: -k for d in none_of},
                      {d: k * w for d, w in mt.items()})
    _step_when(c, at, terms, k * n + (0 if any_const else 1) - k * (len(none_of) + mb), out, gate=gate)


def _value(dims: list[int], weights=None) -> dict[int, int]:
    """Terms of the binary value of the bits `dims` (bit j weighs 2**j unless `weights`)."""
    return {d: (1 << j) if weights is None else weights[j] for j, d in enumerate(dims)}


def _nibbles(terms: dict[int, int], const: int = 0) -> list[G.Digit]:
    """An 8-bit value (terms of power-of-two weights, plus a constant < 256) as two nibble digits."""
    lo = {d: k for d, k in terms.items() if k < 16}
    hi = {d: k >> 4 for d, k in terms.items() if k >= 16}
    return [(lo, const & 15), (hi, const >> 4)]


def _is(dims: list[int], value: int) -> tuple[dict[int, int], int]:
    """(terms, bias) whose sum is 1 when the bits spell `value` and <= 0 otherwise."""
    terms, const = G.equals(dims, value)
    return terms, const - len(dims) + 1


def _exact_step(c: Circuit, at: int, terms: dict[int, int], t: int, out: dict[int, float], gate=()) -> None:
    """out += [sum(terms) >= t] (an integer sum), when a `gate` flag is 1 if any, as relu(4 (y - t) + 3) -
    relu(4 (y - t) + 2): every argument is >= 1 or <= -1, so the inputs' read noise (below 1/8) cancels,
    where G.step's relu(y - t + 1) - relu(y - t) passes it on at y = t - 1 and t (near 0, half of it:
    relu is silu(128 y) / 128)."""
    x4 = {d: 4 * w for d, w in terms.items()}
    _when(c, at, x4, 3 - 4 * t, out, gate=gate)
    _when(c, at, x4, 2 - 4 * t, {d: -k for d, k in out.items()}, gate=gate)


def _exact_and(c: Circuit, at: int, terms: dict[int, int], bias: int, out: dict[int, float], gate=()) -> None:
    """out += [sum(terms) + bias >= 1] for an integer sum, noise cancelled (_exact_step)."""
    _exact_step(c, at, terms, 1 - bias, out, gate)


def _parity(c: Circuit, at: int, bits: list[int], out: int, gate: list[Field]) -> None:
    """out += the parity of three bits, when a `gate` flag is 1: s - 2 [s >= 2] + 2 [s >= 3], s their sum."""
    s = {d: 1 for d in bits}
    G.gated(c, at, s, 0, {out: 1}, gate)
    G.gated(c, at, s, -1, {out: -2}, gate)
    G.gated(c, at, s, -2, {out: 2}, gate)


class _Lane:
    """One lane's FPU: build() adds its neurons layer by layer."""

    def __init__(self, c: Circuit, at: int, op: dict[str, Field], rnd: dict[str, Field], a: Field, b: Field,
                 r: Field, tag: str, cc: Field):
        self.c, self.X, self.a, self.b, self.r, self.tag, self.cc = c, at, a, b, r, tag, cc
        self.ffma = op["FFMA"]
        self.fadd, self.fsub, self.fmul, self.i2f, self.u2f, self.f2i, self.f2u, self.frnd, self.fmin, self.fmax = (
            op[n] for n in ("FADD", "FSUB", "FMUL", "I2F", "U2F", "F2I", "F2U", "FRND", "FMIN", "FMAX"))
        self.fset = {n[5:]: op[n] for n in FSET_OPS}
        self.rnd = rnd
        self.arith = [self.fadd, self.fsub, self.fmul, self.ffma]   # float operands
        self.muls = [self.fmul, self.ffma]                      # the product
        self.special = self.arith + [self.frnd]                 # NaN and infinity results
        self.rounded = self.arith + [self.i2f, self.u2f, self.frnd]     # the shared back end
        self.f2x = [self.f2i, self.f2u]                         # the integer in S, into r at +14 (BACK)
        self.compares = [self.fmin, self.fmax, *self.fset.values()]
        self.classify = self.arith + self.compares              # operand classes and the magnitude order
        self.classify_a = self.classify + [self.frnd]           # a's classes
        self.adds = [self.fadd, self.fsub]

    def field(self, name: str, width: int, at: int, **kw) -> Field:
        return self.c.field(f"{self.tag}.fpu.{name}", width, at, **kw)

    def build(self) -> None:
        self.unpack()
        self.swap()
        self.fadd_align()
        self.product()
        self.exponents()
        self.specials()
        self.compare()
        self.sum_window()
        self.ffma_exponents()
        self.ffma_sum()
        self.h_exponent()
        self.floors()
        self.back_end()

    # ---- +0, +1: classes, the FADD swap and the exponent difference ---------------------------------
    def unpack(self) -> None:
        """+0: per operand [E == 0], [E == 255], [f == 0] and bit 0 of max(E, 1); b's sign as FADD/FSUB
        see it; FADD's magnitude order (per byte, as gadgets.byte_order)."""
        c, X, a, b = self.c, self.X, self.a, self.b
        self.cls = {}
        self.z = self.field("z", 2, X)                      # [E == 0] of a, b (read to +6)
        for k, (name, x) in enumerate((("a", a), ("b", b))):
            e, f = x.dims[23:31], x.dims[:23]
            gate = self.classify_a if name == "a" else self.classify
            cls = self.cls[name] = self.field(f"cls.{name}", 3, X)      # [E == 255], [f == 0], max(E, 1) bit 0
            G.gated(c, X, {d: -1 for d in e}, 1, {self.z[k]: 1, cls[2]: 1}, gate)
            G.gated(c, X, {d: 1 for d in e}, -7, {cls[0]: 1}, gate)
            G.gated(c, X, {d: -1 for d in f}, 1, {cls[1]: 1}, gate)
            G.gated(c, X, {e[0]: 1}, 0, {cls[2]: 1}, gate)
        self.sbx = self.field("sbx", 1, X)                 # b's sign, flipped for FSUB
        G.gated(c, X, {b[31]: 1}, 0, {self.sbx[0]: 1}, [self.fadd])
        G.gated(c, X, {b[31]: -1}, 1, {self.sbx[0]: 1}, [self.fsub])
        self.order = self.field("order", 8, X)
        for j in range(4):
            top = 7 if j == 3 else 8                        # magnitudes: the sign bit is not compared
            diff = add_terms(_value(b.dims[8 * j: 8 * j + top]), neg(_value(a.dims[8 * j: 8 * j + top])))
            G.gated_step(c, X, diff, 1, {self.order[2 * j]: 1}, self.adds + self.compares)
            G.gated_step(c, X, neg(diff), 1, {self.order[2 * j + 1]: 1}, self.adds + self.compares)

    def exp_terms(self, name: str) -> dict[int, int]:
        """max(E, 1) of operand `name` as terms (its bit 0 from cls)."""
        x = self.a if name == "a" else self.b
        return add_terms({self.cls[name][2]: 1}, _value(x.dims[24:31], [2 << j for j in range(7)]))

    def swap(self) -> None:
        """+1: which operand FADD's X (larger magnitude) is: w = [|b| > |a|] and not w; X's max(E, 1)
        and sign (FADD's result sign); k = |ea - eb| (>= 27: 27) as one-hots k mod 4 and k div 4;
        whether FADD adds or subtracts."""
        c, L, a, b = self.c, self.X + SWAP, self.a, self.b
        lam = add_terms(*({self.order[2 * j]: 1 << j, self.order[2 * j + 1]: -(1 << j)} for j in range(4)))
        self.w = self.field("w", 2, L)                      # X is b; X is a
        G.gated_step(c, L, lam, 1, {self.w[0]: 1}, self.adds)
        G.gated_step(c, L, neg(lam), 0, {self.w[1]: 1}, self.adds)
        self.sum_e = self.field("s", 9, L)                  # FADD: X's max(E, 1); FMUL, FFMA: ea + eb (exponents())
        self.xe = Field("xe", self.sum_e.dims[:8], "bits", L)
        self.sigma = self.field("sigma", 1, L)             # the result's sign (FMUL's too)
        ca, cb = self.cls["a"], self.cls["b"]
        pairs = [(self.xe[0], ca[2], cb[2])] + [(self.xe[k], a[23 + k], b[23 + k]) for k in range(1, 8)]
        pairs += [(self.sigma[0], a[31], self.sbx[0])]
        for out, when_a, when_b in pairs:                   # when_a if Lambda <= 0, when_b if Lambda >= 1
            G.gated_step(c, L, add_terms(lam, {when_b: 16}), 17, {out: 1}, self.adds)
            G.gated_step(c, L, add_terms(neg(lam), {when_a: 16}), 16, {out: 1}, self.adds)
        d = add_terms(self.exp_terms("a"), neg(self.exp_terms("b")))
        self.kf, self.kc = self.field("kf", 4, L), self.field("kc", 7, L)

        def k_is(k, sign):                                  # k's one-hot dims
            return {self.kf[k % 4]: sign, self.kc[k // 4]: sign}

        G.gated(c, L, {}, 1, k_is(0, 1), self.adds)
        for k in range(1, 28):                              # [|d| >= k] moves k from bucket k - 1 to k
            out = add_terms(k_is(k, 1), k_is(k - 1, -1))
            G.gated_step(c, L, d, k, out, self.adds)
            G.gated_step(c, L, neg(d), k, out, self.adds)
        self.sub = [self.field("add", 1, L), self.field("sub", 1, L)]     # FADD adds; subtracts (signs differ)
        s = {a[31]: 1, self.sbx[0]: 1}
        G.gated(c, L, neg(s), 1, {self.sub[0][0]: 1}, self.adds)
        G.gated(c, L, s, -1, {self.sub[0][0]: 1}, self.adds)
        G.gated(c, L, {a[31]: 1, self.sbx[0]: -1}, 0, {self.sub[1][0]: 1}, self.adds)
        G.gated(c, L, {a[31]: -1, self.sbx[0]: 1}, 0, {self.sub[1][0]: 1}, self.adds)
        G.gated(c, L, {a[31]: 1, b[31]: -1}, 0, {self.sigma[0]: 1}, [self.fmul])
        G.gated(c, L, {a[31]: -1, b[31]: 1}, 0, {self.sigma[0]: 1}, [self.fmul])
        G.gated(c, L, {a[31]: 1}, 0, {self.sigma[0]: 1}, [self.i2f, self.frnd])
        self.mag = self.field("mag", 2, L)                  # [|a| < |b|], [|a| > |b|] for the comparisons
        G.gated_step(c, L, lam, 1, {self.mag[0]: 1}, self.compares)
        G.gated_step(c, L, neg(lam), 1, {self.mag[1]: 1}, self.compares)
        self.c.clear(self.order, L)

    def significand(self, name: str, i: int) -> tuple[dict[int, int], int]:
        """Bit i of operand `name`'s 24-bit significand as (terms, constant): the hidden bit is 1 - [E == 0]."""
        x = self.a if name == "a" else self.b
        return ({x[i]: 1}, 0) if i < 23 else ({self.z["ab".index(name)]: -1}, 1)

    # ---- +2 .. +4: FSET, FMIN, FMAX --------------------------------------------------------------------
    def compare(self) -> None:
        """The comparisons from the magnitude order, the signs and the classes: at +2 a < b and a > b
        (+0 == -0), the same with -0 < +0 (FMIN, FMAX), unordered; at +3 FSET's 0/1 and FMIN's and FMAX's
        choice (a, b or the canonical NaN) into r. r is free there on a float pass: no ALU op wrote
        it, and the load/store unit reads it only for a load, store or copy."""
        c, L, a, b = self.c, self.X + 2, self.a, self.b
        sa, sb = a[31], b[31]
        mlt, mgt = self.mag.dims
        nan_a, nan_b, zero_a, zero_b = self.part[0], self.part[1], self.part[4], self.part[5]
        order = self.field("cmp", 5, L)                     # lt, gt, lt (-0 < +0), gt (-0 < +0), unordered
        lt, gt, lt0, gt0, un = order.dims
        for less, more, o_ieee, o_total, sl, sm in ((mlt, mgt, lt, lt0, sa, sb), (mgt, mlt, gt, gt0, sb, sa)):
            for o in (o_ieee, o_total):                     # both positive: by magnitude; both negative: reversed
                G.gated(c, L, {less: 1, sa: -1, sb: -1}, 0, {o: 1}, self.compares)
                G.gated(c, L, {more: 1, sa: 1, sb: 1}, -2, {o: 1}, self.compares)
            G.gated_step(c, L, {sl: 2, sm: -2, zero_a: -1, zero_b: -1}, 1, {o_ieee: 1}, self.compares)
            G.gated(c, L, {sl: 1, sm: -1}, 0, {o_total: 1}, self.compares)    # negative < positive
        G.gated_step(c, L, {nan_a: 1, nan_b: 1}, 1, {un: 1}, self.compares)
        c.clear(self.mag, L)
        L += 1
        r = self.r.dims
        tests = {                                           # (terms, threshold) of the 0/1 result
            "EQ": ({lt: -1, gt: -1, un: -1}, 0), "NE": ({lt: 1, gt: 1, un: -2}, 1),
            "LT": ({lt: 1, un: -1}, 1), "LE": ({gt: -1, un: -1}, 0),
            "GT": ({gt: 1, un: -1}, 1), "GE": ({lt: -1, un: -1}, 0),
            "EQU": ({lt: -1, gt: -1, un: 2}, 0), "NEU": ({lt: 1, gt: 1, un: 1}, 1),
            "LTU": ({lt: 1, un: 1}, 1), "LEU": ({gt: -1, un: 1}, 0),
            "GTU": ({gt: 1, un: 1}, 1), "GEU": ({lt: -1, un: 1}, 0),
            "NUM": ({un: -1}, 0), "NAN": ({un: 1}, 1),
        }
        for cmp, (terms, t) in tests.items():
            G.gated_step(c, L, terms, t, {r[0]: 1}, [self.fset[cmp]])
        for flag, above in ((self.fmin, gt0), (self.fmax, lt0)):          # a unless it is above (below) b
            for i in range(32):
                G.gated_step(c, L, {nan_a: -3, nan_b: 1, above: -1, a[i]: 4}, 4, {r[i]: 1}, [flag])
                G.gated_step(c, L, {nan_b: -3, nan_a: 1, above: 1, b[i]: 4}, 5, {r[i]: 1}, [flag])
                if i < 31:                                  # two NaNs: the canonical NaN
                    G.gated(c, L, {nan_a: 1, nan_b: 1}, -1, {r[i]: 1}, [flag])
        c.clear(order, L)

    # ---- +2, +4: FADD's alignment ------------------------------------------------------------------
    def fadd_align(self) -> None:
        """Y's significand (Y = a when w, else b) right by k into the window's positions 0..26 (X's last
        bit at 3, position 0 the sticky of everything below 1; k >= 27 leaves only the sticky): by
        k mod 4 at +2, then by 4 (k div 4) at +4."""
        c = self.c
        L = self.X + ALIGN_FINE
        self.yf = self.field("yf", 27, L)                   # yf[j] = Y's significand bit j - 3 + (k mod 4)
        for j in range(27):
            for rr in range(4):
                i = j - 3 + rr
                if 0 <= i < 24:
                    for y_name, is_y in (("a", self.w[0]), ("b", self.w[1])):
                        terms, const = self.significand(y_name, i)
                        G.relu(c, L, add_terms(terms, {self.kf[rr]: 1, is_y: 1}), const - 2, {self.yf[j]: 1})
        c.clear(self.kf, L)
        L = self.X + ALIGN_COARSE
        self.yw = self.field("yw", 27, L)                   # window position p = yf[p + 4 (k div 4)]
        kc = self.kc
        for p in range(1, 27):
            for q in range(7):
                if p + 4 * q < 27:
                    G.relu(c, L, {kc[q]: 1, self.yf[p + 4 * q]: 1}, -1, {self.yw[p]: 1})
        for q in range(7):
            below = {self.yf[j]: 1 for j in range(min(4 * q + 1, 27))}
            G.step(c, L, add_terms(below, {kc[q]: 28}), 29, {self.yw[0]: 1})
        c.clear(self.yf, L)
        c.clear(kc, L)

    # ---- +2 .. +5: FMUL's product digits ---------------------------------------------------------
    def product(self) -> None:
        """The 24 x 24 significand product as 12 nibble digits <= 31 (as alu.py's MUL: bit products
        summed per column, two in-place splits of each column count into its bits, a fold); I2F's
        and U2F's |a| as the same digits."""
        c, a, b, L = self.c, self.a, self.b, self.X + PRODUCT
        za, zb = self.z.dims
        col = self.field("columns", 48, L, kind="int", vmax=24)
        vmax = [0] * 48
        for i in range(24):
            for j in range(24):
                if i == j == 23:
                    continue                                # both hidden bits: added at the first split
                if i < 23 and j < 23:
                    terms, bias = {a[i]: 1, b[j]: 1}, -1
                else:                                       # a hidden bit: 1 - [E == 0]
                    terms, bias = ({b[j]: 1, za: -1}, 0) if i == 23 else ({a[i]: 1, zb: -1}, 0)
                G.gated(c, L, terms, bias, {col[i + j]: 1}, self.muls)
                vmax[i + j] += 1
        vmax = column_bits(c, L + 1, col, vmax, False, None)
        G.gated(c, L + 1, {za: -1, zb: -1}, 1, {col[46]: 1}, self.muls)
        vmax[46] += 1
        vmax = column_bits(c, L + 2, col, vmax, False, None)
        L += 3
        if max(digit_bounds(vmax)) > 31:
            raise CircuitError(f"{self.tag}: FMUL digits reach {max(digit_bounds(vmax))}; the carries need <= 31")
        self.digits = self.field("digits", NIBBLES, L, kind="int", vmax=31)
        column_bits(c, L, col, vmax, True, self.digits)
        c.layout.release(col, L)
        for n in range(INT_NIBBLES):                        # I2F, U2F: |a| (a negative I2F's ~a + 1) as digits
            x = _value(a.dims[4 * n: 4 * n + 4])
            _when(c, L, x, 0, {self.digits[n]: 1}, on=(self.u2f[0],))
            _when(c, L, x, 0, {self.digits[n]: 1}, on=(self.i2f[0],), off=(a[31],))
            _when(c, L, neg(x), 15 + (n == 0), {self.digits[n]: 1}, on=(self.i2f[0], a[31]))
        self.convert(L)

    # ---- +5: F2I, F2U, FRND as S's digits, straight from a's bits -----------------------------------
    def convert(self, L: int) -> None:
        """F2I's and F2U's integer and FRND's integral significand, rounded in the mode, as S's digits
        (the significand's bit j = 150 - E is a's units bit, its bits below the guard the sticky):

          F2I, F2U  N = |a| rounded: for each E <= 157 (F2U: 158) a's significand shifted by E - 150,
                    one neuron a nibble (relu(nibble + 16 ([E = e] - 1))), and the increment into
                    digit 0 (one threshold per E and mode on [E = e], the guard, the sticky, the
                    units bit and the sign). A negative F2I's digits are N + 2**32 - 1 (N - 1 in 32
                    bits), whose complement -N is what r takes at +14 (0 for N = 0). Saturation (E >= 158; F2U 159,
                    infinities included, NaN not) puts 0x7FFFFFFF (F2I: r then 0x80000000 when
                    negative) or 0xFFFFFFFF in their place; a NaN leaves N = 0. A negative F2U's
                    result is 0: r takes none of it.
          FRND      the significand with its bits below the units bit cleared ([E >= 150 - i] per bit
                    i) plus the increment at the units bit (digit j div 4); G - K = E - 24 (H_FRND),
                    the floor below S: the back end packs it exactly (E >= 150: a itself). |a| < 1
                    leaves S = 0 (the zero special with a's sign); +-1 are added at +17 (one())."""
        c, a, dg = self.c, self.a, self.digits
        e, f, sign = list(a.dims[23:31]), list(a.dims[:23]), a[31]
        ev = _value(e)
        rnd = {m: self.rnd[m][0] for m in ROUNDINGS}
        for E in range(E_ONE, F2U_TOP + 1):                 # F2I, F2U: the integer part
            mt, mb = _is(e, E)
            nibbles: dict[int, tuple[dict[int, int], int]] = {}
            for i in range(24):
                m = i + E - 150
                if 0 <= m < 32:
                    terms, const = nibbles.get(m // 4, ({}, 0))
                    if i < 23:
                        nibbles[m // 4] = (add_terms(terms, {a[i]: 1 << m % 4}), const)
                    else:                                   # the hidden bit: 1 (E >= 1)
                        nibbles[m // 4] = (terms, const + (1 << m % 4))
            for n, (terms, const) in nibbles.items():
                _when(c, L, add_terms(terms, {d: 16 * w for d, w in mt.items()}), const + 16 * (mb - 1), {dg[n]: 1},
                      gate=self.f2x if E <= F2I_TOP else [self.f2u])
        _when(c, L, {}, 1, {dg[n]: 15 for n in range(INT_NIBBLES)}, on=(sign,), gate=[self.f2i])
        nan = dict(any_of=f, match=_is(e, 255))
        for gate, top, when, pattern in (([self.f2i], F2I_TOP, dict(off=(sign,)), (1 << 31) - 1),
                                         ([self.f2i], F2I_TOP, dict(on=(sign,)), None),
                                         ([self.f2u], F2U_TOP, dict(off=(sign,)), (1 << 32) - 1)):
            out = ({dg[n]: pattern >> 4 * n & 15 for n in range(INT_NIBBLES)} if pattern is not None
                   else {dg[INT_NIBBLES - 1]: -8})             # 15..15 (negative F2I) - 8 << 28 = 0x7FFFFFFF
            _step_when(c, L, ev, top + 1, out, gate=gate, **when)
            cond = dict(none_of=[sign]) if "off" in when else dict(all_of=[sign])
            _all_any(c, L, neg(out), gate, **cond, **nan)      # not for a NaN
        for E in range(E_ONE - 1, 150):                     # the increments: units bit j, guard j - 1
            j = 150 - E
            sig = [*f, None][:j + 1] + [False] * (j + 1 - 24)   # significand bits 0..j: None hidden, False 0
            guard, lsb, sticky = sig[j - 1], sig[j], f[:j - 1]
            rn = dict(all_of=[rnd["RN"]] + ([guard] if guard is not None else []),
                      any_of=sticky + ([lsb] if lsb not in (None, False) else []), any_const=lsb is None,
                      match=_is(e, E))
            directed = dict(any_of=f[:j], match=_is(e, E))
            incs = [rn]
            if j < 24:
                incs += [dict(all_of=[rnd["RP"]], none_of=[sign], **directed),
                         dict(all_of=[rnd["RM"], sign], **directed)]
            for inc in incs:
                _all_any(c, L, {dg[0]: 1}, self.f2x, **inc)
                if j < 24:
                    _all_any(c, L, {dg[j // 4]: 1 << j % 4}, [self.frnd], **inc)
        self.tiny(L, {dg[0]: 1}, self.f2x)
        for i in range(24):                                 # FRND: the bits at and above the units bit
            _step_when(c, L, add_terms(ev, {a[i]: 256}) if i < 23 else ev, 150 - i + 256 * (i < 23),
                       {dg[i // 4]: 1 << i % 4}, gate=[self.frnd])

    def tiny(self, L: int, out: dict[int, float], gate: list[Field]) -> None:
        """out += 1 for 0 < |a| < 1 (E <= 126, a != 0) where RP (positive) or RM (negative) rounds it away
        from zero."""
        a, ev = self.a, _value(self.a.dims[23:31])
        for mode, when in (("RP", dict(off=(a[31],))), ("RM", dict(on=(a[31],)))):
            flag = self.rnd[mode][0]
            _step_when(self.c, L, neg(ev), -(E_ONE - 1), out, gate=gate, on=(flag, *when.get("on", ())),
                       off=when.get("off", ()))
            _all_any(self.c, L, neg(out), gate, all_of=[flag, *when.get("on", ())],
                     none_of=[*when.get("off", ()), *a.dims[:31]], any_const=True)     # not for a zero

    # ---- exponents: what the back end needs of G and K -----------------------------------------------
    def exponents(self) -> None:
        """FMUL's and FFMA's G = ea + eb (9 bits, +1 and +2, made exact at +3), kept for H and the floors."""
        c, X = self.c, self.X
        L = X + SWAP
        self.resolve(L, [(self.muls, _nibbles(add_terms(self.exp_terms("a"), self.exp_terms("b"))))], self.sum_e,
                     cout=self.sum_e[8])
        G.requantize(c, L + 2, self.sum_e)      # exact from +4: FFMA's u adds its own carries' noise to it

    def h_exponent(self) -> None:
        """H = (G - K) mod 256 at +12 (bits), +13 (carries): a constant for I2F and U2F, from the exponent
        sum for FMUL and FFMA's X = P, X's exponent for FADD, a's for FRND, c's for FFMA's X = c."""
        c, L = self.c, self.X + H_AT
        self.h = self.field("h", 8, L)
        G.plus_constant(c, L, list(self.sum_e.dims[:8]), 256 - K_FMUL, self.h, gate=self.fmul[0], low=7)
        G.plus_constant(c, L, list(self.sum_e.dims[:8]), 256 - K_FFMA_P, self.h, gate=self.xp[0], low=7)
        zc = self.field("zc.h", 1, L - 1)                    # c's max(E, 1) = E + [E == 0]
        G.gated(c, L - 1, {d: -1 for d in self.cc.dims[23:31]}, 1, {zc[0]: 1}, [self.ffma])
        ec = add_terms(_value(self.cc.dims[23:31]), {zc[0]: 1})
        self.resolve(L, [(self.adds, _nibbles(_value(self.xe.dims), 256 - K_FADD)),
                         ([self.frnd], _nibbles(_value(self.a.dims[23:31]), H_FRND)),
                         ([self.xc], _nibbles(ec, 256 - K_FFMA_C))], self.h, name="hgp")
        G.gated(c, L, {}, 1, {self.h[j]: 1 for j in range(8) if H_INT >> j & 1}, [self.i2f, self.u2f])
        G.requantize(c, self.X + BACK, self.h)  # exact for the back end's exponent sum at +15
        c.clear(zc, L)

    def floors(self) -> None:
        """At +13 (FLOORS), one-hots (fine: value mod 4, coarse: value div 4) of the floor q' = K - G clamped to
        0..T_MAX and of r = 254 + K - G (overflow when the leading one's position p >= r; none when
        r >= WINDOW)."""
        c, L = self.c, self.X + FLOORS
        self.qf, self.qc = self.field("qf", 4, L), self.field("qc", T_MAX // 4 + 1, L)
        self.rf, self.rc = self.field("rf", 4, L), self.field("rc", WINDOW // 4, L)

        def bucket(fine, coarse, v, terms, bias, gate):
            G.gated(c, L, terms, bias, {fine[v % 4]: 1, coarse[v // 4]: 1}, gate)

        def at_least(bits, k):          # [value of bits >= k] as (terms, t); a 9-bit value's top bit weighs k or 256
            lo = _value(bits[:8])
            if len(bits) == 9:
                lo[bits[8]] = 256 if k >= 256 else k
            return lo, k

        ec = list(self.cc.dims[23:31])                       # c's E (0 counts as 1: below)
        bucket(self.qf, self.qc, K_FFMA_C - 1, *_is(ec, 0), self.xc)
        for bits, K, gate in ((list(self.sum_e.dims), K_FADD, self.adds), (list(self.sum_e.dims), K_FMUL, self.fmul),
                              (list(self.sum_e.dims), K_FFMA_P, self.xp), (ec, K_FFMA_C, self.xc)):
            top = (1 << len(bits)) - 1
            for v in range(1, T_MAX):                      # q' = v (G >= 1: c's E = 0 is bucketed above)
                if 1 <= K - v <= top:
                    bucket(self.qf, self.qc, v, *_is(bits, K - v), gate)
            terms, t = at_least(bits, K)                   # q' <= 0
            G.gated_step(c, L, terms, t, {self.qf[0]: 1, self.qc[0]: 1}, gate)
            if K - T_MAX >= 0:                             # q' >= 72
                terms, t = at_least(bits, K - T_MAX + 1)
                G.gated_step(c, L, neg(terms), 1 - t, {self.qf[0]: 1, self.qc[T_MAX // 4]: 1}, gate)
            for v in range(1, WINDOW):                     # r = v
                if 0 <= 254 + K - v <= top:
                    bucket(self.rf, self.rc, v, *_is(bits, 254 + K - v), gate)
            if 254 + K <= top:                             # r <= 0
                terms, t = at_least(bits, 254 + K)
                G.gated_step(c, L, terms, t, {self.rf[0]: 1, self.rc[0]: 1}, gate)
        G.gated(c, L, {}, 1, {self.qf[0]: 1, self.qc[0]: 1}, [self.i2f, self.u2f, self.frnd])
        for f in (self.sum_e, self.xp, self.xc):
            c.clear(f, L)

    def resolve(self, at: int, ways: list[tuple[list[Field], list[G.Digit]]], out: Field,
                cout: int | None = None, name: str = "gp") -> None:
        """out (+)= the binary sum of nibble digits (terms, constant), each in 0..31: `ways` are
        exclusive (gate, digits); bits at `at`, carries at at + 1 (alu.py's in-place scheme); `cout` a
        dim for the carry out of the top nibble."""
        c, nibbles = self.c, len(ways[0][1])
        gp = [carry_field(c, f"{self.tag}.fpu.{name}{n}", at) for n in range(nibbles)]
        for gate, digits in ways:
            for n, (terms, bias) in enumerate(digits):
                lo, hi = span(c, terms, bias)
                if lo < 0 or hi > 31:
                    raise CircuitError(f"{self.tag}: digit {n} spans {lo}..{hi}; the carries need 0..31")
                for offset, row in G.basis_rows(list(range(32)), nibble_functions(out, gp, n))[1].items():
                    G.gated(c, at, terms, bias - offset, row, gate)
        if cout is not None:                                # the carry into a nibble above the top one
            lam = add_terms(*({gp[i][0]: 1 << i, gp[i][1]: 1 << i} for i in range(nibbles)))
            G.step(c, at + 1, lam, 1 + sum(1 << i for i in range(nibbles)), {cout: 1})
        carries_in_place(c, at + 1, gp, out)

    # ---- special values ------------------------------------------------------------------------------
    def specials(self) -> None:
        """NaN (a NaN operand; inf - inf; 0 * inf), infinity (an infinite operand otherwise) and their
        sign, and an exact zero's sign; exact flags by +4."""
        c, X = self.c, self.X
        ca, cb = self.cls["a"], self.cls["b"]
        L = X + 1
        part = self.part = self.field("part", 6, L)         # NaN a, NaN b, inf a, inf b, zero a, zero b
        for k, cl in enumerate((ca, cb)):
            gate = self.classify_a if k == 0 else self.classify
            G.gated(c, L, {cl[0]: 1, cl[1]: -1}, 0, {part[k]: 1}, gate)
            G.gated(c, L, {cl[0]: 1, cl[1]: 1}, -1, {part[2 + k]: 1}, gate)
            G.gated(c, L, {self.z[k]: 1, cl[1]: 1}, -1, {part[4 + k]: 1}, self.classify)
        self.fs = self.field("fs", 2, L)                    # FFMA: the product's sign; [its sign != c's]
        sa, sb, sc = self.a[31], self.b[31], self.cc[31]
        G.gated(c, L, {sa: 1, sb: -1}, 0, {self.fs[0]: 1}, [self.ffma])
        G.gated(c, L, {sa: -1, sb: 1}, 0, {self.fs[0]: 1}, [self.ffma])
        _parity(c, L, [sa, sb, sc], self.fs[1], [self.ffma])
        c.clear(ca, L)
        c.clear(cb, L)
        L += 1
        bad = self.field("bad", 2, L)                       # inf - inf (FADD, FFMA); 0 * inf (FMUL, FFMA)
        self.signs = self.field("signs", 2, L)              # infinity's sign, an exact zero's sign
        sp, dif, sc = self.fs[0], self.fs[1], self.cc[31]
        ce, cf = self.cc.dims[23:31], self.cc.dims[:23]
        infc = add_terms({d: 2 for d in ce}, {d: -2 for d in cf})       # 16 for an infinite c, <= 14 else
        G.gated_step(c, L, add_terms({part[2]: 1, part[3]: 1, dif: 2}, infc), 5 + 14, {bad[0]: 1}, [self.ffma])
        self.partc = self.field("partc", 2, L)            # FFMA's c: NaN, infinite
        G.gated_step(c, L, add_terms({d: 24 for d in ce}, {d: 1 for d in cf}), 193, {self.partc[0]: 1}, [self.ffma])
        G.gated(c, L, add_terms({d: 1 for d in ce}, {d: -1 for d in cf}), -7, {self.partc[1]: 1}, [self.ffma])
        G.gated_step(c, L, {part[2]: 1, part[3]: 1, sp: 2}, 3, {self.signs[0]: 1}, [self.ffma])    # inf * x: its sign
        G.gated(c, L, {sc: 1, part[2]: -1, part[3]: -1}, 0, {self.signs[0]: 1}, [self.ffma])       # else c's
        G.gated_step(c, L, {sp: 1, sc: 1, self.rnd["RM"][0]: 1}, 2, {self.signs[1]: 1}, [self.ffma])
        c.clear(self.fs, L)
        G.gated(c, L, {part[2]: 1, part[3]: 1, self.sub[1][0]: 1}, -2, {bad[0]: 1}, self.adds)
        G.gated(c, L, {part[2]: 1, part[5]: 1}, -1, {bad[1]: 1}, self.muls)
        G.gated(c, L, {part[4]: 1, part[3]: 1}, -1, {bad[1]: 1}, self.muls)
        G.gated(c, L, {part[2]: 1, self.a[31]: 1}, -1, {self.signs[0]: 1}, self.adds)
        G.gated(c, L, {part[2]: -1, self.sbx[0]: 1}, 0, {self.signs[0]: 1}, self.adds)
        G.gated(c, L, {self.sigma[0]: 1}, 0, {self.signs[0]: 1, self.signs[1]: 1}, [self.fmul, self.frnd])
        G.gated_step(c, L, {self.a[31]: 1, self.sbx[0]: 1, self.rnd["RM"][0]: 1}, 2, {self.signs[1]: 1}, self.adds)
        L += 1
        self.nan, self.inf = self.field("nan", 1, L), self.field("inf", 1, L)
        nans = {part[0]: 1, part[1]: 1, bad[0]: 1, bad[1]: 1, self.partc[0]: 1}
        G.gated_step(c, L, nans, 1, {self.nan[0]: 1}, self.special)
        G.gated_step(c, L, add_terms({part[2]: 1, part[3]: 1, self.partc[1]: 1}, {d: -4 for d in nans}), 1,
                     {self.inf[0]: 1}, self.special)
        c.clear(part, L)
        c.clear(bad, L)
        c.clear(self.sbx, L)
        c.clear(self.partc, L)

    # ---- +6, +7: the window S --------------------------------------------------------------------
    def sum_window(self) -> None:
        """S = FADD's X * 8 +- the aligned Y (28 bits; a subtraction is >= 0) or FMUL's digits: nibble
        bits, generate and propagate at +6, carries at +7."""
        c, L = self.c, self.X + DIGITS
        self.s = self.field("S", 48, L)
        gp = [carry_field(c, f"{self.tag}.fpu.sgp{n}", L) for n in range(NIBBLES)]
        for n in range(NIBBLES):
            fns = nibble_functions(self.s, gp, n)
            G.basis(c, L, {self.digits[n]: 1}, 0, fns + [(lambda v: -v, {self.digits[n]: 1})],
                    values=list(range(32)))
            rows = G.basis_rows(list(range(32)), fns)[1]
            if n >= FADD_NIBBLES:
                continue
            yt = {self.yw[p]: 1 << (p - 4 * n) for p in range(4 * n, min(4 * n + 4, 27))}
            for x_name, is_x in (("b", self.w[0]), ("a", self.w[1])):       # X * 8: significand bit i at 3 + i
                xt, xc = {}, 0
                for p in range(max(3, 4 * n), min(4 * n + 4, 27)):
                    terms, const = self.significand(x_name, p - 3)
                    xt = add_terms(xt, {d: k << (p - 4 * n) for d, k in terms.items()})
                    xc += const << (p - 4 * n)
                for flag, terms, const in ((self.sub[0], add_terms(xt, yt), xc),
                                           (self.sub[1], add_terms(xt, neg(yt)), xc + 15 + (n == 0))):
                    for offset, row in rows.items():
                        _when(c, L, terms, const - offset, row, on=(flag[0], is_x))
        c.layout.release(self.digits, L)
        for f in (self.yw, *self.sub, self.w, self.z):
            c.clear(f, L)
        self.carries(L + 1, gp)
        G.requantize(c, L + 2, self.s)          # exact from +9: its carries weigh the read noise by 128

    # ---- FFMA: the exponent difference, which operand is X, the alignment's one-hots ----------------------
    def ffma_exponents(self) -> None:
        """u = (ea + eb) + 255 - Ec (10 bits, +4, +5, made exact at +6: Ec c's raw exponent, so d = u - 381
        - [Ec == 0] is the exponent difference of the product's and c's top bits: the product's bit 47
        weighs 2**(ea + eb - 253), c's bit 23 2**(ec - 127), e as max(E, 1)); at +7 [d >= 0] and k = |d|
        as one-hots k mod 4 and k div 4 (none for k >= 52); at +8 which operand is X (the product when
        d >= 0 or c is 0, c when d < 0 or the product is 0) and c's [E == 0] for its hidden bit. The
        exponent sum and u are made exact before they are read: a carry resolution weighs its
        inputs' read noise by 128, and two in a row (or u's thresholds, x128) reach the margins."""
        c, X, cc = self.c, self.X, self.cc
        ff = [self.ffma]
        ce = list(cc.dims[23:31])
        ec = _value(ce)
        L = X + PRODUCT + 2                                 # +4: the exponent sum is exact from +4
        u = self.field("u", 12, L)
        s = list(self.sum_e.dims)
        digits = [(add_terms(_value(s[0:4]), neg({d: k for d, k in ec.items() if k < 16})), 15),
                  (add_terms(_value(s[4:8]), neg({d: k >> 4 for d, k in ec.items() if k >= 16})), 15),
                  ({s[8]: 1}, 0)]
        self.resolve(L, [(ff, digits)], u, name="ugp")
        zc = self.field("zc.u", 1, L + 1)                   # [Ec == 0]: u is one more than with max(E, 1)
        G.gated(c, L + 1, {d: -1 for d in ce}, 1, {zc[0]: 1}, ff)
        G.requantize(c, L + 2, u)                           # its carries weigh c's read noise by 128
        L += 3                                              # +7
        t1 = self.field("t1", 1, L)                         # [u - [Ec == 0] >= 381] (u8, u9 never both 1: u <= 762)
        lo = _value(u.dims[:8])
        G.gated(c, L, {u[9]: 1}, 0, {t1[0]: 1}, ff)       # u >= 512, or u >= 256 and its low byte >= 125 (126)
        G.gated_step(c, L, add_terms(lo, {u[8]: 256 - 125, zc[0]: -1}), 256, {t1[0]: 1}, ff)
        self.ff_kf, self.ff_kc = self.field("ffkf", 4, L), self.field("ffkc", K_CLAMP // 4, L)
        bits = list(u.dims[:10]) + [zc[0]]
        for v in range(D_ZERO - K_CLAMP + 1, D_ZERO + K_CLAMP):
            k = abs(v - D_ZERO)
            for z in (0, 1):
                G.gated(c, L, *_is(bits, v + z | z << 10), {self.ff_kf[k % 4]: 1, self.ff_kc[k // 4]: 1}, ff)
        self.czero = self.field("czero", 1, L)              # c is 0 (read to +9)
        G.gated(c, L, {d: -1 for d in cc.dims[:31]}, 1, {self.czero[0]: 1}, ff)
        self.pzero = self.field("pzero", 1, L, vmax=2)      # [a is 0] + [b is 0]: the product is 0 when >= 1
        for x in (self.a, self.b):
            G.gated(c, L, {d: -1 for d in x.dims[:31]}, 1, {self.pzero[0]: 1}, ff)
        c.clear(u, L)
        c.clear(zc, L)
        L += 1                                              # +8
        czero, pzero = self.czero[0], self.pzero[0]
        self.xp, self.xc = self.field("xp", 1, L), self.field("xc", 1, L)
        G.gated_step(c, L, {t1[0]: 1, czero: 1, pzero: -2}, 1, {self.xp[0]: 1}, ff)
        G.gated_step(c, L, {t1[0]: -1, czero: -1, pzero: 2}, 0, {self.xc[0]: 1}, ff)
        c.clear(t1, L)
        self.zc = self.field("zc", 1, L)                    # c's [E == 0] (read at +9, +10)
        G.gated(c, L, {d: -1 for d in ce}, 1, {self.zc[0]: 1}, ff)

    def c_significand(self, i: int) -> tuple[dict[int, int], int]:
        """Bit i of c's 24-bit significand as (terms, constant)."""
        return ({self.cc[i]: 1}, 0) if i < 23 else ({self.zc[0]: -1}, 1)

    def ffma_sum(self) -> None:
        """FFMA's sum in S (52 bits): X * 8 +- Y, X the larger by the top bits' exponents (the product P's
        48 bits or c's 24 padded with 24 zeros below), Y the other right by k with a sticky at position 0.
        +9: Y right by k mod 4 (P's bits from S); +10: by 4 (k div 4), the sticky, X's bits and (subtracting)
        the complement, all as nibble digits, and P cleared from S; +11: the digits' bits, generate and
        propagate; +12: the carries and the carry out (X * 8 >= Y when subtracting); +13: S = -S when it
        was negative (bit i flips when a lower bit is 1) and the result's sign X's xor that."""
        c, X, S, cc = self.c, self.X, self.s, self.cc
        ff = [self.ffma]
        xp, xc = self.xp[0], self.xc[0]
        L = X + FFMA_ALIGN
        fsub = self.field("ffma.sub", 1, L)                 # FFMA subtracts: the signs of P and c differ
        sa, sb, sc = self.a[31], self.b[31], cc[31]
        _parity(c, L, [sa, sb, sc], fsub[0], ff)
        sub = fsub[0]
        ynz_f = self.field("ynz", 1, L)                     # Y != 0
        ynz = ynz_f[0]
        G.gated(c, L, {xc: 1, self.pzero[0]: -1}, 0, {ynz: 1}, ff)
        G.gated(c, L, {xp: 1, self.czero[0]: -1}, 0, {ynz: 1}, ff)
        c.clear(self.pzero, L)
        c.clear(self.czero, L)
        top = WINDOW - 2                                    # X * 8's top position (50)
        yf = self.field("ffyf", top + 1, L)                 # yf[j] = Y's bit j - 3 + (k mod 4)
        for j in range(top + 1):
            for rr in range(4):
                i = j - 3 + rr
                if 0 <= i < 48:
                    _exact_and(c, L, {S[i]: 1, self.ff_kf[rr]: 1, xc: 1}, -2, {yf[j]: 1})
                if 24 <= i < 48:
                    terms, const = self.c_significand(i - 24)
                    _exact_and(c, L, add_terms(terms, {self.ff_kf[rr]: 1, xp: 1}), const - 2, {yf[j]: 1})
        c.clear(self.ff_kf, L)
        L += 1                                              # +10: the digits
        dg = self.field("ffdigits", WNIBBLES, L, kind="int", vmax=31)

        def put(p, terms, bias, sign=1, on=(), off=()):
            _when(c, L, terms, bias, {dg[p // 4]: sign << p % 4}, on=on, off=off, gate=ff)

        kc = self.ff_kc
        for p in range(1, top + 1):                         # Y: position p = yf[p + 4 (k div 4)]
            for q in range(len(kc)):
                if p + 4 * q <= top:
                    for sign, when in ((1, dict(off=(sub,))), (-1, dict(on=(sub,)))):
                        put(p, {kc[q]: 1, yf[p + 4 * q]: 1}, -1, sign, **when)
        for sign, when in ((1, dict(off=(sub,))), (-1, dict(on=(sub,)))):   # the sticky: Y's bits below position 1
            for q in range(len(kc)):
                below = {yf[j]: 1 for j in range(min(4 * q, top) + 1)}
                _step_when(c, L, add_terms(below, {kc[q]: 64}), 65, {dg[0]: sign}, gate=ff, **when)
            _when(c, L, add_terms({ynz: 1}, {d: -1 for d in kc.dims}), 0, {dg[0]: sign}, gate=ff, **when)   # k >= 52

        def put_exact(p, terms, bias):                      # P's bits carry its carries' noise: not into the digits
            _exact_and(c, L, terms, bias, {dg[p // 4]: 1 << p % 4}, gate=ff)

        for i in range(48):                                 # X: bit i at position i + 3
            put_exact(i + 3, {S[i]: 1, xp: 1}, -1)
            if i >= 24:
                terms, const = self.c_significand(i - 24)
                put_exact(i + 3, add_terms(terms, {xc: 1}), const - 1)
            G.gated(c, L, {S[i]: 1}, 0, {S[i]: -1}, ff)      # P leaves S
        for n in range(WNIBBLES):                           # subtracting: X * 8 + (2**52 - 1 - Y) + 1
            G.gated(c, L, {}, 1, {dg[n]: 15 + (n == 0)}, [fsub])
        for f in (yf, kc, self.zc, ynz_f):
            c.clear(f, L)
        L += 1                                              # +11: bits, generate, propagate
        self.s4 = self.field("S4", WINDOW - 48, L)          # S's bits 48..51 (FFMA's alone)
        S = self.sw = Field("S", self.s.dims + self.s4.dims, "bits", L)
        gp = [carry_field(c, f"{self.tag}.fpu.fgp{n}", L) for n in range(WNIBBLES)]
        for n in range(WNIBBLES):
            G.basis(c, L, {dg[n]: 1}, 0, nibble_functions(S, gp, n) + [(lambda v: -v, {dg[n]: 1})],
                    values=list(range(32)))
        c.layout.release(dg, L)
        L += 1                                              # +12: the carries; the carry out
        cout = self.field("ffcout", 1, L)
        for m in range(1, WNIBBLES + 1):
            for i in range(m):
                run = add_terms({gp[i][0]: 1}, *({gp[j][1]: 1, gp[j][0]: -1} for j in range(i + 1, m)))
                if m == WNIBBLES:
                    G.gated_step(c, L, run, m - i, {cout[0]: 1}, ff)
                    continue
                w = m - i + 1
                z = S.dims[4 * m: 4 * m + 4]
                for k in range(4):
                    below = {z[j]: w for j in range(k)}
                    for zk, t, sign in ((-w, m - i + w * k, 1), (w, m - i + w * (k + 1), -1)):
                        G.gated_step(c, L, add_terms(run, below, {z[k]: zk}), t, {z[k]: sign}, ff)
        for f in gp:
            c.clear(f, L)
        sxf = self.field("ffsx", 1, L)                      # X's sign: the product's or c's
        sx = sxf[0]
        G.gated(c, L, {sa: 1, sb: -1, xp: 1}, -1, {sx: 1}, ff)
        G.gated(c, L, {sa: -1, sb: 1, xp: 1}, -1, {sx: 1}, ff)
        G.gated(c, L, {sc: 1, xc: 1}, -1, {sx: 1}, ff)
        L += 1                                              # +13: |S|, the sign
        neg_on = dict(on=(sub,), off=(cout[0],))
        for i in range(1, WINDOW):
            T = {S[j]: 1 for j in range(i)}
            x = S[i]
            _when(c, L, add_terms(T, {x: -WINDOW}), 0, {x: 1}, **neg_on)        # (1 - x) [T >= 1]
            _when(c, L, add_terms(T, {x: -WINDOW}), -1, {x: -1}, **neg_on)
            _when(c, L, add_terms(T, {x: WINDOW}), -WINDOW, {x: -1}, **neg_on)  # - x [T >= 1]
            _when(c, L, add_terms(T, {x: WINDOW}), -WINDOW - 1, {x: 1}, **neg_on)
        sg = self.sigma[0]
        _when(c, L, {sx: 1}, 0, {sg: 1}, off=(sub,), gate=ff)
        _when(c, L, {sx: 1}, 0, {sg: 1}, on=(sub, cout[0]))
        _when(c, L, {sx: -1}, 1, {sg: 1}, **neg_on)
        for f in (cout, fsub, sxf):
            c.clear(f, L)

    def carries(self, at: int, gp: list[Field]) -> None:
        """Flip S's bits where a carry enters their nibble: the carry into nibble m comes from the
        highest nibble i < m that generates (G_i) with only propagating nibbles (P_j and not G_j)
        above it, which is [G_i + sum_{i<j<m} (P_j - G_j) >= m - i]: one of these holds at most, so
        each is its own threshold, folded with the bit's condition (the bits below it in the nibble
        are all 1). Nibbles above FADD's 28 bits only for FMUL (FADD's subtraction carries out)."""
        c, S = self.c, self.s
        for m in range(1, NIBBLES):
            gate = None if m < FADD_NIBBLES else self.muls + [self.i2f, self.u2f] + self.f2x * (m < INT_NIBBLES)
            for i in range(m):
                run = add_terms({gp[i][0]: 1}, *({gp[j][1]: 1, gp[j][0]: -1} for j in range(i + 1, m)))
                w = m - i + 1
                z = S.dims[4 * m: 4 * m + 4]
                for k in range(4):
                    below = {z[j]: w for j in range(k)}
                    for zk, t, sign in ((-w, m - i + w * k, 1), (w, m - i + w * (k + 1), -1)):
                        terms = add_terms(run, below, {z[k]: zk})
                        if gate:
                            G.gated_step(c, at, terms, t, {z[k]: sign}, gate)
                        else:
                            G.step(c, at, terms, t, {z[k]: sign})
        for f in gp:
            c.clear(f, at)

    # ---- +14 .. +17 (BACK ..): normalise, round, pack -------------------------------------------------------
    def back_end(self) -> None:
        c, L, S = self.c, self.X + BACK, self.sw
        # +14: t' = max(p, q') as fine/coarse one-hots; hidden = [p >= q']; overflow; S == 0
        tf, tc = self.field("tf", 4, L), self.field("tc", T_MAX // 4 + 1, L)
        tb = self.field("tb", 7, L)                         # t' in binary
        flags = self.field("flags", 3, L)                   # hidden, overflow, zero
        hid, ovf, zero = flags.dims

        def at_most(fine, coarse, v):                       # 2 [x < 4 (v div 4)] + [x div 4 = v div 4] + [x mod 4 <= v mod 4]
            q, rr = divmod(v, 4)
            return add_terms({coarse[j]: 2 for j in range(q)}, {coarse[q]: 1}, {fine[j]: 1 for j in range(rr + 1)})

        def t_is(v):                                        # t' = v: its one-hots and bits
            return {tf[v % 4]: 1, tc[v // 4]: 1, **{tb[j]: 1 for j in range(7) if v >> j & 1}}

        for v in range(T_MAX + 1):
            above = {S[j]: -2 for j in range(v + 1, WINDOW)}
            if v < WINDOW:                                  # p = v and q' <= v
                _exact_step(c, L, add_terms(at_most(self.qf, self.qc, v), {S[v]: 2}, above), 4, {**t_is(v), hid: 1})
                _exact_step(c, L, add_terms(at_most(self.rf, self.rc, v), {S[v]: 2}, above), 4, {ovf: 1})
            at_or_above = {S[j]: -2 for j in range(v, WINDOW)}
            q_is_v = {self.qc[v // 4]: 1, self.qf[v % 4]: 1}
            _exact_step(c, L, add_terms(q_is_v, at_or_above), 2, t_is(v))                  # q' = v, p < v
        _exact_step(c, L, {d: -1 for d in S.dims}, 0, {zero: 1}, gate=self.rounded)
        r = self.r.dims
        for i in range(32):                                 # F2I, F2U: the integer; a negative F2I's complement
            _when(c, L, {S[i]: 1}, 0, {r[i]: 1}, off=(self.a[31],), gate=self.f2x)
            _when(c, L, {S[i]: -1}, 1, {r[i]: 1}, on=(self.a[31],), gate=[self.f2i])
        for f in (self.qf, self.qc, self.rf, self.rc):
            c.clear(f, L)
        # +15: the coarse shift y[j] = S'[4 (t' div 4) + j], j = -4..25 (S'[k] = S[k - 23]), and the
        # sticky of S'[k] below k = 4 (t' div 4) - 4; the exponent's digits
        L += 1
        y = self.field("y.coarse", 31, L)                   # y[j + 4], j = -4..25; y[30]: the sticky below
        for q in range(len(tc)):
            for j in range(-4, 26):
                k = 4 * q + j - PAD
                if 0 <= k < WINDOW:
                    _exact_and(c, L, {tc[q]: 1, S[k]: 1}, -1, {y[j + 4]: 1})
            below = {S[k]: 1 for k in range(min(4 * q - 4 - PAD, WINDOW))}
            if below:
                _exact_step(c, L, add_terms(below, {tc[q]: WINDOW + 1}), WINDOW + 2, {y[30]: 1})
        ep = self.field("ep", 8, L)                         # the biased exponent t' + G - K + 1, when hidden
        self.resolve(L, [([Field("hid", (hid,), "bits", L)], _nibbles(add_terms(_value(self.h.dims), _value(tb.dims)), 1))],
                     ep)
        c.clear(self.h, L)
        # special results, exclusive: nan, inf, zero, overflow, else the rounded word (nrm)
        out = self.field("out", 5, L)                       # nrm, zero', ovf', ovf to infinity, ovf to max
        nrm, zf, of = out.dims[:3]
        G.gated(c, L, {self.nan[0]: -1, self.inf[0]: -1, zero: -1, ovf: -1}, 1, {nrm: 1}, self.rounded)
        G.relu(c, L, {zero: 1, self.nan[0]: -1, self.inf[0]: -1}, 0, {zf: 1})
        G.relu(c, L, {ovf: 1, zero: -1, self.nan[0]: -1, self.inf[0]: -1}, 0, {of: 1})
        c.clear(self.s, L)
        c.clear(self.s4, L)
        # +16: the fine shift: fraction M[i] = y[i + (t' mod 4)], guard y[(t' mod 4) - 1], sticky below
        L += 1
        m = self.field("m", 25, L)                          # fraction 0..22, guard, sticky
        for f in range(4):
            for i in range(-1, 23):
                G.relu(c, L, {tf[f]: 1, y[i + f + 4]: 1}, -1, {m[i if i >= 0 else 23]: 1})
            below = {y[j + 4]: 1 for j in range(-4, f - 1)}
            G.step(c, L, add_terms(below, {y[30]: 1, tf[f]: 8}), 9, {m[24]: 1})
        ovf_to = out.dims[3:5]                              # to infinity: RN, RP and +, RM and -
        sg, rn, rp, rm = self.sigma[0], self.rnd["RN"][0], self.rnd["RP"][0], self.rnd["RM"][0]
        G.relu(c, L, {of: 1, rn: 1}, -1, {ovf_to[0]: 1})
        G.relu(c, L, {of: 1, rp: 1, sg: -1}, -1, {ovf_to[0]: 1})
        G.relu(c, L, {of: 1, rm: 1, sg: 1}, -2, {ovf_to[0]: 1})
        G.relu(c, L, {of: 1}, 0, {ovf_to[1]: 1})
        G.relu(c, L, {of: 1, rn: 1}, -1, {ovf_to[1]: -1})
        G.relu(c, L, {of: 1, rp: 1, sg: -1}, -1, {ovf_to[1]: -1})
        G.relu(c, L, {of: 1, rm: 1, sg: 1}, -2, {ovf_to[1]: -1})
        for f in (tf, tc, tb, y, flags):
            c.clear(f, L)
        # +17: round (the packed word W = ep << 23 | fraction, plus the mode's increment) into r
        L += 1
        self.round(L, m, ep, nrm)
        r = self.r.dims
        for i in range(31):                                 # NaN: 0x7FFFFFFF
            G.relu(c, L, {self.nan[0]: 1}, 0, {r[i]: 1})
        for i in range(23, 31):                             # infinity (special or overflow)
            G.relu(c, L, {self.inf[0]: 1, ovf_to[0]: 1}, 0, {r[i]: 1})
        for i in range(31):                                 # the largest finite number 0x7F7FFFFF
            if i != 23:
                G.relu(c, L, {ovf_to[1]: 1}, 0, {r[i]: 1})
        G.relu(c, L, {self.inf[0]: 1, self.signs[0]: 1}, -1, {r[31]: 1})
        G.relu(c, L, {zf: 1, self.signs[1]: 1}, -1, {r[31]: 1})
        G.relu(c, L, {of: 1, sg: 1}, -1, {r[31]: 1})
        G.relu(c, L, {nrm: 1, sg: 1}, -1, {r[31]: 1})
        self.one(L)
        for f in (m, ep, out, self.nan, self.inf, self.signs, self.sigma):
            c.clear(f, L)

    def one(self, L: int) -> None:
        """FRND of 0 < |a| < 1 to +-1 (the zero special gave the sign): RN above one half, RP and RM away
        from zero; 0x3F800000 into r."""
        a, e, rn = self.a, self.a.dims[23:31], self.rnd["RN"][0]
        out = {self.r[i]: 1 for i in range(23, 30)}
        _all_any(self.c, L, out, [self.frnd], all_of=[rn], any_of=a.dims[:23], match=_is(list(e), E_ONE - 1))
        self.tiny(L, out, [self.frnd])

    def round(self, at: int, m: Field, ep: Field, nrm: int) -> None:
        """r = W + inc, W = ep << 23 | m's fraction, inc by the mode from the guard g, the sticky s, W's
        last bit and the sign: the carry into bit i is inc and (W's bits below i all 1), one threshold
        per mode (RZ: none); bit i = W_i xor carry_i."""
        c, r, sg = self.c, self.r.dims, self.sigma[0]
        w = list(m.dims[:23]) + list(ep.dims)
        g, s = m[23], m[24]
        for i in range(31):
            G.gated(c, at, {w[i]: 1}, 0, {r[i]: 1}, [Field("nrm", (nrm,), "bits", at)])
            ones = {w[j]: 1 for j in range(i)}
            for mode, (terms, t, k) in {
                "RN": (add_terms({d: 4 for d in ones}, {g: 2, s: 1}, {} if i else {w[0]: 1}), 4 * i + (2 if i else 3), 4),
                "RP": (add_terms({d: 3 for d in ones}, {g: 1, s: 1, sg: -3}), 3 * i + 1, 3),
                "RM": (add_terms({d: 3 for d in ones}, {g: 1, s: 1, sg: 3}), 3 * i + 4, 3),
            }.items():
                big = k * i + 5
                flag = self.rnd[mode][0]
                _step_when(c, at, add_terms(terms, {w[i]: -big}), t, {r[i]: 1}, on=(nrm, flag))        # carry, W_i = 0
                _step_when(c, at, add_terms(terms, {w[i]: big}), t + big, {r[i]: -1}, on=(nrm, flag))  # carry, W_i = 1


def build_fpu(c: Circuit, at: int, op: dict[str, Field], rnd: dict[str, Field], a: list[Field], b: list[Field],
              r: list[Field], cc: list[Field]) -> int:
    """Adds FLOAT_SEMANTICS[op](rnd, a, b) into r per lane at layer at + FPU_LAYERS - 1; returns
    at + FPU_LAYERS, the first layer that reads it."""
    missing = [n for n in FPU_OPS if n not in op] + [f"rounding {m}" for m in ROUNDINGS if m not in rnd]
    if missing:
        raise CircuitError(f"fpu: no flag for {', '.join(missing)}")
    if not len(a) == len(b) == len(r) == len(cc) == LANES:
        raise CircuitError(f"fpu: needs {LANES} lanes of operands and results")
    for lane in range(LANES):
        _Lane(c, at, op, rnd, a[lane], b[lane], r[lane], f"fpu{lane}", cc[lane]).build()
    return at + FPU_LAYERS
