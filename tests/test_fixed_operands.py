"""Fixed operands (encoding.Fixed, docs/machine.md step 18): a register read whose every reaching
definition is the same S2R or the same constant-address CONST load takes its value from the
special-register table or the parameter bank, and a definition only such reads need runs in no
pass. The expected blocks below are worked out by hand from the dataflow; the model runs at the
end check the circuit's fixed values against the interpreter (replay) and NumPy."""
import numpy as np
import pytest

from qwengpu import isa
from qwengpu.api import Device
from qwengpu.isa import (Imm, Instr, MachineBlock, Op, Param, Program, Reg, Space, SReg, Term,
                         Terminator)
from qwengpu.launch import Launch
from qwengpu.driver import runtime
from qwengpu.machine.encoding import Fixed, encode, machine_blocks
from qwengpu.driver.protocol import expected_stream

r = Reg
EXIT = Terminator(Term.EXIT)
TID, CTAID = Fixed(sreg=SReg.TID_X), Fixed(sreg=SReg.CTAID_X)


def s2r(d, sreg):
    return Instr(Op.S2R, r(d), (Imm(sreg),))


def ldc(d, address):
    return Instr(Op.LD, r(d), (Imm(address), Imm(0)), Space.CONST)


def jmp(target):
    return Terminator(Term.JMP, target)


def brc(cond, target, fallthrough, reconv=-1):
    return Terminator(Term.BRC, target, r(cond), fallthrough, reconv)


def run_blocks(*blocks, params=()):
    """Each block as the machine runs it: (its instructions as strings, the kept indices)."""
    program = Program("k", list(blocks), [Param(f"p{i}", i) for i in range(len(params))])
    return [([str(i) for i in b.instrs], kept) for b, kept in machine_blocks(program)]


def across_blocks() -> list[MachineBlock]:
    """o[tid.x] = tid.x at byte address 4 tid.x, tid.x read in B1 and B2."""
    return [MachineBlock([s2r(1, SReg.TID_X)], jmp(1)), MachineBlock([Instr(Op.SHL, r(2), (r(1), Imm(2)))], jmp(2)),
            MachineBlock([Instr(Op.ST, r(0), (r(2), Imm(0), r(1)), Space.GLOBAL)], EXIT)]


def test_a_special_register_read_across_blocks():
    assert run_blocks(*across_blocks()) == [([], ()), (["SHL r2, tid_x, 2"], (0,)),
                                            (["ST.global r0, r2, 0, tid_x"], (0,))]


def test_a_pair_keeps_its_register_reads():
    """The pre-ALU reads only the register file: an instruction the block pairs (SHL, whose
    result only the next instruction reads) reads tid.x from r1, so the S2R runs, and every
    read it reaches takes r1."""
    got = run_blocks(MachineBlock([s2r(1, SReg.TID_X), Instr(Op.SHL, r(2), (r(1), Imm(2))),
                                   Instr(Op.ST, r(0), (r(2), Imm(0), r(1)), Space.GLOBAL)], EXIT))
    assert got == [(["MOV r1, tid_x", "SHL r2, r1, 2", "ST.global r0, r2, 0, r1"], (0, 1, 2))]


def test_two_paths_must_agree():
    """r1 is tid.x on one path and ctaid.x on the other: the read after the join takes the
    register file, and both S2Rs run (as MOVs of their special register)."""
    got = run_blocks(MachineBlock([Instr(Op.MOV, r(3), (Imm(1),))], brc(3, 1, 2, 3)),
                     MachineBlock([s2r(1, SReg.TID_X)], jmp(3)),
                     MachineBlock([s2r(1, SReg.CTAID_X)], jmp(3)),
                     MachineBlock([Instr(Op.ADD, r(2), (r(1), Imm(1)))], EXIT))
    assert got[1:] == [(["MOV r1, tid_x"], (0,)), (["MOV r1, ctaid_x"], (0,)), (["ADD r2, r1, 1"], (0,))]


def test_the_same_special_register_on_both_paths():
    """(With no reconvergence point: the analysis counts the BRC's edge to one as a path, on
    which neither S2R would run.)"""
    got = run_blocks(MachineBlock([Instr(Op.MOV, r(3), (Imm(1),))], brc(3, 1, 2)),
                     MachineBlock([s2r(1, SReg.TID_X)], jmp(3)),
                     MachineBlock([s2r(1, SReg.TID_X)], jmp(3)),
                     MachineBlock([Instr(Op.ADD, r(2), (r(1), Imm(1)))], EXIT))
    assert got[1:] == [([], ()), ([], ()), (["ADD r2, tid_x, 1"], (0,))]


def test_a_path_without_the_definition_keeps_the_register():
    """B0 -> B2 skips B1's S2R: r1 may hold its launch value (0) there."""
    got = run_blocks(MachineBlock([Instr(Op.MOV, r(3), (Imm(1),))], brc(3, 1, 2, 2)),
                     MachineBlock([s2r(1, SReg.TID_X)], jmp(2)),
                     MachineBlock([Instr(Op.ADD, r(2), (r(1), Imm(1)))], EXIT))
    assert got[1:] == [(["MOV r1, tid_x"], (0,)), (["ADD r2, r1, 1"], (0,))]


def test_a_warp_op_reads_the_register_file():
    """SHFL reads other lanes' registers: its operand stays a register, so the S2R runs, and
    the ADD reads r1 too."""
    shfl = Instr(Op.SHFL, r(2), (r(1), Imm(1), Imm(0x1F)), isa.ShflMode.BFLY)
    got = run_blocks(MachineBlock([s2r(1, SReg.TID_X), shfl, Instr(Op.ADD, r(3), (r(1), r(2)))], EXIT))
    assert got == [(["MOV r1, tid_x", str(shfl), "ADD r3, r1, r2"], (0, 1, 2))]


def test_one_const_word_a_pass():
    """Two parameters in one ADD: the parameter bank reads one word a pass, so both loads run;
    a parameter and a special register fit."""
    two = run_blocks(MachineBlock([ldc(1, 0), ldc(2, 4), Instr(Op.ADD, r(3), (r(1), r(2)))], EXIT), params=(1, 2))
    assert two == [(["LD.const r1, 0, 0", "LD.const r2, 4, 0", "ADD r3, r1, r2"], (0, 1, 2))]
    mixed = run_blocks(MachineBlock([ldc(1, 4), s2r(2, SReg.TID_X), Instr(Op.ADD, r(3), (r(1), r(2)))], EXIT),
                       params=(1, 2))
    assert mixed == [(["ADD r3, const[1], tid_x"], (2,))]


def test_loads_that_stay_loads():
    """A misaligned constant address faults, so it runs; a BRC takes a special register as its
    condition but not a CONST word (one parameter read a pass, the instruction's)."""
    assert run_blocks(MachineBlock([ldc(1, 2), Instr(Op.ADD, r(2), (r(1), Imm(1)))], EXIT)) == \
        [(["LD.const r1, 2, 0", "ADD r2, r1, 1"], (0, 1))]
    on_param = run_blocks(MachineBlock([ldc(1, 0)], brc(1, 1, 1, 1)), MachineBlock([], EXIT), params=(1,))
    assert on_param[0] == (["LD.const r1, 0, 0"], (0,))
    on_tid = run_blocks(MachineBlock([s2r(1, SReg.TID_X)], brc(1, 1, 1, 1)), MachineBlock([], EXIT))
    assert on_tid[0] == ([], ())


def test_a_redefinition_ends_the_fixed_value():
    got = run_blocks(MachineBlock([s2r(1, SReg.TID_X), Instr(Op.ADD, r(2), (r(1), Imm(1))),
                                   Instr(Op.MOV, r(1), (Imm(5),)), Instr(Op.ADD, r(3), (r(1), r(2)))], EXIT))
    assert got == [(["ADD r2, tid_x, 1", "MOV r1, 5", "ADD r3, r1, r2"], (1, 2, 3))]


def test_the_stream_of_blocks_run_by_fixed_operands():
    """B0 is left with its JMP alone (a terminator pass of its own); B1 writes 4 tid.x back as one
    VALA; B2 stores tid.x there: 3 EXECs, the VALA, 4 STs, then HALT (no CT1 nor CT2: no lane of
    the thread block is alive)."""
    program = Program("k", across_blocks(), [])
    got = expected_stream(Launch.from_words(program, 1, 4))
    assert [str(t) for t in got.tokens] == ["EXEC w0 B0.0", "EXEC w0 B1.0", "VALA s4 0x00", "EXEC w0 B2.0",
                                           "ST l0", "ST l1", "ST l2", "ST l3", "HALT"]
    assert list(got.memory[:4]) == [0, 1, 2, 3]
    assert [[p.main for p in code.passes] for code in encode(program)] == [[None], [0], [0]]


# --- in the stand-in model: the circuit's fixed values against the interpreter and NumPy ---------
SREGS = r'''extern "C" __global__ void k(int *o, int base) {
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int c = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    o[c * blockDim.x * blockDim.y * blockDim.z + t] = base + (threadIdx.x | threadIdx.y << 4 | threadIdx.z << 8
        | blockIdx.x << 12 | blockIdx.y << 16 | blockIdx.z << 20 | gridDim.z << 24 | blockDim.z << 28); }'''


def lane_warp_program() -> Program:
    """o[tid.x] = warpid << 4 | laneid (o: parameter 0)."""
    blocks = [MachineBlock([s2r(1, SReg.LANEID), s2r(2, SReg.WARPID), Instr(Op.SHL, r(3), (r(2), Imm(4))),
                            Instr(Op.OR, r(3), (r(3), r(1)))], jmp(1)),
              MachineBlock([s2r(4, SReg.TID_X), Instr(Op.SHL, r(4), (r(4), Imm(2))), ldc(5, 0),
                            Instr(Op.ADD, r(5), (r(5), r(4)))], jmp(2)),
              MachineBlock([Instr(Op.ST, r(0), (r(5), Imm(0), r(3)), Space.GLOBAL)], EXIT)]
    return Program("lane_warp", blocks, [Param("o", 0, pointer=True)], regs_used=5)


@pytest.fixture(scope="module")
def model(standin_fast):
    return standin_fast


def run_on_model(model, program, grid, block, args):
    fast, machine = model
    lau = Launch.build(program, grid, block, args)
    runtime.launch_on_model(fast, machine, lau, max_tokens=2000, check="replay")
    lau.copy_back()


def test_special_registers_and_a_parameter_in_the_model(model):
    fn = Device("model").compile(SREGS).get_function("k")
    assert any(isinstance(s, Fixed) and s.word is not None for code in encode(fn.program)
               for s in code.fixed.values())
    grid, block = (2, 1, 2), (2, 2, 2)
    out = np.zeros(32, np.int32)
    run_on_model(model, fn.program, grid, block, [out, 1000])
    z, y, x = np.meshgrid(range(2), range(2), range(2), indexing="ij")
    want = []
    for cz in range(2):
        for cx in range(2):
            want += list((1000 + (x | y << 4 | z << 8 | cx << 12 | cz << 20 | 2 << 24 | 2 << 28)).ravel())
    assert out.tolist() == want


def test_lane_and_warp_ids_in_the_model(model):
    """warpid through the S2R that a pair keeps (a MOV of its fixed value), laneid and tid.x as
    fixed operands, the parameter o too."""
    program = lane_warp_program()
    assert [[str(i) for i in b.instrs] for b, _ in machine_blocks(program)] == [
        ["MOV r2, warpid", "SHL r3, r2, 4", "OR r3, r3, laneid"], ["SHL r4, tid_x, 2", "ADD r5, const[0], r4"],
        ["ST.global r0, r5, 0, r3"]]
    out = np.zeros(8, np.int32)
    run_on_model(model, program, 1, 8, [out])
    assert out.tolist() == [(t // 4) << 4 | t % 4 for t in range(8)]
