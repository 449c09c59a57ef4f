"""Which global memory a kernel may write (isa.Program.writes), for copy-out.

A conservative may-analysis over the kernel's PTX (after inlining: the function the
translator lowers), a forward dataflow over its basic blocks of the *bases* each PTX
register's value may be built from, iterated to a fixpoint (the union where paths
meet; a guarded instruction may leave its destination as it was). A base is

  i        the value of parameter i, which the launch may pass an array (Param.pointer
           True or None): its byte address
  STATIC   the address of a __device__ (.global) variable, e.g. the printf buffer
  ANY      an address the analysis does not follow: a value loaded from memory
           (global, shared or const: a pointer stored there and reloaded, an index read
           from an array), the old value of an atomic, an unknown symbol; except that a
           load from an address whose only base is STATIC yields the bases of what the
           kernel stores into the __device__ region (the launch fills it from
           global_init, which holds no addresses, and puts the arrays elsewhere)
  RAW      the raw address of a .shared/.const variable or of a parameter slot (a small
           number that, used as a global address, could be any word)
  WINDOW   a cvta.shared/cvta.const result: a generic address in its window

Every other instruction (ALU ops, mov, cvt, shuffles, votes, 64-bit pointers through
mov.b64 {lo, hi}) gives its destinations the union of its sources' bases, except that
selp/slct's condition is left out (the result is one of the two values). So pointer
arithmetic keeps the pointer's bases whatever it goes through (add, sub, mad, shifts,
and, or, a difference of two pointers added back), and an integer made of immediates and
special registers has none. A shuffle reads another lane's copy of the register at
the same instruction, which the state there covers; lanes follow paths of the CFG
whatever the divergence.

Each st / atom / red that the translator sends to global memory, or dispatches at run
time (a generic access in windowed mode, spaces.py), is a write site; the translator's own
`space_of` decides, so the analysis sees what the lowering does. A site writes the
parameters and STATIC among its address's bases (C's rule: pointer arithmetic stays
inside its object); it may write *everything* when the address has ANY or RAW, or no base
(an address made of integers). A dispatched site ignores WINDOW (that address goes to
shared memory); a site in shared memory writes no global memory. These are the only PTX
instructions the translator turns into global ST/ATOM (an 8/16-bit store is an atomic
AND then OR on its word), and an instruction kind this module does not know makes the
answer "everything", so a new one can't be missed silently.

Assumed: pointer arithmetic stays inside its array (C's rule; an out-of-bounds store into
the next array is not seen); the host passes addresses as arrays, never as integer
arguments (an integer argument is an offset or a count, as Param.pointer takes it; an
address inside array data is fine: loads are ANY); no undefined value (an uninitialised register, a shuffle from
an inactive lane) is used as an address.
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain import ptx

STATIC, ANY, RAW, WINDOW = "static", "any", "raw", "window"

# the PTX instructions lower.py translates, by what they mean here
VALUE_OPS = {"mov", "cvt", "selp", "slct", "add", "sub", "and", "or", "xor", "div", "rem", "min", "max",
             "mul", "mad", "mul24", "mad24", "neg", "abs", "not", "cnot", "shl", "shr", "shf", "popc", "clz",
             "brev", "bfe", "bfi", "prmt", "setp", "set", "shfl", "vote", "activemask",
             "fma", "sqrt", "rcp", "rsqrt", "ex2", "copysign"}      # and floats.py's own (the rest are above)
NO_EFFECT_OPS = {"bar", "barrier", "membar", "fence", "bra", "ret", "exit", "trap"}
WRITE_OPS = {"st", "atom", "red"}
KNOWN_OPS = VALUE_OPS | NO_EFFECT_OPS | WRITE_OPS | {"ld", "cvta"}
NONE = frozenset()


def kernel_writes(fn: ptx.Function, params: list[isa.Param], symbols: dict[str, tuple[str, int]],
                  static_words: int, space_of) -> isa.Writes:
    """`symbols`: the layout's name -> (space, byte address); `space_of(ins, addr)`: the
    state space the translator sends an access to ("global", "shared", ...; None: decided
    at run time)."""
    may_be_array = frozenset(i for i, p in enumerate(params) if p.pointer is not False)
    everything = isa.Writes(may_be_array, static_words > 0, traced=False)
    param_index = {p.name: i for i, p in enumerate(params)}
    if any(isinstance(ins, ptx.Instruction) and ins.parts[0] not in KNOWN_OPS for ins in fn.body):
        return everything
    cfg = _basic_blocks(fn.body)
    if cfg is None:
        return everything
    blocks, succs = cfg
    cur: dict[str, frozenset] = {}   # register -> bases, at the instruction being looked at
    static_content = frozenset()     # the bases of what the __device__ region may hold

    def of(o) -> frozenset:
        if isinstance(o, ptx.Reg):
            return cur.get(o.name, NONE)
        if isinstance(o, ptx.Not):
            return of(o.reg)
        if isinstance(o, ptx.Vec):
            return NONE.union(*(of(x) for x in o.items))
        if isinstance(o, ptx.Addr):
            return of(o.base) if o.base is not None else NONE
        if isinstance(o, ptx.Sym):
            if o.name not in symbols:
                return frozenset({ANY})
            return frozenset({STATIC if symbols[o.name][0] == "global" else RAW})
        return NONE      # Imm, SpecialReg, Sink

    def value(ins) -> frozenset:
        parts, srcs = ins.parts, ins.operands[1:]
        if parts[0] == "ld" and "param" in parts and _param_name(srcs[0]) in param_index:
            i = param_index[_param_name(srcs[0])]
            return frozenset({i} if i in may_be_array else ())
        if parts[0] in ("ld", "atom"):
            if of(srcs[0]) == {STATIC} and space_of(ins, srcs[0]) in ("global", None):
                return static_content       # a word of the __device__ region
            return frozenset({ANY})
        if parts[0] in ("selp", "slct"):     # d = c ? a : b is a or b, never the condition c
            srcs = srcs[:2]
        v = NONE.union(*(of(o) for o in srcs))
        if parts[0] == "cvta":
            if "to" in parts:           # generic -> space address
                return v - {WINDOW} | {RAW} if {"shared", "const"} & set(parts) else v
            if {"shared", "const"} & set(parts):   # into a window: only a RAW address lands in it
                return v - {RAW} | {WINDOW} if RAW in v else v | {WINDOW, ANY}
        return v

    def step(ins) -> None:
        """`ins`'s effect on `cur` and on the __device__ region's contents."""
        nonlocal static_content
        base = ins.parts[0]
        if base in WRITE_OPS:       # what it stores into the __device__ region, if it may
            addr, stored = (ins.operands[1], ins.operands[2:]) if base == "atom" else \
                (ins.operands[0], ins.operands[1:])
            if STATIC in of(addr) and space_of(ins, addr) != "shared":
                static_content |= NONE.union(*(of(o) for o in stored))
        if base in NO_EFFECT_OPS or base in ("st", "red") or not ins.operands:
            return
        new = value(ins)
        for d in _destinations(ins.operands[0]):
            # a guarded instruction may leave its destination as it was
            cur[d] = new | cur.get(d, NONE) if ins.pred is not None else new

    # forward dataflow to a fixpoint: the bases at each block's entry, the union over its
    # predecessors (a register not yet set on a path has none there)
    entry: list[dict | None] = [None] * len(blocks)
    entry[0] = {}
    work = [0]
    while True:
        before = static_content
        while work:
            b = work.pop()
            cur = dict(entry[b])
            for ins in blocks[b]:
                step(ins)
            for s in succs[b]:
                if entry[s] is None:
                    entry[s], grown = dict(cur), True
                else:
                    grown = False
                    for r, v in cur.items():
                        if not v <= entry[s].get(r, NONE):
                            entry[s][r] = entry[s].get(r, NONE) | v
                            grown = True
                if grown and s not in work:
                    work.append(s)
        if static_content == before:
            break
        work = [b for b in range(len(blocks)) if entry[b] is not None]   # loads see the grown region

    written, static = set(), False
    for b, code in enumerate(blocks):
        if entry[b] is None:        # unreachable
            continue
        cur = dict(entry[b])
        for ins in code:
            if ins.parts[0] in WRITE_OPS:
                addr = ins.operands[1] if ins.parts[0] == "atom" else ins.operands[0]
                space = space_of(ins, addr)
                bases = of(addr)
                if space == "shared":
                    pass
                elif space is None and bases == {WINDOW}:
                    pass            # windowed generic access: the shared window
                elif space not in ("global", None):   # the translator refuses .const/.param stores
                    return everything
                else:
                    bases -= {WINDOW} if space is None else NONE
                    if not bases or bases & {ANY, RAW, WINDOW}:
                        return everything
                    written |= bases - {STATIC}
                    static |= STATIC in bases
            step(ins)
    return isa.Writes(frozenset(written), static and static_words > 0)


def _basic_blocks(body: list) -> tuple[list[list[ptx.Instruction]], list[list[int]]] | None:
    """The function's instructions in basic blocks (block 0 the entry) and each block's
    successors: a label starts a block, a bra or ret ends one. None: a branch to a place
    that is not a label here."""
    blocks: list[list] = [[]]
    label_block: dict[str, int] = {}
    for item in body:
        if isinstance(item, ptx.Label):
            if blocks[-1]:
                blocks.append([])
            label_block[item.name] = len(blocks) - 1
            continue
        blocks[-1].append(item)
        if item.parts[0] in ("bra", "ret", "exit"):
            blocks.append([])
    succs = []
    for b, code in enumerate(blocks):
        last = code[-1] if code else None
        out = []
        if last is not None and last.parts[0] == "bra":
            target = last.operands[0]
            if not isinstance(target, ptx.Sym) or target.name not in label_block:
                return None
            out.append(label_block[target.name])
        ends = last is not None and last.parts[0] in ("bra", "ret", "exit") and last.pred is None
        if not ends and b + 1 < len(blocks):
            out.append(b + 1)
        succs.append(out)
    return blocks, succs


def _param_name(o) -> str | None:
    base = o.base if isinstance(o, ptx.Addr) else o
    return base.name if isinstance(base, ptx.Sym) else None


def _destinations(o) -> list[str]:
    if isinstance(o, ptx.Reg):
        return [o.name]
    if isinstance(o, ptx.Vec):
        return [x.name for x in o.items if isinstance(x, ptx.Reg)]
    if isinstance(o, ptx.Pair):
        return _destinations(o.first) + _destinations(o.second)
    return []
