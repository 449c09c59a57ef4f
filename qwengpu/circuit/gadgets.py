"""MLP gadgets: exact integer functions of residual fields, built from relu neurons.

Every neuron computes relu(y) of an integer y = sum(coef * x) + bias (layer.py explains
why silu(128 * y) / 128 == relu(y) exactly in fp32 and bf16). The helpers below check
each neuron's range from the fields' value bounds: the largest positive argument must
be <= 256 (exact in bf16); negative arguments only have to stay negative.

Gadgets take the circuit, the layer `at` of their first MLP, their input fields, and
return their output fields (born at their last layer). Temporaries are cleared by the
gadget's last layer.
"""
from __future__ import annotations

import functools

from qwengpu.circuit import CircuitError
from qwengpu.circuit.layer import MAX_POSITIVE, Circuit
from qwengpu.circuit.residual import Field

WORD = 32
NIBBLES = WORD // 4


# ---------------------------------------------------------------------------
# neuron helpers
# ---------------------------------------------------------------------------
def span(c: Circuit, terms: dict[int, int], bias: int) -> tuple[int, int]:
    vmax = c.layout.dim_vmax
    lo = bias + sum(min(0, k * vmax[d]) for d, k in terms.items())
    hi = bias + sum(max(0, k * vmax[d]) for d, k in terms.items())
    return lo, hi


def raw(c: Circuit, at: int, terms: dict[int, int], bias: int, out: dict[int, float]) -> None:
    """One neuron, with terms and outputs in field units (int fields are stored scaled); no range check."""
    scale = c.layout.dim_scale
    c.layer(at).relu({d: k / scale[d] for d, k in terms.items()}, bias,
                     {d: k * scale[d] for d, k in out.items()})


def relu(c: Circuit, at: int, terms: dict[int, int], bias: int, out: dict[int, float]) -> None:
    """out += coef * relu(sum(terms) + bias), exact."""
    lo, hi = span(c, terms, bias)
    if hi > MAX_POSITIVE:
        raise CircuitError(f"neuron argument reaches {hi}; exact range is <= {MAX_POSITIVE}")
    if hi > 0:
        raw(c, at, terms, bias, out)


def step(c: Circuit, at: int, terms: dict[int, int], t: int, out: dict[int, float]) -> None:
    """out += coef * [sum(terms) >= t] for an integer sum: relu(S-t+1) - relu(S-t)."""
    lo, hi = span(c, terms, -t)
    if hi < 0:
        return                                   # never true
    relu(c, at, terms, 1 - t, out)
    if hi > 0:                                   # S - t can be >= 1: cut the ramp at 1
        relu(c, at, terms, -t, {d: -k for d, k in out.items()})


def basis(c: Circuit, at: int, terms: dict[int, int], const: int,
          functions: list[tuple[callable, dict[int, float]]], values: list[int] | None = None) -> None:
    """For an integer S = sum(terms) + const that only takes values in the sorted list `values`
    (default: every integer in its span), adds f(S) * coef to dim d for each (f, {d: coef}):
    f(values[0]) from one neuron on the anchor, the rest as basis_rows' relu(S - u)."""
    if values is None:
        lo, hi = span(c, terms, const)
        values = list(range(lo, hi + 1))
    base, rows = basis_rows(values, functions)
    if base:
        const_one(c, at, base)
    for offset, row in rows.items():
        relu(c, at, terms, const - offset, row)


def basis_rows(values: list[int], functions: list[tuple[callable, dict[int, float]]]
               ) -> tuple[dict[int, float], dict[int, dict[int, float]]]:
    """f(S) for S taking only the sorted `values`, as f(values[0]) + sum_u row_u relu(S - u):
    between consecutive reachable values u < v nothing is reachable, so
    [S >= v] = relu(S - u) - relu(S - u - 1). Returns ({d: f(values[0]) coef}, {u: row_u}), rows
    at shared offsets merged, by offset, without zero coefficients or empty rows."""
    coef: dict[int, dict[int, float]] = {}
    base: dict[int, float] = {}
    for f, out in functions:
        for d, k in out.items():
            base[d] = base.get(d, 0.0) + f(values[0]) * k
        for u, v in zip(values, values[1:]):
            jump = f(v) - f(u)
            if jump:
                for offset, sign in ((u, 1), (u + 1, -1)):
                    row = coef.setdefault(offset, {})
                    for d, k in out.items():
                        row[d] = row.get(d, 0.0) + sign * jump * k
    rows = {}
    for offset in sorted(coef):
        row = {d: k for d, k in coef[offset].items() if k}
        if row:
            rows[offset] = row
    return {d: k for d, k in base.items() if k}, rows


def copy_bits(c: Circuit, at: int, src: Field, dst: Field, sign: float = 1.0) -> None:
    for s, d in zip(src.dims, dst.dims):
        relu(c, at, {s: 1}, 0, {d: sign})


def requantize(c: Circuit, at: int, x: Field, gate: Field | list[Field] | None = None) -> None:
    """Layer at: each bit of x that is 0 or 1 up to noise below 1/4 becomes exactly 0 or 1, in
    place: + relu(4x - 1) - relu(4x - 2) - relu(x + 1) + 1; with `gate`, only when a gate flag is
    1. Not - relu(x): relu(y) is silu(128 y) / 128, which is y / 2, not 0, for |y| well below
    1/8, so a 0 bit would keep half its noise; every argument here is 0, >= 1 or <= -1.
    Reads carry noise (a GDN row reads as (1 - delta) b) that gated units multiply by their
    gate constants and carry resolutions by 128: a result that feeds another such unit needs
    exact inputs."""
    unit = relu if gate is None else functools.partial(gated, gate=gate)
    for d in x.dims:
        unit(c, at, {d: 4}, -1, {d: 1})
        unit(c, at, {d: 4}, -2, {d: -1})
        unit(c, at, {d: 1}, 1, {d: -1})
    unit(c, at, {}, 1, {d: 1 for d in x.dims})


def add_exact(c: Circuit, at: int, x: int, out: dict[int, float], gate: Field | None = None) -> None:
    """out += coef * the bit in dim x made exactly 0 or 1 (noise below 1/4): relu(4x - 1) -
    relu(4x - 2); with `gate` (an exact flag), only when it is 1."""
    for bias, sign in ((-1, 1), (-2, -1)):
        terms, scaled = {x: 4}, {d: sign * k for d, k in out.items()}
        if gate is None:
            relu(c, at, terms, bias, scaled)
        else:
            gated(c, at, terms, bias, scaled, gate)


def const_one(c: Circuit, at: int, out: dict[int, float]) -> None:
    """out += coef (a neuron on the anchor alone)."""
    c.layer(at).relu({}, 1, {d: k * c.layout.dim_scale[d] for d, k in out.items()})


def plus_constant(c: Circuit, at: int, bits: list[int], const: int, out: Field, gate: int | None = None,
                  low: int = 5) -> None:
    """out += the bits of (the value of `bits` + const) mod 2 ** len(bits), in one layer, for a
    constant 0 < const < 2 ** low; only when the 0/1 dim `gate` is 1 (out stays 0 when it is 0).
    Below bit `low`: bit i of v = (value + const) mod 2 ** (i + 1), which is below 2 ** (i + 2),
    is [v >= 2 ** i] - [v >= 2 ** (i + 1)] + [v >= 3 * 2 ** i]. From bit `low` up: bit i is
    value bit i xor the carry into it, and the carry is whether the low bits plus const reach
    2 ** low while bits low .. i - 1 are all 1; each 0 among those weighs -2 ** low, which keeps
    every argument within the exact range (a 12-bit sum could not be one neuron's argument)."""
    if not 0 < const < 1 << low or len(bits) > low + MAX_POSITIVE // (1 << low) - 1:
        raise CircuitError(f"plus_constant: {len(bits)} bits + {const} is outside its exact range")
    shut = MAX_POSITIVE          # a shut gate pushes every argument this far below its threshold

    def on(terms, t, i, sign):
        if gate is not None:
            terms, t = {**terms, gate: shut}, t + shut
        step(c, at, terms, t, {out[i]: sign})

    for i, d in enumerate(bits):
        if i < low:
            value = {bits[j]: 1 << j for j in range(i + 1)}
            rest = const % (2 << i)
            for t, sign in ((1 << i, 1), (2 << i, -1), (3 << i, 1)):
                on(value, t - rest, i, sign)
            continue
        carry = {**{bits[j]: 1 << j for j in range(low)}, **{bits[j]: 1 << low for j in range(low, i)}}
        need = (1 << low) * (i - low + 1) - const           # a carry iff sum(carry) >= need
        on({**neg(carry), d: shut}, shut + 1 - need, i, 1)   # d and no carry
        on({**carry, d: -shut}, need, i, 1)                  # a carry and not d


def nibble(field: Field, m: int, weights=(1, 2, 4, 8)) -> dict[int, int]:
    return {field[4 * m + i]: w for i, w in enumerate(weights)}


def add_terms(*parts: dict[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in parts:
        for d, k in p.items():
            out[d] = out.get(d, 0) + k
    return {d: k for d, k in out.items() if k}


def neg(terms: dict[int, int]) -> dict[int, int]:
    return {d: -k for d, k in terms.items()}


def ones(*fields: Field, k: int = 1) -> dict[int, int]:
    """Terms k * (every dim of the fields): k times the number of set bits."""
    return {d: k for f in fields for d in f.dims}


def equals(dims, value: int) -> tuple[dict[int, int], int]:
    """(terms, const): sum(terms) + const == len(dims) exactly when the bits spell `value`."""
    terms, const = {}, 0
    for j, d in enumerate(dims):
        if value >> j & 1:
            terms[d] = 1
        else:
            terms[d], const = -1, const + 1
    return terms, const


def is_value(field: Field, value: int) -> tuple[dict[int, int], int] | None:
    """(terms, bias) whose sum is 0 when the bits field equals `value` and <= -1 otherwise
    (None if the field cannot hold the value)."""
    if not 0 <= value < 1 << field.width:
        return None
    terms, const = equals(field.dims, value)
    return terms, const - field.width


# ---------------------------------------------------------------------------
# gated neurons: a relu that only fires when a 0/1 flag is on
# ---------------------------------------------------------------------------
def gated(c: Circuit, at: int, terms: dict[int, int], bias: int, out: dict[int, float],
          gate: Field | list[Field]) -> None:
    """out += relu(y) if one of the (mutually exclusive) `gate` flags is 1, else 0, with
    y = sum(terms) + bias: relu(y + K * sum(gate) - K), K = the largest y."""
    gates = [gate] if isinstance(gate, Field) else gate
    hi = span(c, terms, bias)[1]
    if hi > MAX_POSITIVE:
        raise CircuitError(f"neuron argument reaches {hi}; exact range is <= {MAX_POSITIVE}")
    if hi > 0:
        raw(c, at, add_terms(terms, {g[0]: hi for g in gates}), bias - hi, out)


def gated_step(c: Circuit, at: int, terms: dict[int, int], t: int, out: dict[int, float],
               gate: Field | list[Field]) -> None:
    """out += [sum(terms) >= t] if a `gate` flag is 1: relu(S - t + 1) - relu(S - t), both gated."""
    gated(c, at, terms, 1 - t, out, gate)
    gated(c, at, terms, -t, {d: -k for d, k in out.items()}, gate)


# ---------------------------------------------------------------------------
# boolean gates, bitwise ops, copy/clear, select
# ---------------------------------------------------------------------------
def gate(c: Circuit, at: int, op: str, a: Field, b: Field | None = None, name: str = "") -> Field:
    """Bitwise and/or/xor/nand/nor/xnor of two bit fields, or not of one. 1 layer."""
    out = c.field(name or op, a.width, at)
    for i, d in enumerate(out.dims):
        s = {a[i]: 1} if b is None else add_terms({a[i]: 1}, {b[i]: 1})
        if op == "not":
            relu(c, at, {a[i]: -1}, 1, {d: 1})
        elif op == "and":
            relu(c, at, s, -1, {d: 1})
        elif op == "nand":
            step(c, at, {k: -v for k, v in s.items()}, -1, {d: 1})
        elif op == "or":
            step(c, at, s, 1, {d: 1})
        elif op == "nor":
            relu(c, at, {k: -v for k, v in s.items()}, 1, {d: 1})
        elif op == "xor":
            relu(c, at, s, 0, {d: 1})
            relu(c, at, s, -1, {d: -2})
        elif op == "xnor":
            relu(c, at, {k: -v for k, v in s.items()}, 1, {d: 1})
            relu(c, at, s, -1, {d: 1})
        else:
            raise CircuitError(f"unknown gate {op!r}")
    return out


def copy(c: Circuit, at: int, a: Field, name: str = "copy") -> Field:
    out = c.field(name, a.width, at, kind=a.kind, vmax=a.vmax)
    copy_bits(c, at, a, out)
    return out


def clear(c: Circuit, at: int, a: Field) -> None:
    c.clear(a, at)


def select(c: Circuit, at: int, cond: Field, a: Field, b: Field, name: str = "sel") -> Field:
    """SEL: cond != 0 ? a : b for a multi-bit cond. 1 layer, 3 neurons per bit."""
    big = cond.width + 1
    nz = {d: 1 for d in cond.dims}
    out = c.field(name, a.width, at)
    for i, d in enumerate(out.dims):
        step(c, at, add_terms(nz, {a[i]: big}), big + 1, {d: 1})          # a_i and cond != 0
        step(c, at, add_terms({k: -1 for k in nz}, {b[i]: big}), big, {d: 1})  # b_i and cond == 0
    return out


def mux(c: Circuit, at: int, sel: Field, inputs: list[Field], name: str = "mux") -> Field:
    """out = inputs[k] where sel is one-hot over len(inputs). 1 layer, 1 neuron per (input, bit)."""
    if sel.width != len(inputs):
        raise CircuitError(f"mux: selector has {sel.width} dims for {len(inputs)} inputs")
    out = c.field(name, inputs[0].width, at)
    for k, x in enumerate(inputs):
        for i, d in enumerate(out.dims):
            relu(c, at, {x[i]: 1, sel[k]: 1}, -1, {d: 1})
    return out


def onehot_encode(c: Circuit, at: int, a: Field, name: str = "onehot") -> Field:
    """bits (k) -> one-hot (2**k): [a == v] = relu(matches - k + 1). 1 layer, 2**k neurons."""
    k = a.width
    out = c.field(name, 1 << k, at, kind="onehot")
    for v, d in enumerate(out.dims):
        terms = {a[j]: (1 if v >> j & 1 else -1) for j in range(k)}
        zeros = sum(1 for j in range(k) if not v >> j & 1)
        relu(c, at, terms, zeros - k + 1, {d: 1})
    return out


def onehot_decode(c: Circuit, at: int, a: Field, name: str = "bits") -> Field:
    """one-hot (w) -> bits (ceil log2 w): linear, one copy neuron per value. 1 layer."""
    k = max(1, (a.width - 1).bit_length())
    out = c.field(name, k, at)
    for v, s in enumerate(a.dims):
        row = {out[j]: 1.0 for j in range(k) if v >> j & 1}
        if row:
            relu(c, at, {s: 1}, 0, row)
    return out


# ---------------------------------------------------------------------------
# compare: SETxx, min/max
# ---------------------------------------------------------------------------
def _byte_diff(a: Field, b: Field, j: int, signed: bool) -> dict[int, int]:
    """B_j - A_j for byte j (the top byte two's-complement when signed): in [-255, 255]."""
    w = [1, 2, 4, 8, 16, 32, 64, -128 if signed and j == 3 else 128]
    return add_terms({b[8 * j + i]: w[i] for i in range(8)}, {a[8 * j + i]: -w[i] for i in range(8)})


def _order(c: Circuit, at: int, a: Field, b: Field, signed: bool) -> tuple[Field, dict[int, int]]:
    """Layer `at`: per byte gt_j = [B_j > A_j], lt_j = [B_j < A_j]. Returns the field and
    Lambda = sum_j (gt_j - lt_j) 2**j: sign(Lambda) = sign(b - a), |Lambda| <= 15."""
    f = c.field("cmp.bytes", 8, at)
    for j in range(4):
        d = _byte_diff(a, b, j, signed)
        step(c, at, d, 1, {f[2 * j]: 1})
        step(c, at, {k: -v for k, v in d.items()}, 1, {f[2 * j + 1]: 1})
    lam = add_terms(*({f[2 * j]: 1 << j, f[2 * j + 1]: -(1 << j)} for j in range(4)))
    return f, lam


def byte_order(c: Circuit, at: int, a: Field, b: Field, name: str):
    """Layer at: gt_j = [B_j > A_j], lt_j = [B_j < A_j] per byte (slots 2j, 2j + 1), the top byte
    both unsigned (slots 6, 7) and two's complement (8, 9). Returns the field and Lambda
    (unsigned, signed): sum_j (gt_j - lt_j) 2**j, sign(Lambda) = sign(b - a), |Lambda| <= 15."""
    f = c.field(f"{name}.order", 10, at)
    for j, slot, top in ((0, 0, 128), (1, 2, 128), (2, 4, 128), (3, 6, 128), (3, 8, -128)):
        w = [1, 2, 4, 8, 16, 32, 64, top]
        diff = add_terms({b[8 * j + i]: w[i] for i in range(8)}, {a[8 * j + i]: -w[i] for i in range(8)})
        step(c, at, diff, 1, {f[slot]: 1})
        step(c, at, neg(diff), 1, {f[slot + 1]: 1})

    def lam(slots):
        return add_terms(*({f[s]: 1 << j, f[s + 1]: -(1 << j)} for j, s in enumerate(slots)))
    return f, lam((0, 2, 4, 6)), lam((0, 2, 4, 8))


SET_TESTS = {   # op -> (signed, test on Lambda = sign(b - a) weighted)
    "SETLT": (True, "pos"), "SETLE": (True, "nonneg"), "SETGT": (True, "neg"), "SETGE": (True, "nonpos"),
    "SETLTU": (False, "pos"), "SETLEU": (False, "nonneg"), "SETGTU": (False, "neg"), "SETGEU": (False, "nonpos"),
    "SETEQ": (False, "zero"), "SETNE": (False, "nonzero"),
}


def _lam_test(c: Circuit, at: int, lam: dict[int, int], test: str, out: dict[int, float]) -> None:
    neg = {k: -v for k, v in lam.items()}
    if test == "pos":
        step(c, at, lam, 1, out)
    elif test == "nonneg":
        step(c, at, lam, 0, out)
    elif test == "neg":
        step(c, at, neg, 1, out)
    elif test == "nonpos":
        step(c, at, neg, 0, out)
    else:                                   # zero / nonzero: count of differing bytes
        count = {k: 1 for k in lam}
        if test == "zero":
            relu(c, at, {k: -1 for k in count}, 1, out)
        else:
            step(c, at, count, 1, out)


def compare(c: Circuit, at: int, op: str, a: Field, b: Field, name: str = "") -> Field:
    """SETEQ/NE/LT/LE/GT/GE(U): 32-bit 0 or 1. 2 layers."""
    signed, test = SET_TESTS[op]
    f, lam = _order(c, at, a, b, signed)
    out = c.field(name or op.lower(), WORD, at + 1)
    _lam_test(c, at + 1, lam, test, {out[0]: 1})
    c.clear(f, at + 1)
    return out


def minmax(c: Circuit, at: int, op: str, a: Field, b: Field, name: str = "") -> Field:
    """MIN/MAX/MINU/MAXU. 2 layers: byte order, then out_i = [a_i and take_a] + [b_i and not take_a]."""
    signed = op in ("MIN", "MAX")
    f, lam = _order(c, at, a, b, signed)          # lam >= 0  <=>  a <= b
    out = c.field(name or op.lower(), WORD, at + 1)
    pick_a = lam if op.startswith("MIN") else {k: -v for k, v in lam.items()}
    not_a = {k: -v for k, v in pick_a.items()}
    for i, d in enumerate(out.dims):
        step(c, at + 1, add_terms(pick_a, {a[i]: 16}), 16, {d: 1})      # a_i and pick >= 0
        step(c, at + 1, add_terms(not_a, {b[i]: 16}), 17, {d: 1})       # b_i and pick <= -1
    c.clear(f, at + 1)
    return out


# ---------------------------------------------------------------------------
# add / sub with carry: nibble sums, then carry resolution
# ---------------------------------------------------------------------------
Digit = tuple[dict[int, int], int]      # Z_m = sum(terms) + const


def resolve(c: Circuit, at: int, digits: list[Digit], carry_out: bool = False,
            name: str = "sum") -> tuple[Field, Field | None]:
    """Binary value of sum_m Z_m 16**m mod 2**(4 len) for integer digits Z_m in [0, 31]. 2 layers.

    Layer at: from each Z_m (a relu basis over its range) the low nibble bits z, generate
    G = [Z >= 16], propagate P = [Z >= 15], and e_k = [Z mod 2**k == 2**k - 1] (a carry into
    the nibble reaches bit k). Layer at+1: the carry into nibble m is [L_m >= 1] with
    L_m = sum_{i<m} (G_i + P_i - 1) 2**i, |L_m| <= 127 (the highest nibble that does not
    just propagate decides); bit k = z_k xor (e_k and carry)."""
    t = c.field(f"{name}.digits", 9 * len(digits), at)
    for m, (terms, const) in enumerate(digits):
        fns = nibble_functions(t, m)
        if span(c, terms, const)[1] > 31:
            raise CircuitError(f"{name}: digit {m} can exceed 31")
        basis(c, at, terms, const, fns)
    out = c.field(name, 4 * len(digits), at + 1)
    resolve_carries(c, at + 1, t, out, len(digits))
    cout = None
    if carry_out:
        m = len(digits) - 1
        g, p = t[9 * m + 4], t[9 * m + 5]
        lam, bias = _carry_terms(t, m)
        cout = c.field(f"{name}.cout", 1, at + 1)
        relu(c, at + 1, {g: 1}, 0, {cout[0]: 1})                                 # G_top
        step(c, at + 1, add_terms(lam, {p: 128, g: -128}), 129 - bias, {cout[0]: 1})  # P_top, not G, carry in
    c.clear(t, at + 1)
    return out, cout


def nibble_functions(t: Field, m: int) -> list[tuple[callable, dict[int, float]]]:
    """resolve's first layer for nibble m (a basis over its digit Z), into dims 9m..9m+8 of t:
    the low bits z (4), G = [Z >= 16], P = [Z >= 15], e_k = [Z mod 2**k == 2**k - 1] (k = 1..3)."""
    z, g, p, e = t[9 * m: 9 * m + 4], t[9 * m + 4], t[9 * m + 5], t[9 * m + 6: 9 * m + 9]
    fns = [(lambda v, k=k: v % 16 >> k & 1, {z[k]: 1}) for k in range(4)]
    fns += [(lambda v: int(v >= 16), {g: 1}), (lambda v: int(v >= 15), {p: 1})]
    fns += [(lambda v, k=k: int(v % (1 << k) == (1 << k) - 1), {e[k - 1]: 1}) for k in range(1, 4)]
    return fns


def _carry_terms(t: Field, m: int) -> tuple[dict[int, int], int]:
    """L_m = sum(terms) + bias: sum_{i<m} (G_i + P_i - 1) 2**i."""
    return (add_terms(*({t[9 * i + 4]: 1 << i, t[9 * i + 5]: 1 << i} for i in range(m))),
            -sum(1 << i for i in range(m)))


def resolve_carries(c: Circuit, at: int, t: Field, out: Field, nibbles: int) -> None:
    """resolve's second layer: out's nibble m gets bit k = z_k xor (e_k and carry), the carry into
    nibble m [L_m >= 1], from the nibble_functions that the layer before wrote into t."""
    for m in range(nibbles):
        lam, bias = _carry_terms(t, m)
        for k in range(4):
            zk, d = t[9 * m + k], out[4 * m + k]
            relu(c, at, {zk: 1}, 0, {d: 1})
            if m == 0:
                continue                      # no carry into the lowest nibble
            ek, e_const = ({t[9 * m + 5 + k]: 128}, 0) if k else ({}, 128)
            step(c, at, add_terms(lam, ek, {zk: -128}), 129 - bias - e_const, {d: 1})
            step(c, at, add_terms(lam, ek, {zk: 128}), 257 - bias - e_const, {d: -1})


def add(c: Circuit, at: int, a: Field, b: Field, cin: Field | None = None, sub: bool = False,
        carry_out: bool = False, name: str = "") -> tuple[Field, Field | None]:
    """ADD a + b (+ cin) or SUB a - b (= a + ~b + 1; + cin - 1 when cin is given, i.e. borrow-in
    = 1 - cin). Returns (sum, carry out; for SUB carry out = no borrow). 2 layers."""
    digits = []
    for m in range(NIBBLES):
        if sub:
            terms, const = add_terms(nibble(a, m), {k: -v for k, v in nibble(b, m).items()}), 15
        else:
            terms, const = add_terms(nibble(a, m), nibble(b, m)), 0
        if m == 0:
            if cin is not None:
                terms = add_terms(terms, {cin[0]: 1})
            elif sub:
                const += 1
        digits.append((terms, const))
    return resolve(c, at, digits, carry_out, name or ("sub" if sub else "add"))


# ---------------------------------------------------------------------------
# shifts by a register amount (PTX clamping: amounts >= 32 give 0, or the sign for SRA)
# ---------------------------------------------------------------------------
def _amount_is(b: Field, k: int, extra: dict[int, int]) -> tuple[dict[int, int], int]:
    """Terms and bias of relu(matches(b[0:5], k) + sum(extra) - 5 * any(b[5:]) - 5 + 1 ...):
    the argument is 1 exactly when b == k and every `extra` bit is 1, else <= 0."""
    terms = {b[j]: (1 if k >> j & 1 else -1) for j in range(5)}
    zeros = sum(1 for j in range(5) if not k >> j & 1)
    terms = add_terms(terms, {b[j]: -5 for j in range(5, WORD)}, extra)
    return terms, zeros - 5 - len(extra) + 1


def shift(c: Circuit, at: int, op: str, a: Field, b: Field, name: str = "") -> Field:
    """SHL/SHR/SRA a by the unsigned 32-bit amount b. 1 layer: one neuron per (output bit, amount)."""
    out = c.field(name or op.lower(), WORD, at)
    for i, d in enumerate(out.dims):
        for k in range(WORD):
            src = i - k if op == "SHL" else i + k
            if op == "SRA":
                src = min(src, WORD - 1)          # shifted-in bits copy the sign
            if 0 <= src < WORD:
                terms, bias = _amount_is(b, k, {a[src]: 1})
                relu(c, at, terms, bias, {d: 1})
    if op == "SRA":                               # amount >= 32: every bit is the sign
        step(c, at, add_terms({b[j]: 1 for j in range(5, WORD)}, {a[WORD - 1]: WORD}), WORD + 1,
             {d: 1 for d in out.dims})
    return out


# ---------------------------------------------------------------------------
# multiply: 32 x 32 -> low 32
# ---------------------------------------------------------------------------
NIBBLE_PRODUCTS = sorted({i * j for i in range(16) for j in range(16)})


def mul(c: Circuit, at: int, a: Field, b: Field, name: str = "mul") -> Field:
    """MUL (low 32 bits of a * b). 5 layers, every intermediate an integer <= 225 (exact in bf16):
    L0  nibble-pair products P_pq = A_p * B_q (p + q <= 7) from 16 AND neurons each;
    L1  split each P_pq into lo + 16 hi (a basis over the reachable products) and sum them into
        column digits T_m = sum lo(p+q=m) + sum hi(p+q=m-1) <= 218;
    L2  Z_m = (T_m mod 16) + (T_{m-1} div 16) <= 28;
    L3-4 carry resolution of the digits Z_m (as in add)."""
    pairs = [(p, q) for p in range(NIBBLES) for q in range(NIBBLES) if p + q < NIBBLES]
    prod = c.field(f"{name}.pairs", len(pairs), at, kind="int", vmax=225)
    for k, (p, q) in enumerate(pairs):
        for i in range(4):
            for j in range(4):
                relu(c, at, {a[4 * p + i]: 1, b[4 * q + j]: 1}, -1, {prod[k]: 1 << (i + j)})
    cols = c.field(f"{name}.columns", NIBBLES, at + 1, kind="int", vmax=218)
    for k, (p, q) in enumerate(pairs):
        fns = [(lambda v: v % 16, {cols[p + q]: 1})]
        if p + q + 1 < NIBBLES:
            fns.append((lambda v: v // 16, {cols[p + q + 1]: 1}))
        basis(c, at + 1, {prod[k]: 1}, 0, fns, values=NIBBLE_PRODUCTS)
    c.clear(prod, at + 1)
    digits = c.field(f"{name}.digits", NIBBLES, at + 2, kind="int", vmax=28)
    for m in range(NIBBLES):
        fns = [(lambda v: v % 16, {digits[m]: 1})]
        if m + 1 < NIBBLES:
            fns.append((lambda v: v // 16, {digits[m + 1]: 1}))
        basis(c, at + 2, {cols[m]: 1}, 0, fns, values=list(range(219)))
    c.clear(cols, at + 2)
    out, _ = resolve(c, at + 3, [({digits[m]: 1}, 0) for m in range(NIBBLES)], name=name)
    c.clear(digits, at + 3)
    return out
