"""Register allocation for the virtual IR: liveness, an interference graph
coloured into r1..r31 (Chaitin-Briggs style with copy preference), then
rematerialisation of invariant values and spilling to shared memory when 31
registers are not enough. See docs/lowering.md, "Register allocation"."""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.errors import MachineLimitError, plural
from qwengpu.liveness import live_out
from qwengpu.toolchain.cfg import VBlock, VInstr, eliminate_dead_code, invariant_registers, read_counts, uses

Op, Imm = isa.Op, isa.Imm


def liveness(blocks: list[VBlock]) -> list[set[int]]:
    """live-out set of each block."""
    steps = [[(uses(ins), ins.dst) for ins in b.instrs] + [([b.term.cond] if b.term.cond is not None else [], None)]
             for b in blocks]
    return live_out([b.term.succs() for b in blocks], steps)


SPILL_SLOT_WORDS = isa.MACHINE_BLOCK_THREADS     # one word per thread of the block


@dataclass
class Allocation:
    colours: dict[int, int]
    regs_used: int
    spill_slots: int
    spill_top: int          # the spill area ends below this shared word


def spill_top(shared_words: int) -> int:
    """Where the spill area ends: the top of the lane words (isa.LANE_WORDS), whose loads take one
    pass, when the kernel's own shared words leave a slot below it; else shared memory's top."""
    lane_words = isa.LANE_WORDS[isa.Space.SHARED]
    return lane_words if shared_words + SPILL_SLOT_WORDS <= lane_words else isa.SHARED_WORDS


def allocate_registers(blocks: list[VBlock], kernel: str, next_vreg: int, shared_words: int = 0) -> Allocation:
    """Colour with r1..r31. When that fails: first recompute invariant values
    next to their uses (rematerialisation), then spill a register to shared
    memory (a slot of one word per thread below spill_top), and retry."""
    tried: set[int] = set()
    no_spill: set[int] = set()
    first_need = None
    top = spill_top(shared_words)
    spill = _Spiller(blocks, next_vreg, top)
    while True:
        graph, moves = interference(blocks)
        colours = _colour(graph, moves, isa.USABLE_REGS)
        if colours is not None:
            return Allocation(colours, max(colours.values(), default=0), spill.slots, top)
        if first_need is None:
            first_need = max(_colour(graph, moves, len(graph) + 1).values(), default=0)
        inv = invariant_registers(blocks)
        cands = [v for v in inv if v in graph and v not in tried and _remat_cost(v, inv) <= 6]
        if cands:
            weight = _read_weights(blocks)
            v = max(cands, key=lambda x: (len(graph[x]) / (_remat_cost(x, inv) * weight.get(x, 1)), -x))
            tried.add(v)
            before = spill.next_vreg
            spill.next_vreg = rematerialize(blocks, v, inv, spill.next_vreg)
            tried |= set(range(before + 1, spill.next_vreg + 1))      # never split the copies again
            no_spill |= set(range(before + 1, spill.next_vreg + 1))
            eliminate_dead_code(blocks)
            continue
        cands = [v for v in graph if v not in no_spill and v not in inv]
        room = top - shared_words - SPILL_SLOT_WORDS * (spill.slots + 1)
        if not cands or room < 0:
            raise MachineLimitError(f"kernel {kernel} needs {first_need} registers; a lane has {isa.USABLE_REGS}"
                                    + (_no_spill_room(spill.slots, shared_words, top) if cands else
                                       " and nothing more can be spilled")
                                    + "; split the work into smaller steps or keep fewer values live at once")
        refs = read_counts(blocks, count_writes=True)
        v = min(cands, key=lambda x: (refs.get(x, 1) / max(1, len(graph[x])), x))
        before = spill.next_vreg
        spill.spill(v)
        no_spill |= set(range(before + 1, spill.next_vreg + 1))
        tried |= set(range(before + 1, spill.next_vreg + 1))


def _no_spill_room(slots: int, shared_words: int, top: int) -> str:
    """Spills live in shared memory after the kernel's own: say how much the next one lacked."""
    left = top - shared_words - SPILL_SLOT_WORDS * slots
    return (f"; {plural(slots, 'value')} {'was' if slots == 1 else 'were'} spilled and the next needs "
            f"{plural(SPILL_SLOT_WORDS, 'more word', 'more words')} of the spill area (shared memory after the "
            f"kernel's {plural(shared_words, 'word')}: {plural(left, 'word')} left of {top})")


class _Spiller:
    """Spill slot k of a thread lives at shared byte address
    4 * (top - SPILL_SLOT_WORDS * (k + 1)) + 4 * (4 * warpid + laneid).
    The per-thread offset is an invariant register computed at the entry
    (and rematerialised like any other when registers run short)."""

    def __init__(self, blocks: list[VBlock], next_vreg: int, top: int):
        self.blocks, self.next_vreg, self.slots, self.top = blocks, next_vreg, 0, top
        self.offset: int | None = None

    def fresh(self) -> int:
        self.next_vreg += 1
        return self.next_vreg

    def thread_offset(self) -> int:
        if self.offset is None:
            w, lane, a, b, off = (self.fresh() for _ in range(5))
            self.blocks[0].instrs[:0] = [
                VInstr(Op.S2R, w, [Imm(int(isa.SReg.WARPID))]), VInstr(Op.S2R, lane, [Imm(int(isa.SReg.LANEID))]),
                VInstr(Op.SHL, a, [w, Imm(4)]), VInstr(Op.SHL, b, [lane, Imm(2)]), VInstr(Op.ADD, off, [a, b])]
            self.offset = off
        return self.offset

    def spill(self, v: int) -> None:
        base = Imm(4 * (self.top - SPILL_SLOT_WORDS * (self.slots + 1)))
        self.slots += 1
        off = self.thread_offset()
        for blk in self.blocks:
            new: list[VInstr] = []
            for ins in blk.instrs:
                if v in ins.srcs:
                    t = self.fresh()
                    new.append(VInstr(Op.LD, t, [off, base], isa.Space.SHARED, ins.line))
                    ins.srcs = [t if s == v else s for s in ins.srcs]
                new.append(ins)
                if ins.dst == v:
                    t = self.fresh()
                    ins.dst = t
                    new.append(VInstr(Op.ST, None, [off, base, t], isa.Space.SHARED, ins.line))
            if blk.term.cond == v:
                t = self.fresh()
                new.append(VInstr(Op.LD, t, [off, base], isa.Space.SHARED))
                blk.term.cond = t
            blk.instrs = new


LOOP_WEIGHT = 8      # a read in a loop counts as this many reads outside it, per loop around it


def loop_depths(blocks: list[VBlock]) -> list[int]:
    """How many natural loops contain each block (a back edge u -> h found by a depth-first
    search from the entry; its loop: h and the blocks that reach u without passing h)."""
    preds: list[list[int]] = [[] for _ in blocks]
    for i, b in enumerate(blocks):
        for t in b.term.succs():
            preds[t].append(i)
    depth = [0] * len(blocks)
    on_stack, seen, stack = {0}, {0}, [(0, iter(blocks[0].term.succs()))]
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            on_stack.discard(node)
            stack.pop()
        elif nxt in on_stack:               # back edge node -> nxt
            body, work = {nxt, node}, [node]
            while work:
                x = work.pop()
                if x == nxt:
                    continue
                for p in preds[x]:
                    if p not in body:
                        body.add(p)
                        work.append(p)
            for x in body:
                depth[x] += 1
        elif nxt not in seen:
            seen.add(nxt)
            on_stack.add(nxt)
            stack.append((nxt, iter(blocks[nxt].term.succs())))
    return depth


def _read_weights(blocks: list[VBlock]) -> dict[int, int]:
    """Each register's reads, a read in a loop nest of depth d counting LOOP_WEIGHT ** d."""
    w: dict[int, int] = {}
    for b, d in zip(blocks, loop_depths(blocks)):
        for ins in b.instrs:
            for v in uses(ins):
                w[v] = w.get(v, 0) + LOOP_WEIGHT ** d
        if b.term.cond is not None:
            w[b.term.cond] = w.get(b.term.cond, 0) + LOOP_WEIGHT ** d
    return w


def _remat_cost(v: int, inv: dict[int, VInstr]) -> int:
    ins = inv[v]
    own = 3 if ins.op is Op.LD else 1       # a load ends its machine block
    return own + sum(_remat_cost(s, inv) for s in ins.srcs if isinstance(s, int))


def rematerialize(blocks: list[VBlock], v: int, inv: dict[int, VInstr], next_vreg: int) -> int:
    """Replace every read of v with a fresh copy of its computation placed
    just before the reader."""
    def clone(x, out):
        nonlocal next_vreg
        ins = inv[x]
        srcs = [clone(s, out) if isinstance(s, int) else s for s in ins.srcs]
        next_vreg += 1
        out.append(VInstr(ins.op, next_vreg, srcs, ins.mod, ins.line))
        return next_vreg

    for b in blocks:
        new: list[VInstr] = []
        recent = None           # (copy, index): reads a few instructions apart share one copy
        for ins in b.instrs:
            if v in ins.srcs:
                if recent is None or len(new) - recent[1] > REMAT_REUSE_DISTANCE:
                    recent = (clone(v, new), len(new))
                ins.srcs = [recent[0] if s == v else s for s in ins.srcs]
                recent = (recent[0], len(new))
            new.append(ins)
        if b.term.cond == v:
            b.term.cond = recent[0] if recent and len(new) - recent[1] <= REMAT_REUSE_DISTANCE else clone(v, new)
        b.instrs = new
    return next_vreg


REMAT_REUSE_DISTANCE = 4


def interference(blocks: list[VBlock]):
    """Interference graph over the registers that are read somewhere (those
    only written go to r0), and the move partners of each register."""
    outs = liveness(blocks)
    used = {s for b in blocks for ins in b.instrs for s in uses(ins)}
    used |= {b.term.cond for b in blocks if b.term.cond is not None}
    graph: dict[int, set[int]] = {v: set() for v in used}
    moves: dict[int, set[int]] = {}
    for b, out in zip(blocks, outs):
        live = set(out)
        if b.term.cond is not None:
            live.add(b.term.cond)
        for ins in reversed(b.instrs):
            d = ins.dst
            if d is not None and d in graph:
                copy = ins.srcs[0] if ins.op is Op.MOV and isinstance(ins.srcs[0], int) else None
                if copy is not None:
                    moves.setdefault(d, set()).add(copy)
                    moves.setdefault(copy, set()).add(d)
                for v in live:
                    if v != d and v != copy:
                        graph[d].add(v)
                        graph[v].add(d)
            live.discard(d)
            live |= set(uses(ins))
    return graph, moves


def _colour(graph, moves, k: int) -> dict[int, int] | None:
    degree = {v: len(n) for v, n in graph.items()}
    remaining = set(graph)
    stack = []
    while remaining:
        low = [v for v in remaining if degree[v] < k]
        v = min(low) if low else max(remaining, key=lambda x: (degree[x], -x))
        stack.append(v)
        remaining.discard(v)
        for n in graph[v]:
            if n in remaining:
                degree[n] -= 1
    colour: dict[int, int] = {}
    for v in reversed(stack):
        taken = {colour[n] for n in graph[v] if n in colour}
        preferred = [colour[m] for m in moves.get(v, ()) if m in colour and colour[m] not in taken]
        free = preferred or [c for c in range(1, k + 1) if c not in taken]
        if not free:
            return None
        colour[v] = free[0]
    return colour
