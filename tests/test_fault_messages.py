"""A model-side FAULT names its kind, thread block, warp, pc, lane, address and operation, read
from the model's own tokens (qwengpu.driver.faults) and the program's ROM, without replay.

Each case is checked against what the interpreter says for the same launch: for a memory fault
the model's message must contain the interpreter's whole MemoryFault message ("{what} at
{space} byte address {a} {problem} (thread block c, warp w, lane l, pc Bn)"); for a deadlock
its thread block, warp, barrier block and lane masks. First with the interpreter's reference
token stream standing in for the model (no model: the token reading alone), then on the model
engine (the stand-in merged model, fast path, no replay).
"""
import re

import numpy as np
import pytest

from qwengpu import Device, isa
from qwengpu.api import Function, Module
from qwengpu.errors import DeadlockError, MemoryFault
from qwengpu.isa import Imm, Instr, MachineBlock, Op, Program, Reg, Space, Term, Terminator
from qwengpu.launch import Launch
from qwengpu.machine.encoding import encode
from qwengpu.driver.faults import fault_error
from qwengpu.driver.protocol import expected_stream
from qwengpu.machine.tokens import Token, with_exec

# lane 1 of warp 0 stores to p + 1: misaligned (lane 0's p + 0 is fine)
MISALIGNED = r'''extern "C" __global__ void k(int *p) {
    int *q = (int *)((char *)p + threadIdx.x);
    *q = 7; }'''
# warp 1 (threads 4..7): lanes 0, 1 load in range, lane 2 (thread 6) reads 20000 words on: past the end
OUT_OF_RANGE = r'''extern "C" __global__ void k(int *p, int *o) {
    int t = threadIdx.x;
    o[t] = p[t >= 6 ? 20000 + t : t]; }'''
# lane 1 indexes -1000 words: its offset register holds -4000 (its bits above part 0 all ones, one
# VAL token), and p + that is far past the end
NEGATIVE = r'''extern "C" __global__ void k(int *p, int *o) {
    int t = threadIdx.x;
    o[t] = p[t == 1 ? -1000 : t]; }'''
# a shared-memory atomic at a misaligned address, from thread block 1, lane 3
ATOMIC = r'''extern "C" __global__ void k(int *o) {
    __shared__ int s[8];
    int t = threadIdx.x;
    s[t] = 0;
    __syncthreads();
    int *a = (int *)((char *)s + (blockIdx.x == 1 && t == 3 ? 2 : 4 * t));
    o[blockIdx.x * 4 + t] = atomicAdd(a, 1); }'''
# warp 1 reaches the barrier with lanes 0, 1; its lanes 2, 3 are parked on its stack
DEADLOCK = r'''extern "C" __global__ void k(int *o) { if (threadIdx.x < 6) { __syncthreads(); } o[threadIdx.x] = 1; }'''


def const_store_program() -> Program:
    """Hand-written: thread t stores to CONST byte address 4 * (t + 1) (read-only)."""
    blocks = [MachineBlock([Instr(Op.S2R, Reg(1), (Imm(isa.SReg.TID_X),)),
                            Instr(Op.SHL, Reg(1), (Reg(1), Imm(2))),
                            Instr(Op.ST, Reg(0), (Reg(1), Imm(4), Reg(1)), Space.CONST)],
                           Terminator(Term.EXIT))]
    return Program("const_store", blocks, [], regs_used=2)


# name: (source or program, grid, block, argument factory)
MEMORY = {
    "misaligned_store": (MISALIGNED, 1, 4, lambda: [np.zeros(4, np.int32)]),
    "out_of_range_load": (OUT_OF_RANGE, 1, 8, lambda: [np.arange(8, dtype=np.int32), np.zeros(8, np.int32)]),
    "const_store": (const_store_program, 1, 2, lambda: []),
    "negative_index_load": (NEGATIVE, 1, 4, lambda: [np.arange(4, dtype=np.int32), np.zeros(4, np.int32)]),
    "atomic_misaligned": (ATOMIC, 2, 4, lambda: [np.zeros(8, np.int32)]),
}
# what the interpreter says (checked, so the cases are what their names say)
INTERP_SAYS = {
    "misaligned_store": r"^store at global byte address 0x[0-9a-f]*[13579bdf] is not 4-byte aligned \(thread block 0, warp 0, lane 1, pc B\d+\)$",
    "out_of_range_load": r"^load at global byte address 0x[0-9a-f]+ is past the end \(65536 bytes\) \(thread block 0, warp 1, lane 2, pc B\d+\)$",
    "const_store": r"^store at const byte address 0x4 is read-only \(thread block 0, warp 0, lane 0, pc B0\)$",
    "negative_index_load": r"^load at global byte address 0xfffff[0-9a-f]{3} is past the end \(65536 bytes\) \(thread block 0, warp 0, lane 1, pc B\d+\)$",
    "atomic_misaligned": r"^atomic at shared byte address 0x[0-9a-f]*[26ae] is not 4-byte aligned \(thread block 1, warp 0, lane 3, pc B\d+\)$",
}


def function(device: Device, name: str) -> Function:
    src = MEMORY[name][0] if name in MEMORY else DEADLOCK
    if callable(src):
        return Function(Module(device, "", "", "<hand-built>"), "const_store", src())
    return device.compile(src, filename=f"{name}.cu").get_function("k")


def interp_error(name: str):
    _, grid, block, args = MEMORY[name]
    with pytest.raises(MemoryFault) as e:
        function(Device("interp"), name)(grid=grid, block=block, args=args())
    assert re.match(INTERP_SAYS[name], str(e.value)), str(e.value)
    return str(e.value)


def assert_names_the_fault(message: str, interp: str, program: Program):
    """The model's message has the interpreter's, and the instruction from the ROM."""
    assert message.startswith("the model signalled FAULT at generated token "), message
    assert f"bad memory access: {interp}" in message, (message, interp)
    pc = int(re.search(r"pc B(\d+)\)$", interp)[1])
    slot = int(re.search(rf"EXEC w\d B{pc}\.(\d+)\)", message)[1])
    p = encode(program)[pc].pass_at(slot)          # a pass may run a pair: its pre-ALU's instruction first
    ins = program.blocks[pc].instrs[p.main]
    here = (f"{program.blocks[pc].instrs[p.pre]}, then " if p.pre is not None else "") + str(ins)
    assert ins.op in (Op.LD, Op.ST, Op.ATOM) and f"pc B{pc} slot {slot}: {here}" in message, message


@pytest.mark.parametrize("name", MEMORY)
def test_memory_fault_from_the_reference_stream(name):
    """The interpreter's token stream (what the model must generate) read without replay."""
    interp = interp_error(name)
    _, grid, block, args = MEMORY[name]
    fn = function(Device("interp"), name)
    lau = Launch.build(fn.program, grid, block, args())
    stream = expected_stream(lau)
    faulting_pass = stream.tokens[-2]             # an EXEC, or a writeback token that continues its block
    assert stream.tokens[-1].kind == "FAULT" and (faulting_pass.kind == "EXEC" or faulting_pass.cont)
    error = fault_error(stream.tokens, lau)
    assert isinstance(error, MemoryFault)
    assert_names_the_fault(str(error), interp, fn.program)


def test_lane_not_known_when_the_tokens_show_no_bad_address():
    """A FAULT the writeback tokens cannot explain (here: with the VAL and VALA tokens left out,
    every register reads 0: thread t's offset 5 t is 0, and p + 0 is aligned) says so instead of
    naming a lane."""
    source = MISALIGNED.replace("threadIdx.x", "threadIdx.x * 5")
    fn = Device("interp").compile(source).get_function("k")
    lau = Launch.build(fn.program, 1, 4, [np.zeros(8, np.int32)])
    stream = expected_stream(lau)
    tokens = with_exec(stream.tokens)             # the passes' EXECs stay when their continuing VALAs go
    assert "lane 1" in str(fault_error(tokens, lau))
    error = fault_error([t for t in tokens if t.kind not in ("VAL", "VALA")], lau)
    assert isinstance(error, MemoryFault)
    assert "a store in global memory" in str(error) and "which lane is not known" in str(error)
    pc, slot = next((pc, s) for pc, b in enumerate(fn.program.blocks) for s, ins in enumerate(b.instrs)
                    if ins.op is isa.Op.ST)
    assert "lane 1" not in str(error) and f"(thread block 0, warp 0, pc B{pc} slot " in str(error)


def test_a_fixed_operand_needs_the_launch():
    """The faulting store's address is parameter p plus the thread index, both fixed operands
    (encoding.Fixed) with no token of their own: with the launch (its grid and parameters) the
    message names lane 1 and its address, without it neither the lane nor the address."""
    fn = function(Device("interp"), "misaligned_store")
    lau = Launch.build(fn.program, 1, 4, [np.zeros(4, np.int32)])
    stream = expected_stream(lau).tokens
    assert not any(t.kind.startswith("VAL") for t in stream)
    p = lau.params[0]
    known = str(fault_error(stream, lau))
    assert f"global byte address {p + 1:#x} is not 4-byte aligned" in known and "lane 1" in known
    unknown = str(fault_error(stream))
    assert "lane 1" not in unknown and f"{p + 1:#x}" not in unknown
    assert "(misaligned, out of range, or a store to CONST)" in unknown


def test_without_the_program_the_fault_still_says_where():
    error = fault_error([Token("EXEC", (1, 3, 2)), Token("FAULT")])
    assert isinstance(error, MemoryFault)
    assert str(error).endswith("bad memory access (misaligned, out of range, or a store to CONST) "
                               "(thread block 0, warp 1, pc B3 slot 2)")


# --- on the model engine, no replay -----------------------------------------------------------
@pytest.fixture(scope="module")
def model():
    return Device("model")


@pytest.mark.parametrize("name", ["misaligned_store", "out_of_range_load", "const_store", "atomic_misaligned"])
def test_memory_fault_on_the_model(model, name):
    interp = interp_error(name)
    _, grid, block, args = MEMORY[name]
    fn = function(model, name)
    with pytest.raises(MemoryFault) as e:
        fn(grid=grid, block=block, args=args())
    assert_names_the_fault(str(e.value), interp, fn.program)
    assert "the interpreter" not in str(e.value)          # no replay: the model's tokens alone


def test_deadlock_on_the_model(model):
    with pytest.raises(DeadlockError) as e:
        function(Device("interp"), "deadlock")(grid=1, block=8, args=[np.zeros(8, np.int32)])
    interp = str(e.value)
    m = re.search(r"deadlock in thread block (\d+): divergent barrier: warp (\d+) reached the barrier ending "
                  r"B(\d+) with lanes (0b\d+) \(threads \[4, 5\]\) while its live lanes (0b\d+)", interp)
    assert m and (m[1], m[2], m[4], m[5]) == ("0", "1", "0b0011", "0b1100"), interp
    with pytest.raises(DeadlockError) as e:
        function(model, "deadlock")(grid=1, block=8, args=[np.zeros(8, np.int32)])
    got = str(e.value)
    assert (f"deadlock in thread block {m[1]} at a divergent barrier: warp {m[2]} reached the barrier ending "
            f"B{m[3]} with lanes {m[4]} while its live lanes {m[5]} wait on its SIMT stack") in got, got


def test_memory_fault_in_a_batch_on_the_model(model):
    """launch_many (the suite's batched path) names the lane too, each launch its own."""
    from qwengpu.driver.runtime import launch_many
    fast, machine = model.model_and_machine()
    launches = []
    for name in ("const_store", "misaligned_store"):
        _, grid, block, args = MEMORY[name]
        fn = function(Device("interp"), name)
        launches.append(Launch.build(fn.program, grid, block, args()))
    results = launch_many(fast, machine, launches, max_tokens=10_000, max_batch=2)
    for name, lau, result in zip(("const_store", "misaligned_store"), launches, results):
        assert isinstance(result, MemoryFault), result
        assert_names_the_fault(str(result), interp_error(name), lau.program)


def test_a_fault_the_tokens_do_not_explain():
    error = fault_error([Token("EXEC", (0, 1, 2)), Token("ST", (0,)), Token("FAULT")])
    assert type(error).__name__ == "ExecutionError"
    assert str(error) == ("the model signalled FAULT at generated token 2 (last pass: EXEC w0 B1.2): the tokens "
                          "before it show neither a memory access (FAULT right after an EXEC) nor a barrier "
                          "([CT1] CT2)")
