"""Thread tiles: a thread block of more threads than the machine's (isa.MACHINE_BLOCK_THREADS)
runs as tiles, each a box of MACHINE_BLOCK_THREADS consecutive threads of the block (CUDA's
thread order, x fastest), one tile after another on the machine's threads.

The kernel is cut at its barriers into regions: what runs from the entry, or from a barrier, to
the next barrier or the exit (the blocks reachable from there without passing a barrier, copied
into each region that reaches them). Each region becomes a loop over the tiles:

    prologue   a thread that exited in an earlier region skips its tile; the values that live
               across the barrier the region starts at are loaded back for the tile's thread
    the region's blocks, where a thread index is the machine's plus the tile's offset
    a barrier  stores the values that live across it, and notes which barrier it was
    an exit    notes that the tile's thread exited
    latch      the next tile (the offsets step like an odometer); after the last tile the noted
               barrier, a real one, then that barrier's region; or the exit

So every thread of the block finishes a region before any starts the next, as a barrier
requires. A value that lives across a barrier stays in its register when it is the same for
every thread and tile, is recomputed when a short chain gives it from the thread's indices, is
copied at the barrier when every thread computes it alike (a loop counter), and otherwise is
stored a word per thread of the block in shared memory (the save area): `_Tiler.classify`. A
tile's warp is four consecutive threads of the block, as CUDA's is, so shuffles and votes see
the block's warps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from qwengpu import isa
from qwengpu.errors import MachineLimitError
from qwengpu.liveness import live_out
from qwengpu.toolchain.cfg import VBlock, VInstr, VTerm, definitions, immediate_post_dominators, uses

Op, Imm, Term, SReg = isa.Op, isa.Imm, isa.Term, isa.SReg
TID = (SReg.TID_X, SReg.TID_Y, SReg.TID_Z)
NTID = (SReg.NTID_X, SReg.NTID_Y, SReg.NTID_Z)
THREAD_SREGS = {*TID, SReg.LANEID, SReg.WARPID}      # what differs between a block's threads
EXITED = 0                                           # `next`: no barrier noted (the tile's threads exited)
ALIVE = -1                # the save area's key of the flag: the thread has not exited
RECOMPUTE_COST = 12       # a value that lives across a barrier is recomputed by at most this many instructions


@dataclass(frozen=True)
class Tiling:
    """A thread block (`block`) run as tiles of the machine's threads (`tile`, its dims)."""
    block: tuple[int, int, int]
    tile: tuple[int, int, int]

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def tiles(self) -> int:
        return self.threads // isa.MACHINE_BLOCK_THREADS

    @property
    def stepped(self) -> list[int]:
        """The dims the tiles step through (the tile is narrower than the block there)."""
        return [c for c in range(3) if self.tile[c] < self.block[c]]


def tiling(block: tuple[int, int, int]) -> Tiling | None:
    """How a block of these dims runs: None when the machine's threads hold it, else its tiles
    (isa.block_tile: MachineLimitError for a block that cannot run in tiles)."""
    tile = isa.block_tile(block)
    return Tiling(block, tile) if tile else None


def _closure(defs: dict[int, VInstr], leaves: set[int], ok) -> set[int]:
    """The registers of `defs` whose definition is `ok` and reads only immediates, `leaves` and
    registers in the closure."""
    out: set[int] = set()
    changed = True
    while changed:
        changed = False
        for v, ins in defs.items():
            if v not in out and ok(ins) and all(isinstance(s, Imm) or s in out or s in leaves for s in ins.srcs):
                out.add(v)
                changed = True
    return out


def _decided(succs: list[list[int]], branch: int, join: int) -> set[int]:
    """The blocks that the branch ending block `branch` decides whether a thread runs: those
    reachable from its successors before `join`, where its paths meet (its post-dominator)."""
    seen, todo = set(), list(succs[branch])
    while todo:
        b = todo.pop()
        if b != join and b not in seen:
            seen.add(b)
            todo += succs[b]
    return seen


def check_save_area(kernel: str, t: Tiling, words: int, first: int) -> None:
    """The save area (`words` from shared word `first`) must fit in shared memory."""
    if first + words > isa.SHARED_WORDS:
        raise MachineLimitError(
            f"kernel {kernel}: a block of {t.block} runs as {t.tiles} tiles of {isa.MACHINE_BLOCK_THREADS} threads, "
            f"and what lives across its barriers takes {words // t.threads} words a thread ({words} words of shared "
            f"memory after the kernel's own {first}); the machine has {isa.SHARED_WORDS}: use fewer threads a "
            f"block, or keep fewer values live across __syncthreads()")


class _Tiler:
    """Builds the tiled program (module docstring) from the kernel's virtual-IR blocks."""

    def __init__(self, blocks: list[VBlock], nvreg: int, t: Tiling, save_base: int):
        self.old, self.nvreg, self.t, self.save_base = blocks, nvreg, t, save_base
        self.new: list[VBlock] = []
        self.j = self.fresh()                                 # the tile
        self.offset = {c: self.fresh() for c in t.stepped}    # the tile's first thread, per stepped dim
        self.next = self.fresh()                              # the barrier the tile's threads reached

    def fresh(self) -> int:
        self.nvreg += 1
        return self.nvreg

    def block(self, instrs: list[VInstr], term: VTerm | None = None) -> int:
        self.new.append(VBlock(instrs, term))
        return len(self.new) - 1

    # -- the kernel's thread indices -------------------------------------------------------------
    def rewrite_sregs(self) -> None:
        """A thread index: the machine's plus the tile's offset; the block's dims and warp: the
        block's (a tile holds MAX_WARPS of the block's warps)."""
        for b in self.old:
            out = []
            for ins in b.instrs:
                sreg = SReg(ins.srcs[0].value) if ins.op is Op.S2R else None
                if sreg in NTID:
                    ins = VInstr(Op.MOV, ins.dst, [Imm(self.t.block[NTID.index(sreg)])], line=ins.line)
                elif sreg in TID and TID.index(sreg) in self.offset or sreg is SReg.WARPID:
                    machine = self.fresh()
                    out.append(VInstr(Op.S2R, machine, ins.srcs, line=ins.line))
                    if sreg is SReg.WARPID:
                        add = self.fresh()
                        out.append(VInstr(Op.SHL, add, [self.j, Imm(isa.MAX_WARPS.bit_length() - 1)]))
                    else:
                        add = self.offset[TID.index(sreg)]
                    ins = VInstr(Op.ADD, ins.dst, [machine, add], line=ins.line)
                out.append(ins)
            b.instrs = out

    # -- what lives across barriers ---------------------------------------------------------------
    def classify(self) -> None:
        """How a tile's thread gets back each value after a barrier. `uniform`: one definition by a
        pure op from uniform sources (or a CONST load, or a shared special register): the same for
        every thread and every tile, so it stays in its register. `recompute`: one pure definition
        that a short chain recomputes from uniform values, the thread's indices and immediates.
        `shared`: more definitions, each pure from uniform or shared sources and reached by every
        thread alike (no branch on a value that is neither decides whether it runs): the same for
        every thread, but redefined as each tile runs (a loop counter), so each tile starts from
        a copy taken at the barrier (`snapshot`). Everything else is kept a word per thread.
        `divergent`: the blocks that a branch on a value of neither kind decides whether a thread
        runs."""
        defs = definitions(self.old)
        pure = {v: d for v, d in defs.items()
                if all(ins.op.kind in (isa.Kind.ALU, isa.Kind.FLOAT, isa.Kind.SREG)
                       or ins.op is Op.LD and ins.mod is isa.Space.CONST for ins in d)}
        single = {v: d[0] for v, d in pure.items() if len(d) == 1}
        self.uniform = _closure(single, set(), lambda ins: ins.op is not Op.S2R or SReg(ins.srcs[0].value)
                                not in THREAD_SREGS)
        leaves = self.uniform | {self.j, *self.offset.values()}
        recompute = _closure(single, leaves, lambda ins: True)     # the closure has no cycles

        def chain(v) -> set[int]:
            return set() if v in leaves else {v}.union(*(chain(s) for s in uses(single[v])))
        self.recompute = {v: single[v] for v in recompute if len(chain(v)) <= RECOMPUTE_COST}
        # shared: the largest set that holds, from the optimistic start
        succs = [[] if b.term.kind is Term.BAR else b.term.succs() for b in self.old]     # within regions
        ipdom = immediate_post_dominators(succs)
        decided = {x: _decided(succs, x, ipdom[x]) for x, b in enumerate(self.old) if b.term.kind is Term.BRC}
        block_of = {id(ins): i for i, b in enumerate(self.old) for ins in b.instrs}
        shared = {v for v in pure if v not in self.uniform and not any(
            ins.op is Op.S2R and SReg(ins.srcs[0].value) in THREAD_SREGS for ins in pure[v])}
        while True:
            same = self.uniform | shared
            self.divergent = set().union(*(d for x, d in decided.items() if self.old[x].term.cond not in same))
            keep = {v for v in shared if all(block_of[id(ins)] not in self.divergent
                                             and all(isinstance(s, Imm) or s in same for s in ins.srcs)
                                             for ins in pure[v])}
            if keep == shared:
                break
            shared = keep
        self.shared = shared
        self.snapshot = {v: self.fresh() for v in sorted(shared)}

    def live_across(self) -> dict[int, set[int]]:
        """For each barrier (its block), the kernel's values that live across it and are not
        uniform (the tile loop's own registers are the loop's business)."""
        steps = [[(uses(ins), ins.dst) for ins in b.instrs] + [([b.term.cond] if b.term.cond is not None else [], None)]
                 for b in self.old]
        out = live_out([b.term.succs() for b in self.old], steps)
        loop = {self.j, *self.offset.values()}
        return {i: out[i] - self.uniform - loop for i, b in enumerate(self.old) if b.term.kind is Term.BAR}

    def recomputed(self, values: list[int]) -> list[VInstr]:
        """The instructions that recompute `values`, their sources first, each once."""
        done, out = set(), []

        def emit(v):
            if v in done or v not in self.recompute:
                return
            done.add(v)
            ins = self.recompute[v]
            for s in uses(ins):
                emit(s)
            out.append(VInstr(ins.op, ins.dst, list(ins.srcs), ins.mod, ins.line))
        for v in values:
            emit(v)
        return out

    # -- the save area ----------------------------------------------------------------------------
    def place(self, kept: set[int], alive: bool) -> int:
        """Lay out the save area for the values `kept` there (and the alive flag): a word per
        thread of the block for each; its words."""
        kept = sorted(kept) + ([ALIVE] if alive else [])
        self.word = {v: self.save_base + k * self.t.threads for k, v in enumerate(kept)}
        return len(kept) * self.t.threads

    def thread_address(self) -> tuple[list[VInstr], int]:
        """Instructions computing 4 * (the tile's thread's index in the block): its save words' offset."""
        w, lane, a, b, c, d, addr = (self.fresh() for _ in range(7))
        return [VInstr(Op.S2R, w, [Imm(int(SReg.WARPID))]), VInstr(Op.S2R, lane, [Imm(int(SReg.LANEID))]),
                VInstr(Op.SHL, a, [w, Imm(2 + (isa.LANES.bit_length() - 1))]), VInstr(Op.SHL, b, [lane, Imm(2)]),
                VInstr(Op.ADD, c, [a, b]),
                VInstr(Op.SHL, d, [self.j, Imm(2 + (isa.MACHINE_BLOCK_THREADS.bit_length() - 1))]),
                VInstr(Op.ADD, addr, [c, d])], addr

    def accesses(self, op: Op, values: list) -> list[VInstr]:
        """Loads (op LD) or stores (ST) of the tile's thread's save words: `values` are registers,
        or (ALIVE, x): the alive flag, loaded into register x or stored as immediate x."""
        if not values:
            return []
        instrs, addr = self.thread_address()
        for v in values:
            key, data = v if isinstance(v, tuple) else (v, v)
            where = [addr, Imm(4 * self.word[key])]
            instrs.append(VInstr(Op.LD, data, where, isa.Space.SHARED) if op is Op.LD else
                          VInstr(Op.ST, None, where + [Imm(data) if isinstance(v, tuple) else data], isa.Space.SHARED))
        return instrs

    # -- the tile loop ------------------------------------------------------------------------------
    def step(self) -> list[VInstr]:
        """The next tile: j + 1, and the offsets' odometer (the first stepped dim by the tile's
        size there, each later one by the carry of the one before)."""
        t, instrs = self.t, [VInstr(Op.ADD, self.j, [self.j, Imm(1)])]
        dims = t.stepped
        for k, c in enumerate(dims):
            o = self.offset[c]
            if k == 0:
                instrs.append(VInstr(Op.ADD, o, [o, Imm(t.tile[c])]))
            else:
                instrs.append(VInstr(Op.ADD, o, [o, carry]))
            if k + 1 < len(dims):
                carry = self.fresh()
                instrs += [VInstr(Op.SETEQ, carry, [o, Imm(t.block[c])]), VInstr(Op.SEL, o, [carry, Imm(0), o])]
        return instrs

    def reset(self) -> list[VInstr]:
        return [VInstr(Op.MOV, v, [Imm(0)]) for v in (self.j, *self.offset.values(), self.next)]

    def regions(self) -> list[tuple[int, list[int]]]:
        """Each region: its start block and its blocks (reachable without passing a barrier)."""
        starts = [0] + sorted({b.term.target for b in self.old if b.term.kind is Term.BAR} - {0})
        out = []
        for s in starts:
            seen, todo = [s], [s]
            while todo:
                b = self.old[todo.pop()]
                for n in ([] if b.term.kind is Term.BAR else b.term.succs()):
                    if n not in seen:
                        seen.append(n)
                        todo.append(n)
            out.append((s, seen))
        return out

    def build(self) -> tuple[list[VBlock], int]:
        """The tiled program and its save area's words."""
        self.rewrite_sregs()
        self.classify()
        across = self.live_across()
        regions = self.regions()
        # a thread may exit while others go on to a barrier: note which threads exited
        track = bool(across) and any(b.term.kind is Term.EXIT and i in self.divergent for i, b in enumerate(self.old))
        words = self.place(set().union(*across.values()) - set(self.recompute) - self.shared, track)
        barrier_id = {i: k + 1 for k, i in enumerate(sorted(across))}
        init = self.block(self.reset())
        loops = [self.region(r, s, blocks, across, barrier_id, track) for r, (s, blocks) in enumerate(regions)]
        self.new[init].term = VTerm(Term.JMP, loops[0][0])
        region_of = {s: r for r, (s, _) in enumerate(regions)}
        for _, bars in loops:                # the real barriers, then their regions
            for i, blk in bars.items():
                self.new[blk].term = VTerm(Term.BAR, loops[region_of[self.old[i].term.target]][0])
        return self.new, words

    def region(self, r: int, start: int, blocks: list[int], across, barrier_id, track: bool):
        """Region r's tile loop; returns its prologue and its barriers (old barrier block -> the
        new block that resets the loop and holds the real barrier)."""
        restore = sorted(set().union(*(across[i] for i in across if self.old[i].term.target == start)))
        prologue = self.block([])
        copy = {i: self.block([VInstr(x.op, x.dst, list(x.srcs), x.mod, x.line) for x in self.old[i].instrs])
                for i in blocks}
        latch = self.block(self.step())
        exits = any(self.old[i].term.kind is Term.EXIT for i in blocks)
        if exits:
            exit_note = self.block(self.accesses(Op.ST, [(ALIVE, 0)] if track else []), VTerm(Term.JMP, latch))
        bars = {}
        for i in blocks:
            old = self.old[i].term
            if old.kind is Term.BAR:
                alive = [(ALIVE, 1)] if track and r == 0 else []
                note = self.accesses(Op.ST, sorted(across[i] & set(self.word)) + alive)
                note.append(VInstr(Op.MOV, self.next, [Imm(barrier_id[i])]))
                term = VTerm(Term.JMP, self.block(note, VTerm(Term.JMP, latch)))
                snap = [VInstr(Op.MOV, self.snapshot[v], [v]) for v in sorted(across[i] & self.shared)]
                bars[i] = self.block(self.reset() + snap)
            elif old.kind is Term.EXIT:
                term = VTerm(Term.JMP, exit_note)
            else:
                term = VTerm(old.kind, copy[old.target], old.cond,
                             copy[old.fallthrough] if old.kind is Term.BRC else -1)
            self.new[copy[i]].term = term
        # the prologue: skip an exited thread's tile; get back what lives across the barrier
        body = copy[start]
        if restore:
            body = self.block(self.accesses(Op.LD, [v for v in restore if v in self.word])
                              + [VInstr(Op.MOV, v, [self.snapshot[v]]) for v in restore if v in self.shared]
                              + self.recomputed(restore), VTerm(Term.JMP, body))
        if track and r > 0:
            live = self.fresh()
            self.new[prologue].instrs = self.accesses(Op.LD, [(ALIVE, live)])
            self.new[prologue].term = VTerm(Term.BRC, body, live, latch)
        else:
            self.new[prologue].term = VTerm(Term.JMP, body)
        # after the last tile: the exit (first, so its lanes leave before the others reach the barrier) or the barrier
        dispatch, more = self.block([]), self.fresh()
        self.new[latch].instrs.append(VInstr(Op.SETLTU, more, [self.j, Imm(self.t.tiles)]))
        self.new[latch].term = VTerm(Term.BRC, prologue, more, dispatch)
        self.dispatch(dispatch, list(bars.values()), [barrier_id[i] for i in bars], exits)
        return prologue, bars

    def dispatch(self, at: int, bars: list[int], ids: list[int], can_exit: bool) -> None:
        """Block `at` goes on to the barrier noted in `next` (its block in `bars`, by id), or exits."""
        if can_exit or not bars:
            done = self.block([], VTerm(Term.EXIT))
            if not bars:
                self.new[at].term = VTerm(Term.JMP, done)
                return
            exited = self.fresh()
            rest = self.block([])
            self.new[at].instrs.append(VInstr(Op.SETEQ, exited, [self.next, Imm(EXITED)]))
            self.new[at].term = VTerm(Term.BRC, done, exited, rest)
            at = rest
        for bar, k in zip(bars[:-1], ids):
            hit, rest = self.fresh(), self.block([])
            self.new[at].instrs.append(VInstr(Op.SETEQ, hit, [self.next, Imm(k)]))
            self.new[at].term = VTerm(Term.BRC, bar, hit, rest)
            at = rest
        self.new[at].term = VTerm(Term.JMP, bars[-1])


def tile_threads(blocks: list[VBlock], nvreg: int, t: Tiling, save_base: int) -> tuple[list[VBlock], int, int]:
    """The kernel's blocks run as t's tiles (module docstring): the new blocks, the next free
    virtual register, and the save area's words (from shared word `save_base`)."""
    if any(b.term.kind is Term.BAR and b.term.target == 0 for b in blocks):
        blocks = _fresh_entry(blocks)              # the first region's tiles start where no barrier leads
    tiler = _Tiler(blocks, nvreg, t, save_base)
    new, words = tiler.build()
    return new, tiler.nvreg, words


def _fresh_entry(blocks: list[VBlock]) -> list[VBlock]:
    """The blocks behind a new, empty entry block that jumps to the old one."""
    def moved(term: VTerm) -> VTerm:
        shift = lambda x: x + 1 if x >= 0 else x      # noqa: E731
        return VTerm(term.kind, shift(term.target), term.cond, shift(term.fallthrough))
    return [VBlock([], VTerm(Term.JMP, 1))] + [VBlock(b.instrs, moved(b.term)) for b in blocks]
