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
"""
from __future__ import annotations

import re

import numpy as np

PRINTF_WORDS = 128           # QG_PRINTF_WORDS in prelude.h
_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?([diouxXcspn%])")
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
    """C's printf formatting of (value, bits) integer, character, string and pointer arguments;
    `%l` takes the argument's own width (long is 32-bit under clang, 64-bit under NVRTC)."""
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
        if width == "*":
            width = str(_signed(take()[0], 32))
        if prec == "*":
            prec = str(_signed(take()[0], 32))
        spec = f"%{flags}{width or ''}{'.' + prec if prec is not None else ''}"
        if i >= len(args) and conv != "n":
            pieces.append(m.group())          # no argument left: printed as written
            continue
        v, arg_bits = take()
        bits = arg_bits if length == "l" else _BITS[length]
        if conv in "di":
            pieces.append((spec + "d") % _signed(v, bits))
        elif conv in "ouxX":
            text = (spec + conv) % (v & ((1 << bits) - 1))
            pieces.append(text.replace("0o", "0", 1) if conv == "o" else text)   # C's %#o is 017, not 0o17
        elif conv == "c":
            pieces.append((spec + "c") % chr(v & 0xFF))
        elif conv == "s":
            pieces.append((spec + "s") % read_string(memory, v & 0xFFFFFFFF))
        elif conv == "p":
            pieces.append((f"%{flags}{width or ''}s") % f"0x{v:x}")
    pieces.append(fmt[pos:])
    return "".join(pieces)


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v
