"""The virtual IR between PTX and machine code, its clean-up passes, and
immediate post-dominators.

The IR: basic blocks (`VBlock`) of `VInstr` (an ISA opcode over unbounded
virtual registers, plain ints, or `isa.Imm`) ending in a machine-style
terminator (`VTerm`: JMP/BRC/BAR/EXIT). Post-dominators use Cooper, Harvey
and Kennedy's iterative algorithm ("A Simple, Fast Dominance Algorithm") on
the reverse CFG, rooted at a virtual exit that every exiting block flows into.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu import isa

Op, Imm, Term = isa.Op, isa.Imm, isa.Term
M32 = isa.MASK32

# ---------------------------------------------------------------------------
# Virtual IR
# ---------------------------------------------------------------------------
@dataclass
class VInstr:
    op: Op
    dst: int | None            # virtual register (None: no result)
    srcs: list                 # int (virtual register) | isa.Imm
    mod: object = None
    line: int = 0


@dataclass
class VTerm:
    """A BRC's `fallthrough` is where its other lanes go. A JMP with a `fallthrough` is a call
    of a shared subroutine (microcode.py's shared FDIV/FSQRT), which comes back to that block
    through its return chain: not an edge (succs), but the reconvergence rules read the call as
    a jump straight there (blocks.set_reconvergence), and nothing merges that block away."""
    kind: Term
    target: int = -1
    cond: int | None = None
    fallthrough: int = -1

    def succs(self) -> list[int]:
        if self.kind is Term.BRC:
            return [self.target, self.fallthrough]
        return [] if self.kind is Term.EXIT else [self.target]


@dataclass
class VBlock:
    instrs: list[VInstr] = field(default_factory=list)
    term: VTerm | None = None


def simplify(op: Op, srcs: list):
    """Constant folding and identities; returns an operand or None."""
    if all(isinstance(s, Imm) for s in srcs):
        return Imm(isa.ALU_SEMANTICS[op.name](*(s.value for s in srcs)))
    if len(srcs) != 2:
        if op is Op.SEL and isinstance(srcs[0], Imm):
            return srcs[1] if srcs[0].value else srcs[2]
        return None
    a, b = srcs
    zb = isinstance(b, Imm) and b.value == 0
    za = isinstance(a, Imm) and a.value == 0
    if op in (Op.ADD, Op.OR, Op.XOR, Op.SUB, Op.SHL, Op.SHR, Op.SRA) and zb:
        return a
    if op in (Op.ADD, Op.OR, Op.XOR) and za:
        return b
    if op is Op.AND and (za or zb):
        return Imm(0)
    if op is Op.AND and isinstance(b, Imm) and b.value == M32:
        return a
    if op is Op.MUL and (za or zb):
        return Imm(0)
    if op is Op.MUL and isinstance(b, Imm) and b.value == 1:
        return a
    if op in (Op.SHL, Op.SHR) and za:
        return Imm(0)
    if op is Op.SETLTU and zb:
        return Imm(0)
    return None


# ---------------------------------------------------------------------------
# Clean-up passes on the virtual IR
# ---------------------------------------------------------------------------
def uses(ins: VInstr):
    return [s for s in ins.srcs if isinstance(s, int)]


def propagate_constants(blocks: list[VBlock]) -> None:
    """A register whose only definition is `MOV v, imm` is that immediate everywhere."""
    defs: dict[int, list[VInstr]] = {}
    for b in blocks:
        for ins in b.instrs:
            if ins.dst is not None:
                defs.setdefault(ins.dst, []).append(ins)
    consts = {v: d[0].srcs[0] for v, d in defs.items()
              if len(d) == 1 and d[0].op is Op.MOV and isinstance(d[0].srcs[0], Imm)}
    if not consts:
        return
    for b in blocks:
        for ins in b.instrs:
            ins.srcs = [consts.get(s, s) if isinstance(s, int) else s for s in ins.srcs]
            if ins.op.kind is isa.Kind.ALU and ins.dst not in consts:
                f = simplify(ins.op, ins.srcs)
                if f is not None:
                    ins.op, ins.srcs = Op.MOV, [f]
        t = b.term
        if t.kind is Term.BRC and t.cond in consts:
            b.term = VTerm(Term.JMP, t.target if consts[t.cond].value else t.fallthrough)


def definitions(blocks: list[VBlock]) -> dict[int, list[VInstr]]:
    defs: dict[int, list[VInstr]] = {}
    for b in blocks:
        for ins in b.instrs:
            if ins.dst is not None:
                defs.setdefault(ins.dst, []).append(ins)
    return defs


def invariant_registers(blocks: list[VBlock]) -> dict[int, VInstr]:
    """Registers with one definition computed only from immediates, special
    registers, parameters and other such registers: the same value whenever
    (and wherever) they are read, so they may be copied or recomputed freely."""
    single = {v: d[0] for v, d in definitions(blocks).items() if len(d) == 1}
    inv: dict[int, VInstr] = {}
    changed = True
    while changed:
        changed = False
        for v, ins in single.items():
            if v in inv:
                continue
            srcs_ok = all(isinstance(s, Imm) or s in inv for s in ins.srcs)
            if srcs_ok and (ins.op is Op.S2R or ins.op.kind is isa.Kind.ALU or
                            ins.op is Op.LD and ins.mod is isa.Space.CONST):
                inv[v] = ins
                changed = True
    return inv


def propagate_copies(blocks: list[VBlock]) -> None:
    """`MOV d, s` where d has one definition and s is invariant: read s for d."""
    inv = invariant_registers(blocks)
    single = {v for v, d in definitions(blocks).items() if len(d) == 1}
    subst = {ins.dst: ins.srcs[0] for b in blocks for ins in b.instrs
             if ins.op is Op.MOV and ins.dst in single and isinstance(ins.srcs[0], int) and ins.srcs[0] in inv}

    def final(v):
        while v in subst:
            v = subst[v]
        return v
    for b in blocks:
        for ins in b.instrs:
            ins.srcs = [final(s) if isinstance(s, int) else s for s in ins.srcs]
        if b.term.cond is not None:
            b.term.cond = final(b.term.cond)


def eliminate_dead_code(blocks: list[VBlock]) -> None:
    """Mark and sweep: keep side effects, branch conditions, and every
    definition of a register something kept reads (flow-insensitive, so dead
    cycles such as unused 64-bit address high words disappear too)."""
    defs: dict[int, list[VInstr]] = {}
    work: list[int] = []
    live_ins: list[VInstr] = []
    for b in blocks:
        for ins in b.instrs:
            if ins.dst is not None:
                defs.setdefault(ins.dst, []).append(ins)
            if ins.op in (Op.ST, Op.ATOM):
                live_ins.append(ins)
        if b.term.kind is Term.BRC:
            work.append(b.term.cond)
    needed: set[int] = set()
    keep: set[int] = {id(i) for i in live_ins}
    for ins in live_ins:
        work += uses(ins)
    while work:
        v = work.pop()
        if v in needed:
            continue
        needed.add(v)
        for ins in defs.get(v, []):
            keep.add(id(ins))
            work += uses(ins)
    for b in blocks:
        b.instrs = [i for i in b.instrs if id(i) in keep]


_COMPARES = frozenset({Op.SETEQ, Op.SETNE, Op.SETLT, Op.SETLE, Op.SETGT, Op.SETGE,
                       Op.SETLTU, Op.SETLEU, Op.SETGTU, Op.SETGEU})       # 0 or 1


def upper_bounds(blocks: list[VBlock]) -> dict[int, int]:
    """The largest unsigned value each register can hold, over all its definitions (a least
    fixpoint; a bound that keeps growing, a loop counter's, widens to 2**32 - 1). Registers
    without a definition, loads, warp ops and ops not listed are 2**32 - 1."""
    defs = definitions(blocks)
    ub = {v: 0 for v in defs}
    grown: dict[int, int] = {}

    def of(x):
        return x.value if isinstance(x, Imm) else ub.get(x, M32)

    def bound(ins: VInstr) -> int:
        op, s = ins.op, ins.srcs
        if op is Op.MOV:
            return of(s[0])
        if op in (Op.AND, Op.MINU):
            return min(of(s[0]), of(s[1]))
        if op in (Op.OR, Op.XOR, Op.MAXU):
            return (1 << max(of(s[0]), of(s[1])).bit_length()) - 1
        if op is Op.ADD:
            return min(M32, of(s[0]) + of(s[1]))
        if op is Op.MUL:
            return min(M32, of(s[0]) * of(s[1]))
        if op is Op.SHR:
            return of(s[0]) >> s[1].value if isinstance(s[1], Imm) and s[1].value < 32 else \
                0 if isinstance(s[1], Imm) else of(s[0])
        if op is Op.SEL:
            return max(of(s[1]), of(s[2]))
        if op in _COMPARES:
            return 1
        if op is Op.DIVU and isinstance(s[1], Imm) and s[1].value:
            return of(s[0]) // s[1].value
        if op is Op.REMU:
            return min(of(s[0]), s[1].value - 1) if isinstance(s[1], Imm) and s[1].value else of(s[0])
        if op is Op.BFEU and isinstance(s[2], Imm) and (s[2].value & 0xFF) < 32:
            return (1 << (s[2].value & 0xFF)) - 1
        if op in (Op.POPC, Op.CLZ):
            return 32
        return M32

    changed = True
    while changed:
        changed = False
        for b in blocks:
            for ins in b.instrs:
                if ins.dst is None:
                    continue
                new = bound(ins)
                if new > ub[ins.dst]:
                    grown[ins.dst] = grown.get(ins.dst, 0) + 1
                    ub[ins.dst] = new if grown[ins.dst] <= 4 else M32
                    changed = True
    return ub


def read_counts(blocks: list[VBlock], count_writes: bool = False) -> dict[int, int]:
    """How many times each virtual register is read, by instructions and branch conditions
    (and written, with `count_writes`)."""
    counts: dict[int, int] = {}
    for b in blocks:
        for ins in b.instrs:
            for x in uses(ins) + ([ins.dst] if count_writes and ins.dst is not None else []):
                counts[x] = counts.get(x, 0) + 1
        if b.term.cond is not None:
            counts[b.term.cond] = counts.get(b.term.cond, 0) + 1
    return counts


def drop_redundant_masks(blocks: list[VBlock]) -> None:
    """`d = AND x, 2**k - 1` (and `d = BFEU x, 0, k`) where x < 2**k already (upper_bounds:
    narrow arithmetic masks its results, often values that cannot have grown) is `d = x`;
    when d and x have one definition each, d's readers read x and the copy goes."""
    ub = upper_bounds(blocks)
    for b in blocks:
        for ins in b.instrs:
            s = ins.srcs
            if ins.op is Op.AND and len(s) == 2:
                x, m = (s[0], s[1]) if isinstance(s[1], Imm) else (s[1], s[0])
                if isinstance(x, int) and isinstance(m, Imm) and m.value & (m.value + 1) == 0 \
                        and ub.get(x, M32) <= m.value:
                    ins.op, ins.srcs = Op.MOV, [x]
            elif ins.op is Op.BFEU and isinstance(s[0], int) and s[1] == Imm(0) and isinstance(s[2], Imm) \
                    and 0 < (s[2].value & 0xFF) < 32 and ub.get(s[0], M32) < 1 << (s[2].value & 0xFF):
                ins.op, ins.srcs = Op.MOV, [s[0]]
    # d = x: d's readers read x instead when they all follow in the same block and x keeps its
    # value until the last of them (else the copy stays, for the register allocator to coalesce)
    defs = definitions(blocks)
    readers = read_counts(blocks)
    copies = [(b, ins) for b in blocks for ins in b.instrs if ins.op is Op.MOV and isinstance(ins.srcs[0], int)]
    for b, mov in copies:
        d, x = mov.dst, mov.srcs[0]
        if len(defs[d]) != 1 or d == x:
            continue
        k = next(k for k, ins in enumerate(b.instrs) if ins is mov)
        after, local = b.instrs[k + 1:], 0
        for ins in after:
            local += sum(1 for y in uses(ins) if y == d)
            if ins.dst == x:
                break
        else:
            local += b.term.cond == d
        if local != readers.get(d, 0):
            continue
        for ins in after:
            ins.srcs = [x if y == d else y for y in ins.srcs]
        if b.term.cond == d:
            b.term.cond = x
        del b.instrs[k]


def fold_address_adds(blocks: list[VBlock]) -> None:
    """`t = ADD x, y; LD d, t, 0` is `LD d, x, y` (and the same for ST's address): a memory
    op's address is the sum of its two operands, register or immediate. Only where t has
    that one definition, every reader of t is such an access later in the same block (as
    the address, offset 0), and neither x nor y is written before the last of them; the ADD
    goes."""
    defs = definitions(blocks)
    readers = read_counts(blocks)
    for b in blocks:
        dead = set()
        for j, add in enumerate(b.instrs):
            t = add.dst
            if add.op is not Op.ADD or len(defs.get(t, ())) != 1 or not readers.get(t):
                continue
            sites, n = [], readers[t]
            for ins in b.instrs[j + 1:]:
                if len(sites) == n:
                    break
                if t in uses(ins):
                    if ins.op not in (Op.LD, Op.ST) or ins.srcs[0] != t or ins.srcs[1] != Imm(0) \
                            or t in ins.srcs[2:]:
                        break
                    sites.append(ins)
                if ins.dst is not None and ins.dst in uses(add) and len(sites) < n:
                    break
            if len(sites) != n:
                continue
            for ins in sites:
                ins.srcs = list(add.srcs) + ins.srcs[2:]
            dead.add(j)
        if dead:
            b.instrs = [ins for j, ins in enumerate(b.instrs) if j not in dead]


def simplify_cfg(blocks: list[VBlock]) -> list[VBlock]:
    """Drop unreachable blocks, turn trivial BRCs into JMPs, merge a block into
    its only predecessor when that predecessor just jumps to it."""
    for b in blocks:
        t = b.term
        if t.kind is Term.BRC and t.target == t.fallthrough:
            b.term = VTerm(Term.JMP, t.target)
    order = _reachable(blocks)
    preds = {i: 0 for i in order}
    for i in order:
        for s in blocks[i].term.succs():
            preds[s] += 1
        if blocks[i].term.kind is Term.JMP and blocks[i].term.fallthrough in preds:    # a call's return block
            preds[blocks[i].term.fallthrough] += 1
    merged = set()
    for i in order:
        if i in merged:
            continue
        b = blocks[i]
        while b.term.kind is Term.JMP and b.term.target != 0 and b.term.target != i and preds[b.term.target] == 1 \
                and b.term.target not in merged:
            s = b.term.target
            b.instrs += blocks[s].instrs
            b.term = blocks[s].term
            merged.add(s)
    keep = [i for i in order if i not in merged]
    index = {old: new for new, old in enumerate(keep)}
    out = []
    for i in keep:
        b, t = blocks[i], blocks[i].term
        out.append(VBlock(b.instrs, VTerm(t.kind, index.get(t.target, -1), t.cond, index.get(t.fallthrough, -1))))
    return out


IF_CONVERT_MAX = 0      # instructions in a branch side worth executing unconditionally (see below)
DIAMOND_MAX = 0         # instructions in the two sides of an if/else together


def if_convert(blocks: list[VBlock], next_vreg: int) -> int:
    """Turn branches around a few ALU instructions into straight-line code: `if (c) { ... }`
    triangles (a side with one way in that jumps on to the other side) and `if (c) { ... }
    else { ... }` diamonds (two such sides that jump to the same join). Each side's
    instructions run on every lane into fresh registers (ALU ops are total functions without
    side effects, so that is safe), then `d = SEL c, new, d` commits them (`SEL c, t, f` for a
    register both sides write). Saves the branch, the divergence and block ends. Returns the
    next free virtual register."""
    def side_ok(side, i, limit):
        sb = blocks[side]
        return (side not in (0, i) and preds.get(side) == 1 and sb.term.kind is Term.JMP
                and len(sb.instrs) <= limit and not any(ins.op.is_unit for ins in sb.instrs))

    def speculate(a: VBlock, sb: VBlock) -> dict[int, int]:
        """Append sb's instructions to a, writing fresh registers; returns old -> fresh for the
        registers read anywhere but in sb (flow-insensitive). A register sb reads before
        writing it (the previous loop iteration's value, say) counts: its copy in a reads it."""
        nonlocal next_vreg
        rename: dict[int, int] = {}
        for ins in sb.instrs:
            next_vreg += 1
            a.instrs.append(VInstr(ins.op, next_vreg, [rename.get(x, x) if isinstance(x, int) else x
                                                        for x in ins.srcs], ins.mod, ins.line))
            rename[ins.dst] = next_vreg
        local = {id(ins) for ins in sb.instrs}
        read_after = {x for b in blocks for ins in b.instrs if id(ins) not in local for x in uses(ins)}
        read_after |= {b.term.cond for b in blocks if b.term.kind is Term.BRC}
        sb.instrs, sb.term = [], VTerm(Term.EXIT)     # unreachable now
        return {d: v for d, v in rename.items() if d in read_after}

    changed = True
    while changed:
        changed = False
        preds: dict[int, int] = {}
        for b in blocks:
            for s in b.term.succs():
                preds[s] = preds.get(s, 0) + 1
        for i, a in enumerate(blocks):
            t = a.term
            if t.kind is not Term.BRC:
                continue
            for side, other in ((t.target, t.fallthrough), (t.fallthrough, t.target)):
                if side != other and side_ok(side, i, IF_CONVERT_MAX) and blocks[side].term.target == other:
                    new = speculate(a, blocks[side])
                    taken, fallen = (new, {}) if side == t.target else ({}, new)
                    join = other
                    break
            else:
                tb, fb = blocks[t.target], blocks[t.fallthrough]
                if not (side_ok(t.target, i, DIAMOND_MAX) and side_ok(t.fallthrough, i, DIAMOND_MAX)
                        and t.target != t.fallthrough and tb.term.target == fb.term.target
                        and tb.term.target not in (i, t.target, t.fallthrough)
                        and len(tb.instrs) + len(fb.instrs) <= DIAMOND_MAX):
                    continue
                join = tb.term.target
                taken, fallen = speculate(a, tb), speculate(a, fb)
            # commit; the condition register itself (if a side writes it) last
            for d in sorted(set(taken) | set(fallen), key=lambda d: d == t.cond):
                a.instrs.append(VInstr(Op.SEL, d, [t.cond, taken.get(d, d), fallen.get(d, d)]))
            a.term = VTerm(Term.JMP, join)
            changed = True
            break
    return next_vreg


def branch_on_values(blocks: list[VBlock]) -> None:
    """`c = SETNE x, 0; BRC c ? T : F` is `BRC x ? T : F` (BRC takes the lanes whose condition
    register is nonzero, all 32 bits), and `c = SETEQ x, 0` the same with the targets swapped;
    for x that is 0 or 1 (upper_bounds), `SETEQ x, 1` is x, `SETNE x, 1` and `XOR x, 1` are !x:
    the comparison goes when c has that one definition, in the branch's block, nothing else
    reads c (no instruction, no other branch), and x is not written between it and the branch."""
    defs = definitions(blocks)
    read = {x for b in blocks for ins in b.instrs for x in uses(ins)}
    ub = None           # upper_bounds, when a test against 1 needs them
    branches: dict[int, int] = {}
    for b in blocks:
        if b.term.kind is Term.BRC:
            branches[b.term.cond] = branches.get(b.term.cond, 0) + 1
    for b in blocks:
        t = b.term
        if t.kind is not Term.BRC or len(defs.get(t.cond, ())) != 1 or t.cond in read or branches[t.cond] != 1:
            continue
        k = next((k for k in range(len(b.instrs) - 1, -1, -1) if b.instrs[k].dst == t.cond), None)
        if k is None:
            continue
        ins = b.instrs[k]
        if ins.op not in (Op.SETNE, Op.SETEQ, Op.XOR) or len(ins.srcs) != 2:
            continue
        x, k_imm = (ins.srcs[1], ins.srcs[0]) if isinstance(ins.srcs[0], Imm) else ins.srcs
        if not isinstance(x, int) or not isinstance(k_imm, Imm) or any(later.dst == x for later in b.instrs[k + 1:]):
            continue
        if k_imm.value == 0 and ins.op is not Op.XOR:
            same = ins.op is Op.SETNE                       # x != 0: taken where x is nonzero
        elif k_imm.value == 1 and (ub := upper_bounds(blocks) if ub is None else ub).get(x, M32) <= 1:
            same = ins.op is Op.SETEQ                       # x is 0 or 1: x == 1 is x, x != 1 and x ^ 1 are !x
        else:
            continue
        del b.instrs[k]
        b.term = VTerm(Term.BRC, t.target, x, t.fallthrough) if same else VTerm(Term.BRC, t.fallthrough, x, t.target)


def pure(op: Op) -> bool:
    """A per-lane function of its sources (ALU) or a special register read: free to reorder.
    Everything else (memory, warp ops: Op.is_unit) keeps its order."""
    return op.kind in (isa.Kind.ALU, isa.Kind.SREG)


def ordered(x, y, reads, writes) -> bool:
    """Whether x, then y, must keep that order: one writes what the other reads or writes, or
    both are impure (`reads(i)`: the registers i reads, `writes(i)`: the one it writes or None)."""
    wx, wy = writes(x), writes(y)
    return (wx is not None and (wx in reads(y) or wx == wy)) or (wy is not None and wy in reads(x)) \
        or (not pure(x.op) and not pure(y.op))


def movable_to_end(instrs: list, reads, writes) -> list[int]:
    """The indices k < len(instrs) - 1 of the instructions that may move to the end of the
    list: ordered with no later instruction. Swapping k with each later one then keeps every
    dependence."""
    return [k for k in range(len(instrs) - 1)
            if not any(ordered(instrs[k], y, reads, writes) for y in instrs[k + 1:])]


def hoist_loads(blocks: list[VBlock]) -> None:
    """Move each load up above the pure instructions it does not depend on (nor they on it):
    the ALU work then sits next to the instructions that use its results, where an op pairs
    with its one reader (encoding.block_passes) instead of writing its result back, and a
    chain of loads and the sums of their values (a reduction) take one pass a load and one a
    pair. Memory and warp ops keep their order. Runs before register allocation, where the
    only dependences are the program's own."""
    for b in blocks:
        for i in range(len(b.instrs)):
            if b.instrs[i].op is not Op.LD:
                continue
            j = i
            while j and not ordered(b.instrs[j - 1], b.instrs[i], uses, lambda x: x.dst):
                j -= 1
            b.instrs.insert(j, b.instrs.pop(i))


def fold_friendly(blocks: list[VBlock]) -> None:
    """In a block ending in `BRC c` whose last instruction writes c, move an instruction that
    may go last (movable_to_end) to the end, so that the terminator can run in the last
    instruction's pass instead of a pass of its own (encoding.own_terminator_pass). This runs before
    register allocation, where the only dependences are the program's own; it prefers the
    last such instruction that is not a copy (a copy may be coalesced away, leaving the
    condition's definition last again). blocks.schedule repeats this on machine registers."""
    for b in blocks:
        if b.term.kind is not Term.BRC or not b.instrs or b.instrs[-1].dst != b.term.cond:
            continue
        ks = movable_to_end(b.instrs, uses, lambda i: i.dst)
        if ks:
            k = next((k for k in reversed(ks) if b.instrs[k].op is not Op.MOV), ks[-1])
            b.instrs.append(b.instrs.pop(k))


def clean_up(blocks: list[VBlock]) -> None:
    """Constant and copy propagation, then dead code: the translator's IR, and the
    micro-coded IR again."""
    propagate_constants(blocks)
    propagate_copies(blocks)
    eliminate_dead_code(blocks)


def optimise(blocks: list[VBlock], next_vreg: int) -> tuple[list[VBlock], int]:
    """The passes between clean-up and register allocation, in order (docs/lowering.md,
    step 5). Returns the blocks and the next free virtual register."""
    drop_redundant_masks(blocks)
    fold_address_adds(blocks)
    blocks = simplify_cfg(blocks)
    next_vreg = if_convert(blocks, next_vreg)
    blocks = simplify_cfg(blocks)
    branch_on_values(blocks)
    hoist_loads(blocks)
    fold_friendly(blocks)
    return blocks, next_vreg

def _reachable(blocks: list[VBlock]) -> list[int]:
    seen, stack = {0}, [0]
    while stack:
        for s in blocks[stack.pop()].term.succs():
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return sorted(seen)


# ---------------------------------------------------------------------------
# Post-dominators
# ---------------------------------------------------------------------------
def immediate_post_dominators(succs: list[list[int]]) -> list[int]:
    """succs[i]: successor blocks of block i. Returns ipdom[i]: the block
    where all paths from i meet first, or -1 when that is the virtual exit
    (or when i cannot reach an exit at all, e.g. an infinite loop)."""
    n = len(succs)
    exit_node = n
    preds_rev = [list(s) if s else [exit_node] for s in succs]   # forward successors = reverse-graph preds
    rev_succ: list[list[int]] = [[] for _ in range(n + 1)]        # reverse graph: exit -> exiting blocks ...
    for i, ss in enumerate(preds_rev):
        for s in ss:
            rev_succ[s].append(i)
    # postorder of the reverse graph from the exit (iterative DFS)
    order, seen = [], {exit_node}
    stack = [(exit_node, iter(rev_succ[exit_node]))]
    while stack:
        node, it = stack[-1]
        nxt = next((x for x in it if x not in seen), None)
        if nxt is None:
            order.append(node)
            stack.pop()
        else:
            seen.add(nxt)
            stack.append((nxt, iter(rev_succ[nxt])))
    post = {v: k for k, v in enumerate(order)}
    idom = {exit_node: exit_node}

    def intersect(a, b):
        while a != b:
            while post[a] < post[b]:
                a = idom[a]
            while post[b] < post[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for v in reversed(order):
            if v == exit_node:
                continue
            new = None
            for p in preds_rev[v]:
                if p in idom:
                    new = p if new is None else intersect(p, new)
            if new is not None and idom.get(v) != new:
                idom[v] = new
                changed = True
    return [idom[i] if i in idom and idom[i] != exit_node else -1 for i in range(n)]
