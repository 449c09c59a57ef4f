"""Barriers that can never complete (GitHub issue 12, item 2), on both engines, without replay.

CUDA's rule as this machine runs it: a barrier completes when every thread of the block that
has not exited has arrived, and a warp waiting at a barrier runs none of its lanes. So a warp
that reaches __syncthreads() with only some of its live lanes (a *divergent barrier*) can never
be released: the other lanes are parked on its own SIMT stack. Both engines must stop there with
a DeadlockError that says which warp and lanes; a barrier that every warp reaches with all of
its live lanes (exited lanes do not count) must run on. Expected outcomes are worked out by hand
from the source; the model engine's cause comes from its own tokens (no interpreter involved).
"""
import numpy as np
import pytest

from qwengpu import Device
from qwengpu.errors import DeadlockError, MemoryFault
from qwengpu.isa import MachineBlock, Program, Term, Terminator
from qwengpu.launch import Launch
from qwengpu.driver.faults import fault_error
from qwengpu.driver.protocol import expected_stream
from qwengpu.machine.tokens import Token

ENGINES = ("interp", "model")

DIV4 = r'''extern "C" __global__ void k(int *o) { if (threadIdx.x < 2) { __syncthreads(); } o[threadIdx.x] = 1; }'''
DIV8 = r'''extern "C" __global__ void k(int *o) { if (threadIdx.x < 6) { __syncthreads(); } o[threadIdx.x] = 1; }'''
# warp 0 diverges (thread 1 skips the barrier) and runs first; warp 1 would arrive whole
FIRST_WARP = r'''extern "C" __global__ void k(int *o) { if (threadIdx.x != 1) { __syncthreads(); } o[threadIdx.x] = 1; }'''
# thread t waits at t barriers: in the first iteration thread 0 is already out of the loop
LOOP = r'''extern "C" __global__ void k(int *o) {
    for (int i = 0; i < (int)threadIdx.x; i++) { __syncthreads(); }
    o[threadIdx.x] = 1; }'''
# only thread block 1 syncs, and there thread 3 skips it
SECOND_BLOCK = r'''extern "C" __global__ void k(int *o) {
    if (blockIdx.x == 1 && threadIdx.x < 3) { __syncthreads(); }
    o[blockIdx.x * 4 + threadIdx.x] = 1; }'''

# (source, grid, block, thread block, warp, lanes that arrive, live lanes that do not)
DEADLOCKS = {
    "div4": (DIV4, 1, 4, 0, 0, 0b0011, 0b1100),
    "div8_second_warp": (DIV8, 1, 8, 0, 1, 0b0011, 0b1100),
    "first_warp_of_two": (FIRST_WARP, 1, 8, 0, 0, 0b1101, 0b0010),
    "loop": (LOOP, 1, 4, 0, 0, 0b1110, 0b0001),
    "second_block": (SECOND_BLOCK, 2, 4, 1, 0, 0b0111, 0b1000),
}

# threads 3 and 7 return first: each warp reaches the barrier with all 3 of its live lanes
EXITED = r'''extern "C" __global__ void k(int *o) {
    __shared__ int s[8];
    int t = threadIdx.x;
    if (t == 3 || t == 7) return;
    s[t] = t + 1;
    __syncthreads();
    o[t] = s[(t + 4) % 8]; }'''
# 6 barriers in a uniform loop (the phase counter wraps mod 4), threads 6, 7 exited before it
ROTATE = r'''extern "C" __global__ void k(int *o) {
    __shared__ int s[8];
    int t = threadIdx.x, v = t;
    if (t >= 6) return;
    for (int r = 0; r < 3; r++) {
        s[t] = v;
        __syncthreads();
        v = s[(t + 1) % 6];
        __syncthreads();
    }
    o[t] = v; }'''

RUNS = {
    # o[t] = s[(t + 4) % 8] = (t + 4) % 8 + 1; threads 3 and 7 write nothing
    "exited_lanes": (EXITED, 8, [5, 6, 7, -1, 1, 2, 3, -1]),
    # after 3 rotations v = (t + 3) % 6
    "uniform_loop": (ROTATE, 8, [3, 4, 5, 0, 1, 2, -1, -1]),
}


@pytest.fixture(scope="module")
def devices():
    return {e: Device(e) for e in ENGINES}


def kernel(devices, engine, src, name):
    return devices[engine].compile(src, filename=f"{name}.cu").get_function("k")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", DEADLOCKS)
def test_divergent_barrier_is_a_deadlock(devices, engine, name):
    src, grid, block, cta, warp, arrived, missing = DEADLOCKS[name]
    out = np.zeros(grid * block, np.int32)
    with pytest.raises(DeadlockError) as err:
        kernel(devices, engine, src, name)(grid=grid, block=block, args=[out])
    msg = str(err.value)
    assert f"thread block {cta}" in msg and "divergent barrier" in msg, msg
    assert f"warp {warp} reached the barrier ending B" in msg, msg
    assert f"with lanes {arrived:#06b}" in msg and f"live lanes {missing:#06b}" in msg, msg
    if engine == "model":                  # no replay: the cause is the model's own tokens
        assert "the interpreter" not in msg


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", RUNS)
def test_barrier_reached_by_every_live_lane_completes(devices, engine, name):
    src, block, want = RUNS[name]
    out = np.full(8, -1, np.int32)
    kernel(devices, engine, src, name)(grid=1, block=block, args=[out])
    assert out.tolist() == want


def test_model_tokens_match_the_interpreter_up_to_the_fault(devices):
    """With replay every token agrees (CT1 carries the arrived lanes: the BAR's target is the if's
    reconvergence point, a pop; CT2 the live ones), and the FAULT follows the divergent BAR's CT2."""
    seen = []
    dev = devices["model"]                 # its model stays loaded; replay and a token hook for this test
    fn = dev.compile(DIV8, filename="div8.cu").get_function("k")
    dev.check, dev.on_token = "replay", seen.append
    try:
        with pytest.raises(DeadlockError, match="the interpreter: deadlock in thread block 0: divergent barrier"):
            fn(grid=1, block=8, args=[np.zeros(8, np.int32)])
    finally:
        dev.check, dev.on_token = None, None
    assert [t.kind for t in seen[-4:]] == ["EXEC", "CT1", "CT2", "FAULT"]
    (w, _, _), (_, mask, _), (alive, phase, wait) = seen[-4].args, seen[-3].args, seen[-2].args
    assert (w, mask, alive, phase, wait) == (1, 0b0011, 0b1111, 1, 1)


def test_reference_stream_ends_with_the_barrier_pass():
    fn = Device("interp").compile(DIV4, filename="div4.cu").get_function("k")
    lau = Launch.build(fn.program, 1, 4, [np.zeros(4, np.int32)])
    got = expected_stream(lau)
    assert isinstance(got.fault, DeadlockError)
    # the BAR's target is the if's reconvergence point: a pop, so the BAR's pass has a CT1, whose
    # mask is the lanes that arrived
    ct1 = got.tokens[-3]
    assert (ct1.kind, ct1.args[1], got.dont_care[-3]) == ("CT1", 0b0011, {"pc", "sp"})
    assert (got.tokens[-2].kind, got.tokens[-2].args, got.tokens[-1].kind) == ("CT2", (0b1111, 1, 1), "FAULT")


def T(kind, *args):
    return Token(kind, tuple(args))


@pytest.mark.parametrize("stream, error, text", [
    ([T("EXEC", 0, 3, 1), T("FAULT")], MemoryFault, "bad memory access"),
    # no CT1 at the BAR: the lanes that arrived are the warp's mask from its last CT1 ...
    ([T("EXEC", 1, 0, 0), T("CT1", 4, 0b0011, 1), T("EXEC", 0, 0, 0), T("EXEC", 1, 4, 0), T("CT2", 0b1111, 1, 1),
      T("FAULT")], DeadlockError, "warp 1 reached the barrier ending B4 with lanes 0b0011 while its live lanes 0b1100"),
    # ... or its launch mask (block 12: warp 2 has all 4 lanes)
    ([T("EXEC", 2, 9, 0), T("CT2", 0b0111, 1, 1), T("FAULT")], DeadlockError,
     "deadlock in thread block 0: no warp can run"),
    ([T("EXEC", 2, 9, 0), T("CT1", 4, 0b0101, 0), T("CT2", 0b0111, 1, 1), T("FAULT")], DeadlockError,
     "deadlock in thread block 0 at a divergent barrier: warp 2 reached the barrier ending B9 with lanes 0b0101 "
     "while its live lanes 0b0010"),
    ([T("CTA", 3), T("EXEC", 1, 2, 0), T("CT1", 4, 0b0011, 0), T("CT2", 0b0011, 2, 1), T("FAULT")], DeadlockError,
     "deadlock in thread block 3: no warp can run"),
    # a BAR folded into its block's last instruction's pass: that instruction's writeback comes first
    ([T("EXEC", 2, 9, 1), T("VAL", 0, 0, 5), T("VAL", 2, 0, 6), T("CT1", 4, 0b0101, 0), T("CT2", 0b0111, 1, 1),
      T("FAULT")], DeadlockError,
     "deadlock in thread block 0 at a divergent barrier: warp 2 reached the barrier ending B9 with lanes 0b0101 "
     "while its live lanes 0b0010"),
])
def test_fault_cause_from_the_tokens(stream, error, text):
    launch = Launch.from_words(Program("k", [MachineBlock([], Terminator(Term.EXIT))], []), 1, 12)
    with pytest.raises(error, match=text):
        raise fault_error(stream, launch)
