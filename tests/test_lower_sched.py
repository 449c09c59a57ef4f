"""Block scheduling and CFG transformations that save passes (lower.schedule, cfg.fold_friendly,
cfg.if_convert): hand-built instruction lists where a move must or must not happen, a
property test that a move never changes what a block computes, and CUDA kernels through the
real pipeline against NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwengpu import isa, suite
from qwengpu.api import Device
from qwengpu.machine.encoding import term_slot
from qwengpu.toolchain.cfg import movable_to_end
from qwengpu.toolchain.lower import schedule

from test_lower import FRONTENDS, launch

Op, R, I = isa.Op, isa.Reg, isa.Imm


def ins(op, d, *srcs, mod=None):
    return isa.Instr(op, R(d), tuple(R(s) if isinstance(s, int) else s for s in srcs), mod)


LD = lambda d, a: ins(Op.LD, d, a, I(0), mod=isa.Space.GLOBAL)          # noqa: E731
ST = lambda a, v: ins(Op.ST, 0, a, I(0), v, mod=isa.Space.GLOBAL)       # noqa: E731


def flat(chunks):
    return [i for c in chunks for i in c]


# ---------------------------------------------------------------------------
# lower.schedule: the condition's definition goes before an instruction it does not need
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


def test_schedule_packs_in_block_slots():
    xs = [ins(Op.ADD, 2 + k % 3, 5, I(k)) for k in range(9)] + [ins(Op.SETLT, 1, 4, I(5))]
    chunks = schedule(xs, R(1))
    assert [len(c) for c in chunks] == [4, 4, 2] and chunks[-1][-1].dst != R(1)
    assert sorted(map(id, flat(chunks))) == sorted(map(id, xs))


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
            if b.instrs and term_slot(b) == len(b.instrs):
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
    assert loops and all(term_slot(b) < len(b.instrs) for b in loops)
