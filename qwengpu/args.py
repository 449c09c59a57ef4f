"""The launch-argument syntax of `qgpu run --arg/--grid/--block`, which the chat's gpu_cuda tool
reads too. The grammar (ASCII only; WS, one or more of space, tab, CR, LF, may surround any token):

    arg     := [type ':'] (number | array | call)      type := 'i32' | 'u32' | 'f32'
    array   := '[' number (',' number)* ']'            commas, Python style: [1, 2, 3]
             | '[' number (WS number)* ']'             or whitespace, NumPy style: [1 2 3]
    call    := 'zeros(' count ')' | 'full(' count ',' number ')'       count: an integer
             | 'range(' integer [',' integer [',' integer]] ')'       as Python's range
    number  := integer | float
    integer := ['-'] ('0' | [1-9][0-9]* | '0x' [0-9a-fA-F]+)            (0X too)
    float   := ['-'] (digits '.' [0-9]* | '.' [0-9]+ | digits) [exp] ['f'|'F']   with a '.' or an exp
             | ['-'] ('inf' | 'infinity' | 'nan')                       (any case)
             | '0f' hex{8}                                              exact bits, as PTX writes them
    digits  := '0' | [1-9][0-9]*        exp := ('e'|'E') ['+'|'-'] [0-9]+
    dims    := size (',' size){0,2} | size ('x' size){0,2}                   size := [1-9][0-9]*

    5, -3, 0x1f        a scalar: -2**31 .. 2**32-1 untyped (the launch checks the parameter's
                       width), the type's range with i32:/u32:
    [1,2,3], [1 2 3]   an array; i32 unless u32: or f32: is given, or an element is a float
    1.5, 1.5f, -2.5e-3, .5, 2., inf, -inf, nan, 0f3FC00000, f32:2
                       a float32 scalar (np.float32): for a kernel's float parameter
    f32:[1.5, 2, -0.25], [1.5 2], f32:zeros(8), f32:full(4, 0.5), full(4, 0.5), f32:range(4)
                       a float32 array; an untyped array with a float element is float32 (its
                       integers read as floats, as NumPy would read [1, 2.5]); write f32: to
                       make an array of integers float: f32:[1, 2]
    4, 4,2, 2x2x1      --grid / --block: 1 to 3 positive sizes

Floats. A decimal (integers under f32: too) becomes the NEAREST float32, ties to even, computed
exactly from the decimal (integer arithmetic): not through a float64, whose double rounding is wrong in
rare cases (1.00000005960464477539062500000000001 is 0x3F800001; numpy's float32() of it, or of
its float64, gives 0x3F800000). The 'f' suffix changes nothing (C's 1.5f); '1f' is refused, as
C refuses it. 'nan' is the quiet NaN 0x7FC00000 (C's NAN, numpy's nan), '-nan' 0xFFC00000; any
other NaN, or any exact value, is written as its bits: '0f' and 8 hex digits, PTX's float
literal (0f3FC00000 is 1.5, 0f80000000 is -0.0, 0f7FFFFFFF CUDA's NaN); the sign is in the
bits, so '-0f...' is refused. A hex integer is refused under f32 (is f32:0x10 16.0 or bits?).
f32:range takes integers in -2**24 .. 2**24 (each exact in float32); a range of floats is
refused: write the values out. Under f32, -0 is -0.0, as float('-0') is. A nonzero decimal that would round to
infinity (beyond 3.4028235e38) or to zero (at most 7.0064923e-46, half the smallest
subnormal) is refused: write inf, or 0.

Refused, each with an ArgSyntaxError that quotes the value and says what was expected:
an empty element ([1,,2], [1,2,]), commas and whitespace mixed in one array, whitespace
inside a number ('1 0'), '+', '_', leading zeros (C reads 010 as octal), 0b/0o, non-ASCII
digits, a value outside its type, a float under i32:/u32:, a float count in zeros/full, a
wrong argument count in a call, and an empty array (i32:[], zeros(0), range(5,5)): the launch
gives a 0-word array no memory of its own, so its address would be the next array's. An
array's length is checked against the machine's global memory (isa.GLOBAL_WORDS) before
anything is built.
"""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from qwengpu.errors import QwenGpuError
from qwengpu.isa import GLOBAL_WORDS

DTYPES = {"i32": np.int32, "u32": np.uint32, "f32": np.float32}
WS = " \t\r\n"
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*|0[xX][0-9a-fA-F]+)", re.ASCII)
DECIMAL = re.compile(r"(-?)((?:0|[1-9][0-9]*)(?:\.([0-9]*))?|\.([0-9]+))(?:[eE]([+-]?[0-9]+))?([fF]?)", re.ASCII)
SPECIAL = re.compile(r"(-?)(inf|infinity|nan)", re.ASCII | re.IGNORECASE)
BITS = re.compile(r"0[fF]([0-9a-fA-F]{8})", re.ASCII)
SIZE = re.compile(r"[1-9][0-9]*", re.ASCII)
CALL = re.compile(r"([A-Za-z_]\w*)[ \t\r\n]*\((.*)\)", re.ASCII | re.DOTALL)
CALLS = {"zeros": ("zeros(n)", 1, 1), "full": ("full(n, value)", 2, 2),
         "range": ("range(stop), range(start, stop) or range(start, stop, step)", 1, 3)}
NUMBER_HELP = "a decimal or hex integer such as 5, -3 or 0x1f (ASCII digits; no '+', '_' or leading zeros)"
FLOAT_HELP = "a float such as 1.5, -2.5e-3, 1.5f, inf, nan or 0f3FC00000 (exact bits)"
ANY_HELP = f"{NUMBER_HELP}, or {FLOAT_HELP}"
ARG_HELP = ("a scalar (5, -3, 0x1f, u32:7, 1.5f) or an array (i32:[1,2,3], [1 2 3], u32:zeros(8), "
            "i32:range(2,5), i32:full(4,-1), f32:[1.5, 2])")
SCALAR_MIN, SCALAR_MAX = -2**31, 2**32 - 1
F32_MAX_BITS = 0x7F7FFFFF
NAN_BITS = 0x7FC00000
KEEP_DIGITS = 200       # significant digits kept exactly: more than any float32 midpoint has (~115)


class ArgSyntaxError(QwenGpuError):
    """A --arg, --grid or --block value that cannot be read."""


class Float(NamedTuple):
    """A float token: its float32's bits and its text (for messages)."""
    bits: int
    text: str


def parse_arg(text: str):
    """One --arg value -> np.ndarray (int32/uint32/float32), int or np.float32 (grammar above)."""
    def fail(problem: str, expected: str = ARG_HELP):
        raise ArgSyntaxError(f"--arg {_show(text)}: {problem}; expected {expected}")

    body = text.strip(WS)
    dtype = None
    name, sep, rest = body.partition(":")
    if sep:
        if name.strip(WS) not in DTYPES:
            fail(f"unknown type {name.strip(WS)!r}", "i32:, u32: or f32: before the value")
        dtype, body = DTYPES[name.strip(WS)], rest.strip(WS)
    if not body:
        fail("the value is empty")
    if body.startswith("["):
        if not body.endswith("]"):
            fail("an array must end with ']' and nothing may follow it")
        tokens = _elements(body[1:-1], dtype, fail)
    elif "(" in body:
        if not (call := CALL.fullmatch(body)):
            fail("a call is a name and its arguments in parentheses, and nothing may follow it")
        tokens = _call(call[1], call[2], dtype, fail)
    else:
        if any(c in WS for c in body):
            fail("a scalar is one number, and this has whitespace inside",
                 "a number such as 5 or -3; an array is written [1 2] or [1,2]")
        token = _token(body, "the value", dtype, fail)
        if dtype is np.float32 or (dtype is None and isinstance(token, Float)):
            return _f32_scalar(_as_float(token, "the value", fail))
        value = _as_int(token, "the value", dtype, fail)
        if dtype is None:
            if not SCALAR_MIN <= value <= SCALAR_MAX:
                fail(f"{value} does not fit in 32 bits", "a scalar in -2**31 .. 2**32-1")
            return value                 # the launch checks it against the parameter's width
        _check_fits([value], dtype, fail)
        return value
    if dtype is None:                    # an untyped array: float32 if an element is a float
        dtype = np.float32 if any(isinstance(t, Float) for _, t in tokens) else np.int32
    if dtype is np.float32:
        return np.array([_as_float(t, what, fail) for what, t in tokens], np.uint32).view(np.float32)
    values = [_as_int(t, what, dtype, fail) for what, t in tokens]
    _check_fits(values, dtype, fail)
    return np.array(values, dtype=dtype)


def _token(token: str, what: str, dtype, fail):
    """One number token -> Float(bits), or its text when it is an integer (converted once the
    array's type is known: an integer under f32 is a decimal to round, a hex one is refused)."""
    token = token.strip(WS)
    help_ = NUMBER_HELP if dtype in (np.int32, np.uint32) else ANY_HELP
    if not token:
        fail(f"{what} is empty", help_)
    if any(c in WS for c in token):
        fail(f"{what} {_show(token)} has whitespace inside", help_)
    if NUMBER.fullmatch(token):
        return token
    if m := SPECIAL.fullmatch(token):
        bits = 0x7F800000 if m[2].lower().startswith("inf") else NAN_BITS
        return Float(bits | (0x80000000 if m[1] else 0), token)
    if m := BITS.fullmatch(token):
        return Float(int(m[1], 16), token)
    if m := DECIMAL.fullmatch(token):
        if m[3] is None and m[4] is None and m[5] is None:         # 1f: no '.' and no exponent
            fail(f"{what} {_show(token)} is not a number: a float needs a '.' or an exponent, as in C",
                 f"{m[1]}{m[2]}.0f or {m[1]}{m[2]}.f")
        return Float(_decimal_bits(token, what, fail), token)
    if re.fullmatch(r"-0[fF][0-9a-fA-F]{8}", token, re.ASCII):
        fail(f"{what} {_show(token)}: the sign of a float's bits is in the bits",
             f"0f{int(token[3:], 16) ^ 0x80000000:08X} (the same bits with the sign bit flipped)")
    if re.fullmatch(r"-?0[fF][0-9a-fA-F]*", token, re.ASCII):
        fail(f"{what} {_show(token)} has {len(token.lstrip('-')) - 2} hex digits after 0f",
             "0f and exactly 8 hex digits, a float's bits as PTX writes them (0f3FC00000 is 1.5)")
    fail(f"{what} {_show(token)} is not a number", help_)


def _as_int(token, what: str, dtype, fail) -> int:
    if isinstance(token, Float):
        name = np.dtype(dtype or np.int32).name
        if what == "the value":
            fail(f"{what} {_show(token.text)} is a float", f"an integer in {name} (a float32 scalar is written "
                                                           f"without i32:/u32:, or with f32:)")
        fail(f"{what} {_show(token.text)} is a float", f"integers in {name} (a float32 array is written "
                                                       f"f32:[...], or untyped with a float element)")
    magnitude = token.lstrip("-")
    digits = magnitude[2:].lstrip("0") if magnitude[:2] in ("0x", "0X") else magnitude
    if len(digits) > 16:                 # int() of a long decimal is slow (refused past 4300 digits)
        fail(f"{what} {_show(token)} does not fit in 32 bits", "a value in -2**31 .. 2**32-1")
    return int(token, 0)


def _as_float(token, what: str, fail) -> int:
    """A token under f32 -> its float32's bits."""
    if isinstance(token, Float):
        return token.bits
    if token.lstrip("-")[:2] in ("0x", "0X"):
        fail(f"{what} {_show(token)} is a hex integer, which is ambiguous as a float32 (its value or "
             f"its bits?)", "the value in decimal, or the bits as 0f and 8 hex digits (0f3FC00000 is 1.5)")
    return _decimal_bits(token, what, fail)


def _decimal_bits(token: str, what: str, fail) -> int:
    """The bits of the float32 nearest to a decimal token (ties to even), exactly."""
    m = DECIMAL.fullmatch(token)
    sign = 0x80000000 if m[1] else 0
    whole, frac = (m[2].split(".") + [""])[:2]
    digits = (whole + frac).lstrip("0")
    if not digits:
        return sign                      # 0, -0.0, 0e999: zero, its sign kept
    exp_text = (m[5] or "0").lstrip("+-").lstrip("0")
    exp = 0 if not exp_text else 10**9 if len(exp_text) > 9 else int(exp_text)
    exp = -exp if (m[5] or "").startswith("-") else exp
    scale = exp - len(frac)              # the value is int(whole + frac) * 10**scale
    lead = scale + len(digits) - 1       # 10**lead <= |value| < 10**(lead + 1)
    tail = digits[KEEP_DIGITS:]
    if tail:                             # what lies past KEEP_DIGITS only decides a tie: keep a sticky 1
        digits, scale = digits[:KEEP_DIGITS] + ("1" if tail.strip("0") else ""), scale + len(tail) - (
            1 if tail.strip("0") else 0)
    if lead > 38:
        bits = 0x7F800000
    elif lead < -46:
        bits = 0
    else:
        n, d = int(digits), 1
        if scale >= 0:
            n *= 10**scale
        else:
            d = 10**-scale
        bits = _nearest_f32(n, d)
    if bits > F32_MAX_BITS:
        fail(f"{what} {_show(token)} is beyond float32's range and would round to infinity",
             "a magnitude up to 3.4028235e38 (FLT_MAX), or inf")
    if bits == 0:
        fail(f"{what} {_show(token)} would round to 0 (float32's smallest subnormal is 1.4e-45, 0f00000001)",
             "a magnitude above 7.0064923e-46 (half the smallest subnormal), or 0")
    return sign | bits


def _nearest_f32(n: int, d: int) -> int:
    """The bits of the float32 nearest n/d > 0, ties to even, subnormals kept; above F32_MAX_BITS
    (0x7F800000 or more) when it rounds past the largest finite float."""
    e = n.bit_length() - d.bit_length()          # 2**(e-1) < n/d < 2**(e+1)
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1                                   # now 2**e <= n/d < 2**(e+1)
    ec = max(e, -126)                            # below the normals the scale stays 2**-149
    shift = 23 - ec                              # significand m = n/d * 2**shift, < 2**24
    num, den = (n << shift, d) if shift >= 0 else (n, d << -shift)
    m, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    # normal: exponent field e+127 and m's 23 low bits; subnormal: m; a carry out of the
    # significand (m == 2**24, or 2**23 for a subnormal) lands in the exponent field as it should
    return ((ec + 126) << 23) + m


def _f32_scalar(bits: int) -> np.float32:
    return np.uint32(bits).view(np.float32)      # the bits as they are (a NaN's payload too)


def _elements(inner: str, dtype, fail) -> list[tuple[str, object]]:
    """The inside of [...]: comma-separated or whitespace-separated numbers, not both."""
    if not inner.strip(WS):
        fail("the array is empty (a 0-word array has no address of its own: it would alias "
             "the next array)", "at least one element, e.g. i32:[0] or i32:zeros(1)")
    if "," in inner:
        parts = inner.split(",")
        for i, part in enumerate(parts, 1):
            if not part.strip(WS):
                fail(f"element {i} of {len(parts)} is empty", "numbers separated by single commas")
            if any(c in WS for c in part.strip(WS)):
                fail(f"element {i} {_show(part.strip(WS))} has whitespace inside",
                     "elements separated by commas ([1,2,3]) or by whitespace ([1 2 3]), not both")
    else:
        parts = re.split(r"[ \t\r\n]+", inner.strip(WS))
    _check_length(len(parts), fail)
    return [(f"element {i}", _token(p, f"element {i}", dtype, fail)) for i, p in enumerate(parts, 1)]


def _call(name: str, inner: str, dtype, fail) -> list[tuple[str, object]]:
    if name not in CALLS:
        fail(f"unknown function {name!r}", "zeros(n), full(n, value) or range(...)")
    usage, least, most = CALLS[name]
    whats = [f"argument {i} of {name}" for i in range(1, inner.count(",") + 2)]
    tokens = [_token(p, what, dtype if name == "full" and i == 1 else np.int32, fail)
              for i, (what, p) in enumerate(zip(whats, inner.split(",")))]
    if not least <= len(tokens) <= most:
        count = str(least) if least == most else f"{least} to {most}"
        fail(f"{name} takes {count} argument{'s' if most > 1 else ''}, got {len(tokens)}", usage)
    for i, (what, token) in enumerate(zip(whats, tokens)):
        if isinstance(token, Float) and not (name == "full" and i == 1):
            fail(f"{what} {_show(token.text)} is a float",
                 f"an integer count in {usage}" if name != "range" else
                 "integers in range(...) (a range of floats is not supported: write the values out, "
                 "f32:[0.5, 1, 1.5])")
    nums = [_as_int(t, what, np.int32, fail) for what, t in zip(whats, tokens)
            if not isinstance(t, Float)]
    if name == "range":
        if len(nums) == 3 and nums[2] == 0:
            fail("range's step must not be 0", usage)
        span = range(*nums)              # its len is O(1): checked before any list is built
        if len(span) == 0:
            fail(f"{name}({', '.join(map(str, nums))}) is empty (a 0-word array has no address of its "
                 f"own: it would alias the next array)", "a range of at least one value")
        _check_length(len(span), fail)
        if dtype is np.float32:
            inexact = next((v for v in (span[0], span[-1]) if abs(v) > 2**24), None)
            if inexact is not None:
                fail(f"f32:{name}(...) reaches {inexact}, beyond 2**24, where float32 does not hold every "
                     f"integer exactly", "f32:range with values in -2**24 .. 2**24, or the values written out")
        return [(f"element {i}", str(v)) for i, v in enumerate(span, 1)]
    n = nums[0]
    if n < 1:
        fail(f"the count in {name}(...) is {n} (a 0-word array has no address of its own: it would alias the "
             f"next array)", f"{usage} with n at least 1")
    _check_length(n, fail)
    return [(whats[1], tokens[1])] * n if name == "full" else [("zero", "0")] * n


def _check_length(n: int, fail) -> None:
    if n > GLOBAL_WORDS:
        fail(f"{n} elements do not fit in the machine's global memory",
             f"at most {GLOBAL_WORDS} words (qwengpu.isa.GLOBAL_WORDS) for all arrays together")


def _check_fits(values: list[int], dtype, fail) -> None:
    info = np.iinfo(dtype)
    bad = next((v for v in values if not info.min <= v <= info.max), None)
    if bad is not None:
        fail(f"{bad} does not fit in {np.dtype(dtype).name}", f"values in {info.min} .. {info.max}")


def _show(text: str) -> str:
    """The value quoted for a message; a long one cut short."""
    return repr(text) if len(text) <= 60 else f"{text[:50]!r}... ({len(text)} characters)"
def parse_dims(name: str, text: str) -> tuple[int, ...]:
    """'2' or '4,2' or '2x2x1' -> a tuple of 1-3 positive ints (grammar above)."""
    def fail(problem: str):
        raise ArgSyntaxError(f"--{name} {_show(text)}: {problem}; expected 1 to 3 positive integers "
                             f"separated by ',' or 'x', e.g. 4, 4,2 or 2x2x1")

    body = text.strip(WS)
    if "," in body and "x" in body:
        fail("it mixes ',' and 'x'")
    parts = body.split("x" if "x" in body else ",")
    if len(parts) > 3:
        fail(f"it has {len(parts)} sizes")
    for i, part in enumerate(parts, 1):
        part = part.strip(WS)
        if not part:
            fail(f"size {i} is empty")
        if part == "0":
            fail(f"size {i} is 0")
        if not SIZE.fullmatch(part):
            fail(f"size {i} {_show(part)} is not a positive decimal integer")
        if len(part) > 9:
            fail(f"size {i} {_show(part)} is too large")
    return tuple(int(p) for p in parts)
