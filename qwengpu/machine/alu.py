"""The 4-lane ALU stage: every ALU op of isa.ALU_SEMANTICS that fits, for 4 lanes at once.

Interface: `build_alu(c, at, op, a, b, cc)` reads one-dim op flags (at most one is 1) and
per-lane 32-bit operands (positional operands 0, 1, 2 of isa.ALU_SEMANTICS) and returns
per-lane 32-bit results plus the first layer whose MLP may read them. With every flag 0
the results are exactly 0.

No final select layer: each unit writes its result straight into the lane's result field,
multiplied by its op flag. Any relu neuron can be gated by a flag: relu(y + K f - K) with
K the largest value of y is relu(y) when f = 1 and 0 when f = 0 (`gadgets.gated`).

Units (layer offsets from `at`; all lanes side by side):
  multiply + add/sub  L0 bit products a_i b_j summed per bit column (gated by MUL's flag);
                      L1, L2 each column count split into its bits, which move up to the
                      columns they weigh (in place); L3 columns folded into nibble digits
                      D_n <= 30, with ADD and SUB writing their own digits there (gated);
                      L4, L5 one carry resolution (gadgets.resolve's scheme, the nibble bits
                      kept in r) for all three ops.
  shifter             a barrel shifter in place on one 32-dim field: by 0-3 while loading (L0),
                      then by 4, 8, 16 (L1..L3); SHR and SRA shift the bit-reversed word left
                      (reversal is free wiring) with SRA's sign as the fill; PTX clamping in
                      the last stage.
  compare / pick      L0 byte order (gadgets.byte_order, signed and unsigned);
                      L1 SETxx into bit 0, and which operand to pick (MIN/MAX/SEL/MOV);
                      L2 a 3-way mux.
  bit fields          BFE/BFEU: the shifter's right shift by b & 0xFF into r (L3), then in
                      place: bits at and above len = cc & 0xFF cleared and BFE's sign found
                      (L4), the sign written above len (L5).
  bitwise             AND/OR/XOR in one layer (L3): OR = AND + XOR.
  bit counting        POPC, CLZ, BREV in one layer (L3).
  division steps      DIVR (a - b if a >= b, else a) and DIVQ (2 cc + [a >= b]): the test
                      t = [a >= b] at L1 from the compare unit's byte order, then adder digits
                      at L3 (DIVR: SUB's when t, a's when not).
  radix-4 steps       DIVR4 (a - k b) and DIVQ4 (4 cc + k), k = how many of b, 2b, 3b fit in a:
                      a - b in r (L0-L1), the three tests (L1-L3), the result (L4-L5); see
                      _radix4.

Not here: MULHI/MULHIU need the full 64-bit product (twice the bit products and column
splits: about 4700 neurons in each of the first two layers, and 8 layers in all) and
DIV/DIVU/REM/REMU a long chain of compare-subtract steps; neither fits this stage's budget.
The lowering builds 32-bit division from DIVR4 and DIVQ4 (two quotient bits a step), 64-bit
division by a divisor up to 2^30 too, and its other 64-bit loops from DIVR and DIVQ (one).
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit.gadgets import MAX_POSITIVE, add_terms, span
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.plan import ALU_LAYERS

WORD = 32
LANES = 4
ADD_SUB_MUL = ("ADD", "SUB", "MUL")
SHIFTS = ("SHL", "SHR", "SRA")
PICKS = ("MOV", "SEL", "MIN", "MAX", "MINU", "MAXU")
SETS = ("SETEQ", "SETNE", "SETLT", "SETLE", "SETGT", "SETGE", "SETLTU", "SETLEU", "SETGTU", "SETGEU")
BITWISE = ("AND", "OR", "XOR")
COUNTS = ("POPC", "CLZ", "BREV")
BIT_FIELDS = ("BFE", "BFEU")
DIV_STEPS = ("DIVR", "DIVQ", "DIVR4", "DIVQ4")
ALU_OPS: tuple[str, ...] = ADD_SUB_MUL + SHIFTS + PICKS + SETS + BITWISE + COUNTS + BIT_FIELDS + DIV_STEPS

# layer offsets of each unit's steps
MUL_REDUCE = (1, 2)   # column counts -> bits, in place
DIGITS = 3            # nibble digits (MUL fold, ADD/SUB digits)
RESOLVE = 4           # carry resolution: 4 and 5
SHIFT_LAST = 3        # the shifter's last stage
BIT_FIELD = 4         # BFE/BFEU masking: 4 and 5
LATE = 3              # bitwise and bit counting


@dataclass(frozen=True)
class LaneResults:
    """What the machine passes on of an execute unit (the ALU, the pre-ALU, the warp unit)."""
    r: list[Field]      # per lane, 32 bits (later units add into them: copy-out addresses, loads)
    end: int            # the first layer whose MLP may read them


# ---------------------------------------------------------------------------
# neuron helpers
# ---------------------------------------------------------------------------
def _gated_both(c: Circuit, at: int, terms: dict[int, int], bias: int, out: dict[int, float],
                flag: Field, cond: dict[int, int], cond_bias: int) -> None:
    """out += relu(y) if `flag` is 1 and the 0/1 value sum(cond) + cond_bias is 1, else 0:
    relu(y + K (flag + cond) - 2K), K = the largest y."""
    hi = span(c, terms, bias)[1]
    if hi > MAX_POSITIVE:
        raise CircuitError(f"neuron argument reaches {hi}; exact range is <= {MAX_POSITIVE}")
    if hi > 0:
        gate = add_terms({flag[0]: hi}, {d: k * hi for d, k in cond.items()})
        G.raw(c, at, add_terms(terms, gate), bias + hi * cond_bias - 2 * hi, out)


def _basis_rows(values: list[int], functions: list[tuple[callable, dict[int, float]]]) -> dict[int, dict[int, float]]:
    """gadgets.basis_rows for functions with f(values[0]) = 0 (a gated neuron has no constant)."""
    base, rows = G.basis_rows(values, functions)
    if base:
        raise CircuitError("basis: f(values[0]) must be 0")
    return rows


def _gated_basis(c: Circuit, at: int, terms: dict[int, int], values: list[int],
                 functions: list[tuple[callable, dict[int, float]]], gate: list[Field], const: int = 0) -> None:
    """gadgets.basis (f(S) for S = sum(terms) + const taking only the sorted `values`), gated."""
    for offset, row in _basis_rows(values, functions).items():
        G.gated(c, at, terms, const - offset, row, gate)


# ---------------------------------------------------------------------------
# multiply, add, sub: shared nibble digits and one carry resolution
# ---------------------------------------------------------------------------
def column_bits(c: Circuit, at: int, col: Field, vmax: list[int], last: bool, digits: Field | None) -> list[int]:
    """Split each column count S_k (0..vmax[k]) into its bits; bit t weighs 2**(k+t) (bits past the
    last column are dropped: the product is known to fit). In place (the basis also subtracts S_k
    from its own dim), or, when `last`, folded into the nibble digits: column k = 4n + s adds
    (v 2**s) mod 16 to digit n and (v 2**s) div 16 to digit n+1. Returns the new column bounds."""
    width = len(vmax)
    new = [0] * width
    for k in range(width):
        if vmax[k] == 0:
            continue
        fns = []
        if last:
            n, s = divmod(k, 4)
            fns.append((lambda v, s=s: (v << s) % 16, {digits[n]: 1}))
            if n + 1 < len(digits):
                fns.append((lambda v, s=s: (v << s) // 16, {digits[n + 1]: 1}))
        else:
            for t in range(vmax[k].bit_length()):
                if k + t < width:
                    fns.append((lambda v, t=t: v >> t & 1, {col[k + t]: 1}))
                    new[k + t] += 1
        fns.append((lambda v: -v, {col[k]: 1}))      # clear the old count
        G.basis(c, at, {col[k]: 1}, 0, fns, values=list(range(vmax[k] + 1)))
    return new


def digit_bounds(vmax: list[int]) -> list[int]:
    """The largest nibble digit column_bits(last=True) can write, per digit."""
    nibbles = len(vmax) // 4
    out = [0] * (nibbles + 1)
    for k, m in enumerate(vmax):
        n, s = divmod(k, 4)
        out[n] += max((v << s) % 16 for v in range(m + 1))
        out[n + 1] += max((v << s) // 16 for v in range(m + 1))
    return out[:nibbles]


def _mul_columns(c: Circuit, at: int, flags: dict[str, Field], a: Field, b: Field, tag: str):
    """MUL's bit products (L0) and two in-place reductions (L1, L2): (column field, bounds)."""
    col = c.field(f"{tag}.mul.columns", WORD, at, kind="int", vmax=WORD)
    for i in range(WORD):                          # S_k = sum_{i+j=k} a_i b_j, gated by MUL
        for j in range(WORD - i):
            G.gated(c, at, {a[i]: 1, b[j]: 1}, -1, {col[i + j]: 1}, [flags["MUL"]])
    vmax = [k + 1 for k in range(WORD)]
    for layer in MUL_REDUCE:
        vmax = column_bits(c, at + layer, col, vmax, False, None)
    return col, vmax


def _digits(c: Circuit, at: int, flags: dict[str, Field], a: Field, b: Field, cc: Field, col: Field,
            vmax: list[int], t: Field, tag: str) -> Field:
    """Layer at: nibble digits D_n <= 31 of MUL (its columns folded), ADD, SUB, and the
    division steps with t = [a >= b]: DIVR is SUB's digits when t, a's when not; DIVQ 2 cc + t."""
    bounds = digit_bounds(vmax)
    if max(bounds) > 31:
        raise CircuitError(f"{tag}: multiply digits reach {max(bounds)}; the carry resolution needs <= 31")
    digits = c.field(f"{tag}.digits", WORD // 4, at, kind="int", vmax=31)
    column_bits(c, at, col, vmax, True, digits)
    c.layout.release(col, at)
    for n in range(WORD // 4):                     # ADD: A_n + B_n; SUB: A_n + 15 - B_n (+1)
        G.gated(c, at, add_terms(G.nibble(a, n), G.nibble(b, n)), 0, {digits[n]: 1}, [flags["ADD"]])
        G.gated(c, at, add_terms(G.nibble(a, n), G.neg(G.nibble(b, n))), 15 + (n == 0),
               {digits[n]: 1}, [flags["SUB"]])
    for n in range(WORD // 4):
        _gated_both(c, at, add_terms(G.nibble(a, n), G.neg(G.nibble(b, n))), 15 + (n == 0),
                    {digits[n]: 1}, flags["DIVR"], {t[0]: 1}, 0)
        _gated_both(c, at, G.nibble(a, n), 0, {digits[n]: 1}, flags["DIVR"], {t[0]: -1}, 1)
        G.gated(c, at, add_terms({d: 2 * k for d, k in G.nibble(cc, n).items()}, {t[0]: 1} if n == 0 else {}), 0,
               {digits[n]: 1}, [flags["DIVQ"]])
    c.clear(t, at)
    return digits


def _division_test(c: Circuit, at: int, flags: dict[str, Field], lam_ab: dict[int, int], tag: str) -> Field:
    """Layer at: t = [a >= b] (unsigned) when DIVR or DIVQ runs, else 0; lam_ab is the byte-order
    Lambda of (a, b) from _compare_pick, sign(Lambda) = sign(b - a)."""
    t = c.field(f"{tag}.divtest", 1, at)
    # Lambda carries the read noise of both operands (1e-3 for equal words): a plain step
    # would pass it on, and DIVR's digits weigh t by up to 31, so t is made exact
    _exact_nonneg(c, at, G.neg(lam_ab), 0, t, [flags["DIVR"], flags["DIVQ"]])
    return t


def _exact_nonneg(c: Circuit, at: int, terms: dict[int, int], bias: int, out: Field, gate: list[Field]) -> None:
    """out += [S >= 0] for S = sum(terms) + bias, an integer up to operand read noise, when a gate
    flag is 1: relu(4S + 3) - relu(4S + 2), exact for S within 1/4 of an integer."""
    s4 = {d: 4 * k for d, k in terms.items()}
    G.gated(c, at, s4, 4 * bias + 3, {out[0]: 1}, gate)
    G.gated(c, at, s4, 4 * bias + 2, {out[0]: -1}, gate)


def _byte_steps(c: Circuit, at: int, x: list, y: list, out: Field, gate: list[Field]) -> dict[int, int]:
    """Layer at: gt_j = [Y_j > X_j], lt_j = [Y_j < X_j] per byte of the 32-bit words whose bits are
    the dims x, y (None: a 0 bit), when a gate flag is 1. Returns Lambda = sum_j (gt_j - lt_j) 2**j:
    sign(Lambda) = sign(y - x), |Lambda| <= 15."""
    for j in range(4):
        diff = add_terms({y[8 * j + i]: 1 << i for i in range(8) if y[8 * j + i] is not None},
                         {x[8 * j + i]: -(1 << i) for i in range(8) if x[8 * j + i] is not None})
        G.gated_step(c, at, diff, 1, {out[2 * j]: 1}, gate)
        G.gated_step(c, at, G.neg(diff), 1, {out[2 * j + 1]: 1}, gate)
    return add_terms(*({out[2 * j]: 1 << j, out[2 * j + 1]: -(1 << j)} for j in range(4)))


def _radix4_t1(c: Circuit, at: int, flags: dict[str, Field], lam_ab: dict[int, int], tag: str) -> Field:
    """Layer at: t1 = [a >= b] for DIVR4 and DIVQ4, from the compare unit's byte order of (a, b)
    (readable at this layer only)."""
    t1 = c.field(f"{tag}.div4.t1", 1, at)
    _exact_nonneg(c, at, G.neg(lam_ab), 0, t1, [flags["DIVR4"], flags["DIVQ4"]])
    return t1


def _radix4(c: Circuit, at: int, flags: dict[str, Field], a: Field, b: Field, cc: Field, r: Field,
            t1: Field, tag: str) -> None:
    """DIVR4 and DIVQ4: the radix-4 digit k = t1 + t2 + t3 = [a >= b] + [a >= 2b] + [a >= 3b] (2b
    and 3b exact: past 32 bits when b is), then a - k b and 4 cc + k. 3b would need an addition
    before its comparison, so t3 compares u = a - b with 2b instead. u is kept in r (no other
    unit writes r while these run), which saves the residual a field per lane:

    at:     u = a - b: its digits' bits into r
    at + 1: u's carries (in place); t1 = [a >= b] (_radix4_t1)
    at + 2: byte orders of (a, 2b) and (u, 2b); u's bits requantized (the second subtraction
            would amplify the read noise the first one's carries passed on)
    at + 3: t2 = [a >= 2b], t3 = t1 and [u >= 2b], both 0 when 2b >= 2**32
    at + 4: DIVR4: a in place of u (k = 0), u (k = 1), or out of r: the digits of u - b (k = 2) or
            u - 2b (k = 3) and their bits; DIVQ4: 4 cc + k in place of u
    at + 5: DIVR4's carries, its bits into r."""
    both, rem, quo = [flags["DIVR4"], flags["DIVQ4"]], flags["DIVR4"], flags["DIVQ4"]
    b2 = [None] + list(b.dims[:WORD - 1])           # 2b's low 32 bits; b's top bit is 2b's bit 32
    top = b[WORD - 1]
    gp = [carry_field(c, f"{tag}.div4.u.carry{n}", at) for n in range(WORD // 4)]
    for n in range(WORD // 4):                      # U_n = A_n + 15 - B_n (+1)
        _gated_basis(c, at, add_terms(G.nibble(a, n), G.neg(G.nibble(b, n))), list(range(32)),
                     nibble_functions(r, gp, n), both, const=15 + (n == 0))
    carries_in_place(c, at + 1, gp, r)
    G.requantize(c, at + 2, r, both)
    orders = [c.field(f"{tag}.div4.order{j}", 8, at + 2) for j in (2, 3)]
    lam2 = _byte_steps(c, at + 2, list(a.dims), b2, orders[0], both)
    lam3 = _byte_steps(c, at + 2, list(r.dims), b2, orders[1], both)
    t2, t3 = (c.field(f"{tag}.div4.t{j}", 1, at + 3) for j in (2, 3))
    _exact_nonneg(c, at + 3, add_terms(G.neg(lam2), {top: -16}), 0, t2, both)
    _exact_nonneg(c, at + 3, add_terms(G.neg(lam3), {t1[0]: 16, top: -16}), -16, t3, both)
    for f in orders:
        c.clear(f, at + 3)
    last, t = at + 4, [t1[0], t2[0], t3[0]]
    for i in range(WORD):
        G.gated(c, last, {r[i]: 1}, 0, {r[i]: -1}, quo)                          # DIVQ4: u out
        _gated_both(c, last, {r[i]: 1}, 0, {r[i]: -1}, rem, {t[0]: -1, t[1]: 1}, 1)   # DIVR4, k != 1: u out,
        _gated_both(c, last, {a[i]: 1}, 0, {r[i]: 1}, rem, {t[0]: -1}, 1)            # a in when k = 0
    z = c.field(f"{tag}.div4.z", WORD, last)
    gp = [carry_field(c, f"{tag}.div4.carry{n}", last) for n in range(WORD // 4)]
    for y, k_is in ((list(b.dims), {t[1]: 1, t[2]: -1}), (b2, {t[2]: 1})):     # k = 2: u - b; k = 3: u - 2b
        for n in range(WORD // 4):
            terms = add_terms(G.nibble(r, n), {d: -(1 << i) for i, d in enumerate(y[4 * n: 4 * n + 4])
                                               if d is not None})
            for offset, row in _basis_rows(list(range(32)), nibble_functions(z, gp, n)).items():
                _gated_both(c, last, terms, 15 + (n == 0) - offset, row, rem, k_is, 0)
    for i in range(WORD - 2):                        # DIVQ4: 4 cc + k
        G.gated(c, last, {cc[i]: 1}, 0, {r[i + 2]: 1}, quo)
    G.gated(c, last, {t[0]: 1, t[1]: -1, t[2]: 1}, 0, {r[0]: 1}, quo)
    G.gated(c, last, {t[1]: 1}, 0, {r[1]: 1}, quo)
    for f in (t1, t2, t3):
        c.clear(f, last)
    carries_in_place(c, last + 1, gp, r, bits=z)


def _resolve(c: Circuit, at: int, digits: Field, out: Field, tag: str) -> None:
    """out += the binary value of sum_n D_n 16**n mod 2**32 for digits D_n in [0, 31]; clears
    the digits. 2 layers; the carry scheme of gadgets.resolve, with each nibble's bits kept in
    `out` itself (the digits are 0 unless ADD, SUB or MUL runs, and then no other unit writes
    `out`, so the bits can be read back from there):

    at:     per nibble (a basis over D_n) its low 4 bits z into out, generate G = [D >= 16]
            and propagate P = [D >= 15];
    at + 1: the carry into nibble m is [L_m >= 1], L_m = sum_{i<m} (G_i + P_i - 1) 2**i (the
            highest nibble that does not just propagate decides); it flips bit k of the
            nibble when the bits below k are all 1."""
    gp = [carry_field(c, f"{tag}.carry{n}", at) for n in range(len(digits))]
    for n, d in enumerate(digits.dims):
        fns = nibble_functions(out, gp, n) + [(lambda v: -v, {d: 1})]      # and clear the digit
        G.basis(c, at, {d: 1}, 0, fns)
    c.layout.release(digits, at)
    carries_in_place(c, at + 1, gp, out)


def carry_field(c: Circuit, name: str, at: int) -> Field:
    """A nibble's (G, P) for carries_in_place. Two bits: as one int field G + P would need
    weights 2**(i + 8) in the carries, which turn fp32 rounding into errors near 0.5."""
    return c.field(name, 2, at)


def nibble_functions(out: Field, gp: list[Field], n: int) -> list[tuple[callable, dict[int, float]]]:
    """The first layer of an in-place carry resolution for nibble n (digit D in [0, 31]): its low
    4 bits into out, G = [D >= 16] and P = [D >= 15] into gp[n]."""
    z = out.dims[4 * n: 4 * n + 4]
    fns = [(lambda v, k=k: v % 16 >> k & 1, {z[k]: 1}) for k in range(4)]
    return fns + [(lambda v: int(v >= 16), {gp[n][0]: 1}), (lambda v: int(v >= 15), {gp[n][1]: 1})]


def carries_in_place(c: Circuit, at: int, gp: list[Field], out: Field, bits: Field | None = None) -> None:
    """Layer at: add each nibble's carry in to the bits in `out`, from its (G, P) in gp (the carry
    into nibble m is [L_m >= 1], L_m = sum_{i<m} (G_i + P_i - 1) 2**i); clears gp. Bits of
    nibbles whose G and P are all 0 are left as they are. With `bits`, the nibbles' bits are
    read from there (the bits weigh 128 here: a field no other unit writes keeps their noise
    small) and moved into `out`."""
    src = bits or out
    for n in range(1, len(gp)):
        lam = add_terms(*({gp[i][0]: 1 << i, gp[i][1]: 1 << i} for i in range(n)))
        first = 1 + sum(1 << i for i in range(n))     # carry = [sum(lam) >= first]
        z, o = src.dims[4 * n: 4 * n + 4], out.dims[4 * n: 4 * n + 4]
        for k in range(4):                             # z_k ^= carry and z_0..z_{k-1} all 1
            below = {z[j]: 128 for j in range(k)}
            G.step(c, at, add_terms(lam, below, {z[k]: -128}), first + 128 * k, {o[k]: 1})
            G.step(c, at, add_terms(lam, below, {z[k]: 128}), first + 128 * (k + 1), {o[k]: -1})
    for f in gp:
        c.clear(f, at)
    if bits is not None:
        G.copy_bits(c, at, bits, out)
        c.clear(bits, at)


# ---------------------------------------------------------------------------
# shifts (and BFE's shift): a barrel shifter in place, 4 layers
# ---------------------------------------------------------------------------
def _shifts(c: Circuit, at: int, flags: dict[str, Field], a: Field, b: Field, r: Field, tag: str) -> None:
    """SHL, SHR, SRA of one lane into r at layer at + 3, and for BFE/BFEU the shifted word
    a >> (b & 0xFF) (arithmetic for BFE), which _bit_field then masks in place. x holds a (SHL) or
    reversed a (right shifts) shifted left by b[0:2] while it is loaded (L0), then by 4, 8
    (L1, L2, in place) and 16 (L3, un-reversed); `fill` is what enters at the bottom (a's
    sign for SRA and BFE). Amounts >= 32 (any of b[5:], or b[5:8] for BFE) zero the shifted
    bits and give every bit `bigfill` = the fill."""
    sign_fill = [flags["SRA"], flags["BFE"]]
    left, right = [flags["SHL"]], [flags["SHR"], flags["SRA"], flags["BFE"], flags["BFEU"]]
    high = {b[j]: -1 for j in range(5, WORD)}       # <= -1 when the amount is >= 32
    high8 = {b[j]: -1 for j in range(5, 8)}         # the same for BFE's 8-bit position
    x = c.field(f"{tag}.shift", WORD, at)
    fill = c.field(f"{tag}.shift.fill", 3, at)      # [fill, bigfill (SRA), bigfill (BFE)]
    G.gated(c, at, {a[WORD - 1]: 1}, 0, {fill[0]: 1}, sign_fill)
    for k, big, op in ((1, high, "SRA"), (2, high8, "BFE")):
        G.gated_step(c, at, add_terms(G.neg(big), {a[WORD - 1]: 32}), 33, {fill[k]: 1}, [flags[op]])
    for s in range(4):                              # L0: x_i = X_{i-s} when b[0:2] == s
        amount = {b[0]: 1 if s & 1 else -1, b[1]: 1 if s & 2 else -1}
        bias = -2 + (not s & 1) + (not s & 2)       # amount terms + bias == 0 exactly when b[0:2] == s
        for i in range(WORD):
            j = i - s
            if j >= 0:
                G.gated(c, at, add_terms(amount, {a[j]: 1}), bias, {x[i]: 1}, left)
                G.gated(c, at, add_terms(amount, {a[WORD - 1 - j]: 1}), bias, {x[i]: 1}, right)
            else:
                G.gated(c, at, add_terms(amount, {a[WORD - 1]: 1}), bias, {x[i]: 1}, sign_fill)
    for k in (2, 3):                                # x_i <- b_k ? x_{i - 2**k} : x_i
        d = 1 << k
        for i in range(WORD):
            src = x[i - d] if i >= d else fill[0]
            G.relu(c, at + k - 1, {src: 1, x[i]: -1, b[k]: 1}, -1, {x[i]: 1})
            G.relu(c, at + k - 1, {x[i]: 1, src: -1, b[k]: 1}, -1, {x[i]: -1})
    last = at + SHIFT_LAST                          # stage 16 straight into the result, clamped
    for gate, reverse, big in ((left, False, high), (right[:2], True, high), (right[2:], True, high8)):
        for i in range(WORD):
            j = WORD - 1 - i if reverse else i
            src = x[j - 16] if j >= 16 else (fill[0] if reverse else None)
            G.gated(c, last, add_terms({x[j]: 1, b[4]: -1}, big), 0, {r[i]: 1}, gate)
            if src is not None:
                G.gated(c, last, add_terms({src: 1, b[4]: 1}, big), -1, {r[i]: 1}, gate)
    for k in (1, 2):
        G.relu(c, last, {fill[k]: 1}, 0, {d: 1 for d in r.dims})
    c.clear(x, last)
    c.clear(fill, last)


def _bit_field(c: Circuit, at: int, flags: dict[str, Field], cc: Field, r: Field, tag: str) -> None:
    """BFE/BFEU on the shifted word y that the shifter left in r (by layer at - 1), len = cc & 0xFF:
    bit i is y_i when i < len, else BFE's sign y_{min(len, 32) - 1} (0 for BFEU and len = 0).
    Layer at: clear the bits at and above len, find the sign; at + 1: the sign above len."""
    both = [flags["BFE"], flags["BFEU"]]
    length = {cc[t]: 1 << t for t in range(8)}
    sign = c.field(f"{tag}.bfe.sign", 1, at)
    for n in range(1, WORD):                       # y_{n-1} and len == n
        match = {cc[t]: 1 if n >> t & 1 else -1 for t in range(8)}
        G.gated(c, at, add_terms(match, {r[n - 1]: 1}), -bin(n).count("1"), {sign[0]: 1}, [flags["BFE"]])
    G.gated_step(c, at, add_terms(length, {r[WORD - 1]: 256}), 256 + WORD, {sign[0]: 1}, [flags["BFE"]])
    for i in range(WORD):                          # y_i and len <= i: clear it ...
        G.gated_step(c, at, add_terms(G.neg(length), {r[i]: 256}), 256 - i, {r[i]: -1}, both)
    for i in range(WORD):                          # ... then the sign where len <= i
        G.step(c, at + 1, add_terms(G.neg(length), {sign[0]: 256}), 256 - i, {r[i]: 1})
    c.clear(sign, at + 1)


# ---------------------------------------------------------------------------
# compare, min/max, select, move
# ---------------------------------------------------------------------------
def _compare_pick(c: Circuit, at: int, flags: dict[str, Field], a: Field, b: Field, cc: Field,
                  r: Field, tag: str) -> dict[int, int]:
    """SETxx into r[0] at layer at + 1; MOV/SEL/MIN/MAX(U) pick a, b or cc per bit at at + 2.
    Returns the unsigned byte-order Lambda of (a, b), readable at layer at + 1 only."""
    order, lam_u, lam_s = G.byte_order(c, at, a, b, tag)
    at1 = at + 1
    for op in SETS:
        signed, test = G.SET_TESTS[op]
        lam = lam_s if signed else lam_u
        gate, out = [flags[op]], {r[0]: 1}
        if test == "zero":
            G.gated(c, at1, {d: -1 for d in order.dims[:8]}, 1, out, gate)
        elif test == "nonzero":
            G.gated_step(c, at1, {d: 1 for d in order.dims[:8]}, 1, out, gate)
        else:
            terms, t = {"pos": (lam, 1), "nonneg": (lam, 0), "neg": (G.neg(lam), 1), "nonpos": (G.neg(lam), 0)}[test]
            G.gated_step(c, at1, terms, t, out, gate)
    pick = c.field(f"{tag}.pick", 3, at1)            # take a, b, cc
    pa, pb, pc = ({pick[k]: 1} for k in range(3))
    for op, lam in (("MIN", lam_s), ("MINU", lam_u), ("MAX", G.neg(lam_s)), ("MAXU", G.neg(lam_u))):
        G.gated_step(c, at1, lam, 0, pa, [flags[op]])         # MIN: a when b - a >= 0
        G.gated_step(c, at1, G.neg(lam), 1, pb, [flags[op]])
    G.gated(c, at1, {}, 1, pa, [flags["MOV"]])
    nonzero = {d: 1 for d in a.dims}                           # SEL(cond = a, b, cc)
    G.gated_step(c, at1, nonzero, 1, pb, [flags["SEL"]])
    G.gated(c, at1, G.neg(nonzero), 1, pc, [flags["SEL"]])
    c.clear(order, at1)
    for i in range(WORD):
        for k, src in enumerate((a, b, cc)):
            G.relu(c, at + 2, {src[i]: 1, pick[k]: 1}, -1, {r[i]: 1})
    c.clear(pick, at + 2)
    return lam_u


# ---------------------------------------------------------------------------
# bitwise and bit counting (one layer each)
# ---------------------------------------------------------------------------
def _bitwise(c: Circuit, at: int, flags: dict[str, Field], a: Field, b: Field, r: Field) -> None:
    """AND/OR/XOR: OR = AND + XOR (a bit can't be both)."""
    both, either = [flags["AND"], flags["OR"]], [flags["OR"], flags["XOR"]]
    for i in range(WORD):
        G.gated(c, at, {a[i]: 1, b[i]: 1}, -1, {r[i]: 1}, both)
        G.gated(c, at, {a[i]: 1, b[i]: -1}, 0, {r[i]: 1}, either)
        G.gated(c, at, {a[i]: -1, b[i]: 1}, 0, {r[i]: 1}, either)


def _counts(c: Circuit, at: int, flags: dict[str, Field], a: Field, r: Field) -> None:
    """POPC: bits of sum(a) (a basis over 0..32); CLZ: k when a's top k bits are 0 and the next
    is 1 (one neuron per k writes k's bits); BREV: r_i = a_{31-i}."""
    bits = [(lambda v, t=t: v >> t & 1, {r[t]: 1}) for t in range(6)]
    _gated_basis(c, at, {d: 1 for d in a.dims}, list(range(WORD + 1)), bits, [flags["POPC"]])
    for k in range(WORD + 1):
        bits = {r[t]: 1 for t in range(6) if k >> t & 1}
        above = {a[j]: -1 for j in range(WORD - k, WORD)}
        if k < WORD:
            G.gated(c, at, add_terms(above, {a[WORD - 1 - k]: 1}), 0, bits, [flags["CLZ"]])
        else:
            G.gated(c, at, above, 1, bits, [flags["CLZ"]])
    for i in range(WORD):
        G.gated(c, at, {a[WORD - 1 - i]: 1}, 0, {r[i]: 1}, [flags["BREV"]])


# ---------------------------------------------------------------------------
# the stage
# ---------------------------------------------------------------------------
def build_alu(c: Circuit, at: int, op: dict[str, Field], a: list[Field], b: list[Field], cc: list[Field],
              name: str = "alu") -> tuple[list[Field], int]:
    """Per lane r = ALU_SEMANTICS[op](a, b, cc) for the op whose flag is 1 (0 when none is).
    Operands are born before layer `at`; returns (r, end) with r readable from layer `end`."""
    missing = [o for o in ALU_OPS if o not in op]
    if missing:
        raise CircuitError(f"{name}: no op flag for {', '.join(missing)} (build_alu needs one per ALU_OPS name)")
    if not (len(a) == len(b) == len(cc) == LANES):
        raise CircuitError(f"{name}: needs {LANES} lanes of operands, got {len(a)}, {len(b)}, {len(cc)}")
    for o in ALU_OPS:
        if op[o].width != 1 or op[o].kind != "bits":
            raise CircuitError(f"{name}: op flag {o} is {op[o].kind}[{op[o].width}]; a flag is bits[1]")
    for f in (*a, *b, *cc):
        if f.width != WORD or f.kind != "bits":
            raise CircuitError(f"{name}: operand {f.name} is {f.kind}[{f.width}]; an operand is bits[{WORD}]")
    flags = {o: op[o] for o in ALU_OPS}
    tags = [f"{name}{lane}" for lane in range(LANES)]
    lanes = list(zip(tags, a, b, cc))
    r = [c.field(f"{tag}.r", WORD, at) for tag in tags]        # radix-4 division keeps a - b there from `at`
    # unit by unit over the lanes, roughly in the order fields are born, so that fields born
    # later find the gaps of those already cleared
    columns = [_mul_columns(c, at, flags, x, y, tag) for tag, x, y, _ in lanes]
    tests, t1s = [], []
    for (tag, x, y, z), out in zip(lanes, r):
        lam = _compare_pick(c, at, flags, x, y, z, out, tag)
        tests.append(_division_test(c, at + 1, flags, lam, tag))
        t1s.append(_radix4_t1(c, at + 1, flags, lam, tag))
        _shifts(c, at, flags, x, y, out, tag)
        _bitwise(c, at + LATE, flags, x, y, out)
        _counts(c, at + LATE, flags, x, out)
    digits = [_digits(c, at + DIGITS, flags, x, y, z, *col, t, tag)
              for (tag, x, y, z), col, t in zip(lanes, columns, tests)]
    for (tag, x, y, z), out, d in zip(lanes, r, digits):
        _bit_field(c, at + BIT_FIELD, flags, z, out, tag)
        _resolve(c, at + RESOLVE, d, out, tag)
    for (tag, x, y, z), out, t1 in zip(lanes, r, t1s):
        _radix4(c, at, flags, x, y, z, out, t1, tag)
    return r, at + ALU_LAYERS

