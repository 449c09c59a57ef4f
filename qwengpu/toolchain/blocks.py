"""The last stage of lowering (lower.py), machine blocks: the register-allocated virtual IR as the
ROM's blocks, with reconvergence, as an isa.Program.

Takes the IR blocks, each virtual register's machine register and the program's other
fields; gives the isa.Program (`machine_program`). Each IR block splits into machine blocks
of at most BLOCK_SLOTS passes (`schedule`; pure instructions move across a barrier where
that saves a block end, `balance_barriers`), blocks that only jump fold away, each BRC's
`reconv` is its immediate post-dominator but for return paths (`set_reconvergence`), and a
BRC into a bare EXIT exits its lanes itself (`fold_exits`). Where the ROM cannot hold a
block's passes as packed, its IR block is packed again, knowing more (`_repack`).
"""
from __future__ import annotations

from dataclasses import replace

from qwengpu import isa
from qwengpu.machine.encoding import block_passes, encode, fits_pre_alu, fixed_value, machine_blocks, overflowing
from qwengpu.toolchain.cfg import VBlock, VInstr, VTerm, immediate_post_dominators, movable_to_end, ordered, pure

Op, Imm, Term = isa.Op, isa.Imm, isa.Term


def machine_program(blocks: list[VBlock], reg_of, shape: isa.Program) -> isa.Program:
    """`shape` (every field of the program but its blocks) with the machine blocks of
    `blocks`, virtual register v in machine register reg_of(v)."""
    stays: dict[int, frozenset | None] = {}
    while True:
        machine, source = form_blocks(blocks, reg_of, stays)
        set_reconvergence(machine)
        machine, kept = fold_exits(machine)
        prog = replace(shape, blocks=machine)
        if not _repack(prog, [source[i] for i in kept], stays):
            return prog

def form_blocks(blocks: list[VBlock], reg_of, stays: dict[int, frozenset | None] | None = None
                ) -> tuple[list[isa.MachineBlock], list[int | None]]:
    """Split IR blocks into machine blocks and fold blocks that only jump. `stays`: IR block ->
    the fixed values whose definitions take a pass there (`schedule`; default none; None:
    pack by instruction count). Returns the machine blocks and the IR block each comes from
    (None: a copy of a bare EXIT)."""
    stays = stays or {}
    machine = [[mi for mi in (_machine_instr(ins, reg_of) for ins in b.instrs) if mi is not None] for b in blocks]
    conds = [isa.Reg(reg_of(b.term.cond)) if b.term.kind is Term.BRC else None for b in blocks]
    balance_barriers(blocks, machine, conds, stays)
    chunks: list[list] = []     # [instrs, VTerm-or-("next")]
    first, source = [], []
    for i, (b, instrs, cond) in enumerate(zip(blocks, machine, conds)):
        first.append(len(chunks))
        pieces = schedule(instrs, cond, stays.get(i, frozenset())) or [[]]
        for j, p in enumerate(pieces):
            chunks.append([p, b.term if j == len(pieces) - 1 else None])
            source.append(i)
    # terminators with machine block numbers
    raw = []
    for i, (instrs, t) in enumerate(chunks):
        if t is None:
            raw.append((instrs, Term.JMP, i + 1, None, -1))
        else:
            tgt = first[t.target] if t.target >= 0 else -1
            ft = first[t.fallthrough] if t.fallthrough >= 0 else -1
            raw.append((instrs, t.kind, tgt, t.cond, ft))
    # fold empty JMP-only blocks
    def final(i, seen=()):
        instrs, kind, tgt, _, _ = raw[i]
        if not instrs and kind is Term.JMP and tgt not in seen and tgt != i:
            return final(tgt, seen + (i,))
        return i
    redirect = {i: final(i) for i in range(len(raw))}
    # a jump to a bare EXIT block exits itself (so return paths end in EXIT; see set_reconvergence)
    bare_exit = {i for i, r in enumerate(raw) if not r[0] and r[1] is Term.EXIT}
    raw = [(ins, Term.EXIT, -1, None, -1) if kind is Term.JMP and redirect[tgt] in bare_exit
           else (ins, kind, tgt, cond, ft) for ins, kind, tgt, cond, ft in raw]
    # and every branch edge into a bare EXIT gets its own copy, so a return
    # path is never shared with (reachable from) the branch's other side
    for i, (ins, kind, tgt, cond, ft) in enumerate(list(raw)):
        if kind is Term.BRC:
            sides = []
            for s in (tgt, ft):
                if redirect[s] in bare_exit:
                    raw.append(([], Term.EXIT, -1, None, -1))
                    redirect[len(raw) - 1] = s = len(raw) - 1
                sides.append(s)
            raw[i] = (ins, kind, sides[0], cond, sides[1])
    entry = redirect[0]
    order, seen, stack = [], {entry}, [entry]
    while stack:        # depth-first from the entry, so block 0 is the entry
        i = stack.pop()
        order.append(i)
        _, kind, tgt, _, ft = raw[i]
        for s in ([ft, tgt] if kind is Term.BRC else [tgt] if kind is not Term.EXIT else []):
            s = redirect[s]
            if s not in seen:
                seen.add(s)
                stack.append(s)
    number = {old: new for new, old in enumerate(order)}
    out = []
    for i in order:
        instrs, kind, tgt, cond, ft = raw[i]
        tgt = number[redirect[tgt]] if kind is not Term.EXIT else -1
        call = kind is Term.JMP and ft >= 0             # a call: ft is where it returns (cfg.VTerm)
        ft = number[redirect[ft]] if kind is Term.BRC or call else -1
        if kind is Term.BRC and tgt == ft:
            kind = Term.JMP
        if kind is Term.BRC:
            term = isa.Terminator(kind, tgt, isa.Reg(reg_of(cond)), ft)
        else:
            term = isa.Terminator(kind, tgt, fallthrough=ft)    # set_reconvergence drops a call's ft
        out.append(isa.MachineBlock(instrs, term))
    return out, [source[i] if i < len(source) else None for i in order]


def schedule(instrs: list[isa.Instr], cond: isa.Reg | None = None, stays: frozenset | None = frozenset()
             ) -> list[list[isa.Instr]]:
    """Pack one basic block's instructions into machine blocks, in order but for one move: when
    the block ends in `BRC cond` and its last instruction writes `cond`, the terminator would
    need a pass of its own (encoding.own_terminator_pass), so the last instruction that may go
    last (cfg.movable_to_end) moves to the end and the terminator folds into its pass.
    (cfg.fold_friendly did the same before register allocation, which may since have added
    dependences, or deleted the moved instruction as a copy to itself.) A machine block fills
    the ROM's BLOCK_SLOTS passes as far as `_passes` can tell, with the definitions of the
    fixed values in `stays` in passes of their own; `stays=None`: BLOCK_SLOTS instructions, which
    always fit (_repack's last resort where the estimate was wrong). A memory or warp op may
    take any pass."""
    instrs = list(instrs)
    if cond is not None and cond.n and instrs and instrs[-1].dst == cond:
        ks = movable_to_end(instrs, _reads, _writes)
        if ks:
            instrs.append(instrs.pop(ks[-1]))
    if stays is None:
        return [instrs[i:i + isa.BLOCK_SLOTS] for i in range(0, len(instrs), isa.BLOCK_SLOTS)]
    pieces, piece = [], []
    for x in instrs:
        if piece and _passes(piece + [x], stays) > isa.BLOCK_SLOTS:
            # an ALU op that feeds x starts the next block with it: there they may pair, where a
            # block end between them writes its result back
            feeds = len(piece) > 1 and fits_pre_alu(piece[-1]) and piece[-1].dst.n in _reads(x)
            pieces.append(piece[:-1] if feeds else piece)
            piece = piece[-1:] if feeds else []
        piece.append(x)
    return pieces + [piece] if piece else pieces


def _passes(instrs: list[isa.Instr], stays: frozenset) -> int:
    """The passes a machine block of these instructions would take, as far as the block alone
    tells: a definition of a fixed value (encoding.fixed_value) not in `stays` in none, and
    pairs as if every register were live after it. Only the whole program tells for sure
    (encoding.encode): another definition may stay, more pairs may form."""
    run = [x for x in instrs if fixed_value(x) in stays or fixed_value(x) is None]
    return len(block_passes(isa.MachineBlock(run, isa.Terminator(Term.JMP, 0)), _EVERY_REGISTER))


_EVERY_REGISTER = set(range(1, isa.NUM_REGS))


def _reads(i: isa.Instr) -> list[int]:
    return [s.n for s in i.srcs if isinstance(s, isa.Reg) and s.n]


def _writes(i: isa.Instr) -> int | None:
    return i.dst.n or None          # r0: no result


def _hoist(instrs: list[isa.Instr], n: int) -> tuple[list, list] | None:
    """The first n pure instructions that may go before all the others, and the others."""
    up, rest = [], []
    for x in instrs:
        if len(up) < n and pure(x.op) and not any(ordered(y, x, _reads, _writes) for y in rest):
            up.append(x)
        else:
            rest.append(x)
    return (up, rest) if len(up) == n else None


def _sink(instrs: list[isa.Instr], n: int) -> tuple[list, list] | None:
    """The instructions but the last n pure ones that may go after all the others, and those."""
    r = _hoist(instrs[::-1], n)
    return (r[1][::-1], r[0][::-1]) if r else None


def _cost(instrs: list[isa.Instr], term: VTerm, cond: isa.Reg | None, stays: frozenset | None) -> int:
    """Block ends (CT1) and terminator passes of their own (EXEC) of one IR block's pieces."""
    if not instrs:
        return 0 if term.kind is Term.JMP else 2        # an empty jump is folded away
    pieces = schedule(instrs, cond, stays)
    return len(pieces) + (cond is not None and pieces[-1][-1].dst == cond)


def balance_barriers(blocks: list[VBlock], machine: list[list[isa.Instr]], conds: list,
                     stays: dict[int, frozenset | None] | None = None) -> None:
    """Move pure instructions across a barrier: a block ending in `BAR S`, where S has no other
    way in, and S run on the same lanes one after the other, and register-only work may run on
    either side of the barrier. Shifting a few instructions between them can save a block end
    (both sides' last pieces were partly empty) or the pass of an empty BAR block's
    terminator. `machine[i]`: block i's machine instructions, updated in place; `conds[i]`:
    the register of its BRC's condition, or None; `stays`: as in form_blocks."""
    stays = stays or {}
    preds: dict[int, int] = {}
    for b in blocks:
        for t in b.term.succs():
            preds[t] = preds.get(t, 0) + 1
    for i, b in enumerate(blocks):
        s = b.term.target
        if b.term.kind is not Term.BAR or s in (0, i) or preds.get(s) != 1:
            continue
        def cost(mb, ms):
            return (_cost(mb, b.term, None, stays.get(i, frozenset()))
                    + _cost(ms, blocks[s].term, conds[s], stays.get(s, frozenset())))
        best, choice = cost(machine[i], machine[s]), None
        for n in range(1, isa.BLOCK_SLOTS + 1):
            up, down = _hoist(machine[s], n), _sink(machine[i], n)
            options = ([(machine[i] + up[0], up[1])] if up else []) + \
                ([(down[0], down[1] + machine[s])] if down else [])
            for mb, ms in options:
                if (c := cost(mb, ms)) < best:
                    best, choice = c, (mb, ms)
        if choice:
            machine[i], machine[s] = choice


def _machine_instr(ins: VInstr, reg_of) -> isa.Instr | None:
    srcs = tuple(s if isinstance(s, Imm) else isa.Reg(reg_of(s)) for s in ins.srcs)
    dst = isa.Reg(reg_of(ins.dst)) if ins.dst is not None else isa.ZERO
    if ins.op is Op.MOV and srcs[0] == dst:
        return None
    return isa.Instr(ins.op, dst, srcs, ins.mod)


def fold_exits(blocks: list[isa.MachineBlock]) -> tuple[list[isa.MachineBlock], list[int]]:
    """A BRC whose target is a bare EXIT block that nothing else names (form_blocks gives each
    branch edge into one a copy of its own) exits its taken lanes itself: target -1 (docs/isa.md),
    no reconvergence, and the EXIT block and its pass go. Run after set_reconvergence, which
    reads those blocks as the branch's returning side. Returns the blocks and, for each, its
    index before."""
    refs: dict[int, int] = {}
    for b in blocks:
        for t in (b.term.target, b.term.fallthrough, b.term.reconv):
            refs[t] = refs.get(t, 0) + 1
    bare = {i for i, b in enumerate(blocks) if not b.instrs and b.term.kind is Term.EXIT and refs.get(i) == 1}
    gone = {b.term.target for b in blocks if b.term.kind is Term.BRC and b.term.target in bare}
    kept = [i for i in range(len(blocks)) if i not in gone]
    number = {old: new for new, old in enumerate(kept)} | {-1: -1}
    out = []
    for i in kept:
        t = blocks[i].term
        if t.kind is Term.BRC and t.target in gone:
            t = isa.Terminator(Term.BRC, -1, t.cond, number[t.fallthrough])
        else:
            t = isa.Terminator(t.kind, number[t.target], t.cond, number[t.fallthrough], number[t.reconv])
        out.append(isa.MachineBlock(blocks[i].instrs, t))
    return out, kept


def set_reconvergence(blocks: list[isa.MachineBlock]) -> None:
    """reconv of each BRC: its immediate post-dominator, except for return
    paths. Lanes parked at a join have not exited, so a join after a `return`
    would keep them from a barrier or warp operation the others reach
    (docs/isa.md, "Choosing reconvergence points"). A side S of a branch
    *returns* when S's block ends in EXIT, the branch is its only way in, and
    the other side O can still reach an exit without it (so it is not the
    kernel's normal way out, e.g. a loop's exit to the final `ret`). With one
    returning side reconv = O; with two, -1; and every return edge is left out
    of the graph for all other post-dominators, so a return inside a loop or
    an if does not push their reconvergence out to the exit."""
    succs = [[b.term.target, b.term.fallthrough] if b.term.kind is Term.BRC else
             [] if b.term.kind is Term.EXIT else [b.term.target] for b in blocks]
    # a call of a shared subroutine (a JMP with a fallthrough: cfg.VTerm) counts as a jump to
    # the block it returns to: a branch around a call reconverges where it would around the
    # inline sequence, never inside the subroutine, so the lanes in a subroutine all come from
    # one call (its return chain never diverges, and its reconvergence points stay inside it)
    calls = {i: b.term.fallthrough for i, b in enumerate(blocks) if b.term.kind is Term.JMP and b.term.fallthrough >= 0}
    for i, back in calls.items():
        succs[i] = [back]
        blocks[i].term = isa.Terminator(Term.JMP, blocks[i].term.target)
    preds: dict[int, int] = {}
    for ss in succs:
        for x in ss:
            preds[x] = preds.get(x, 0) + 1
    single_exits = {i for i, b in enumerate(blocks) if b.term.kind is Term.EXIT and preds.get(i) == 1}
    special: dict[int, int] = {}
    graph = [list(ss) for ss in succs]
    for i, b in enumerate(blocks):
        if b.term.kind is not Term.BRC:
            continue
        t, f = b.term.target, b.term.fallthrough
        if t in single_exits and f in single_exits:
            special[i], graph[i] = -1, []
            continue
        for side, other in ((t, f), (f, t)):
            if side in single_exits:
                graph[i] = [other]
                if _reaches_exit(graph, other):
                    special[i] = other
                else:
                    graph[i] = [t, f]       # the kernel's normal way out: keep the edge
                break
    ipdom = immediate_post_dominators(graph)
    for i, b in enumerate(blocks):
        t = b.term
        if t.kind is Term.BRC:
            b.term = isa.Terminator(Term.BRC, t.target, t.cond, t.fallthrough, special.get(i, ipdom[i]))


def _reaches_exit(graph: list[list[int]], start: int) -> bool:
    return any(not graph[n] for n in _reach(graph, start))


def _reach(succs: list[list[int]], start: int) -> set[int]:
    seen, stack = {start}, [start]
    while stack:
        for s in succs[stack.pop()]:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen


def _repack(prog: isa.Program, source: list[int | None], stays: dict[int, frozenset | None]) -> bool:
    """For each block of `prog` whose passes the ROM cannot hold, tell its IR block's packing
    (`stays`, updated) which fixed values' definitions stayed in a pass, or, when it knew them
    all, to pack by instruction count. Whether anything changed; MachineLimitError (encode's)
    for a block packed by count that still does not fit (none should)."""
    over = overflowing(prog)
    if not over:
        return False
    run = machine_blocks(prog)
    found: dict[int | None, frozenset] = {}     # per IR block: its overflowing pieces' together
    for i in over:
        known = stays.get(source[i], frozenset())
        if source[i] is None or known is None:
            encode(prog)
        found[source[i]] = found.get(source[i], known) | {
            v for k in run[i][1] if (v := fixed_value(prog.blocks[i].instrs[k])) is not None}
    for b, values in found.items():         # decided once per IR block, from this round's start
        known = stays.get(b, frozenset())
        stays[b] = values if values != known else None
    return True
