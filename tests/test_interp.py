"""The reference interpreter on hand-built programs.

Expected values are worked out by hand or with NumPy from what the program
means, never read back from the interpreter.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as hst
from test_isa import f32_add

from qwengpu import interp, isa
from qwengpu.errors import DeadlockError, ExecutionError, LaunchError, MachineLimitError, MemoryFault
from qwengpu.isa import AtomOp, Imm, Op, Reg, ShflMode, Space, SReg, Term, VoteMode

R = Reg
M32 = 0xFFFF_FFFF


# --- program builders ---------------------------------------------------------
def ins(op, d, *srcs, mod=None):
    return isa.Instr(op, R(d), tuple(s if isinstance(s, (Reg, Imm)) else Imm(s) for s in srcs), mod)


def s2r(d, sreg):
    return ins(Op.S2R, d, Imm(sreg))


def st(addr, value, space=Space.GLOBAL, offset=0):
    """ST [addr + offset] <- value."""
    return ins(Op.ST, 0, addr, offset, value, mod=space)


def ld(d, addr, space=Space.GLOBAL, offset=0):
    return ins(Op.LD, d, addr, offset, mod=space)


def jmp(t):
    return isa.Terminator(Term.JMP, target=t)


def brc(cond, taken, fall, reconv):
    return isa.Terminator(Term.BRC, target=taken, cond=R(cond), fallthrough=fall, reconv=reconv)


def bar(t):
    return isa.Terminator(Term.BAR, target=t)


EXIT = isa.Terminator(Term.EXIT)


def blk(term, *instrs):
    return isa.MachineBlock(list(instrs), term)


def prog(*blocks, params=(), const_init=None):
    return isa.Program("test", list(blocks), [isa.Param(f"p{i}", i) for i in range(len(params))],
                       const_init=dict(const_init or {}))


def launch(program, grid=(1, 1, 1), block=(4, 1, 1), params=(), memory=None, **kw):
    mem = np.zeros(isa.GLOBAL_WORDS, np.uint32) if memory is None else memory
    ex = interp.run(program, grid, block, list(params), mem, **kw)
    return mem, ex


# address of thread's output word: r15 = tid.x * 4 (+ base)
def out_addr(d=15, base=0):
    return [s2r(d, SReg.TID_X), ins(Op.SHL, d, R(d), 2)] + ([ins(Op.ADD, d, R(d), base)] if base else [])


# --- straight-line code --------------------------------------------------------
def test_straight_line_alu_and_forwarding():
    p = prog(
        blk(jmp(1), ins(Op.MOV, 1, 7), ins(Op.ADD, 2, R(1), R(1)), ins(Op.MUL, 3, R(2), R(2)),
            ins(Op.SUB, 4, R(1), 10)),                    # 7, 14, 196, -3: each reads the previous result
        blk(jmp(2), ins(Op.DIV, 5, R(4), 2), ins(Op.REM, 6, R(4), 2), ins(Op.SHR, 7, R(4), 28),
            ins(Op.SEL, 8, R(0), 1, 2)),
        blk(jmp(3), st(R(0), R(3)), ), blk(jmp(4), st(R(0), R(5), offset=4)),
        blk(jmp(5), st(R(0), R(6), offset=8)), blk(jmp(6), st(R(0), R(7), offset=12)),
        blk(EXIT, st(R(0), R(8), offset=16)))
    mem, ex = launch(p, block=(1, 1, 1))
    assert mem[:5].tolist() == [196, isa.u32(-1), isa.u32(-1), 0xF, 2]   # -3/2 = -1, -3%2 = -1 (C rounding)
    assert ex.passes == 7 and ex.instructions == 8 + 5


def test_r0_reads_zero_and_ignores_writes():
    p = prog(blk(EXIT, ins(Op.MOV, 0, 99), ins(Op.ADD, 1, R(0), 5), st(R(0), R(1))))
    mem, ex = launch(p, block=(1, 1, 1), trace=True)
    assert mem[0] == 5
    assert ex.steps[0].reg_writes == [(0, 1, 5)]        # the r0 write is not traced either


def test_registers_are_per_lane():
    p = prog(blk(EXIT, s2r(1, SReg.TID_X), ins(Op.MUL, 2, R(1), R(1)), ins(Op.SHL, 3, R(1), 2),
                 st(R(3), R(2))))
    mem, _ = launch(p, block=(4, 1, 1))
    assert mem[:5].tolist() == [0, 1, 4, 9, 0]


# --- divergence ----------------------------------------------------------------
def if_else_program():
    # out[tid] = tid odd ? tid * 10 : tid + 100, then everyone adds 1 after reconverging
    return prog(
        blk(brc(2, 1, 2, 3), s2r(1, SReg.TID_X), ins(Op.AND, 2, R(1), 1)),
        blk(jmp(3), ins(Op.MUL, 3, R(1), 10)),
        blk(jmp(3), ins(Op.ADD, 3, R(1), 100)),
        blk(EXIT, ins(Op.ADD, 3, R(3), 1), ins(Op.SHL, 4, R(1), 2), st(R(4), R(3))))


def test_if_else_reconverges():
    mem, ex = launch(if_else_program(), block=(4, 1, 1), trace=True)
    assert mem[:4].tolist() == [101, 11, 103, 31]
    assert [(s.pc, s.mask) for s in ex.steps] == [(0, 0b1111), (1, 0b1010), (2, 0b0101), (3, 0b1111)]


def test_uniform_branch_does_not_split():
    mem, ex = launch(if_else_program(), block=(1, 1, 1), trace=True)
    assert [(s.pc, s.mask) for s in ex.steps] == [(0, 1), (2, 1), (3, 1)]
    assert mem[0] == 101


def test_nested_divergence():
    # tid < 2 ? (tid == 0 ? 10 : 11) : 20; then +tid*1000 after the outer join
    p = prog(
        blk(brc(2, 1, 4, 5), s2r(1, SReg.TID_X), ins(Op.SETLT, 2, R(1), 2)),
        blk(brc(3, 2, 3, 5), ins(Op.SETEQ, 3, R(1), 0)),       # inner join is the outer join
        blk(jmp(5), ins(Op.MOV, 5, 10)),
        blk(jmp(5), ins(Op.MOV, 5, 11)),
        blk(jmp(5), ins(Op.MOV, 5, 20)),
        blk(EXIT, ins(Op.MUL, 6, R(1), 1000), ins(Op.ADD, 5, R(5), R(6)), ins(Op.SHL, 4, R(1), 2), st(R(4), R(5))))
    mem, ex = launch(p, block=(4, 1, 1), trace=True)
    assert mem[:4].tolist() == [10, 1011, 2020, 3020]
    assert [(s.pc, s.mask) for s in ex.steps] == [(0, 0xF), (1, 0b0011), (2, 0b0001), (3, 0b0010),
                                                  (4, 0b1100), (5, 0xF)]


def test_nested_divergence_with_inner_join():
    # inner if/else joins at B4 (which then jumps to the outer join B6)
    p = prog(
        blk(brc(2, 1, 5, 6), s2r(1, SReg.TID_X), ins(Op.SETLT, 2, R(1), 2)),
        blk(brc(3, 2, 3, 4), ins(Op.SETEQ, 3, R(1), 0)),
        blk(jmp(4), ins(Op.MOV, 5, 10)),
        blk(jmp(4), ins(Op.MOV, 5, 11)),
        blk(jmp(6), ins(Op.ADD, 5, R(5), 100)),
        blk(jmp(6), ins(Op.MOV, 5, 20)),
        blk(EXIT, ins(Op.SHL, 4, R(1), 2), st(R(4), R(5))))
    mem, ex = launch(p, block=(4, 1, 1), trace=True)
    assert mem[:4].tolist() == [110, 111, 20, 20]
    assert [(s.pc, s.mask) for s in ex.steps] == [(0, 0xF), (1, 0b0011), (2, 0b0001), (3, 0b0010),
                                                  (4, 0b0011), (5, 0b1100), (6, 0xF)]


def loop_program():
    # sum = 0; for (i = 0; i < tid; ) { i++; sum += i; }  out[tid] = sum
    return prog(
        blk(brc(4, 1, 2, 2), s2r(1, SReg.TID_X), ins(Op.MOV, 2, 0), ins(Op.MOV, 3, 0), ins(Op.SETLT, 4, R(3), R(1))),
        blk(brc(4, 1, 2, 2), ins(Op.ADD, 3, R(3), 1), ins(Op.ADD, 2, R(2), R(3)), ins(Op.SETLT, 4, R(3), R(1))),
        blk(EXIT, ins(Op.SHL, 5, R(1), 2), st(R(5), R(2))))


def test_loop_with_lane_dependent_trip_count():
    mem, ex = launch(loop_program(), block=(8, 1, 1), trace=True)
    t = np.arange(8)
    assert mem[:8].tolist() == (t * (t + 1) // 2).tolist()
    # each warp runs the loop body max(tid) times and reconverges once, with every lane, at B2
    assert ex.passes == (1 + 3 + 1) + (1 + 7 + 1)
    assert [(s.warp, s.mask) for s in ex.steps if s.pc == 2] == [(0, 0xF), (1, 0xF)]
    assert [s.mask for s in ex.steps if s.pc == 1 and s.warp == 0] == [0b1110, 0b1100, 0b1000]


def test_early_exit_of_some_lanes():
    # odd lanes exit inside the branch (paths meet only at exit); even lanes store
    p = prog(
        blk(brc(2, 1, 2, -1), s2r(1, SReg.TID_X), ins(Op.AND, 2, R(1), 1)),
        blk(EXIT),
        blk(EXIT, ins(Op.ADD, 3, R(1), 50), ins(Op.SHL, 4, R(1), 2), st(R(4), R(3))))
    mem, ex = launch(p, block=(4, 1, 1), trace=True)
    assert mem[:4].tolist() == [50, 0, 52, 0]
    assert [(s.pc, s.mask) for s in ex.steps] == [(0, 0xF), (1, 0b1010), (2, 0b0101)]


def test_exit_inside_if_then_join():
    # if (tid == 1) return; out[tid] = tid + 7   (branch joins at B2 for the survivors)
    p = prog(
        blk(brc(2, 1, 2, 2), s2r(1, SReg.TID_X), ins(Op.SETEQ, 2, R(1), 1)),
        blk(EXIT),
        blk(EXIT, ins(Op.ADD, 3, R(1), 7), ins(Op.SHL, 4, R(1), 2), st(R(4), R(3))))
    mem, ex = launch(p, block=(4, 1, 1), trace=True)
    assert mem[:4].tolist() == [7, 0, 9, 10]
    assert [(s.pc, s.mask) for s in ex.steps] == [(0, 0xF), (1, 0b0010), (2, 0b1101)]


# --- barriers -------------------------------------------------------------------
def barrier_program(sync):
    """Each thread spins tid times, writes shared[tid] = tid*3, syncs, then
    stores shared[(tid+1) % 16] to out[tid]. Without the barrier the fast
    warps read slots the slow warps have not written yet."""
    return prog(
        blk(brc(3, 1, 2, 2), s2r(1, SReg.TID_X), ins(Op.MOV, 2, 0), ins(Op.SETLT, 3, R(2), R(1))),
        blk(brc(3, 1, 2, 2), ins(Op.ADD, 2, R(2), 1), ins(Op.SETLT, 3, R(2), R(1))),
        blk(sync(3), ins(Op.MUL, 4, R(1), 3), ins(Op.SHL, 5, R(1), 2), st(R(5), R(4), Space.SHARED)),
        blk(jmp(4), ins(Op.ADD, 6, R(1), 1), ins(Op.AND, 6, R(6), 15), ins(Op.SHL, 6, R(6), 2),
            ld(7, R(6), Space.SHARED)),
        blk(EXIT, st(R(5), R(7))))


def neighbour_values(n):
    return [((t + 1) % 16) * 3 if (t + 1) % 16 < n else 0 for t in range(n)]


@pytest.mark.parametrize("n", [16, 13])   # 13: the last warp is one thread, which arrives last, alone
def test_barrier_across_four_warps(n):
    mem, ex = launch(barrier_program(bar), block=(n, 1, 1), trace=True)
    assert mem[:n].tolist() == neighbour_values(n)
    # no warp passes the barrier before every warp has arrived
    first_after = min(i for i, s in enumerate(ex.steps) if s.pc == 3)
    last_arrival = max(i for i, s in enumerate(ex.steps) if s.pc == 2)
    assert last_arrival < first_after


def test_without_the_barrier_the_result_differs():
    mem, _ = launch(barrier_program(jmp), block=(16, 1, 1))
    assert mem[:16].tolist() != neighbour_values(16)


def test_barrier_after_early_return():
    # if (tid < 2) return; shared[tid] = tid + 1; __syncthreads(); out[tid] = shared[tid ^ 4]
    p = prog(
        blk(brc(2, 1, 2, -1), s2r(1, SReg.TID_X), ins(Op.SETLT, 2, R(1), 2)),
        blk(EXIT),
        blk(bar(3), ins(Op.ADD, 3, R(1), 1), ins(Op.SHL, 4, R(1), 2), st(R(4), R(3), Space.SHARED)),
        blk(jmp(4), ins(Op.XOR, 5, R(1), 4), ins(Op.SHL, 5, R(5), 2), ld(6, R(5), Space.SHARED)),
        blk(EXIT, st(R(4), R(6))))
    mem, _ = launch(p, block=(16, 1, 1))
    want = [0, 0] + [(t ^ 4) + 1 if (t ^ 4) >= 2 else 0 for t in range(2, 16)]
    assert mem[:16].tolist() == want


def test_exit_completes_a_barrier():
    # warps 0-2 wait at the barrier while warp 3 loops and then exits: the exit releases them
    p = prog(
        blk(brc(2, 1, 3, -1), s2r(1, SReg.TID_X), ins(Op.SETGE, 2, R(1), 12), ins(Op.MOV, 3, 0)),
        blk(brc(4, 1, 2, 2), ins(Op.ADD, 3, R(3), 1), ins(Op.SETLT, 4, R(3), 5)),
        blk(EXIT),
        blk(bar(4)),
        blk(EXIT, ins(Op.SHL, 5, R(1), 2), st(R(5), 1)))
    mem, ex = launch(p, block=(16, 1, 1), trace=True)
    assert mem[:16].tolist() == [1] * 12 + [0] * 4
    assert ex.steps[-1].pc == 4 and [s.warp for s in ex.steps if s.pc == 2] == [3]


def test_deadlock_on_barrier_in_divergent_code():
    # if (tid < 2) __syncthreads();  -- lanes 2, 3 wait on the SIMT stack and never arrive
    p = prog(
        blk(brc(2, 1, 2, 2), s2r(1, SReg.TID_X), ins(Op.SETLT, 2, R(1), 2)),
        blk(bar(2)),
        blk(EXIT))
    with pytest.raises(DeadlockError, match=r"^deadlock in thread block 0: divergent barrier: warp 0 reached the "
                                            r"barrier ending B1 with lanes 0b0011 \(threads \[0, 1\]\) while its "
                                            r"live lanes 0b1100 \(threads \[2, 3\], linear thread ids\) wait on "
                                            r"its SIMT stack and can never arrive$"):
        launch(p, block=(4, 1, 1))


def test_divergent_barrier_in_the_second_warp():
    # if (tid < 4 || tid & 2) __syncthreads();  warp 0 arrives whole; in warp 1 only
    # tids 6, 7 arrive while tids 4, 5 wait on its SIMT stack
    p = prog(
        blk(brc(2, 1, 2, 2), s2r(1, SReg.TID_X), ins(Op.AND, 2, R(1), 2), ins(Op.SETLT, 3, R(1), 4),
            ins(Op.OR, 2, R(2), R(3))),
        blk(bar(2)),
        blk(EXIT))
    with pytest.raises(DeadlockError, match=r"thread block 0: divergent barrier: warp 1 reached the barrier ending "
                                            r"B1 with lanes 0b1100 \(threads \[6, 7\]\) while its live lanes "
                                            r"0b0011 \(threads \[4, 5\]"):
        launch(p, grid=(2, 1, 1), block=(8, 1, 1))


def test_divergent_barrier_only_in_the_second_thread_block():
    # if (ctaid == 1 && tid < 3) __syncthreads(); out[ctaid * 4 + tid] = 7
    # thread block 0 never syncs and finishes; in block 1 lane 3 does not arrive
    p = prog(
        blk(jmp(1), s2r(1, SReg.TID_X), s2r(2, SReg.CTAID_X), ins(Op.SETLT, 3, R(1), 3)),
        blk(brc(3, 2, 3, 3), ins(Op.SETEQ, 4, R(2), 1), ins(Op.AND, 3, R(3), R(4))),
        blk(bar(3)),
        blk(jmp(4), ins(Op.SHL, 5, R(2), 2), ins(Op.ADD, 5, R(5), R(1)), ins(Op.SHL, 5, R(5), 2)),
        blk(EXIT, st(R(5), 7)))
    mem = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    with pytest.raises(DeadlockError, match=r"thread block 1: divergent barrier: warp 0 reached the barrier ending "
                                            r"B2 with lanes 0b0111 \(threads \[0, 1, 2\]\) while its live lanes "
                                            r"0b1000 \(threads \[3\]"):
        launch(p, grid=(2, 1, 1), block=(4, 1, 1), memory=mem)
    assert mem[:8].tolist() == [7, 7, 7, 7, 0, 0, 0, 0]      # block 0's stores happened; block 1 stopped


def test_divergent_barrier_is_a_deadlock_at_once():
    # warp 0: if (tid < 2) __syncthreads();  warp 1 (tid >= 4) spins forever. The barrier can never
    # complete, so the launch stops at warp 0's BAR, not at the pass limit
    p = prog(
        blk(brc(2, 1, 4, -1), s2r(1, SReg.TID_X), ins(Op.SETLT, 2, R(1), 4)),
        blk(brc(3, 2, 3, 3), ins(Op.SETLT, 3, R(1), 2)),
        blk(bar(3)),
        blk(EXIT),
        blk(jmp(4)))
    with pytest.raises(DeadlockError, match=r"warp 0 reached the barrier ending B2 with lanes 0b0011"):
        launch(p, block=(8, 1, 1), max_passes=200)
    p.blocks[2] = blk(jmp(3))              # without the barrier: warp 1 does spin into the pass limit
    with pytest.raises(ExecutionError, match="max_passes=200"):
        launch(p, block=(8, 1, 1), max_passes=200)


def test_barrier_with_exited_lanes_in_each_warp_is_not_divergent():
    # if (tid & 1) return; shared[tid] = tid + 1; __syncthreads(); out[tid] = shared[tid ^ 2]
    # (every warp arrives with all of its live lanes, 0 and 2: the barrier completes)
    p = prog(
        blk(brc(2, 1, 2, 2), s2r(1, SReg.TID_X), ins(Op.AND, 2, R(1), 1)),
        blk(EXIT),
        blk(bar(3), ins(Op.ADD, 3, R(1), 1), ins(Op.SHL, 4, R(1), 2), st(R(4), R(3), Space.SHARED)),
        blk(jmp(4), ins(Op.XOR, 5, R(1), 2), ins(Op.SHL, 5, R(5), 2), ld(6, R(5), Space.SHARED)),
        blk(EXIT, st(R(4), R(6))))
    mem = np.full(isa.GLOBAL_WORDS, 99, np.uint32)
    launch(p, block=(8, 1, 1), memory=mem)
    assert mem[:8].tolist() == [3, 99, 1, 99, 7, 99, 5, 99]


def nested_return_then_barrier(outer_reconv, inner_reconv):
    """if (tid & 1) { if (tid == 1) return; v = 10; } else v = 20;
    shared[tid] = v + tid; __syncthreads(); out[tid] = shared[tid ^ 2]"""
    return prog(
        blk(brc(2, 1, 3, outer_reconv), s2r(1, SReg.TID_X), ins(Op.AND, 2, R(1), 1)),
        blk(brc(3, 2, 4, inner_reconv), ins(Op.SETEQ, 3, R(1), 1)),
        blk(EXIT),
        blk(jmp(5), ins(Op.MOV, 5, 20)),
        blk(jmp(5), ins(Op.MOV, 5, 10)),
        blk(bar(6), ins(Op.ADD, 6, R(5), R(1)), ins(Op.SHL, 7, R(1), 2), st(R(7), R(6), Space.SHARED)),
        blk(jmp(7), ins(Op.XOR, 8, R(1), 2), ins(Op.SHL, 8, R(8), 2), ld(9, R(8), Space.SHARED)),
        blk(EXIT, st(R(7), R(9))))


def test_conditional_exit_keeps_the_enclosing_join():
    # reconv of the inner branch = its surviving side (B4), so lane 3 rejoins lanes 0, 2 at B5
    mem, _ = launch(nested_return_then_barrier(5, 4), block=(4, 1, 1))
    assert mem[:4].tolist() == [22, 0, 20, 0]


def test_strict_post_dominators_split_the_warp_at_a_barrier():
    # with the ipdom computed through the early exit (-1 for both branches) lane 3 reaches the
    # barrier alone while lanes 0 and 2 are parked on the SIMT stack: see docs/isa.md
    with pytest.raises(DeadlockError, match=r"warp 0 reached the barrier ending B5 with lanes 0b1000 \(threads "
                                            r"\[3\]\) while its live lanes 0b0101 \(threads \[0, 2\]"):
        launch(nested_return_then_barrier(-1, -1), block=(4, 1, 1))


# --- memory -----------------------------------------------------------------------
def test_loads_from_all_spaces_and_params():
    # out[tid] = global[16 + tid] + const[p0 word] + const_init[5] ; shared round trip
    p = prog(
        blk(jmp(1), *out_addr(), ld(2, R(15), Space.GLOBAL, offset=64)),
        blk(jmp(2), ld(3, R(0), Space.CONST, offset=0)),
        blk(jmp(3), ld(4, R(0), Space.CONST, offset=20)),
        blk(jmp(4), ins(Op.ADD, 2, R(2), R(3)), ins(Op.ADD, 2, R(2), R(4)), st(R(15), R(2), Space.SHARED)),
        blk(jmp(5), ld(6, R(15), Space.SHARED)),
        blk(EXIT, st(R(15), R(6))),
        params=[1000], const_init={5: 20000})
    mem = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    mem[16:20] = [1, 2, 3, 4]
    mem, _ = launch(p, params=[1000], memory=mem)
    assert mem[:4].tolist() == [21001, 21002, 21003, 21004]


def test_shared_memory_starts_at_zero_and_carries_over_between_blocks():
    # each block adds tid+1 into shared[0] with atomics and thread 0 writes it out per block;
    # blocks run one after another on the same machine, so the sum keeps growing (CUDA leaves
    # shared memory undefined at block start; the model's shared memory behaves like this)
    p = prog(
        blk(jmp(1), s2r(1, SReg.TID_X), ins(Op.ADD, 2, R(1), 1),
            ins(Op.ATOM, 0, R(0), R(2), 0, mod=(Space.SHARED, AtomOp.ADD))),
        blk(bar(2)),
        blk(brc(3, 3, 4, 4), ins(Op.SETEQ, 3, R(1), 0), s2r(4, SReg.CTAID_X), ins(Op.SHL, 4, R(4), 2),
            ld(5, R(0), Space.SHARED)),
        blk(jmp(4), st(R(4), R(5))),
        blk(EXIT))
    mem, _ = launch(p, grid=(3, 1, 1), block=(4, 1, 1))
    assert mem[:3].tolist() == [10, 20, 30]


@pytest.mark.parametrize("space,addr,what", [
    (Space.GLOBAL, 4 * isa.GLOBAL_WORDS, "past the end"),
    (Space.GLOBAL, 6, "not 4-byte aligned"),
    (Space.SHARED, 4 * isa.SHARED_WORDS, "past the end"),
    (Space.CONST, 4 * isa.CONST_WORDS, "past the end"),
    (Space.GLOBAL, M32 - 3, "past the end"),
])
def test_load_fault_names_the_access(space, addr, what):
    # only thread 6 (warp 1, lane 2) of block 2 makes the bad access; the others read word 0
    p = prog(blk(jmp(1), s2r(1, SReg.TID_X), s2r(2, SReg.CTAID_X), ins(Op.SHL, 2, R(2), 3), ins(Op.ADD, 1, R(1), R(2))),
             blk(jmp(2), ins(Op.SETEQ, 2, R(1), 2 * 8 + 6), ins(Op.MUL, 2, R(2), addr)),
             blk(EXIT, ld(3, R(2), space)))
    with pytest.raises(MemoryFault, match=(rf"load at {space.value} byte address {addr:#x} .*{what}.* "
                                           r"\(thread block 2, warp 1, lane 2, pc B2\)")):
        launch(p, grid=(3, 1, 1), block=(8, 1, 1))


def test_store_faults():
    p = prog(blk(EXIT, ins(Op.MOV, 1, 3), st(R(1), 5)))
    with pytest.raises(MemoryFault, match=r"store at global byte address 0x3 is not 4-byte aligned .*lane 0, pc B0"):
        launch(p, block=(1, 1, 1))
    p = prog(blk(EXIT, st(R(0), 5, Space.CONST, offset=8)))
    with pytest.raises(MemoryFault, match=r"store at const byte address 0x8 is read-only \(thread block 0, warp 0"):
        launch(p, block=(1, 1, 1))
    p = prog(blk(EXIT, ins(Op.ATOM, 1, R(0), 1, 0, mod=(Space.CONST, AtomOp.ADD))))
    with pytest.raises(MemoryFault, match="atomic at const byte address 0x0 is read-only"):
        launch(p, block=(1, 1, 1))


def test_memory_keeps_writes_made_before_a_fault():
    p = prog(blk(jmp(1), st(R(0), 77)), blk(EXIT, st(R(0), 1, offset=4 * isa.GLOBAL_WORDS)))
    mem = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    with pytest.raises(MemoryFault):
        launch(p, block=(1, 1, 1), memory=mem)
    assert mem[0] == 77


def top_of_memory_program(first_word):
    """Thread t: r2 = 2 * global[first_word + t] + 1, stored back in place."""
    return prog(blk(EXIT, *out_addr(), ld(1, R(15), offset=4 * first_word), ins(Op.MUL, 2, R(1), 2),
                    ins(Op.ADD, 2, R(2), 1), st(R(15), R(2), offset=4 * first_word)))


def test_the_last_words_of_global_memory_and_the_fault_past_them():
    """Words 16380..16383 (the last four of 64 KiB) read and written by lanes 0-3; one word higher,
    lane 3 reads byte address 65536 = 0x10000, past the end."""
    assert isa.GLOBAL_WORDS == 16384
    mem = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    mem[16379:] = [11, 0x8000_0000, 5, M32, 7]
    want = mem.copy()
    want[16380:] = (mem[16380:].astype(np.uint64) * 2 + 1) % 2 ** 32      # NumPy, wrapping as uint32
    launch(top_of_memory_program(16380), block=(4, 1, 1), memory=mem)
    assert mem.tolist() == want.tolist() and mem[16380:].tolist() == [1, 11, 0xFFFF_FFFF, 15]
    with pytest.raises(MemoryFault, match=r"^load at global byte address 0x10000 is past the end \(65536 bytes\) "
                                          r"\(thread block 0, warp 0, lane 3, pc B0\)$"):
        launch(top_of_memory_program(16381), block=(4, 1, 1), memory=mem)
    assert mem.tolist() == want.tolist()      # the load faults before any lane stores


def test_the_trace_lists_each_loads_words():
    """Step.loads: per load in instruction order (one to r0 too), the word each active lane read in
    lane order."""
    p = prog(blk(jmp(1), *out_addr(), ld(1, R(15), offset=4 * 5000), ld(0, R(15), offset=8),
                 ld(2, R(15), Space.SHARED), ld(3, R(0), Space.CONST)),
             blk(EXIT, ld(4, R(0), offset=4 * 16383)), params=[0])
    _, ex = launch(p, block=(3, 1, 1), params=[0], trace=True)
    assert [s.loads for s in ex.steps] == [[[5000, 5001, 5002], [2, 3, 4], [0, 1, 2], [0, 0, 0]], [[16383] * 3]]


def test_same_address_store_highest_lane_wins():
    p = prog(blk(EXIT, s2r(1, SReg.TID_X), st(R(0), R(1))))
    mem, _ = launch(p, block=(3, 1, 1))
    assert mem[0] == 2


# --- atomics ------------------------------------------------------------------------
def _atomic_reference(op, start, bs, cs):
    """Sequential application in thread order (warps run round-robin, lanes in
    order, and every thread reaches the atomic in its first pass)."""
    s32 = lambda x: x - (1 << 32) if x >> 31 else x
    rule = {
        AtomOp.ADD: lambda o, b, c: (o + b) & M32, AtomOp.EXCH: lambda o, b, c: b,
        AtomOp.MIN: lambda o, b, c: o if s32(o) <= s32(b) else b,
        AtomOp.MAX: lambda o, b, c: o if s32(o) >= s32(b) else b,
        AtomOp.MINU: lambda o, b, c: min(o, b), AtomOp.MAXU: lambda o, b, c: max(o, b),
        AtomOp.AND: lambda o, b, c: o & b, AtomOp.OR: lambda o, b, c: o | b, AtomOp.XOR: lambda o, b, c: o ^ b,
        AtomOp.INC: lambda o, b, c: 0 if o >= b else o + 1,
        AtomOp.DEC: lambda o, b, c: b if o == 0 or o > b else o - 1,
        AtomOp.CAS: lambda o, b, c: c if o == b else o,
        AtomOp.FADD: lambda o, b, c: f32_add(o, b, ftz=True),      # in global memory
    }[op]
    olds, value = [], start
    for b, c in zip(bs, cs):
        olds.append(value)
        value = rule(value, b, c)
    return value, olds


def _operand_b(op, t):
    """Per-thread b: mixes signs and bit patterns so every op's result depends on order."""
    if op in (AtomOp.INC, AtomOp.DEC):
        return 5
    if op is AtomOp.CAS:
        return t * 7 if t % 3 else 99     # from 7: threads 1 and 2 swap, the rest fail
    return ((t * 0x9E37_79B9) ^ (0x8000_0000 if t % 2 else 0)) & M32


@pytest.mark.parametrize("op", list(AtomOp), ids=lambda o: o.name)
def test_atomic_contention_across_lanes_and_warps(op):
    # all 16 threads hit global word 100: old -> out[tid]; b from CONST table; c = tid*7 + 7
    n = 16
    bs = [_operand_b(op, t) for t in range(n)]
    cs = [(t * 7 + 7) & M32 for t in range(n)]
    p = prog(
        blk(jmp(1), *out_addr(), ld(2, R(15), Space.CONST)),
        blk(jmp(2), s2r(1, SReg.TID_X), ins(Op.MUL, 3, R(1), 7), ins(Op.ADD, 3, R(3), 7),
            ins(Op.ATOM, 4, 400, R(2), R(3), mod=(Space.GLOBAL, op))),
        blk(EXIT, st(R(15), R(4))),
        const_init=dict(enumerate(bs)))
    mem = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    start = 7
    mem[100] = start
    mem, _ = launch(p, block=(n, 1, 1), memory=mem)
    final, olds = _atomic_reference(op, start, bs, cs)
    assert mem[100] == final
    assert mem[:n].tolist() == olds


def test_atomic_add_across_blocks_and_shared():
    # a global counter over a 2x2 grid of 8-thread blocks; a shared counter that each block
    # inherits from the one before (blocks run one after another on the same machine)
    p = prog(
        blk(jmp(1), ins(Op.ATOM, 1, 0, 1, 0, mod=(Space.GLOBAL, AtomOp.ADD))),
        blk(bar(2), ins(Op.ATOM, 2, 0, 2, 0, mod=(Space.SHARED, AtomOp.ADD))),
        blk(jmp(3), s2r(3, SReg.CTAID_Y), ins(Op.SHL, 3, R(3), 1), s2r(4, SReg.CTAID_X), ins(Op.ADD, 3, R(3), R(4))),
        blk(jmp(4), ins(Op.SHL, 3, R(3), 2), ld(5, R(0), Space.SHARED)),
        blk(EXIT, st(R(3), R(5), offset=4)))
    mem, _ = launch(p, grid=(2, 2, 1), block=(8, 1, 1))
    assert mem[0] == 32
    assert mem[1:5].tolist() == [16, 32, 48, 64]


# --- warp ops ----------------------------------------------------------------------
def test_shuffles_in_a_partial_warp():
    # block of 3 threads: lane 3 does not exist; value = tid * 10 + 1
    modes = [(ShflMode.DOWN, 1, 0x1F), (ShflMode.UP, 1, 0), (ShflMode.BFLY, 1, 0x1F), (ShflMode.IDX, 2, 0x1F)]
    blocks = [blk(jmp(1), *out_addr(), s2r(1, SReg.TID_X)),
              blk(jmp(2), ins(Op.MUL, 1, R(1), 10), ins(Op.ADD, 1, R(1), 1))]
    for i, (mode, b, c) in enumerate(modes):
        blocks.append(blk(jmp(len(blocks) + 1), ins(Op.SHFL, 2, R(1), b, c, mod=mode)))
        blocks.append(blk(jmp(len(blocks) + 1), st(R(15), R(2), offset=16 * i)))
    blocks.append(blk(EXIT))
    mem, _ = launch(prog(*blocks), block=(3, 1, 1))
    v = [1, 11, 21]
    assert mem[0:3].tolist() == [v[1], v[2], v[2]]    # down: lane 2's source (lane 3) is inactive
    assert mem[4:7].tolist() == [v[0], v[0], v[1]]    # up
    assert mem[8:11].tolist() == [v[1], v[0], v[2]]   # bfly: lane 2 ^ 1 = 3 inactive
    assert mem[12:15].tolist() == [v[2], v[2], v[2]]  # idx 2


def test_shuffle_in_divergent_code_reads_own_value_from_inactive_lane():
    # only even lanes run the shuffles: odd tids branch straight to the join B3
    p = prog(
        blk(brc(2, 3, 1, 3), s2r(1, SReg.TID_X), ins(Op.ADD, 5, R(1), 40), ins(Op.AND, 2, R(1), 1)),
        blk(jmp(2), ins(Op.SHFL, 6, R(5), 1, 0x1F, mod=ShflMode.IDX)),
        blk(jmp(3), ins(Op.SHFL, 7, R(5), 2, 0x1F, mod=ShflMode.DOWN)),
        blk(jmp(4), ins(Op.SHL, 4, R(1), 2), st(R(4), R(6))),
        blk(EXIT, st(R(4), R(7), offset=16)))
    mem, _ = launch(p, block=(4, 1, 1))
    assert mem[0:4].tolist() == [40, 0, 42, 0]    # idx 1: lane 1 is inactive -> own value
    assert mem[4:8].tolist() == [42, 0, 42, 0]    # down 2: lane 0 reads lane 2; lane 2 -> lane 4 -> own


def test_votes_with_partial_member_masks():
    # pred = tid in {1, 2}; modes x member masks, in a warp where lane 3 is inactive (3 threads)
    cases = [(VoteMode.BALLOT, 0xF), (VoteMode.BALLOT, 0b0101), (VoteMode.ALL, 0b0110), (VoteMode.ALL, 0xF),
             (VoteMode.ANY, 0b0001), (VoteMode.ANY, 0b0011), (VoteMode.UNI, 0b0110), (VoteMode.UNI, 0b0011),
             (VoteMode.UNI, 0b0001),
             (VoteMode.ACTIVEMASK, 0)]
    blocks = [blk(jmp(1), *out_addr(), s2r(1, SReg.TID_X)),
              blk(jmp(2), ins(Op.SUB, 2, R(1), 1), ins(Op.SETLTU, 2, R(2), 2))]
    for i, (mode, members) in enumerate(cases):
        blocks.append(blk(jmp(len(blocks) + 1), ins(Op.VOTE, 3, R(2), members, mod=mode)))
        blocks.append(blk(jmp(len(blocks) + 1), st(R(15), R(3), offset=16 * i)))
    blocks.append(blk(EXIT))
    mem, _ = launch(prog(*blocks), block=(3, 1, 1))
    want = [0b0110, 0b0100, 1, 0, 0, 1, 1, 0, 1, 0b0111]
    assert [mem[4 * i:4 * i + 3].tolist() for i in range(len(cases))] == [[w] * 3 for w in want]


def test_activemask_and_ballot_in_divergent_code():
    p = prog(
        blk(brc(2, 1, 2, 2), *out_addr(), s2r(1, SReg.TID_X), ins(Op.SETNE, 2, R(1), 2)),
        blk(jmp(2), ins(Op.VOTE, 3, 0, 0, mod=VoteMode.ACTIVEMASK)),
        blk(EXIT, st(R(15), R(3))))
    mem, _ = launch(p, block=(4, 1, 1))
    assert mem[:4].tolist() == [0b1011, 0b1011, 0, 0b1011]


# --- thread geometry -------------------------------------------------------------------
def geometry_program():
    """Every thread writes its 14 special registers to 16 words at
    (global linear thread id) * 64 bytes."""
    sregs = list(SReg)
    blocks = [blk(jmp(1), s2r(1, SReg.CTAID_Z), s2r(2, SReg.NCTAID_Y), ins(Op.MUL, 1, R(1), R(2)),
                  s2r(2, SReg.CTAID_Y)),
              blk(jmp(2), ins(Op.ADD, 1, R(1), R(2)), s2r(2, SReg.NCTAID_X), ins(Op.MUL, 1, R(1), R(2)),
                  s2r(2, SReg.CTAID_X)),
              blk(jmp(3), ins(Op.ADD, 1, R(1), R(2)), s2r(2, SReg.NTID_X), s2r(3, SReg.NTID_Y),
                  ins(Op.MUL, 2, R(2), R(3))),
              blk(jmp(4), s2r(3, SReg.NTID_Z), ins(Op.MUL, 2, R(2), R(3)), ins(Op.MUL, 1, R(1), R(2))),
              # + linear tid = warpid*4 + laneid
              blk(jmp(5), s2r(3, SReg.WARPID), ins(Op.SHL, 3, R(3), 2), s2r(4, SReg.LANEID),
                  ins(Op.ADD, 3, R(3), R(4))),
              blk(jmp(6), ins(Op.ADD, 1, R(1), R(3)), ins(Op.SHL, 1, R(1), 6))]
    for i, sr in enumerate(sregs):
        blocks.append(blk(jmp(len(blocks) + 1), s2r(5, sr), st(R(1), R(5), offset=4 * i)))
    blocks.append(blk(EXIT))
    return prog(*blocks)


@pytest.mark.parametrize("grid,block", [((2, 3, 1), (2, 2, 1)), ((2, 2, 2), (1, 2, 3)), ((1, 1, 3), (3, 1, 2)),
                                        ((4, 1, 1), (6, 1, 1))])
def test_multi_block_grid_geometry(grid, block):
    mem, _ = launch(geometry_program(), grid=grid, block=block)
    gx, gy, gz = grid
    bx, by, bz = block
    nthreads = bx * by * bz
    got = mem[:16 * nthreads * gx * gy * gz].reshape(-1, 16)[:, :14]
    want = []
    for cz, cy, cx in np.ndindex(gz, gy, gx):       # x fastest
        for tz, ty, tx in np.ndindex(bz, by, bx):
            t = tx + bx * (ty + by * tz)
            want.append([tx, ty, tz, bx, by, bz, cx, cy, cz, gx, gy, gz, t % 4, t // 4])
    assert got.tolist() == want


def test_partial_warp_of_six_threads():
    # 6 threads = warp 0 full + warp 1 with lanes 0-1; inactive lanes never run or store
    p = prog(blk(jmp(1), *out_addr(), s2r(1, SReg.LANEID)), blk(EXIT, ins(Op.ADD, 1, R(1), 1), st(R(15), R(1))))
    mem = np.full(isa.GLOBAL_WORDS, 7, np.uint32)
    mem, ex = launch(p, block=(6, 1, 1), memory=mem, trace=True)
    assert mem[:8].tolist() == [1, 2, 3, 4, 1, 2, 7, 7]
    assert [(s.warp, s.mask) for s in ex.steps] == [(0, 0xF), (1, 0b0011)] * 2


def test_blocks_run_in_linear_order():
    # a grid-wide atomic ticket shows the order: ctaid 0, 1, 2, ... with x fastest
    p = prog(blk(jmp(1), ins(Op.ATOM, 1, 0, 1, 0, mod=(Space.GLOBAL, AtomOp.ADD))),
             blk(jmp(2), s2r(2, SReg.CTAID_Y), ins(Op.SHL, 2, R(2), 1), s2r(3, SReg.CTAID_X),
                 ins(Op.ADD, 2, R(2), R(3))),
             blk(EXIT, ins(Op.SHL, 2, R(2), 2), st(R(2), R(1), offset=4)))
    mem, ex = launch(p, grid=(2, 2, 1), block=(1, 1, 1), trace=True)
    assert mem[1:5].tolist() == [0, 1, 2, 3]
    assert [s.block_id for s in ex.steps] == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3


# --- scheduling and trace ---------------------------------------------------------------
def test_round_robin_scheduling():
    p = prog(blk(jmp(1)), blk(jmp(2)), blk(EXIT))
    _, ex = launch(p, block=(12, 1, 1), trace=True)
    assert [(s.warp, s.pc) for s in ex.steps] == [(w, pc) for pc in range(3) for w in range(3)]
    assert [s.new_top for s in ex.steps] == [False] * 6 + [True] * 3      # JMPs keep the top; EXIT empties it


def test_exact_trace_of_a_tiny_program():
    # 2 threads: r1 = tid; r2 = r1 + 5; branch on tid: lane 1 stores r2 to shared[1], then both exit
    p = prog(
        blk(brc(1, 1, 2, 2), s2r(1, SReg.TID_X), ins(Op.ADD, 2, R(1), 5)),
        blk(jmp(2), ins(Op.SHL, 3, R(1), 2), st(R(3), R(2), Space.SHARED)),
        blk(EXIT, ins(Op.ATOM, 4, 8, R(2), 0, mod=(Space.GLOBAL, AtomOp.ADD))))
    mem, ex = launch(p, block=(2, 1, 1), trace=True)
    G, S = Space.GLOBAL, Space.SHARED
    # each pass leaves another stack top: the divergent BRC pushes, the JMP reaches the
    # reconvergence point (a pop), the EXIT empties the stack (both lanes exited)
    assert ex.steps == [
        interp.Step(0, 0, 0, 0b11, [(0, 1, 0), (1, 1, 1), (0, 2, 5), (1, 2, 6)], [], ran=2, new_top=True),
        interp.Step(0, 0, 1, 0b10, [(1, 3, 4)], [(S, 1, 6)], ran=2, new_top=True),
        interp.Step(0, 0, 2, 0b11, [(0, 4, 0), (1, 4, 5)], [(G, 2, 5), (G, 2, 11)], ran=1, new_top=True,
                    exited=0b11),
    ]
    assert (ex.instructions, ex.passes) == (5, 3)
    assert mem[2] == 11


def test_trace_is_off_by_default():
    _, ex = launch(prog(blk(EXIT)))
    assert ex.steps is None and ex.passes == 1 and ex.instructions == 0 and ex.seconds >= 0


def test_max_passes_catches_infinite_loop():
    p = prog(blk(jmp(0), ins(Op.ADD, 1, R(1), 1)))
    with pytest.raises(ExecutionError, match="max_passes=50"):
        launch(p, max_passes=50)


# --- launch validation -----------------------------------------------------------------
def test_launch_limits():
    p = prog(blk(EXIT))
    with pytest.raises(MachineLimitError, match=r"1025 threads; the limit is 1024 threads per block"):
        launch(p, block=(1025, 1, 1))
    with pytest.raises(MachineLimitError, match=r"\(18 threads\) cannot run in tiles of 16"):
        launch(p, block=(3, 3, 2))
    with pytest.raises(LaunchError, match=r"lowered for blocks of up to 16 threads"):
        launch(p, block=(32, 1, 1))
    with pytest.raises(MachineLimitError, match=r"257 thread blocks; the limit is 256 blocks"):
        launch(p, grid=(257, 1, 1))
    with pytest.raises(LaunchError, match="1 to 3 positive integers"):
        launch(p, block=(0, 1, 1))


def test_bad_memory_and_params():
    p = prog(blk(EXIT), params=[0, 0])
    with pytest.raises(LaunchError, match=r"np.uint32\[16384\]"):
        interp.run(p, (1, 1, 1), (1, 1, 1), [0, 0], np.zeros(10, np.uint32))
    with pytest.raises(LaunchError, match="reads 2 parameter words; 1 was given"):
        interp.run(p, (1, 1, 1), (1, 1, 1), [0], np.zeros(isa.GLOBAL_WORDS, np.uint32))


def test_program_is_checked_first():
    big = prog(*[blk(EXIT)] * (isa.ROM_BLOCKS + 1))
    with pytest.raises(MachineLimitError, match=f"the ROM holds {isa.ROM_BLOCKS}"):
        launch(big)


# --- random structured programs: SIMT execution == each thread run alone -------------
# A program is a list of statements: ("alu", [instrs]), ("if", src, then, else),
# ("loop", src, body), ("exit_if", src, folded: the branch exits itself), ("bar",). Random ALU code writes only
# r1..r9; r10/r11 count loop trips (by depth), r13 holds branch conditions,
# r14 the thread's memory offset. Each thread loads r1..r9 from its own input
# words and stores them to its own output words, so threads never interact
# and running them one by one (no SIMT stack at all) must give the same memory.

DATA_REGS = range(1, 10)
IN_BYTES, OUT_BYTES = 0, 1024      # per thread: 16 words at tid*64 in each region


@hst.composite
def alu_instr(draw):
    name = draw(hst.sampled_from(sorted(isa.ALU_SEMANTICS)))
    srcs = [draw(hst.one_of(hst.builds(R, hst.sampled_from([0, *DATA_REGS, 14])),
                           hst.builds(Imm, hst.integers(0, M32))))
            for _ in range(isa.Op[name].arity)]
    return isa.Instr(isa.Op[name], R(draw(hst.sampled_from([0, *DATA_REGS]))), tuple(srcs))


def statements(depth):
    alu = hst.tuples(hst.just("alu"), hst.lists(alu_instr(), min_size=1, max_size=4))
    src = hst.sampled_from(list(DATA_REGS))
    leaf = hst.one_of(alu, hst.tuples(hst.just("exit_if"), src, hst.booleans()), hst.just(("bar",)))
    if depth == 0:
        return hst.lists(leaf, min_size=1, max_size=3)
    inner = statements(depth - 1)
    compound = hst.one_of(hst.tuples(hst.just("if"), src, inner, inner),
                         hst.tuples(hst.just("loop"), src, inner))
    return hst.lists(hst.one_of(leaf, leaf, compound), min_size=1, max_size=4)


class Emitter:
    """Lowers statements to machine blocks with correct reconvergence points."""

    def __init__(self):
        self.blocks = []

    def new(self, instrs, term):
        self.blocks.append(blk(term, *instrs))
        return len(self.blocks) - 1

    def seq(self, stmts, cont, depth=0, in_branch=False):
        for s in reversed(stmts):
            cont = self.stmt(s, cont, depth, in_branch)
        return cont

    def stmt(self, s, cont, depth, in_branch):
        kind = s[0]
        if kind == "alu":
            return self.new(s[1], jmp(cont))
        if kind == "bar":   # a barrier only where the warp is converged (not inside if/loop)
            return cont if in_branch else self.new([], bar(cont))
        if kind == "exit_if":   # if (x & 3 == 1) return;  -- a conditional exit: the survivors
            test = [ins(Op.AND, 13, R(s[1]), 3), ins(Op.SETEQ, 13, R(13), 1)]
            if s[2]:            # the branch exits its taken lanes itself (target -1)
                return self.new(test, brc(13, -1, cont, -1))
            leave = self.new([], EXIT)   # reconverge at once (reconv = fallthrough), keeping their join
            return self.new(test, brc(13, leave, cont, cont))
        if kind == "if":
            then, other = self.seq(s[2], cont, depth, True), self.seq(s[3], cont, depth, True)
            return self.new([ins(Op.AND, 13, R(s[1]), 1)], brc(13, then, other, cont))
        counter = 10 + depth   # loop: trips = x & 3 (lane dependent), counted down in r10/r11
        latch = self.new([ins(Op.SUB, counter, R(counter), 1), ins(Op.SETNE, 13, R(counter), 0)],
                         brc(13, -1, cont, cont))
        body = self.seq(s[2], latch, depth + 1, True)
        self.blocks[latch] = blk(brc(13, body, cont, cont), *self.blocks[latch].instrs)
        return self.new([ins(Op.AND, counter, R(s[1]), 3), ins(Op.SETNE, 13, R(counter), 0)],
                        brc(13, body, cont, cont))

    def program(self, stmts):
        self.new([], EXIT)   # placeholder for the entry, replaced below
        stores = [self.new([st(R(14), R(k), offset=OUT_BYTES + 4 * k)], jmp(-1)) for k in DATA_REGS]
        self.blocks[stores[-1]] = blk(EXIT, *self.blocks[stores[-1]].instrs)
        for a, b in zip(stores, stores[1:]):
            self.blocks[a] = blk(jmp(b), *self.blocks[a].instrs)
        body = self.seq(stmts, stores[0])
        loads = [self.new([ld(k, R(14), offset=IN_BYTES + 4 * k)], jmp(-1)) for k in DATA_REGS]
        for a, b in zip(loads, loads[1:] + [body]):
            self.blocks[a] = blk(jmp(b), *self.blocks[a].instrs)
        self.blocks[0] = blk(jmp(loads[0]), s2r(14, SReg.TID_X), ins(Op.SHL, 14, R(14), 6))
        return isa.Program("random", self.blocks, [])


def run_thread_alone(program, tid, mem):
    """One thread, no warps: follow its own branches; BAR is a plain jump."""
    regs, pc = [0] * isa.NUM_REGS, 0
    while True:
        block = program.blocks[pc]
        for i in block.instrs:
            vals = [regs[s.n] if isinstance(s, Reg) else s.value for s in i.srcs]
            if i.op is Op.S2R:
                value = tid
            elif i.op is Op.LD:
                value = int(mem[(vals[0] + vals[1]) // 4])
            elif i.op is Op.ST:
                mem[(vals[0] + vals[1]) // 4] = vals[2]
                continue
            else:
                value = isa.ALU_SEMANTICS[i.op.name](*vals)
            if i.dst.n:
                regs[i.dst.n] = value
        t = block.term
        if t.kind is Term.EXIT:
            return
        pc = (t.target if regs[t.cond.n] else t.fallthrough) if t.kind is Term.BRC else t.target
        if pc < 0:          # a BRC's taken side that exits
            return


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stmts=statements(2), nthreads=hst.integers(1, isa.MACHINE_BLOCK_THREADS),
       seed=hst.integers(0, 2 ** 32 - 1))
def test_simt_matches_threads_run_alone(stmts, nthreads, seed):
    program = Emitter().program(stmts)
    if len(program.blocks) > isa.ROM_BLOCKS:
        return
    inputs = np.random.default_rng(seed).integers(0, 2 ** 32, isa.GLOBAL_WORDS, dtype=np.uint64).astype(np.uint32)
    inputs[OUT_BYTES // 4:] = 0
    want = inputs.copy()
    for tid in range(nthreads):
        run_thread_alone(program, tid, want)
    got = inputs.copy()
    interp.run(program, (1, 1, 1), (nthreads, 1, 1), [], got)
    assert got.tolist() == want.tolist()
