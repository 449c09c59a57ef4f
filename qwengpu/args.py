"""The launch-argument syntax of `qgpu run --arg/--grid/--block`, which the chat's gpu_cuda tool
reads too. The grammar (ASCII only; WS, one or more of space, tab, CR, LF, may surround any token):

    arg     := [type ':'] (number | array | call)      type := 'i32' | 'u32'
    array   := '[' number (',' number)* ']'            commas, Python style: [1, 2, 3]
             | '[' number (WS number)* ']'             or whitespace, NumPy style: [1 2 3]
    call    := 'zeros(' number ')' | 'full(' number ',' number ')'      count, value
             | 'range(' number [',' number [',' number]] ')'          as Python's range
    number  := ['-'] ('0' | [1-9][0-9]* | '0x' [0-9a-fA-F]+)            (0X too)
    dims    := size (',' size){0,2} | size ('x' size){0,2}                   size := [1-9][0-9]*

    5, -3, 0x1f        a scalar: -2**31 .. 2**32-1 untyped (the launch checks the parameter's
                       width), the type's range with i32:/u32:
    [1,2,3], [1 2 3]   an array; i32 unless u32: is given; every element must fit the type
    4, 4,2, 2x2x1      --grid / --block: 1 to 3 positive sizes

Refused, each with an ArgSyntaxError that quotes the value and says what was expected:
an empty element ([1,,2], [1,2,]), commas and whitespace mixed in one array, whitespace
inside a number ('1 0'), '+', '_', leading zeros (C reads 010 as octal), 0b/0o, non-ASCII
digits, a value outside its type, a wrong argument count in a call, and an empty array
(i32:[], zeros(0), range(5,5)): the launch gives a 0-word array no memory of its own, so
its address would be the next array's. An array's length is checked against the machine's
global memory (isa.GLOBAL_WORDS) before anything is built.
"""
from __future__ import annotations

import re

import numpy as np

from qwengpu.errors import QwenGpuError
from qwengpu.isa import GLOBAL_WORDS

DTYPES = {"i32": np.int32, "u32": np.uint32}
WS = " \t\r\n"
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*|0[xX][0-9a-fA-F]+)", re.ASCII)
SIZE = re.compile(r"[1-9][0-9]*", re.ASCII)
CALL = re.compile(r"([A-Za-z_]\w*)[ \t\r\n]*\((.*)\)", re.ASCII | re.DOTALL)
CALLS = {"zeros": ("zeros(n)", 1, 1), "full": ("full(n, value)", 2, 2),
         "range": ("range(stop), range(start, stop) or range(start, stop, step)", 1, 3)}
NUMBER_HELP = "a decimal or hex integer such as 5, -3 or 0x1f (ASCII digits; no '+', '_' or leading zeros)"
ARG_HELP = ("a scalar (5, -3, 0x1f, u32:7) or an array (i32:[1,2,3], [1 2 3], u32:zeros(8), "
            "i32:range(2,5), i32:full(4,-1))")
SCALAR_MIN, SCALAR_MAX = -2**31, 2**32 - 1


class ArgSyntaxError(QwenGpuError):
    """A --arg, --grid or --block value that cannot be read."""


def parse_arg(text: str):
    """One --arg value -> np.ndarray (int32/uint32) or int (grammar above)."""
    def fail(problem: str, expected: str = ARG_HELP):
        raise ArgSyntaxError(f"--arg {_show(text)}: {problem}; expected {expected}")

    body = text.strip(WS)
    dtype = None
    name, sep, rest = body.partition(":")
    if sep:
        if name.strip(WS) not in DTYPES:
            fail(f"unknown type {name.strip(WS)!r}", "i32: or u32: before the value")
        dtype, body = DTYPES[name.strip(WS)], rest.strip(WS)
    if not body:
        fail("the value is empty")
    if body.startswith("["):
        if not body.endswith("]"):
            fail("an array must end with ']' and nothing may follow it")
        values = _elements(body[1:-1], fail)
    elif "(" in body:
        if not (call := CALL.fullmatch(body)):
            fail("a call is a name and its arguments in parentheses, and nothing may follow it")
        values = _call(call[1], call[2], fail)
    else:
        if any(c in WS for c in body):
            fail("a scalar is one number, and this has whitespace inside",
                 "a number such as 5 or -3; an array is written [1 2] or [1,2]")
        value = _number(body, "the value", fail)
        if dtype is None:
            if not SCALAR_MIN <= value <= SCALAR_MAX:
                fail(f"{value} does not fit in 32 bits", "a scalar in -2**31 .. 2**32-1")
            return value                 # the launch checks it against the parameter's width
        _check_fits([value], dtype, fail)
        return value
    dtype = dtype or np.int32
    _check_fits(values, dtype, fail)
    return np.array(values, dtype=dtype)


def _number(token: str, what: str, fail) -> int:
    token = token.strip(WS)
    if not token:
        fail(f"{what} is empty", NUMBER_HELP)
    if any(c in WS for c in token):
        fail(f"{what} {_show(token)} has whitespace inside", NUMBER_HELP)
    if not NUMBER.fullmatch(token):
        fail(f"{what} {_show(token)} is not a number", NUMBER_HELP)
    magnitude = token.lstrip("-")
    digits = magnitude[2:].lstrip("0") if magnitude[:2] in ("0x", "0X") else magnitude
    if len(digits) > 16:                 # int() of a long decimal is slow (refused past 4300 digits)
        fail(f"{what} {_show(token)} does not fit in 32 bits", "a value in -2**31 .. 2**32-1")
    return int(token, 0)


def _elements(inner: str, fail) -> list[int]:
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
    return [_number(p, f"element {i}", fail) for i, p in enumerate(parts, 1)]


def _call(name: str, inner: str, fail) -> list[int]:
    if name not in CALLS:
        fail(f"unknown function {name!r}", "zeros(n), full(n, value) or range(...)")
    usage, least, most = CALLS[name]
    nums = [_number(p, f"argument {i} of {name}", fail) for i, p in enumerate(inner.split(","), 1)]
    if not least <= len(nums) <= most:
        count = str(least) if least == most else f"{least} to {most}"
        fail(f"{name} takes {count} argument{'s' if most > 1 else ''}, got {len(nums)}", usage)
    if name == "range":
        if len(nums) == 3 and nums[2] == 0:
            fail("range's step must not be 0", usage)
        span = range(*nums)              # its len is O(1): checked before any list is built
        if len(span) == 0:
            fail(f"{name}({', '.join(map(str, nums))}) is empty (a 0-word array has no address of its "
                 f"own: it would alias the next array)", "a range of at least one value")
        _check_length(len(span), fail)
        return list(span)
    n = nums[0]
    if n < 1:
        fail(f"the count in {name}(...) is {n} (a 0-word array has no address of its own: it would alias the "
             f"next array)", f"{usage} with n at least 1")
    _check_length(n, fail)
    return [0 if name == "zeros" else nums[1]] * n


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
