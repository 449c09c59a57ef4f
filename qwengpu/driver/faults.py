"""What a model-side FAULT means, told from the model's own tokens (docs/protocol.md).

The FAULT token carries no payload; the tokens before it say the rest:

* FAULT right after an `EXEC(w, pc, s)` (or a continuing token, which runs that pass): the
  instruction of pass s of block pc (a load, store or atomic: the host looks it up in the passes
  it compiled, encoding.py) made a bad memory access for warp w of the thread block of the last
  `CTA` token. Which lane and which address: every register value the model
  computed reached the token stream as `VAL` tokens (a register is written only through them),
  and the warp's active lanes are the mask of its last `CT1` (its launch mask before any: a
  CT1 comes whenever a live warp's mask changes, but for lanes that exit) ANDed with its last
  `CT2`'s alive lanes. Replaying those tokens gives each active lane's address operands, hence the
  first lane, in lane order, whose address is misaligned, past the end of its space, or a
  write to CONST: the lane the interpreter names for the same launch. The operands are the
  model's values; the one instruction the host evaluates is the pass's pre-ALU instruction when
  it computed the address (a pair, encoding.py: its result was forwarded, never written back),
  on operands from the tokens. A fixed operand (encoding.Fixed: a special register or a
  parameter, never written back) takes its value from the launch.
* FAULT after `CT2` with wait = 1 and the warp's mask (the lanes that arrived: the last CT1's,
  which comes whenever it changes) not CT2's alive: a deadlock at a divergent barrier, ended
  by the pass of the last `EXEC` (the BAR's own pass, or its block's last instruction's with
  the BAR folded in, then that instruction's writeback tokens).

The error is a MemoryFault or DeadlockError whose message says that, in the interpreter's words
where it can (`{what} at {space} byte address {a} {problem} (thread block c, warp w, lane l,
pc Bn)`).
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.errors import DeadlockError, ExecutionError, MemoryFault
from qwengpu.launch import Launch
from qwengpu.machine.encoding import Fixed
from qwengpu.machine.tokens import Token, lane_word, unpack_pair, unpack_small, with_exec
from qwengpu.machine.words import PARTS

_WORDS = {isa.Space.GLOBAL: isa.GLOBAL_WORDS, isa.Space.SHARED: isa.SHARED_WORDS, isa.Space.CONST: isa.CONST_WORDS}
_WHAT = {isa.Op.LD: "load", isa.Op.ST: "store", isa.Op.ATOM: "atomic"}


def fault_error(stream: list[Token], launch: Launch | None = None) -> ExecutionError:
    """The error for a generated stream ending in FAULT (the launch lets a memory fault name its
    operation, lane and address, and a deadlock its warp and lanes)."""
    message = fault_where(stream)
    stream = with_exec(stream)       # a continuing token's pass as its EXEC
    if len(stream) >= 2 and stream[-2].kind == "EXEC":
        return MemoryFault(f"{message}: bad memory access{_memory_cause(stream, launch)}")
    cause = _deadlock_cause(stream, launch.machine_block) if launch is not None else ""
    if cause:
        return DeadlockError(f"{message}: {cause}")
    return ExecutionError(f"{message}: the tokens before it show neither a memory access (FAULT right after "
                          f"an EXEC) nor a barrier ([CT1] CT2)")


def fault_where(stream: list[Token]) -> str:
    """`the model signalled FAULT at generated token i (last pass: EXEC ...)`."""
    where = next((str(t) for t in reversed(with_exec(stream)) if t.kind == "EXEC"), "before the first pass")
    return f"the model signalled FAULT at generated token {len(stream) - 1} (last pass: {where})"


def _cta(stream: list[Token]) -> int:
    return next((t.args[0] for t in reversed(stream) if t.kind == "CTA"), 0)    # the prompt ends in CTA(0)


def _instruction(program, passes, pc: int, s: int, pre: bool = False) -> isa.Instr | None:
    """The instruction of the pass EXEC(w, pc, s) names (None in a terminator pass of its own),
    or with `pre` the one its pre-ALU runs (None if none)."""
    p = passes[pc].pass_at(s) if pc < len(passes) else None
    i = None if p is None else p.pre if pre else p.main
    return None if i is None else program.blocks[pc].instrs[i]


def _memory_cause(stream: list[Token], launch: Launch | None) -> str:
    w, pc, s = stream[-2].args
    cta = _cta(stream)
    program, passes = (launch.program, launch.code) if launch is not None else (None, [])
    ins = _instruction(program, passes, pc, s)
    if ins is None or ins.op not in _WHAT:
        what = f" by {ins}" if ins is not None else " (misaligned, out of range, or a store to CONST)"
        return f"{what} (thread block {cta}, warp {w}, pc B{pc} slot {s})"
    what = _WHAT[ins.op]
    space = ins.mod[0] if ins.op is isa.Op.ATOM else ins.mod
    pre = _instruction(program, passes, pc, s, pre=True)
    here = f"pc B{pc} slot {s}: " + (f"{pre}, then " if pre is not None else "") + str(ins)
    found = _bad_lane(stream, launch, ins, space)
    if found is None:
        return (f": a {what} in {space.value} memory (thread block {cta}, warp {w}, {here}); which lane is not "
                f"known: by the register values in the model's VAL tokens no active lane's address is bad")
    lane, address, problem = found
    return (f": {what} at {space.value} byte address {address:#x} {problem} (thread block {cta}, warp {w}, "
            f"lane {lane}, pc B{pc}); {here}; lane and address from the model's VAL, VALU, VALA, VALQ, VALP and CT1 tokens")


def _bad_lane(stream, launch: Launch, ins, space):
    """(lane, byte address, problem) of the first active lane whose access is bad, by the
    register values and masks in the stream's VAL, VALU, VALA, VALQ, VALP and CT1 tokens (and the
    launch's values of fixed operands); None if none is."""
    program, passes = launch.program, launch.code
    regs = [[[0] * isa.NUM_REGS for _ in range(isa.LANES)] for _ in range(isa.MAX_WARPS)]
    mask = _masks(stream[:-2], launch.machine_block)
    w = dst = None
    for t in stream[:-2]:                        # registers keep their values across thread blocks
        if t.kind == "EXEC":
            w, pc, s = t.args
            main = _instruction(program, passes, pc, s)
            dst = None if main is None else main.dst.n
        elif t.kind in ("VALA", "VALQ") and w is not None and dst:
            words = [lane_word(t.args[1], t.args[0], l) for l in range(isa.LANES)] if t.kind == "VALA" \
                else unpack_small(t.args[0])
            for l in range(isa.LANES):
                if mask[w] >> l & 1:
                    regs[w][l][dst] = words[l]
        elif t.kind == "VALP" and w is not None and dst:
            for l, value in zip((2 * t.args[0], 2 * t.args[0] + 1), unpack_pair(t.args[1])):
                regs[w][l][dst] = value
        elif t.kind in ("VAL", "VALU") and w is not None and dst:
            k, d = t.args[-2:]
            lanes = [t.args[0]] if t.kind == "VAL" else [l for l in range(isa.LANES) if mask[w] >> l & 1]
            for l in lanes:
                old = regs[w][l][dst] if k else 0
                regs[w][l][dst] = (old & ((1 << PARTS[k].start) - 1)) | d << PARTS[k].start
    w, pc, s = stream[-2].args
    pre = _instruction(program, passes, pc, s, pre=True)
    fixed = {q: passes[pc].fixed.get((passes[pc].pass_at(s).main, q)) for q in range(2)}
    cta = _cta(stream)

    def register(op, lane):
        return op.value if isinstance(op, isa.Imm) else regs[w][lane][op.n] if op.n else 0

    def read(q, lane):
        op = ins.srcs[q]
        if fixed[q] is not None:
            return _fixed_value(fixed[q], launch, cta, w * isa.LANES + lane)
        if isinstance(op, isa.Reg) and pre is not None and op.n == pre.dst.n:     # forwarded from the pre-ALU
            return isa.ALU_SEMANTICS[pre.op.name](*(register(src, lane) for src in pre.srcs))
        return register(op, lane)

    what, words = _WHAT[ins.op], _WORDS[space]
    for lane in range(isa.LANES):
        if not mask[w] >> lane & 1:
            continue
        a, b = (read(q, lane) for q in range(2))
        address = a if ins.op is isa.Op.ATOM else isa.u32(a + b)
        if address % 4:
            return lane, address, "is not 4-byte aligned"
        if address >= 4 * words:
            return lane, address, f"is past the end ({4 * words} bytes)"
        if what != "load" and space is isa.Space.CONST:
            return lane, address, "is read-only"
    return None


def _fixed_value(fixed: Fixed, launch: Launch, cta: int, thread: int) -> int:
    """A fixed operand's value for one thread of thread block `cta`: its CONST word, or its
    special register."""
    if fixed.word is not None:
        return launch.const[fixed.word]
    (gx, gy, gz), (bx, by, bz) = launch.grid, launch.machine_block
    values = (thread % bx, thread // bx % by, thread // (bx * by), bx, by, bz,
              cta % gx, cta // gx % gy, cta // (gx * gy), gx, gy, gz, thread % isa.LANES, thread // isa.LANES)
    return values[fixed.sreg]


def _masks(stream: list[Token], block) -> list[int]:
    """Each warp's active lanes after `stream`: its last CT1's mask in the thread block, else its
    launch mask, ANDed with its last CT2's alive lanes (a CT1 comes whenever the mask changes but
    for lanes that exit)."""
    nthreads = block[0] * block[1] * block[2]
    initial = [sum(1 << l for l in range(isa.LANES) if w * isa.LANES + l < nthreads) for w in range(isa.MAX_WARPS)]
    mask, alive, w = list(initial), list(initial), None
    for t in stream:
        if t.kind == "CTA":
            mask, alive = list(initial), list(initial)
        elif t.kind == "EXEC":
            w = t.args[0]
        elif t.kind == "CT1" and w is not None:
            mask[w] = t.args[1]
        elif t.kind == "CT2" and w is not None:
            alive[w] = t.args[0]
    return [m & a for m, a in zip(mask, alive)]


def _deadlock_cause(stream: list[Token], block) -> str:
    """What EXEC [CT1] CT2 before FAULT say ("" when they are not there)."""
    if len(stream) < 3 or stream[-2].kind != "CT2":
        return ""
    last = next((t for t in reversed(stream) if t.kind == "EXEC"), None)     # the pass that ran the BAR
    if last is None:
        return ""
    warp, pc, _ = last.args
    mask = _masks(stream[:-2], block)[warp]      # the lanes that arrived
    alive, _, wait = stream[-2].args
    cta = _cta(stream)
    if wait and alive & ~mask:
        return (f"deadlock in thread block {cta} at a divergent barrier: warp {warp} reached the barrier ending "
                f"B{pc} with lanes {mask:#06b} while its live lanes {alive & ~mask:#06b} wait on its SIMT stack "
                f"and can never arrive")
    return f"deadlock in thread block {cta}: no warp can run while some wait at a barrier"
