"""The layout stage of lowering (lower.py): where a kernel's parameters and variables live.

Takes the (inlined) kernel and its module; gives a `Layout`: parameter i is CONST word i
(`pointer_params` says which are pointers, from how the PTX uses them), the referenced
.const variables follow the parameters in CONST, the module's .global variables take GLOBAL
words from 0, .shared variables shared words from 0, then the local region (below), and an
.extern .shared array gets the rest, each with its initial words. Symbol addresses are
byte addresses in their space.

Local memory (.local: stack frames, local arrays indexed at run time, what clang keeps
there at -O0) is a frame per thread in shared memory: the .local variables of the kernel
and of every function inlined into it take byte offsets in one frame (`frame_bytes`), and
the block's threads' frames lie one after another from `local_base`, a frame for each of
the block's threads (isa.MACHINE_BLOCK_THREADS; a tiled block's own count: threads.py). A
.local symbol's address is the running thread's frame plus its offset (the translator's
`frame`), a shared-memory address like any other. Shared memory, not global: a frame lives
only while its thread block runs, as shared memory does, and is never copied out.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.errors import MachineLimitError, UnsupportedError
from qwengpu.toolchain import ptx
from qwengpu.toolchain.ptx import TYPE_BITS, plain_name


@dataclass
class Layout:
    symbols: dict[str, tuple[str, int]]     # name -> (space, byte address)
    params: list[isa.Param]
    param_bits: dict[str, int]
    const_init: dict[int, int]
    global_init: dict[int, int]
    static_global_words: int
    shared_words: int
    frame_bytes: int = 0        # the local memory a thread needs (its .local variables)
    local_base: int = 0         # shared byte address of thread 0's frame
    reserved: int = 0           # the shared word where the reserved words start (after the frames)

    @property
    def printf_buffer(self) -> int | None:
        """The GLOBAL word of the device printf buffer (qwengpu/printf.py), if there is one."""
        return next((addr // 4 for name, (space, addr) in self.symbols.items()
                     if space == "global" and "__qg_printf_buffer" in name), None)


def layout(module: ptx.Module, fn: ptx.Function, threads: int = isa.MACHINE_BLOCK_THREADS,
           reserve_words: int = 0) -> Layout:
    """`threads`: the frames local memory needs; `reserve_words`: shared words kept after the
    static variables and the frames, before dynamic shared memory (a tiled block's save area,
    threads.py), from `Layout.reserved`."""
    symbols, params, param_bits = {}, [], {}
    kinds = pointer_params(fn)
    for i, p in enumerate(fn.params):
        if p.size != max(1, TYPE_BITS[p.type] // 8) or p.size > 8:
            raise UnsupportedError(f"{module.where(p.line)}: parameter {p.name} is a {p.size}-byte struct or array; "
                                   "only scalars and pointers (one word each) are supported")
        params.append(isa.Param(p.name, i, TYPE_BITS[p.type], kinds.get(p.name), p.type.startswith("f")))
        param_bits[p.name] = TYPE_BITS[p.type]
        symbols[p.name] = ("param", 4 * i)
    next_byte = {"const": 4 * len(params), "global": 0, "shared": 0, "local": 0}    # local: in the thread's frame
    inits = {"const": {}, "global": {}, "shared": {}}
    used = _referenced(fn)
    # every kernel of a module sees its __device__ variables at the same addresses;
    # constant and shared variables are per launch, so only the referenced ones take space
    variables = [v for v in module.variables if v.space == "global" or v.name in used] + fn.variables
    dynamic = []
    for var in variables:
        if var.space not in next_byte:
            raise UnsupportedError(f"{module.where(var.line)}: .{var.space} variable {var.name} is not supported")
        if var.init and var.space == "local":
            raise UnsupportedError(f"{module.where(var.line)}: .local variable {var.name} has an initialiser")
        if var.extern and var.space == "shared" and var.size == 0:
            dynamic.append(var)
            continue
        align = max(4, var.align)
        addr = -(-next_byte[var.space] // align) * align
        symbols[var.name] = (var.space, addr)
        next_byte[var.space] = addr + max(var.size, 1)
        if var.init:
            for w, v in _pack_words(var).items():
                inits[var.space][addr // 4 + w] = v
    frame_align = max([4] + [v.align for v in variables if v.space == "local"])
    frame_bytes = -(-next_byte.pop("local") // frame_align) * frame_align
    local_base = -(-next_byte["shared"] // frame_align) * frame_align
    if frame_bytes:
        next_byte["shared"] = local_base + threads * frame_bytes
    reserved = -(-next_byte["shared"] // 4)
    next_byte["shared"] = 4 * (reserved + reserve_words)
    words = {s: -(-b // 4) for s, b in next_byte.items()}
    if words["const"] > isa.CONST_WORDS:
        tables = ", ".join(f"{v.name} {-(-v.size // 4)}" for v in variables if v.space == "const")
        raise MachineLimitError(f"kernel {plain_name(fn.name)} needs {words['const']} words of parameters and "
                                f"constants ({len(params)} for parameters; __constant__ data in words: {tables}); "
                                f"the limit is {isa.CONST_WORDS} words")
    shared_words = words["shared"]
    if frame_bytes and reserved > isa.SHARED_WORDS:
        names = ", ".join(f"{plain_name(v.name.partition('@')[2] or fn.name)}'s {v.size} bytes"
                          for v in variables if v.space == "local")       # a callee's frame: NAME@function
        raise MachineLimitError(f"kernel {plain_name(fn.name)} needs {frame_bytes} bytes of local memory a thread "
                                f"(stack frames and local arrays: {names}); local memory is a frame for each of "
                                f"the {threads} threads of a block in shared memory, {reserved} "
                                f"words with the {-(-local_base // 4)} of __shared__ variables, and the machine "
                                f"has {isa.SHARED_WORDS}")
    for var in dynamic:   # dynamic shared memory: whatever the static variables leave
        symbols[var.name] = ("shared", 4 * shared_words)
    if dynamic:
        shared_words = max(shared_words, isa.SHARED_WORDS)
    return Layout(symbols, params, param_bits, inits["const"], inits["global"], words["global"], shared_words,
                  frame_bytes, local_base, reserved)


def pointer_params(fn: ptx.Function) -> dict[str, bool]:
    """Which kernel parameters are pointers (True) or integers (False), from how the PTX
    uses them; a parameter left out is unused or unclear. A pointer's loaded value (through
    plain copies) is converted with cvta or used as an address; an integer's value never
    reaches an address, whatever arithmetic it goes through."""
    params = {p.name for p in fn.params}
    defs: dict[str, int] = {}
    for ins in fn.body:
        if isinstance(ins, ptx.Instruction) and ins.operands and isinstance(ins.operands[0], ptx.Reg):
            defs[ins.operands[0].name] = defs.get(ins.operands[0].name, 0) + 1
    copy_of: dict[str, str] = {}       # register (defined once) -> the parameter it holds unchanged
    flows: dict[str, set[str]] = {}    # register -> parameters its value depends on
    loaded, changed = set(), True
    while changed:
        changed = False
        for ins in fn.body:
            if not isinstance(ins, ptx.Instruction) or not ins.operands or not isinstance(ins.operands[0], ptx.Reg):
                continue
            d, srcs = ins.operands[0].name, ins.operands[1:]
            if ins.parts[0] == "ld" and "param" in ins.parts and _param_of(srcs[0]) in params:
                name = _param_of(srcs[0])
                loaded.add(name)
                new_copy, new_flow = name, {name}
            else:
                regs = [o.name for o in srcs if isinstance(o, ptx.Reg)]
                new_flow = set().union(*(flows.get(r, set()) for r in regs))
                new_copy = copy_of.get(regs[0]) if ins.parts[0] == "mov" and len(regs) == 1 else None
            if new_copy is not None and d not in copy_of and defs[d] == 1:
                copy_of[d] = new_copy
                changed = True
            if not new_flow <= flows.setdefault(d, set()):
                flows[d] |= new_flow
                changed = True
    pointers, reach = set(), set()
    for ins in fn.body:
        if not isinstance(ins, ptx.Instruction):
            continue
        for r in _address_registers(ins):
            if r in copy_of:
                pointers.add(copy_of[r])
            reach |= flows.get(r, set())
    kinds = {p.name: False for p in fn.params if p.name in loaded and p.name not in reach}
    return kinds | {name: True for name in pointers}


def _pack_words(var: ptx.Variable) -> dict[int, int]:
    """Variable initialiser -> {word offset: value} (little-endian bytes)."""
    data = bytearray(max(var.size, 4 * ((var.size + 3) // 4)))
    eb = var.elem_bytes
    for i, v in enumerate(var.init or []):
        data[i * eb:(i + 1) * eb] = (v & ((1 << (8 * eb)) - 1)).to_bytes(eb, "little")
    return {w: int.from_bytes(data[4 * w:4 * w + 4], "little") for w in range(len(data) // 4)
            if any(data[4 * w:4 * w + 4])}


def _referenced(fn: ptx.Function) -> set[str]:
    names = set()

    def visit(o):
        if isinstance(o, ptx.Sym):
            names.add(o.name)
        elif isinstance(o, ptx.Addr) and isinstance(o.base, ptx.Sym):
            names.add(o.base.name)
        elif isinstance(o, ptx.Vec):
            for x in o.items:
                visit(x)
    for ins in fn.body:
        if isinstance(ins, ptx.Instruction):
            for o in ins.operands:
                visit(o)
    return names


def _param_of(o) -> str | None:
    base = o.base if isinstance(o, ptx.Addr) else o
    return base.name if isinstance(base, ptx.Sym) else None


def _address_registers(ins: ptx.Instruction) -> list[str]:
    """Registers used as an address: the base of a non-param [..] operand, or a cvta's source."""
    if ins.parts[0] == "cvta":
        return [o.name for o in ins.operands[1:] if isinstance(o, ptx.Reg)]
    if "param" in ins.parts:
        return []
    return [o.base.name for o in ins.operands if isinstance(o, ptx.Addr) and isinstance(o.base, ptx.Reg)]
