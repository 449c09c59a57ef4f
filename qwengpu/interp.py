"""The reference SIMT interpreter: runs an isa.Program with exact semantics.

It is the oracle the compiled model is held against (tests, `--check replay`),
never a source of tokens. Every ALU/atomic/shuffle result comes from isa.py;
this module only schedules warps, keeps the SIMT stacks and moves data.
See docs/isa.md ("Execution model") for the algorithm in prose.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from qwengpu import isa
from qwengpu.errors import DeadlockError, ExecutionError, MemoryFault
from qwengpu.launch import Launch

# lanes of each 4-bit mask, in lane order
_LANES_OF = [tuple(l for l in range(isa.LANES) if m >> l & 1) for m in range(1 << isa.LANES)]


@dataclass
class Step:
    """One pass: warp `warp` of thread block `block_id` ran machine block `pc`
    with active lanes `mask`. Writes are listed in execution order
    (instruction order, then lane order); writes to r0 are not listed. `loads` has one
    entry per load it ran, in instruction order: the word each active lane read, in lane order
    (the machine reads a load with a word past isa.LANE_WORDS lane by lane)."""
    block_id: int
    warp: int
    pc: int
    mask: int
    reg_writes: list[tuple[int, int, int]] = field(default_factory=list)        # (lane, reg, value)
    mem_writes: list[tuple[isa.Space, int, int]] = field(default_factory=list)  # (space, word, value)
    loads: list[list[int]] = field(default_factory=list)                         # each load's words
    ran: int = 0    # instructions of the block it completed: all of them, unless a fault stopped it
    new_top: bool = False   # the warp's SIMT stack top is another entry after the pass (a push, a pop, an exit)
    exited: int = 0         # the lanes its terminator ended: EXIT's active lanes, or a BRC's taken lanes that exit


DEFAULT_MAX_PASSES = 200_000
"""The interpreter's default limit on machine blocks executed (passes) per launch: the largest
suite kernel needs 1,816 (isqrt_bsearch, micro-coded as for the model engine; 1,142 natively:
threadfence_reduction); a runaway loop reaches it in about 0.5-1 s (2026-12-01,
block 16, a 10-instruction loop body)."""


class PassLimitError(ExecutionError):
    """The launch ran past max_passes machine blocks (an infinite loop?)."""


@dataclass
class Execution:
    """`instructions` counts warp-instructions (one per instruction per pass,
    whatever the number of active lanes; terminators not counted); `passes`
    counts machine blocks executed (one per scheduling turn)."""
    instructions: int
    passes: int
    seconds: float
    steps: list[Step] | None = None
    fault: Exception | None = None     # run_launch(keep_fault=True): the fault that ended the run


# ---------------------------------------------------------------------------
# Decoding: each Instr becomes compute(rows, lanes, ctx) -> values per lane
# ---------------------------------------------------------------------------
def _reader(operand: isa.Operand):
    """A function from a lane's register row to the operand's value."""
    if isinstance(operand, isa.Reg):
        return itemgetter(operand.n)
    value = operand.value
    return lambda row: value


def _alu(ins: isa.Instr):
    return _per_lane(isa.ALU_SEMANTICS[ins.op.name], ins)


def _float(ins: isa.Instr):
    want = isa.FLOAT_MODS[ins.op.name]
    if not isinstance(ins.mod, want):
        raise ValueError(f"{ins}: {ins.op.name} needs mod={want.__name__}")
    semantics, mod = isa.FLOAT_SEMANTICS[ins.op.name], ins.mod
    return _per_lane(lambda *values: semantics(mod, *values), ins)


def _per_lane(fn, ins: isa.Instr):
    """The op `fn` of the instruction's sources, lane by lane."""
    g = [_reader(s) for s in ins.srcs]
    if len(g) == 1:
        g0, = g
        return lambda rows, lanes, ctx: [fn(g0(r)) for r in rows]
    if len(g) == 2:
        g0, g1 = g
        return lambda rows, lanes, ctx: [fn(g0(r), g1(r)) for r in rows]
    g0, g1, g2 = g
    return lambda rows, lanes, ctx: [fn(g0(r), g1(r), g2(r)) for r in rows]


def _s2r(ins: isa.Instr):
    src = ins.srcs[0]
    if not isinstance(src, isa.Imm) or src.value >= len(isa.SReg):
        raise ValueError(f"{ins}: S2R takes an immediate special-register index 0..{len(isa.SReg) - 1}")
    k = src.value
    return lambda rows, lanes, ctx: [ctx.sregs[l][k] for l in lanes]


def _mem(ins: isa.Instr):
    ga, gb = _reader(ins.srcs[0]), _reader(ins.srcs[1])
    if ins.op is isa.Op.ATOM:
        if not (isinstance(ins.mod, tuple) and len(ins.mod) == 2 and isinstance(ins.mod[0], isa.Space)
                and isinstance(ins.mod[1], isa.AtomOp)):
            raise ValueError(f"{ins}: ATOM needs mod=(Space, AtomOp)")
        space, atom = ins.mod
        fn, gc = isa.atom_semantics(atom, space), _reader(ins.srcs[2])

        def atomic(rows, lanes, ctx):
            mem = ctx.spaces[space]
            olds = []
            for r, l in zip(rows, lanes):   # lanes apply their atomics in lane order
                w = ctx.word(space, ga(r), l, "atomic", len(mem))
                old = mem[w]
                new = mem[w] = fn(old, gb(r), gc(r))
                olds.append(old)
                ctx.record(space, w, new)
            return olds
        return atomic

    space = ins.mod
    if not isinstance(space, isa.Space):
        raise ValueError(f"{ins}: {ins.op.name} needs mod=Space")
    if ins.op is isa.Op.LD:
        def load(rows, lanes, ctx):
            mem = ctx.spaces[space]
            words = [ctx.word(space, isa.u32(ga(r) + gb(r)), l, "load", len(mem)) for r, l in zip(rows, lanes)]
            if ctx.loads is not None:           # the stream needs a load's words (Step.loads)
                ctx.loads.append(words)
            return [mem[w] for w in words]
        return load

    gc = _reader(ins.srcs[2])

    def store(rows, lanes, ctx):
        mem = ctx.spaces[space]
        for r, l in zip(rows, lanes):   # same address from several lanes: the highest lane wins
            w = ctx.word(space, isa.u32(ga(r) + gb(r)), l, "store", len(mem))
            mem[w] = v = gc(r)
            ctx.record(space, w, v)
        return None
    return store


def _shfl(ins: isa.Instr):
    mode = ins.mod
    if not isinstance(mode, isa.ShflMode):
        raise ValueError(f"{ins}: SHFL needs mod=ShflMode")
    ga, gb, gc = (_reader(s) for s in ins.srcs)

    def shuffle(rows, lanes, ctx):
        value = {l: ga(r) for r, l in zip(rows, lanes)}
        # an inactive (or out-of-range) source lane yields the caller's own value
        return [value.get(isa.shfl_source_lane(mode, l, gb(r), gc(r)), value[l])
                for r, l in zip(rows, lanes)]
    return shuffle


def _vote(ins: isa.Instr):
    mode = ins.mod
    if not isinstance(mode, isa.VoteMode):
        raise ValueError(f"{ins}: VOTE needs mod=VoteMode")
    ga, gb = _reader(ins.srcs[0]), _reader(ins.srcs[1])

    def vote(rows, lanes, ctx):
        active = 0
        for l in lanes:
            active |= 1 << l
        pred = {l: ga(r) != 0 for r, l in zip(rows, lanes)}
        out = []
        for r in rows:
            members = _LANES_OF[gb(r) & active]
            votes = [pred[l] for l in members]
            if mode is isa.VoteMode.BALLOT:
                out.append(sum(1 << l for l in members if pred[l]))
            elif mode is isa.VoteMode.ALL:
                out.append(int(all(votes)))
            elif mode is isa.VoteMode.ANY:
                out.append(int(any(votes)))
            elif mode is isa.VoteMode.UNI:
                out.append(int(all(votes) or not any(votes)))
            else:
                out.append(active)
        return out
    return vote


def _decode_instr(ins: isa.Instr):
    kind = ins.op.kind
    if kind is isa.Kind.ALU:
        compute = _alu(ins)
    elif kind is isa.Kind.FLOAT:
        compute = _float(ins)
    elif kind is isa.Kind.SREG:
        compute = _s2r(ins)
    elif kind is isa.Kind.MEM:
        compute = _mem(ins)
    elif ins.op is isa.Op.SHFL:
        compute = _shfl(ins)
    else:
        compute = _vote(ins)
    return compute, ins.dst.n


def _check_term(i: int, term: isa.Terminator) -> None:
    targets = {isa.Term.JMP: [term.target], isa.Term.BAR: [term.target],
               isa.Term.BRC: [term.fallthrough], isa.Term.EXIT: []}[term.kind]      # a BRC's target -1: exit
    if any(t < 0 for t in targets):
        raise ValueError(f"block B{i}: {term.kind.name} has no target ({term})")


def _decode(program: isa.Program):
    code = []
    for i, block in enumerate(program.blocks):
        _check_term(i, block.term)
        code.append(([_decode_instr(ins) for ins in block.instrs], block.term))
    return code


# ---------------------------------------------------------------------------
# Launch state
# ---------------------------------------------------------------------------
class _Context:
    """What an executing instruction may touch: memories, special registers,
    the fault location and the trace of memory writes and loads."""

    def __init__(self, spaces, cta):
        self.spaces, self.cta = spaces, cta
        self.warp = self.pc = 0
        self.sregs = None
        self.mem_writes = None   # a list while tracing
        self.loads = None        # a list while tracing

    def word(self, space, address, lane, what, words):
        """The word index of a byte address, or a MemoryFault naming the access."""
        if address % 4 or address >= 4 * words:
            problem = "is not 4-byte aligned" if address % 4 else f"is past the end ({4 * words} bytes)"
        elif what != "load" and space is isa.Space.CONST:
            problem = "is read-only"
        else:
            return address >> 2
        raise MemoryFault(f"{what} at {space.value} byte address {address:#x} {problem} "
                          f"(thread block {self.cta}, warp {self.warp}, lane {lane}, pc B{self.pc})")

    def record(self, space, word, value):
        if self.mem_writes is not None:
            self.mem_writes.append((space, word, value))


class _Warp:
    def __init__(self, index, cta_sregs, block, nthreads, regs):
        self.index = index
        first = index * isa.LANES
        self.thread_ids = [first + l for l in range(isa.LANES)]
        mask = sum(1 << l for l in range(isa.LANES) if first + l < nthreads)
        self.stack = [[0, -1, mask]]          # SIMT stack entries: [pc, reconv_pc, mask]
        self.waiting = False                  # arrived at a barrier, not yet released
        self.regs = regs                      # the machine's register file of this warp slot
        bx, by, _ = block
        self.sregs = []
        for l, t in enumerate(self.thread_ids):
            tid = (t % bx, t // bx % by, t // (bx * by))
            self.sregs.append([*tid, *cta_sregs, l, index])

    def settle(self):
        """Pop entries that reached their reconvergence point (never a -1
        point: lanes left there fault at the next pass instead of vanishing)."""
        stack = self.stack
        while stack and stack[-1][0] == stack[-1][1] >= 0:
            stack.pop()

    def exit_lanes(self, mask):
        for entry in self.stack:
            entry[2] &= ~mask
        self.stack = [e for e in self.stack if e[2]]
        self.settle()


def _next_runnable(warps, turn):
    """Round robin: the first warp from `turn` on that has not exited and is
    not waiting at a barrier."""
    n = len(warps)
    for k in range(n):
        w = warps[(turn + k) % n]
        if w.stack and not w.waiting:
            return w
    return None


class _Machine:
    def __init__(self, code, grid, block, const, glob, trace, max_passes):
        self.code, self.grid, self.block = code, grid, block
        self.const, self.glob = const, glob
        self.steps = [] if trace else None
        self.max_passes = max_passes
        self.passes = self.instructions = 0
        # Thread blocks run one after another on the same 4 warp slots: registers and shared
        # memory start at 0 and then keep what the previous block left (CUDA leaves them
        # undefined; the model's register file and shared memory behave exactly like this)
        self.regfiles = [[[0] * isa.NUM_REGS for _ in range(isa.LANES)] for _ in range(isa.MAX_WARPS)]
        self.shared = [0] * isa.SHARED_WORDS

    def run_block(self, cta: int) -> None:
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        nthreads = bx * by * bz
        cta_sregs = [bx, by, bz, cta % gx, cta // gx % gy, cta // (gx * gy), gx, gy, gz]
        warps = [_Warp(w, cta_sregs, self.block, nthreads, self.regfiles[w]) for w in range(-(-nthreads // isa.LANES))]
        spaces = {isa.Space.GLOBAL: self.glob, isa.Space.SHARED: self.shared,
                  isa.Space.CONST: self.const}
        ctx = _Context(spaces, cta)
        self.live = nthreads        # threads that have not exited
        self.arrived = set()        # thread ids waiting at the barrier
        turn = 0
        while True:
            warp = _next_runnable(warps, turn)
            if warp is None:
                if any(w.waiting for w in warps):
                    self._deadlock(cta, warps)
                return
            self._pass(warp, ctx)
            turn = (warp.index + 1) % len(warps)
            if self.arrived and len(self.arrived) == self.live:
                self.arrived.clear()
                for w in warps:
                    w.waiting = False

    def _pass(self, warp: _Warp, ctx: _Context) -> None:
        if self.passes >= self.max_passes:
            raise PassLimitError(f"the launch did not finish within max_passes={self.max_passes} machine blocks "
                                 f"(an infinite loop?); raise the limit with --max-passes N (API: max_passes=N)")
        self.passes += 1
        top = warp.stack[-1]
        pc, mask = top[0], top[2]
        if pc < 0:
            raise ExecutionError(f"thread block {ctx.cta}, warp {warp.index}: lanes {mask:#06b} reached "
                                 f"reconvergence point -1, which only exiting threads may reach")
        instrs, term = self.code[pc]
        lanes = _LANES_OF[mask]
        rows = [warp.regs[l] for l in lanes]
        ctx.warp, ctx.pc, ctx.sregs = warp.index, pc, warp.sregs
        step = None
        if self.steps is not None:
            step = Step(ctx.cta, warp.index, pc, mask)
            self.steps.append(step)
            ctx.mem_writes, ctx.loads = step.mem_writes, step.loads
        for compute, d in instrs:
            values = compute(rows, lanes, ctx)
            if d and values is not None:   # r0 and ST write no register
                for r, v in zip(rows, values):
                    r[d] = v
                if step is not None:
                    step.reg_writes.extend((l, d, v) for l, v in zip(lanes, values))
            if step is not None:
                step.ran += 1
        self.instructions += len(instrs)
        exited = self._terminate(warp, term, top, rows, lanes)
        if step is not None:
            step.new_top = not warp.stack or warp.stack[-1] is not top
            step.exited = exited
        if term.kind is isa.Term.BAR:
            self._check_arrival(warp, ctx, mask)

    def _terminate(self, warp, term, top, rows, lanes) -> int:
        """End the pass's block; returns the lanes that exited."""
        kind = term.kind
        if kind is isa.Term.JMP:
            top[0] = term.target
        elif kind is isa.Term.BRC:
            c = term.cond.n
            taken = sum(1 << l for r, l in zip(rows, lanes) if r[c])
            mask = top[2]
            if term.target < 0:     # the taken lanes exit, the others go on at fallthrough
                self._exit(warp, taken)
                if top[2]:
                    top[0] = term.fallthrough
                    warp.settle()
                return taken
            if taken == mask:
                top[0] = term.target
            elif taken == 0:
                top[0] = term.fallthrough
            else:   # diverge: the top entry waits at reconv while both paths run
                top[0] = term.reconv
                warp.stack.append([term.fallthrough, term.reconv, mask & ~taken])
                warp.stack.append([term.target, term.reconv, taken])
        elif kind is isa.Term.BAR:
            top[0] = term.target
            warp.waiting = True
            self.arrived.update(warp.thread_ids[l] for l in lanes)
        else:
            mask = top[2]
            self._exit(warp, mask)
            return mask
        warp.settle()
        return 0

    def _exit(self, warp, lanes: int) -> None:
        warp.exit_lanes(lanes)
        self.live -= len(_LANES_OF[lanes])

    def _check_arrival(self, warp: _Warp, ctx: _Context, mask: int) -> None:
        """A divergent barrier: the warp arrived at a BAR with only some of its live lanes.

        The lanes that did not arrive are parked on the warp's own SIMT stack, and the warp
        now waits at the barrier until every live thread has arrived, which those lanes never
        can (they only run when the warp does; they are live, so they count). So the barrier
        can never complete: raise now rather than when no warp is left to run (which is then
        the only way a deadlock arises: a barrier all of whose warps arrive with all their
        live lanes releases after the last arrival's pass). The BAR's pass is in the trace."""
        live = 0
        for entry in warp.stack:
            live |= entry[2]
        if mask == live:
            return
        missing = live & ~mask
        threads = lambda m: [warp.thread_ids[l] for l in _LANES_OF[m]]
        raise DeadlockError(
            f"deadlock in thread block {ctx.cta}: divergent barrier: warp {warp.index} reached the barrier "
            f"ending B{ctx.pc} with lanes {mask:#06b} (threads {threads(mask)}) while its live lanes "
            f"{missing:#06b} (threads {threads(missing)}, linear thread ids) wait on its SIMT stack "
            f"and can never arrive")

    def _deadlock(self, cta, warps) -> None:
        """No warp can run but some wait at a barrier. Unreachable since `_check_arrival`
        (kept as a safety net): every waiting warp arrived with all its live lanes, so the
        last arrival (or exit) completed the barrier."""
        waiting = [w for w in warps if w.waiting]
        live = {w.thread_ids[l] for w in warps for e in w.stack for l in _LANES_OF[e[2]]}
        missing = sorted(live - self.arrived)
        where = ", ".join(f"warp {w.index} (next pc B{w.stack[-1][0]})" for w in waiting)
        raise DeadlockError(f"deadlock in thread block {cta}: {where} wait at a barrier that threads "
                            f"{missing} (linear thread ids) can never reach")


def run(program: isa.Program, grid: tuple[int, int, int], block: tuple[int, int, int],
        params: list[int], memory: np.ndarray, *, trace: bool = False,
        max_passes: int = DEFAULT_MAX_PASSES) -> Execution:
    """Run `program` on a grid of thread blocks, one block after another.

    params: the CONST words for program.params (index = Param.word); memory:
    np.uint32[GLOBAL_WORDS] global memory, updated in place (also when a fault
    stops the launch part way)."""
    return run_launch(Launch.from_words(program, grid, block, params, memory), trace=trace, max_passes=max_passes)


def run_launch(launch: Launch, *, trace: bool = False, max_passes: int = DEFAULT_MAX_PASSES,
               keep_fault: bool = False) -> Execution:
    """Run a checked launch, its global memory updated in place. keep_fault: a memory fault or a
    deadlock ends the run and is returned in Execution.fault, the trace up to it kept (the
    machine's stream ends in FAULT there) instead of raised."""
    start = time.perf_counter()
    glob = launch.memory.tolist()
    machine = _Machine(_decode(launch.program), launch.grid, launch.machine_block, launch.const, glob, trace, max_passes)
    fault = None
    try:
        for cta in range(launch.ctas):
            machine.run_block(cta)
    except (MemoryFault, DeadlockError) as e:
        if not keep_fault:
            raise
        fault = e
    finally:
        launch.memory[:] = glob
    return Execution(machine.instructions, machine.passes, time.perf_counter() - start, machine.steps, fault)
