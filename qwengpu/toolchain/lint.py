"""Compile-time warnings: code that compiles and runs, but likely not as meant on this machine.

One check so far: a warp shuffle whose offset, lane or width assumes a 32-lane warp. A warp
here has 4 lanes (warpSize == 4), so `for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(m,
v, o);` adds each lane's own value to itself for o = 16, 8 and 4 (a shuffle from past the warp
reads the thread's own value) and sums 8 times the total. clang -O2 unrolls such a loop, so the
offsets are immediates of the PTX `shfl.sync` (NVRTC: registers set once by a mov of an
immediate); a value known only at run time is not checked.

The operands are PTX's, as the prelude passes them (qwengpu/toolchain/prelude.h,
isa.shfl_source_lane): b the lane (idx), delta (up, down) or lane mask (bfly); c the segment
mask in bits 12:8 and the clamp lane in bits 4:0, as CUDA computes them for a 32-lane GPU from
`width` (segment mask 32 - width): the default width 4 gives 0x1c1f (up: 0x1c00).

Each warning is one line, `FILE:LINE: warning: ...` (the CUDA line from the PTX line table;
`FILE: PTX line N (no CUDA source line): warning: ...` without one); one per source line and
shuffle kind, naming every offending value found there.
"""
from __future__ import annotations

import warnings

from qwengpu import isa
from qwengpu.errors import QwenGpuWarning
from qwengpu.toolchain import ptx

SHUFFLE_NAMES = {"idx": "__shfl_sync", "up": "__shfl_up_sync", "down": "__shfl_down_sync", "bfly": "__shfl_xor_sync"}
OPERAND = {"idx": "lane", "up": "offset", "down": "offset", "bfly": "lane mask"}
WARP = f"a warp here has {isa.LANES} lanes (warpSize == {isa.LANES})"


def issue_warnings(messages: list[str], stacklevel: int = 3) -> None:
    """Each message as a Python warning (QwenGpuWarning); stacklevel 3: the caller's caller (the
    user's get_function call)."""
    for message in messages:
        warnings.warn(message, QwenGpuWarning, stacklevel=stacklevel)


def shuffle_warnings(module: ptx.Module, fn: ptx.Function, constants: dict) -> list[str]:
    """The warnings for `fn` (the kernel after inlining); `constants`: PTX register name -> the
    immediate it alone holds (translate.constant_registers)."""
    def value(o) -> int | None:
        if isinstance(o, ptx.Imm) and not o.is_float:
            return o.value & 0xFFFF_FFFF
        known = constants.get(o.name) if isinstance(o, ptx.Reg) else None
        return None if known is None else known.value & 0xFFFF_FFFF

    found: dict[tuple[str, str, str], list[int]] = {}     # (where, mode, what) -> values, in order
    for ins in fn.body:
        if not isinstance(ins, ptx.Instruction) or ins.parts[0] != "shfl" or len(ins.operands) < 4:
            continue
        mode = next((p for p in ins.parts[1:] if p in SHUFFLE_NAMES), None)
        if mode is None:
            continue
        b, c = value(ins.operands[2]), value(ins.operands[3])
        width = None if c is None else _segment_lanes(c)
        if b is not None and b >= isa.LANES:
            found.setdefault((_where(module, ins.line), mode, "b"), []).append(b)
        if width is not None and width > isa.LANES:
            found.setdefault((_where(module, ins.line), mode, "width"), []).append(width)
    return [f"{where}: warning: {_message(mode, what, values)}" for (where, mode, what), values in found.items()]


def _segment_lanes(c: int) -> int:
    """The lanes of one shuffle segment that c's segment mask (bits 12:8) leaves: CUDA's width."""
    return ((~(c >> 8)) & 0x1F) + 1


def _message(mode: str, what: str, values: list[int]) -> str:
    name, values = SHUFFLE_NAMES[mode], list(dict.fromkeys(values))
    listed, one = _and(values), len(values) == 1
    s = "" if one else "s"
    if what == "width":
        return (f"{name} with width {listed}: {WARP}, so lanes {isa.LANES} and up do not exist and a lane "
                f"that would read one gets its own value back; leave width out (it defaults to warpSize)")
    if mode == "idx":
        return (f"{name} from lane{s} {listed}: {WARP}: with the default width (warpSize) it reads lane{s} "
                f"{_and([v % isa.LANES for v in values])} (the lane modulo the width), not lane{s} {listed} as "
                f"on a 32-lane GPU; use a lane below warpSize")
    nothing = f"so every lane gets its own value back ({'it shuffles' if one else 'they shuffle'} nothing"
    if mode == "up":
        return (f"{name} with {OPERAND[mode]}{s} {listed}: {WARP}, {nothing}); a loop written for 32-lane "
                f"warps should stop below warpSize")
    return (f"{name} with {OPERAND[mode]}{s} {listed}: {WARP}, {nothing}: in a sum v += {name}(mask, v, ...) "
            f"{'it doubles' if one else 'each doubles'} v, {2 ** len(values)}x the total); a loop written for "
            f"32-lane warps should start at warpSize / 2")


def _and(values: list[int]) -> str:
    text = [str(v) for v in values]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


def _where(module: ptx.Module, line: int) -> str:
    """`FILE:LINE` of PTX line `line` in the user's source (a shuffle inlined from the prelude has
    the line that called it: ptx.source_lines), else Module.where's PTX line."""
    path, src_line = module.source.get(line, (None, 0))
    if path is None or ptx._in_toolchain(path):
        return module.where(line)
    return f"{path}:{src_line}"
