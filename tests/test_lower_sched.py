"""Block scheduling and CFG transformations that save passes (blocks.schedule, cfg.fold_friendly,
cfg.hoist_loads, cfg.if_convert): hand-built instruction lists where a move must or must not happen, a
property test that a move never changes what a block computes, and CUDA kernels through the
real pipeline against NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwengpu import isa, suite
from qwengpu.api import Device
from qwengpu.machine.encoding import Fixed, own_terminator_pass
from qwengpu.toolchain import cfg
from qwengpu.toolchain.cfg import VBlock, VInstr, VTerm, movable_to_end
from qwengpu.toolchain.blocks import balance_barriers, schedule

from test_lower import FRONTENDS, launch

Op, R, I, Term = isa.Op, isa.Reg, isa.Imm, isa.Term


def ins(op, d, *srcs, mod=None):
    return isa.Instr(op, R(d), tuple(R(s) if isinstance(s, int) else s for s in srcs), mod)


LD = lambda d, a: ins(Op.LD, d, a, I(0), mod=isa.Space.GLOBAL)          # noqa: E731
ST = lambda a, v: ins(Op.ST, 0, a, I(0), v, mod=isa.Space.GLOBAL)       # noqa: E731


def flat(chunks):
    return [i for c in chunks for i in c]


# ---------------------------------------------------------------------------
# blocks.schedule: the condition's definition goes before an instruction it does not need
# ---------------------------------------------------------------------------
def test_independent_instruction_moves_after_the_condition():
    add, cmp = ins(Op.ADD, 2, 3, I(1)), ins(Op.SETLT, 1, 4, I(5))
    assert flat(schedule([add, cmp], R(1))) == [cmp, add]
    # the last such instruction moves, the others keep their order
    a, b = ins(Op.ADD, 5, 5, I(1)), ins(Op.SHL, 6, 6, I(2))
    assert flat(schedule([a, b, cmp], R(1))) == [a, cmp, b]
    # a load may move after a pure condition (one instruction a pass: any slot)
    ld = LD(2, 3)
    assert flat(schedule([ld, cmp], R(1))) == [cmp, ld]


@pytest.mark.parametrize("first", [
    ins(Op.ADD, 4, 3, I(1)),        # read after write: the condition reads r4
    ins(Op.ADD, 2, 1, I(1)),        # write after read: it reads the old r1
    ins(Op.MOV, 1, I(7)),           # write after write
    ST(3, 6),                       # two memory ops keep their order
])
def test_dependent_instruction_stays(first):
    cmp = LD(1, 4) if first.op is Op.ST else ins(Op.SETLT, 1, 4, I(5))
    assert flat(schedule([first, cmp], R(1))) == [first, cmp]


def test_nothing_moves_without_a_branch_or_when_the_condition_is_not_last():
    add, cmp = ins(Op.ADD, 2, 3, I(1)), ins(Op.SETLT, 1, 4, I(5))
    assert flat(schedule([add, cmp])) == [add, cmp]                    # JMP/BAR/EXIT
    assert flat(schedule([cmp, add], R(1))) == [cmp, add]
    assert flat(schedule([add, cmp], R(7))) == [add, cmp]              # BRC on another register
    # a chain: every instruction feeds the condition (through r2, then r3)
    chain = [ins(Op.SHL, 2, 5, I(1)), ins(Op.ADD, 3, 2, I(-1)), ins(Op.SETNE, 1, 3, I(0))]
    assert flat(schedule(chain, R(1))) == chain


def test_schedule_packs_by_passes():
    # six results in six registers, none written again: one pass each, BLOCK_SLOTS a block
    distinct = [ins(Op.ADD, 2 + k, 8, I(k)) for k in range(6)]
    assert [len(c) for c in schedule(distinct)] == [4, 2]
    # an S2R and a load of a parameter word take no pass (fixed operands), so the block holds six
    fixed = [ins(Op.S2R, 2, I(0)), ins(Op.LD, 3, I(12), I(0), mod=isa.Space.CONST)] + distinct[2:]
    assert [len(c) for c in schedule(fixed)] == [6]
    # r2's first value is read only by the next instruction and r2 is written again: a pair, so
    # five instructions take the four passes (0+1, 2, 3, 4) and the sixth starts a new block
    paired = [ins(Op.ADD, 2, 5, I(1)), ins(Op.ADD, 3, 2, I(1)), ins(Op.ADD, 2, 5, I(2)),
              ins(Op.ADD, 4, 5, I(3)), ins(Op.ADD, 6, 5, I(4)), ins(Op.ADD, 7, 5, I(5))]
    assert [len(c) for c in schedule(paired)] == [5, 1]
    # a block end between an ALU op and the instruction it feeds would write its result back, so
    # the ALU op starts the next block, where the two may pair
    feeding = distinct[:4] + [ST(0, 5)]
    assert [len(c) for c in schedule(feeding)] == [3, 2]
    # by instruction count (blocks._repack's last resort): BLOCK_SLOTS each, whatever the passes
    assert [len(c) for c in schedule(fixed, stays=None)] == [4, 2]
    # a parameter whose definition stays (lower learnt it from the program) takes its pass
    assert [len(c) for c in schedule(fixed, stays=frozenset({Fixed(word=3)}))] == [5, 1]
    xs = [ins(Op.ADD, 2 + k % 3, 5, I(k)) for k in range(9)] + [ins(Op.SETLT, 1, 4, I(5))]
    chunks = schedule(xs, R(1))
    assert chunks[-1][-1].dst != R(1) and sorted(map(id, flat(chunks))) == sorted(map(id, xs))


# a block of random instructions over r1..r5 and two memory cells; run before and after the move
OPS = [Op.ADD, Op.SUB, Op.MUL, Op.XOR, Op.SETLT, Op.SEL, Op.MOV]
REG = st.integers(1, 5)


@st.composite
def blocks(draw):
    out = []
    for _ in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(["alu"] * 5 + ["ld", "st"]))
        if kind == "ld":
            out.append(LD(draw(REG), draw(st.sampled_from([I(0), I(4)]))))
        elif kind == "st":
            out.append(ST(draw(st.sampled_from([I(0), I(4)])), draw(REG)))
        else:
            op = draw(st.sampled_from(OPS))
            srcs = [draw(st.one_of(REG, st.integers(0, 9).map(I))) for _ in range(op.arity)]
            out.append(ins(op, draw(REG), *srcs))
    return out


def run_block(instrs, regs):
    regs, mem, trace = dict(regs), {0: 11, 4: 22}, []

    def val(s):
        return s.value if isinstance(s, I) else regs.get(s.n, 0) if s.n else 0
    for i in instrs:
        if i.op is Op.LD:
            regs[i.dst.n] = mem[val(i.srcs[0])]
        elif i.op is Op.ST:
            mem[val(i.srcs[0])] = val(i.srcs[2])
            trace.append((val(i.srcs[0]), val(i.srcs[2])))
        else:
            regs[i.dst.n] = isa.ALU_SEMANTICS[i.op.name](*map(val, i.srcs))
    return regs, mem, trace


@settings(max_examples=400, deadline=None)
@given(blocks(), st.lists(st.integers(0, 2**32 - 1), min_size=5, max_size=5), REG)
def test_move_keeps_what_the_block_computes(instrs, init, cond):
    regs = {k + 1: v for k, v in enumerate(init)}
    for k in movable_to_end(instrs, lambda i: [s.n for s in i.srcs if isinstance(s, R) and s.n],
                            lambda i: i.dst.n or None):
        moved = instrs[:k] + instrs[k + 1:] + [instrs[k]]
        assert run_block(moved, regs) == run_block(instrs, regs)
    out = flat(schedule(instrs, R(cond)))
    assert run_block(out, regs) == run_block(instrs, regs)
    # the terminator needs a pass of its own only when nothing could go after the condition
    if out[-1].dst == R(cond):
        assert not movable_to_end(out, lambda i: [s.n for s in i.srcs if isinstance(s, R) and s.n],
                                  lambda i: i.dst.n or None)


def _virtual(instrs):
    """Machine instructions as IR (register n as virtual register n; ST's r0 result as None)."""
    return [VInstr(i.op, i.dst.n or None, [s.n if isinstance(s, R) else s for s in i.srcs], i.mod) for i in instrs]


def _machine(vinstrs):
    return [ins(v.op, v.dst or 0, *v.srcs, mod=v.mod) for v in vinstrs]


def test_loads_go_up_to_what_their_address_needs():
    """A reduction, sum = (p0 + p1) + p2, then a store: the loads go first, so each ADD sits
    right before its one reader (where it pairs); the load of p2 stays right after the ADD
    that makes its address (they pair too), and the store after the sum."""
    body = [ins(Op.ADD, 5, 1, I(8)), LD(2, I(0)), LD(3, I(4)), ins(Op.ADD, 4, 2, 3), LD(6, 5),
            ins(Op.ADD, 7, 4, 6), ST(I(0), 7)]
    block = VBlock(_virtual(body), VTerm(Term.EXIT))
    cfg.hoist_loads([block])
    assert _machine(block.instrs) == [body[i] for i in (1, 2, 0, 4, 3, 5, 6)]
    body = [LD(2, I(0)), ins(Op.ADD, 5, 2, I(8)), ins(Op.ADD, 4, 2, I(1)), LD(6, 5)]     # address from a load
    block = VBlock(_virtual(body), VTerm(Term.EXIT))
    cfg.hoist_loads([block])
    assert _machine(block.instrs) == [body[i] for i in (0, 1, 3, 2)]


def test_a_load_does_not_pass_a_store_or_a_writer_of_its_register():
    body = [LD(2, I(0)), ST(I(4), 2), ins(Op.ADD, 3, 3, I(1)), LD(1, I(4)), ins(Op.MOV, 4, I(1)), LD(4, I(0))]
    block = VBlock(_virtual(body), VTerm(Term.EXIT))
    cfg.hoist_loads([block])
    assert _machine(block.instrs) == [body[0], body[1], body[3], body[2], body[4], body[5]]


@settings(max_examples=400, deadline=None)
@given(blocks(), st.lists(st.integers(0, 2**32 - 1), min_size=5, max_size=5))
def test_hoisting_loads_keeps_what_the_block_computes(instrs, init):
    regs = {k + 1: v for k, v in enumerate(init)}
    block = VBlock(_virtual(instrs), VTerm(Term.EXIT))
    cfg.hoist_loads([block])
    assert run_block(_machine(block.instrs), regs) == run_block(instrs, regs)


# ---------------------------------------------------------------------------
# The whole suite: no terminator pass that a move could have saved
# ---------------------------------------------------------------------------
def test_suite_has_no_avoidable_terminator_pass():
    device = Device("model")            # the model engine's programs (micro-coded division); no model is built
    avoidable = []
    for case in suite.discover():
        spec = suite.load_spec(case)
        prog = device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL).program
        for pc, b in enumerate(prog.blocks):
            if b.instrs and own_terminator_pass(b):
                if movable_to_end(b.instrs, lambda i: [s.n for s in i.srcs if isinstance(s, R) and s.n],
                                  lambda i: i.dst.n or None):
                    avoidable.append(f"{case.name} B{pc}")
    assert not avoidable


# ---------------------------------------------------------------------------
# CUDA kernels through the real pipeline
# ---------------------------------------------------------------------------
LOOP = r"""
extern "C" __global__ void loop(const int *a, int *out, int *trips, int n)
{
    int i = threadIdx.x;
    int m = a[i], s = 0, k = 0, j = 0;
#pragma unroll 1
    do {
        s = (s ^ (j * m)) + (s >> 3);       // independent of the loop test: may go after it
        k += a[j & 15];
        j++;
    } while (j < (m & 7) + 1);
    out[i] = s;
    trips[i] = k;
}
"""


@pytest.mark.parametrize("frontend,opt", FRONTENDS)
def test_loop_with_moved_instruction(frontend, opt):
    a = np.array([5, -3, 7, 8, 0, 1, 15, -1, 9, 2**31 - 1, -2**31, 6, 12, 3, 4, 100], np.int32)
    out, trips = np.zeros(16, np.int32), np.zeros(16, np.int32)
    prog, _ = launch(LOOP, "loop", 1, 16, [a, out, trips, 16], frontend, opt)
    m = a.astype(np.int64)
    n = (m & 7) + 1
    for t in range(16):
        s = k = 0
        for j in range(int(n[t])):
            s = ((s ^ (j * int(m[t]))) + (s >> 3)) % 2**32
            s -= (s >> 31) << 32
            k += int(a[j & 15])
        assert (out[t], trips[t]) == (s, k)
    loops = [b for k, b in enumerate(prog.blocks) if b.term.kind is isa.Term.BRC and b.term.target <= k]
    assert loops and not any(own_terminator_pass(b) for b in loops)


# ---------------------------------------------------------------------------
# blocks.balance_barriers: pure instructions cross a BAR into the block's slack
# ---------------------------------------------------------------------------
def bar_pair(b_instrs, s_instrs, s_term=None, extra_pred=False):
    """IR blocks 0 (jumps to 1, or branches to 1 or 2), 1 (`BAR 2`), 2 (its successor), 3 (EXIT);
    returns blocks 1 and 2 after balancing."""
    s_term = s_term or VTerm(Term.BRC, 3, 1, 0)
    entry = VTerm(Term.BRC, 1, 8, 2) if extra_pred else VTerm(Term.JMP, 1)
    blocks = [VBlock([], entry), VBlock([], VTerm(Term.BAR, 2)), VBlock([], s_term),
              VBlock([], VTerm(Term.EXIT))]
    machine = [[], list(b_instrs), list(s_instrs), []]
    conds = [None, None, R(1) if s_term.kind is Term.BRC else None, None]
    balance_barriers(blocks, machine, conds)
    return machine[1], machine[2]


def test_empty_barrier_block_takes_an_instruction():
    a, c = ins(Op.SETLTU, 1, 5, I(4)), ins(Op.MOV, 5, 3)
    assert bar_pair([], [a, c]) == ([a], [c])
    # the first instruction cannot go (c reads r2, which the first writes): nothing changes
    # unless moving saves something; here c is ready too, and the condition's writer stays
    x, y = ins(Op.ADD, 2, 2, I(1)), ins(Op.SETLT, 1, 2, I(9))
    assert bar_pair([], [x, y]) == ([x], [y])


def test_block_ends_saved_both_ways():
    s4 = [ins(Op.ADD, 2 + k, 2 + k, I(1)) for k in range(4)]
    b1 = [ins(Op.ADD, 9, 9, I(1))]
    # B: 1 instruction, S: 5 (2 pieces) -> S's first goes up: B 2, S 4 (1 piece)
    first = ins(Op.ADD, 7, 7, I(1))
    assert bar_pair(b1, [first] + s4, VTerm(Term.EXIT)) == (b1 + [first], s4)
    # B: 5 (2 pieces), S: 1 -> B's last goes down
    assert bar_pair(s4 + b1, [first], VTerm(Term.EXIT)) == (s4, b1 + [first])


def test_loads_stay_and_a_lone_condition_goes_up():
    ld, cmp = LD(2, 3), ins(Op.SETLT, 1, 4, I(5))
    assert bar_pair([], [ld, cmp]) == ([cmp], [ld])         # a load does not cross a barrier
    assert bar_pair([], [ld]) == ([], [ld])
    # the condition alone: S's terminator needs its pass either way, B's pass is saved
    assert bar_pair([], [cmp]) == ([cmp], [])


def test_barrier_successor_with_another_way_in_keeps():
    s = [ins(Op.SETLTU, 1, 5, I(4)), ins(Op.MOV, 5, 3)]
    assert bar_pair([], s, extra_pred=True) == ([], s)


def test_dependent_instruction_does_not_cross():
    # S: r2 = r2 + 1; r3 = r2 * 2 (reads the new r2); r1 = r3 < 9: only the first may go up
    a, b, c = ins(Op.ADD, 2, 2, I(1)), ins(Op.MUL, 3, 2, I(2)), ins(Op.SETLT, 1, 3, I(9))
    up, rest = bar_pair([], [b, a, c])           # b first: a writes r2, which b reads (WAR)
    assert up == [b] and rest == [a, c]
    # B: r4 = ld; r5 = r4 + 1 (reads the load): r5 may go down, the load may not
    ld, add = LD(4, 6), ins(Op.ADD, 5, 4, I(1))
    s4 = [ins(Op.ADD, 2 + k, 2 + k, I(1)) for k in range(3)]
    assert bar_pair([ld, add], s4, VTerm(Term.EXIT)) == ([ld, add], s4)     # nothing saved: 1 + 1 pieces
    three = [ins(Op.ADD, 10 + k, 10 + k, I(1)) for k in range(3)]      # no pairs: a pass each
    assert bar_pair(three + [ld, add], s4, VTerm(Term.EXIT)) == (three + [ld], [add] + s4)


TREE = r"""
extern "C" __global__ void tree(const int *in, int *out)
{
    __shared__ int s[16];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * 16 + t];
    __syncthreads();
#pragma unroll 1
    for (unsigned k = 8; k > 0; k >>= 1) {
        if (t < k)
            s[t] += s[t + k] * (int)k;
        __syncthreads();
    }
    if (t == 0)
        out[blockIdx.x] = s[0];
}
"""


@pytest.mark.parametrize("frontend,opt", FRONTENDS)
def test_tree_reduction_with_barriers(frontend, opt):
    x = np.random.default_rng(5).integers(-2**31, 2**31, 32).astype(np.int32)
    out = np.zeros(2, np.int32)
    prog, _ = launch(TREE, "tree", 2, 16, [x, out], frontend, opt)
    want = []
    for blk in range(2):
        s = [int(v) for v in x[16 * blk:16 * blk + 16]]
        k = 8
        while k:
            s[:k] = [(s[t] + s[t + k] * k + 2**31) % 2**32 - 2**31 for t in range(k)]
            k >>= 1
        want.append(s[0])
    assert out.tolist() == want
    # the loop's barrier block is not an empty pass of its own
    assert all(b.instrs for b in prog.blocks if b.term.kind is Term.BAR)


@settings(max_examples=400, deadline=None)
@given(blocks(), blocks(), st.lists(st.integers(0, 2**32 - 1), min_size=5, max_size=5), st.booleans())
def test_balancing_keeps_what_the_blocks_compute(b, s, init, brc):
    regs = {k + 1: v for k, v in enumerate(init)}
    nb, ns = bar_pair(b, s, None if brc else VTerm(Term.EXIT))
    assert run_block(nb + ns, regs) == run_block(b + s, regs)
    # memory ops stay on their side of the barrier
    assert [i for i in nb if i.op.is_unit] == [i for i in b if i.op.is_unit]
    assert [i for i in ns if i.op.is_unit] == [i for i in s if i.op.is_unit]


# ---------------------------------------------------------------------------
# cfg.if_convert: triangles and diamonds (off by default: IF_CONVERT_MAX = DIAMOND_MAX = 0,
# they cost tokens on the suite; the limits are raised here)
# ---------------------------------------------------------------------------
DIAMOND = r"""
extern "C" __global__ void diamond(const int *x, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i], r, q = 7;
    if (v > 0) {            // divisions: the compiler cannot speculate them, the machine can (total)
        r = 1000 / v;
        q = v ^ 5;
    } else {
        r = 2000 % (v - 1);
    }
    out[2 * i] = r;
    out[2 * i + 1] = q;
}
"""


def _diamond_ref(x):
    out = []
    for v in map(int, x):
        if v > 0:
            r, q = 1000 // v, v ^ 5
        else:
            d = v - 1
            r, q = 2000 - d * int(2000 / d), 7          # C's remainder: the dividend's sign
        out += [r, q]
    return out


@pytest.mark.parametrize("frontend,opt", FRONTENDS)
@pytest.mark.parametrize("limits", [(0, 0), (8, 8)], ids=["default", "diamonds"])
def test_diamond(monkeypatch, frontend, opt, limits):
    monkeypatch.setattr(cfg, "IF_CONVERT_MAX", limits[0])
    monkeypatch.setattr(cfg, "DIAMOND_MAX", limits[1])
    # every warp diverges: positive, zero and negative lanes (v = 0 takes the else side, and
    # the then side's 1000 / 0 runs speculatively on that lane: -1 on the machine, discarded)
    x = np.array([5, 0, -3, 1000, -1, 7, 0, -2**31 + 1, 2**31 - 1, -7, 3, 0, 1, -1000, 12, -2], np.int32)
    out = np.zeros(32, np.int32)
    prog, _ = launch(DIAMOND, "diamond", 4, 4, [x, out], frontend, opt)
    assert out.tolist() == _diamond_ref(x)
    branches = sum(b.term.kind is Term.BRC for b in prog.blocks)
    assert (branches == 0) == (limits != (0, 0))


def vir(blocks_spec):
    """VBlocks from (instrs, term) pairs; instrs as (op, dst, srcs...), registers as ints."""
    return [VBlock([VInstr(op, d, list(srcs)) for op, d, *srcs in ins], term) for ins, term in blocks_spec]


def run_vir(blocks, regs, limit=1000):
    """Run IR blocks (ALU only) from block 0 on one lane; the registers at EXIT."""
    regs, b = dict(regs), 0
    for _ in range(limit):
        for i in blocks[b].instrs:
            regs[i.dst] = isa.ALU_SEMANTICS[i.op.name](*(s.value if isinstance(s, I) else regs.get(s, 0)
                                                          for s in i.srcs))
        t = blocks[b].term
        if t.kind is Term.EXIT:
            return regs
        b = (t.target if regs.get(t.cond, 0) else t.fallthrough) if t.kind is Term.BRC else t.target
    raise AssertionError("no exit")


def diamond_ir():
    # 0: c = x < 5; BRC c ? 1 : 2      1: y = x * 3; c = y ^ 1 (the side writes c); z = 9   -> 3
    # 2: y = x - 1; w = y + y           -> 3      3: reads y, c, z, w; exit
    return vir([([(Op.SETLT, 10, 1, I(5))], VTerm(Term.BRC, 1, 10, 2)),
                ([(Op.MUL, 2, 1, I(3)), (Op.XOR, 10, 2, I(1)), (Op.MOV, 3, I(9))], VTerm(Term.JMP, 3)),
                ([(Op.SUB, 2, 1, I(1)), (Op.ADD, 4, 2, 2)], VTerm(Term.JMP, 3)),
                ([(Op.ADD, 20, 2, 3), (Op.SUB, 21, 4, 10)], VTerm(Term.EXIT))])


@pytest.mark.parametrize("x", [0, 4, 5, 6, 2**31, 2**32 - 1])
def test_diamond_ir_commits(monkeypatch, x):
    monkeypatch.setattr(cfg, "DIAMOND_MAX", 8)
    blocks = diamond_ir()
    init = {1: x, 2: 11, 3: 12, 4: 13, 10: 14}
    want = run_vir(blocks, init)
    cfg.if_convert(blocks, 100)
    assert blocks[0].term.kind is Term.JMP
    got = run_vir(blocks, init)
    assert {k: got[k] for k in (1, 2, 3, 4, 10, 20, 21)} == {k: want[k] for k in (1, 2, 3, 4, 10, 20, 21)}
    sels = [i for i in blocks[0].instrs if i.op is Op.SEL]
    assert sels[-1].dst == 10                   # the condition is committed last
    assert len(sels) == 4                       # y from both sides, c, z, w


def test_if_convert_keeps_loop_carried_registers(monkeypatch):
    # 0: s = 0; i = 0 -> 1.   1: c = i & 1; BRC c ? 2 : 3.   2: s = s + i; t = s * 2 -> 3  (t is read
    # nowhere else: no commit; s is read by the side itself before it writes s: committed)
    # 3: i = i + 1; d = i < 6; BRC d ? 1 : 4.   4: exit
    monkeypatch.setattr(cfg, "IF_CONVERT_MAX", 8)
    blocks = vir([([(Op.MOV, 1, I(0)), (Op.MOV, 2, I(0))], VTerm(Term.JMP, 1)),
                  ([(Op.AND, 10, 2, I(1))], VTerm(Term.BRC, 2, 10, 3)),
                  ([(Op.ADD, 1, 1, 2), (Op.MUL, 5, 1, I(2))], VTerm(Term.JMP, 3)),
                  ([(Op.ADD, 2, 2, I(1)), (Op.SETLT, 11, 2, I(6))], VTerm(Term.BRC, 1, 11, 4)),
                  ([], VTerm(Term.EXIT))])
    want = run_vir(blocks, {})[1]
    cfg.if_convert(blocks, 100)
    assert blocks[1].term.kind is Term.JMP
    assert run_vir(blocks, {})[1] == want == 1 + 3 + 5
    assert [i.dst for i in blocks[1].instrs if i.op is Op.SEL] == [1]


@pytest.mark.parametrize("change", ["unit op", "two ways in", "other join", "too big"])
def test_diamond_not_converted(monkeypatch, change):
    monkeypatch.setattr(cfg, "DIAMOND_MAX", 5)
    blocks = diamond_ir()
    if change == "unit op":
        blocks[2].instrs[1] = VInstr(Op.LD, 4, [1, I(0)], isa.Space.GLOBAL)      # 3 + 2 <= 5
    elif change == "two ways in":
        blocks.append(VBlock([], VTerm(Term.JMP, 2)))
        blocks[3].term = VTerm(Term.BRC, 4, 10, 5)
        blocks.append(VBlock([], VTerm(Term.EXIT)))
    elif change == "other join":
        blocks[2].term = VTerm(Term.JMP, 4)
        blocks.append(VBlock([], VTerm(Term.EXIT)))
    else:
        blocks[2].instrs.append(VInstr(Op.MOV, 6, [I(1)]))      # 3 + 3 > 5
    cfg.if_convert(blocks, 100)
    assert blocks[0].term.kind is Term.BRC


# ---------------------------------------------------------------------------
# cfg.branch_on_values: BRC on x instead of on x != 0 / x == 0
# ---------------------------------------------------------------------------
def cmp_ir(op, srcs, extra=None):
    # 0: c = op(srcs); BRC c ? 1 : 2.   1: r = 10 -> 3.   2: r = 20 -> 3.   3: exit
    blocks = vir([([(Op.AND, 2, 1, I(6)), (op, 10, *srcs)], VTerm(Term.BRC, 1, 10, 2)),
                  ([(Op.MOV, 5, I(10))], VTerm(Term.JMP, 3)),
                  ([(Op.MOV, 5, I(20))], VTerm(Term.JMP, 3)),
                  ([], VTerm(Term.EXIT))])
    if extra:
        extra(blocks)
    return blocks


@pytest.mark.parametrize("op,srcs", [(Op.SETNE, (2, I(0))), (Op.SETNE, (I(0), 2)), (Op.SETEQ, (2, I(0))),
                                     (Op.SETEQ, (I(0), 2))])
def test_branch_on_value(op, srcs):
    blocks = cmp_ir(op, srcs)
    cfg.branch_on_values(blocks)
    assert blocks[0].term.cond == 2 and [i.op for i in blocks[0].instrs] == [Op.AND]
    for x in (0, 1, 2, 4, 6, 7, 2**32 - 2):
        assert run_vir(blocks, {1: x})[5] == run_vir(cmp_ir(op, srcs), {1: x})[5]


def _redefine_x(blocks):
    blocks[0].instrs.append(VInstr(Op.ADD, 2, [2, I(1)]))


def _read_c(blocks):
    blocks[1].instrs.append(VInstr(Op.ADD, 6, [10, I(1)]))


def _second_branch(blocks):
    blocks[1].term = VTerm(Term.BRC, 3, 10, 2)


def _second_def(blocks):
    blocks[2].instrs.append(VInstr(Op.MOV, 10, [I(1)]))


@pytest.mark.parametrize("op,srcs,extra", [
    (Op.SETNE, (2, I(1)), None),                    # not a test against 0
    (Op.SETLT, (2, I(0)), None),
    (Op.SETNE, (2, 3), None),
    (Op.SETNE, (2, I(0)), _redefine_x),             # x changes between the compare and the branch
    (Op.SETNE, (2, I(0)), _read_c),                 # c is read by an instruction
    (Op.SETNE, (2, I(0)), _second_branch),          # and by another branch
    (Op.SETNE, (2, I(0)), _second_def),             # c has another definition
], ids=["ne1", "lt", "ne-reg", "x-redefined", "c-read", "c-two-branches", "c-two-defs"])
def test_branch_on_value_not(op, srcs, extra):
    blocks = cmp_ir(op, srcs, extra)
    cfg.branch_on_values(blocks)
    assert blocks[0].term.cond == 10 and blocks[0].instrs[-1].dst in (10, 2)


BITS = r"""
extern "C" __global__ void bits(const unsigned *x, int *out)
{
    int i = threadIdx.x;
    unsigned v = x[i];
    int r = 0, n = 0;
#pragma unroll 1
    while (v) {                 // a branch on v != 0
        if (v & 4u)             // and on (v & 4) != 0
            r += v % 7u;        // (a division: kept as a branch)
        v >>= 1;
        n++;
    }
    out[2 * i] = r;
    out[2 * i + 1] = n;
}
"""


@pytest.mark.parametrize("frontend,opt", FRONTENDS)
def test_bit_loop(frontend, opt):
    x = np.array([0, 1, 4, 5, 7, 0xFFFFFFFF, 0x80000000, 12345, 6, 0x10, 3, 0xDEADBEEF, 8, 9, 2**31 - 1, 100],
                 np.uint32)
    out = np.zeros(32, np.int32)
    prog, _ = launch(BITS, "bits", 1, 16, [x, out], frontend, opt)
    want = []
    for v in map(int, x):
        r = n = 0
        while v:
            if v & 4:
                r += v % 7
            v >>= 1
            n += 1
        want += [r, n]
    assert out.tolist() == want


# ---------------------------------------------------------------------------
# regalloc.loop_depths: rematerialisation prefers values read outside loops
# ---------------------------------------------------------------------------
def test_loop_depths():
    from qwengpu.toolchain.regalloc import loop_depths
    # 0 -> 1; 1: outer header -> 2 or 5; 2 <-> 3 inner loop; 3 -> 4 -> 1; 5: exit; 6 -> 6 unreachable
    j, brc, ex = (lambda t: VTerm(Term.JMP, t)), (lambda t, f: VTerm(Term.BRC, t, 1, f)), VTerm(Term.EXIT)
    blocks = [VBlock([], t) for t in (j(1), brc(2, 5), j(3), brc(2, 4), j(1), ex, j(6))]
    assert loop_depths(blocks) == [0, 1, 2, 2, 1, 0, 0]
    # a self loop, and two back edges into one header
    blocks = [VBlock([], t) for t in (j(1), brc(1, 2), brc(1, 3), ex)]
    assert loop_depths(blocks) == [0, 2, 1, 0]


# ---------------------------------------------------------------------------
# cfg.upper_bounds / drop_redundant_masks: narrow arithmetic's masks of values that fit
# ---------------------------------------------------------------------------
def test_upper_bounds():
    blocks = vir([([(Op.AND, 2, 1, I(255)), (Op.MUL, 3, 2, I(171)), (Op.SHR, 4, 3, I(10)),
                    (Op.SETLT, 5, 1, 2), (Op.OR, 6, 2, 5), (Op.SUB, 7, 2, I(1)), (Op.ADD, 8, 8, I(1)),
                    (Op.BFEU, 9, 1, I(3), I(5)), (Op.REMU, 10, 1, I(7)), (Op.DIVU, 11, 4, 2),
                    (Op.SEL, 12, 5, 2, 4), (Op.LD, 13, 1, I(0))], VTerm(Term.BRC, 0, 5, 1)),
                  ([], VTerm(Term.EXIT))])
    blocks[0].instrs[-1].mod = isa.Space.GLOBAL
    ub = cfg.upper_bounds(blocks)
    assert [ub[v] for v in range(2, 14)] == [255, 255 * 171, 255 * 171 >> 10, 1, 255, M32, M32, 31, 6, M32,
                                             255, M32]
    # 8 = 8 + 1 in a loop grows with every round: widened; 1 has no definition


M32 = 2**32 - 1


def mask_ir(*instrs):
    """0: r1 = ld [r20]; instrs; r30 = r9 + 0 (a reader); exit."""
    blocks = vir([([(Op.LD, 1, 20, I(0)), *instrs, (Op.ADD, 30, 9, I(0))], VTerm(Term.EXIT))])
    blocks[0].instrs[0].mod = isa.Space.GLOBAL
    return blocks


@pytest.mark.parametrize("instrs,kept", [
    ([(Op.AND, 2, 1, I(0xFF)), (Op.MUL, 3, 2, I(171)), (Op.AND, 9, 3, I(0xFFFF))], [Op.AND, Op.MUL]),
    ([(Op.BFEU, 2, 1, I(0), I(8)), (Op.AND, 9, I(0xFFFF), 2)], [Op.BFEU]),
    ([(Op.SETLT, 2, 1, I(5)), (Op.BFEU, 9, 2, I(0), I(1))], [Op.SETLT]),
    # kept: the value may not fit, or the mask is not 2**k - 1
    ([(Op.AND, 2, 1, I(0xFF)), (Op.SUB, 3, 2, I(1)), (Op.AND, 9, 3, I(0xFFFF))], [Op.AND, Op.SUB, Op.AND]),
    ([(Op.AND, 2, 1, I(0xFF)), (Op.MUL, 3, 2, I(0x102)), (Op.AND, 9, 3, I(0xFFFF))], [Op.AND, Op.MUL, Op.AND]),
    ([(Op.AND, 2, 1, I(0xFF)), (Op.MUL, 3, 2, I(0x101)), (Op.AND, 9, 3, I(0xFFFF))], [Op.AND, Op.MUL]),  # 65,535
    ([(Op.AND, 2, 1, I(0xFF)), (Op.AND, 9, 2, I(0xF0))], [Op.AND, Op.AND]),
    ([(Op.AND, 2, 1, I(0xF)), (Op.AND, 9, 2, I(0x1E))], [Op.AND, Op.AND]),      # 15 <= 30, 15 & 30 = 14
    ([(Op.AND, 2, 1, I(0xFFFF)), (Op.MUL, 3, 2, I(0x10002)), (Op.AND, 9, 3, I(0xFFFF))],   # wraps
     [Op.AND, Op.MUL, Op.AND]),
    ([(Op.AND, 2, 1, I(0xFF)), (Op.BFEU, 9, 2, I(1), I(8))], [Op.AND, Op.BFEU]),
    ([(Op.AND, 9, 1, I(0xFFFF))], [Op.AND]),                # a load: any value
])
def test_redundant_masks(instrs, kept):
    blocks = mask_ir(*instrs)
    cfg.drop_redundant_masks(blocks)
    assert [i.op for i in blocks[0].instrs[1:-1]] == kept
    assert not any(i.op is Op.MOV for i in blocks[0].instrs)        # the copies went too


def test_mask_copy_stays_when_read_elsewhere_or_the_source_changes():
    # r9 = r2 & 0xff (r2 < 256) is r9 = r2; but r2 changes before the second read of r9
    blocks = vir([([(Op.LD, 1, 20, I(0)), (Op.AND, 2, 1, I(0xFF)), (Op.AND, 9, 2, I(0xFF)),
                    (Op.ADD, 30, 9, I(1)), (Op.SHR, 2, 2, I(1)), (Op.ADD, 31, 9, I(2))], VTerm(Term.JMP, 1)),
                  ([(Op.ADD, 32, 2, I(0))], VTerm(Term.EXIT))])
    blocks[0].instrs[0].mod = isa.Space.GLOBAL
    cfg.drop_redundant_masks(blocks)
    ops = [(i.op, i.dst, i.srcs) for i in blocks[0].instrs]
    assert (Op.MOV, 9, [2]) in ops and (Op.ADD, 31, [9, I(2)]) in ops
    # read in another block: the copy stays
    blocks = vir([([(Op.LD, 1, 20, I(0)), (Op.AND, 2, 1, I(0xFF)), (Op.AND, 9, 2, I(0xFF))], VTerm(Term.JMP, 1)),
                  ([(Op.ADD, 32, 9, I(0))], VTerm(Term.EXIT))])
    blocks[0].instrs[0].mod = isa.Space.GLOBAL
    cfg.drop_redundant_masks(blocks)
    assert (Op.MOV, 9, [2]) in [(i.op, i.dst, i.srcs) for i in blocks[0].instrs]


def test_loop_counter_bound_widens():
    # i = 0; loop: i = i + 1; m = i & 0xffff (must stay: i grows without a bound); BRC
    blocks = vir([([(Op.MOV, 1, I(0))], VTerm(Term.JMP, 1)),
                  ([(Op.ADD, 1, 1, I(1)), (Op.AND, 2, 1, I(0xFFFF)), (Op.SETNE, 3, 2, I(0))], VTerm(Term.BRC, 1, 3, 2)),
                  ([], VTerm(Term.EXIT))])
    assert cfg.upper_bounds(blocks)[1] == M32
    cfg.drop_redundant_masks(blocks)
    assert blocks[1].instrs[1].op is Op.AND


NARROW = r"""
extern "C" __global__ void narrow(const unsigned char *px, unsigned short *out, int n)
{
    int i = threadIdx.x;
    unsigned char a = px[i], b = px[(i + 1) % n];
    unsigned short s = (unsigned short)(a * 3 + b / 3);      // fits: no mask needed
    unsigned short t = (unsigned short)(a * 300 + b);        // may not fit: masked
    unsigned short u = (unsigned short)(s - t);              // wraps
    out[3 * i] = s;
    out[3 * i + 1] = t;
    out[3 * i + 2] = u;
}
"""


@pytest.mark.parametrize("frontend,opt", FRONTENDS)
def test_narrow_masks_kernel(frontend, opt):
    px = np.array([0, 1, 255, 254, 128, 127, 3, 200, 17, 99, 250, 7, 64, 255, 0, 201], np.uint8)
    words = np.zeros(24, np.uint32)             # arguments are 32-bit words
    launch(NARROW, "narrow", 1, 16, [px.view(np.uint32).copy(), words, 16], frontend, opt)
    out = words.view(np.uint16)
    want = []
    for i in range(16):
        a, b = int(px[i]), int(px[(i + 1) % 16])
        s, t = (a * 3 + b // 3) & 0xFFFF, (a * 300 + b) & 0xFFFF
        want += [s, t, (s - t) & 0xFFFF]
    assert out.tolist() == want


# ---------------------------------------------------------------------------
# cfg.fold_address_adds: register + register addresses
# ---------------------------------------------------------------------------
def addr_ir(*instrs, later=()):
    blocks = vir([(list(instrs), VTerm(Term.JMP, 1)), (list(later), VTerm(Term.EXIT))])
    for b in blocks:
        for i in b.instrs:
            if i.op in (Op.LD, Op.ST):
                i.mod = isa.Space.GLOBAL
    return blocks


def test_address_add_folds():
    blocks = addr_ir((Op.SHL, 3, 2, I(2)), (Op.ADD, 4, 1, 3), (Op.LD, 5, 4, I(0)),
                     (Op.ADD, 6, 3, I(8)), (Op.ST, None, 6, I(0), 5))
    cfg.fold_address_adds(blocks)
    assert [(i.op, i.srcs) for i in blocks[0].instrs] == [(Op.SHL, [2, I(2)]), (Op.LD, [1, 3]),
                                                          (Op.ST, [3, I(8), 5])]


def test_address_add_folds_into_every_access():
    # a[i] += v: the load and the store share the address
    blocks = addr_ir((Op.ADD, 4, 1, 3), (Op.LD, 5, 4, I(0)), (Op.ADD, 5, 5, 7), (Op.ST, None, 4, I(0), 5))
    cfg.fold_address_adds(blocks)
    assert [(i.op, i.srcs) for i in blocks[0].instrs] == [(Op.LD, [1, 3]), (Op.ADD, [5, 7]), (Op.ST, [1, 3, 5])]


@pytest.mark.parametrize("case", ["offset", "t read again", "x changes", "other block", "two defs",
                                  "x changes between", "stored value", "second offset"])
def test_address_add_stays(case):
    add, ld = (Op.ADD, 4, 1, 3), (Op.LD, 5, 4, I(0))
    instrs, later = [add, ld], []
    if case == "offset":
        instrs = [add, (Op.LD, 5, 4, I(4))]
    elif case == "t read again":
        later = [(Op.ADD, 7, 4, I(1))]
    elif case == "x changes":
        instrs = [add, (Op.MOV, 1, I(0)), ld]
    elif case == "other block":
        instrs, later = [add], [ld]
    elif case == "two defs":                    # (conservative: t's other definition is elsewhere)
        later = [(Op.MOV, 4, I(0))]
    elif case == "x changes between":
        instrs = [add, ld, (Op.ADD, 3, 3, I(1)), (Op.ST, None, 4, I(0), 5)]
    elif case == "stored value":
        instrs = [add, ld, (Op.ST, None, 4, I(0), 4)]      # stores its own address
    else:
        instrs = [add, ld, (Op.ST, None, 4, I(4), 5)]
    blocks = addr_ir(*instrs, later=later)
    cfg.fold_address_adds(blocks)
    assert any(i.op is Op.ADD and i.dst == 4 for b in blocks for i in b.instrs)


GATHER = r"""
extern "C" __global__ void gather(const int *a, const int *idx, int *out, int n)
{
    __shared__ int s[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x;
    s[t] = a[(idx[i] & 31)] + a[i];
    s[t + 16] = idx[(i * 5) % n];
    __syncthreads();
    out[i] = s[(t * 3) & 15] - s[16 + ((t + 1) & 15)];
    out[n + i] = a[n - 1 - i] * 2;
}
"""


@pytest.mark.parametrize("frontend,opt", FRONTENDS)
def test_gather_kernel(frontend, opt):
    rng = np.random.default_rng(3)
    n = 32
    a = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    idx = rng.integers(0, 2**31, n).astype(np.int32)
    out = np.zeros(2 * n, np.int32)
    launch(GATHER, "gather", 2, 16, [a, idx, out, n], frontend, opt)
    want = np.zeros(2 * n, np.int64)
    for blk in range(2):
        s = [0] * 32
        for t in range(16):
            i = blk * 16 + t
            s[t] = int(a[idx[i] & 31]) + int(a[i])
            s[t + 16] = int(idx[(i * 5) % n])
        for t in range(16):
            i = blk * 16 + t
            want[i] = s[(t * 3) & 15] - s[16 + ((t + 1) & 15)]
            want[n + i] = int(a[n - 1 - i]) * 2
    assert out.tolist() == [(int(v) + 2**31) % 2**32 - 2**31 for v in want]


def bool_ir(op, srcs, mask=1):
    # 0: x = r1 & mask; c = op(srcs); BRC c ? 1 : 2.   1: r = 10 -> 3.   2: r = 20 -> 3.   3: exit
    return vir([([(Op.AND, 2, 1, I(mask)), (op, 10, *srcs)], VTerm(Term.BRC, 1, 10, 2)),
                ([(Op.MOV, 5, I(10))], VTerm(Term.JMP, 3)),
                ([(Op.MOV, 5, I(20))], VTerm(Term.JMP, 3)),
                ([], VTerm(Term.EXIT))])


@pytest.mark.parametrize("op,srcs", [(Op.SETEQ, (2, I(1))), (Op.SETNE, (I(1), 2)), (Op.XOR, (2, I(1))),
                                     (Op.XOR, (I(1), 2))])
@pytest.mark.parametrize("mask", [1, 2])
def test_branch_on_boolean(op, srcs, mask):
    blocks = bool_ir(op, srcs, mask)
    cfg.branch_on_values(blocks)
    # x is 0 or 1 only with mask 1; x & 2 may be 2, where x == 1 and x are not the same test
    assert (blocks[0].term.cond == 2) == (mask == 1)
    for x in (0, 1, 2, 3, 2**32 - 1):
        assert run_vir(blocks, {1: x})[5] == run_vir(bool_ir(op, srcs, mask), {1: x})[5]
