"""The address-space stage of lowering (lower.py): where each register's address value
points, so that a generic ld/st/atom (one that names no state space) goes to the right memory.

Takes the kernel and the layout's symbols; gives `Spaces`: each register's tag
(`register_spaces`, a flow-insensitive fixpoint) and whether the kernel needs address
windows (`windowed`): some generic access whose space only the run time knows.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu.toolchain import ptx

# a register's tag: a space, the value of a parameter (a weak global pointer: `_join`), or
# a conflict (no one space)
_PARAM_PTR, _CONFLICT = "param", "conflict"
_ADDRESS_OPS = {"mov", "cvta", "cvt", "add", "sub", "mad", "mul", "selp", "and", "or", "shl", "bfi"}


# Generic addresses normally carry no space: every generic access is resolved at compile
# time from where its address came from. When one cannot be (a pointer that may be global
# or __constant__, say), the kernel is lowered in windowed mode: cvta puts const and shared
# addresses in windows above global memory, and such accesses test the window at run time.
WINDOWS = {"global": 0, "const": 0x10000, "shared": 0x20000}
STATE_SPACES = ("global", "shared", "const", "param", "local")    # an ld/st/atom naming one is not generic
WINDOW_SHIFT = 16
LOCAL_HOME = "shared"      # local memory is a frame per thread in shared memory (layout.py)


def home(space: str) -> str:
    """The memory a state space's accesses go to: its own, local memory's shared memory."""
    return LOCAL_HOME if space == "local" else space


@dataclass
class Spaces:
    tags: dict[str, str]    # register -> the space its address value points into (register_spaces)
    windowed: bool          # lower in windowed mode (above)

    def of(self, reg: str) -> str | None:
        """The space register `reg`'s address points into, when known (a parameter pointer is
        global); None: only the run time knows."""
        tag = self.tags.get(reg)
        return "global" if tag == _PARAM_PTR else tag if tag in WINDOWS else None


def address_spaces(fn: ptx.Function, symbols: dict) -> Spaces:
    tags = register_spaces(fn, symbols)
    return Spaces(tags, _needs_windows(fn, tags))


def register_spaces(fn: ptx.Function, symbols: dict) -> dict[str, str]:
    """Flow-insensitive: the space each register's address value may point
    into. Kernel parameters count as (weak) global pointers; shared/const
    variable addresses and cvta conversions are definite."""
    tags: dict[str, str] = {}

    def tag_of(o):
        if isinstance(o, ptx.Reg):
            return tags.get(o.name)
        sym = o.name if isinstance(o, ptx.Sym) else (o.base.name if isinstance(o, ptx.Addr) and
                                                      isinstance(o.base, ptx.Sym) else None)
        if sym in symbols and symbols[sym][0] != "param":
            return home(symbols[sym][0])
        return None

    changed = True
    while changed:
        changed = False
        for ins in fn.body:
            if not isinstance(ins, ptx.Instruction) or not ins.operands or not isinstance(ins.operands[0], ptx.Reg):
                continue
            parts = ins.parts
            base, d = parts[0], ins.operands[0].name
            t = None
            if base == "cvta":
                t = next((home(s) for s in ("global", "shared", "const", "local") if s in parts), None)
            elif base == "ld" and "param" in parts:
                t = _PARAM_PTR
            elif base == "selp":     # a choice between two addresses, like two definitions
                t = _merge(tag_of(ins.operands[1]), tag_of(ins.operands[2]))
            elif base in _ADDRESS_OPS:
                for o in ins.operands[1:]:
                    t = _join(t, tag_of(o))
            new = _merge(tags.get(d), t)
            if new != tags.get(d):
                tags[d] = new
                changed = True
    return tags


def _join(a, b):
    if a is None or a == b:
        return b
    if b is None:
        return a
    if a == _PARAM_PTR:
        return b
    if b == _PARAM_PTR:
        return a
    return _CONFLICT


def _merge(a, b):
    """Two definitions of one register (a phi): a raw parameter value is a global pointer
    there, so one that meets a shared or const address makes the register's space unknown."""
    if a is None or b is None or a == b:
        return b if a is None else a
    a, b = ("global" if x == _PARAM_PTR else x for x in (a, b))
    return a if a == b else _CONFLICT


def _needs_windows(fn: ptx.Function, spaces: dict[str, str]) -> bool:
    """Whether some generic access's address register has no space of its own."""
    for ins in fn.body:
        if isinstance(ins, ptx.Instruction) and ins.parts[0] in ("ld", "st", "atom", "red") \
                and not any(s in ins.parts for s in STATE_SPACES):
            addr = ins.operands[1] if ins.parts[0] in ("ld", "atom") else ins.operands[0]
            base = addr.base if isinstance(addr, ptx.Addr) else None
            if isinstance(base, ptx.Reg) and spaces.get(base.name) not in (*WINDOWS, _PARAM_PTR):
                return True
    return False
