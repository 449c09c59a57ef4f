"""Device printf: format the records a launch left in its printf buffer.

CUDA's device printf writes each call's format pointer and arguments into a
buffer in global memory, and the host formats them after the launch; qwengpu
does the same (prelude.h, `__qg_printf`), so every engine that leaves the same
memory prints the same lines: the model engine's lines come from the memory
the model wrote. Records are formatted in the order the machine wrote them
(warps in the scheduler's round-robin order, lanes in lane order within one
printf); buffer layout: word 0 the words taken, then records of
[1 + argument count | 0x80 for a failed assert | 64-bit argument mask << 8, format
address, arguments] (the 1 tells a written record from the zeros a dropped one leaves).

Floats: a float argument is stored as its 32 bits (the prelude refuses a double), and
`%f %F %e %E %g %G %a %A` format the float's exact value as C's printf formats the double
CUDA promotes it to: Python's `%` formatting of that double (exact, correctly rounded, as
glibc), C's `nan`/`-nan`/`inf` (padded with spaces, never zeros) and C's `%a` (glibc's:
trailing zeros dropped, a precision rounds half to even).
"""
from __future__ import annotations

import re
import struct

import numpy as np

PRINTF_WORDS = 128           # QG_PRINTF_WORDS in prelude.h
_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|j|z|t|L)?([diouxXcspnfFeEgGaA%])")
_BITS = {"hh": 8, "h": 16, None: 32, "ll": 64, "j": 64, "z": 64, "t": 64, "L": 64}


ASSERTION = 0x80             # header bit of a failed assert's record (__qg_assert_fail)


def device_output(buffer_word: int | None, memory: np.ndarray) -> tuple[list[str], list[str]]:
    """The formatted printf output (one string per call) of a launch whose printf buffer
    starts at global word `buffer_word` (None: the kernel does not call printf), and the
    messages of the failed assertions among them."""
    if buffer_word is None:
        return [], []
    words = [int(w) for w in memory[buffer_word:buffer_word + PRINTF_WORDS]]
    used, out, failed, at = words[0], [], [], 1
    while at + 1 < min(used + 1, PRINTF_WORDS) and words[at]:    # a dropped record left zeros
        header, fmt = words[at], words[at + 1]
        count, wide = (header & 0x7F) - 1, header >> 8
        args, k = [], at + 2
        for i in range(count):
            n = 2 if wide >> i & 1 else 1
            args.append((words[k] | (words[k + 1] << 32 if n == 2 else 0), 32 * n))
            k += n
        out.append(format_c(read_string(memory, fmt), args, memory))
        if header & ASSERTION:
            failed.append(out[-1].rstrip("\n"))
        at = k
    if used > PRINTF_WORDS - 1:
        out.append(f"[qwengpu: printf output past the {PRINTF_WORDS - 1}-word buffer was dropped]\n")
    return out, failed


def read_string(memory: np.ndarray, address: int) -> str:
    """The NUL-terminated string at a global byte address (lossy UTF-8)."""
    raw = memory.view(np.uint8)
    if not 0 <= address < raw.size:
        return f"<bad string address {address:#x}>"
    end = address
    while end < raw.size and raw[end]:
        end += 1
    return bytes(raw[address:end]).decode("utf-8", errors="replace")


def format_c(fmt: str, args: list[tuple[int, int]], memory: np.ndarray) -> str:
    """C's printf formatting of (value, bits) integer, character, string, pointer and float
    arguments; `%l` takes the argument's own width (long is 32-bit under clang, 64-bit under
    NVRTC); a float conversion reads a 32-bit argument as a float's bits, a 64-bit one as a
    double's (what a real GPU would read of a 64-bit integer passed for `%f`)."""
    pieces, pos, i = [], 0, 0

    def take() -> tuple[int, int]:
        nonlocal i
        i += 1
        return args[i - 1] if i <= len(args) else (0, 32)

    for m in _SPEC.finditer(fmt):
        pieces.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            pieces.append("%")
            continue
        if prec == "":
            prec = "0"                        # C: a lone '.' is precision 0
        if width == "*":
            width = _signed(take()[0], 32)
            flags, width = (flags + "-", str(-width)) if width < 0 else (flags, str(width))
        if prec == "*":
            prec = _signed(take()[0], 32)
            prec = None if prec < 0 else str(prec)            # C: a negative precision is none
        spec = f"%{flags}{width or ''}{'.' + prec if prec is not None else ''}"
        w, p = int(width or 0), None if prec is None else int(prec)
        if i >= len(args) and conv != "n":
            pieces.append(m.group())          # no argument left: printed as written
            continue
        v, arg_bits = take()
        bits = arg_bits if length == "l" else _BITS[length]
        if conv in "diouxX":
            n = _signed(v, bits) if conv in "di" else v & ((1 << bits) - 1)
            pieces.append(_integer(n, conv, flags, w, p))
        elif conv == "c":
            pieces.append((spec + "c") % chr(v & 0xFF))
        elif conv == "s":
            pieces.append((spec + "s") % read_string(memory, v & 0xFFFFFFFF))
        elif conv == "p":
            pieces.append((f"%{flags}{width or ''}s") % f"0x{v:x}")
        elif conv != "n":
            pieces.append(_float(v, arg_bits, flags, w, p, conv))
    pieces.append(fmt[pos:])
    return "".join(pieces)


def _integer(n: int, conv: str, flags: str, width: int, prec: int | None) -> str:
    """One integer conversion as C's printf: a precision is a minimum digit count (0 prints no
    digit for 0) and turns the 0 flag off; + and space only sign %d/%i; %#o starts with a 0,
    %#x prefixes 0x to a nonzero value."""
    digits = format(abs(n), "d" if conv in "diu" else conv)
    if prec is not None:
        digits = "" if prec == 0 and n == 0 else digits.rjust(prec, "0")
    prefix = ""
    if conv in "di":
        prefix = "-" if n < 0 else "+" if "+" in flags else " " if " " in flags else ""
    elif "#" in flags and conv == "o" and not digits.startswith("0"):
        digits = "0" + digits
    elif "#" in flags and conv in "xX" and n:
        prefix = "0" + conv
    pad = max(0, width - len(prefix) - len(digits))
    if "-" in flags:
        return prefix + digits + " " * pad
    return prefix + "0" * pad + digits if "0" in flags and prec is None else " " * pad + prefix + digits


def _float(v: int, bits: int, flags: str, width: int, prec: int | None, conv: str) -> str:
    """One float conversion of the float (32 bits) or double (64) whose bits are v, as glibc's printf."""
    if bits == 32:
        v &= 0xFFFFFFFF
        negative, special = v >> 31, (v >> 23 & 0xFF) == 0xFF
        nan = special and v & 0x7FFFFF != 0
        v = struct.unpack("<Q", struct.pack("<d", struct.unpack("<f", struct.pack("<I", v))[0]))[0]
    else:
        negative, special = v >> 63, (v >> 52 & 0x7FF) == 0x7FF
        nan = special and v & (1 << 52) - 1 != 0
    sign = "-" if negative else "+" if "+" in flags else " " if " " in flags else ""
    if special:                                   # C pads nan and inf with spaces, never zeros
        text = sign + ("nan" if nan else "inf")
        text = text.upper() if conv.isupper() else text
        return text.ljust(width) if "-" in flags else text.rjust(width)
    if conv not in "aA":
        x = struct.unpack("<d", struct.pack("<Q", v))[0]
        return f"%{flags}{width or ''}{'' if prec is None else '.' + str(prec)}{conv}" % x
    # %a: 0x<lead>.<hex digits>p<exponent>; a subnormal double is 0x0.<digits>p-1022
    field, mantissa = v >> 52 & 0x7FF, v & (1 << 52) - 1
    lead, exponent = (1, field - 1023) if field else (0, -1022 if mantissa else 0)
    if prec is None:
        digits = f"{mantissa:013x}".rstrip("0")
    elif prec >= 13:
        digits = f"{mantissa:013x}" + "0" * (prec - 13)
    else:                                         # round to prec digits, half to even (glibc)
        shift = 4 * (13 - prec)
        q, r = divmod(lead << 52 | mantissa, 1 << shift)
        if r > 1 << shift - 1 or r == 1 << shift - 1 and q & 1:
            q += 1
        lead, digits = q >> 4 * prec, f"{q & (1 << 4 * prec) - 1:0{prec}x}" if prec else ""
    body = f"{lead}{'.' if digits or '#' in flags else ''}{digits}p{exponent:+d}"
    prefix = "0X" if conv == "A" else "0x"
    body = body.upper() if conv == "A" else body
    pad = width - len(sign) - len(prefix) - len(body)
    if pad <= 0:
        return sign + prefix + body
    if "-" in flags:
        return sign + prefix + body + " " * pad
    return sign + prefix + "0" * pad + body if "0" in flags else " " * pad + sign + prefix + body


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v
