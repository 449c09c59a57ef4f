"""isa.py semantics held against independent ground truth.

Every ALU op and atomic is recomputed here another way (NumPy fixed-width
arithmetic, C-style fmod, bit arrays) over random 32-bit inputs and the edge
cases CUDA/PTX define specially; shfl_source_lane is checked against a table
worked out by hand from the CUDA __shfl_*_sync definitions.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwengpu import isa

INT_MIN, INT_MAX, M32 = 0x8000_0000, 0x7FFF_FFFF, 0xFFFF_FFFF
EDGES = [0, 1, 2, 3, 7, 31, 32, 33, 255, 256, 0x1_00, INT_MAX, INT_MIN, INT_MIN + 1, M32, M32 - 1, 0x1234_5678]
u32s = st.one_of(st.sampled_from(EDGES), st.integers(0, M32))


# --- independent models --------------------------------------------------
def _i32(x):
    return np.array([x], dtype=np.uint32).view(np.int32)[0]


def _u32(x):
    return np.array([x], dtype=np.uint32)[0]


def _out(v):
    """Any NumPy/Python integer, wrapped to 32 bits through NumPy's int64->uint32 cast."""
    return int(np.array([v], dtype=np.int64).astype(np.uint32)[0])


def _wrapping(ufunc, a, b):
    """A uint32 array operation: wraps modulo 2**32 without warnings."""
    return int(ufunc(np.array([a], np.uint32), np.array([b], np.uint32))[0])


def _bits(a):
    """The 32 bits of a, most significant first."""
    return np.unpackbits(np.array([a], dtype=">u4").view(np.uint8))


def _c_rem(a, b):
    return int(np.fmod(np.int64(_i32(a)), np.int64(_i32(b))))   # fmod: sign of the dividend, like C


def _div(a, b):
    if b == 0:
        return M32                                   # documented: x / 0 = -1
    r = _c_rem(a, b)
    return _out((int(_i32(a)) - r) // int(_i32(b)))  # exact; INT_MIN/-1 wraps to INT_MIN


def _rem(a, b):
    return a if b == 0 else _out(_c_rem(a, b))       # documented: x % 0 = x


def _digit4(a, b):
    return 3 if b == 0 else int(min(np.uint64(3), np.uint64(a) // np.uint64(b)))


def _shift_amount_ok(b):
    return b < 32   # PTX clamps shift amounts: >= 32 shifts everything out


def _bfe(a, b, c, signed):
    pos, n = b & 0xFF, c & 0xFF
    if n == 0:
        return 0
    width = max(0, min(n, 32 - pos))                 # field bits that exist in a
    field = (a >> pos) & ((1 << width) - 1) if width else 0
    sign = _bits(a)[31 - min(pos + n - 1, 31)] if signed else 0
    return field | (M32 ^ ((1 << width) - 1)) if sign else field


def _cmp(fn, signed):
    conv = _i32 if signed else _u32
    return lambda a, b: int(bool(fn(conv(a), conv(b))))


ORACLE = {
    "MOV": lambda a: a,
    "ADD": lambda a, b: _wrapping(np.add, a, b),
    "SUB": lambda a, b: _wrapping(np.subtract, a, b),
    "MUL": lambda a, b: _wrapping(np.multiply, a, b),
    "MULHI": lambda a, b: _out((np.int64(_i32(a)) * np.int64(_i32(b))) >> np.int64(32)),
    "MULHIU": lambda a, b: int((np.uint64(a) * np.uint64(b)) >> np.uint64(32)),
    "AND": lambda a, b: int(_u32(a) & _u32(b)),
    "OR": lambda a, b: int(_u32(a) | _u32(b)),
    "XOR": lambda a, b: int(_u32(a) ^ _u32(b)),
    "SHL": lambda a, b: (a * 2 ** b) % 2 ** 32 if _shift_amount_ok(b) else 0,
    "SHR": lambda a, b: a // 2 ** b if _shift_amount_ok(b) else 0,
    "SRA": lambda a, b: _out(int(_i32(a)) // 2 ** min(b, 31)),   # floor division = arithmetic shift
    "MIN": lambda a, b: _out(min(_i32(a), _i32(b))),
    "MAX": lambda a, b: _out(max(_i32(a), _i32(b))),
    "MINU": lambda a, b: int(np.minimum(_u32(a), _u32(b))),
    "MAXU": lambda a, b: int(np.maximum(_u32(a), _u32(b))),
    "SETEQ": _cmp(np.equal, False),
    "SETNE": _cmp(np.not_equal, False),
    "SETLT": _cmp(np.less, True),
    "SETLE": _cmp(np.less_equal, True),
    "SETGT": _cmp(np.greater, True),
    "SETGE": _cmp(np.greater_equal, True),
    "SETLTU": _cmp(np.less, False),
    "SETLEU": _cmp(np.less_equal, False),
    "SETGTU": _cmp(np.greater, False),
    "SETGEU": _cmp(np.greater_equal, False),
    "SEL": lambda c, a, b: b if c == 0 else a,
    "DIV": _div,
    "DIVU": lambda a, b: M32 if b == 0 else int(np.uint64(a) // np.uint64(b)),
    "REM": _rem,
    "REMU": lambda a, b: a if b == 0 else int(np.uint64(a) % np.uint64(b)),
    "DIVR": lambda a, b: int(np.uint32(a) - np.uint32(b)) if a >= b else a,
    "DIVQ": lambda a, b, q: int((np.uint64(q) * np.uint64(2) + np.uint64(a >= b)) % np.uint64(2 ** 32)),
    # the radix-4 digit k = min(3, a // b) (3 when b = 0), in 64-bit numpy arithmetic
    "DIVR4": lambda a, b: int(np.uint64(a) - np.uint64(_digit4(a, b)) * np.uint64(b)),
    "DIVQ4": lambda a, b, q: int((np.uint64(q) * np.uint64(4) + np.uint64(_digit4(a, b))) % np.uint64(2 ** 32)),
    "POPC": lambda a: int(_bits(a).sum()),
    "CLZ": lambda a: int(np.argmax(_bits(a))) if a else 32,
    "BREV": lambda a: int(np.packbits(_bits(a)[::-1]).view(">u4")[0]),
    "BFE": lambda a, b, c: _bfe(a, b, c, True),
    "BFEU": lambda a, b, c: _bfe(a, b, c, False),
}

def f32_add(old: int, b: int, ftz: bool = False) -> int:
    """numpy's float32 sum of two bit patterns, with CUDA's NaN (0x7FFFFFFF); ftz: subnormal
    inputs and result as zeros of their sign (global-memory float atomics)."""
    flush = (lambda x: x & 0x80000000 if ftz and not x & 0x7F800000 else x)
    with np.errstate(all="ignore"):
        total = np.uint32(flush(old)).view(np.float32) + np.uint32(flush(b)).view(np.float32)
    return 0x7FFFFFFF if np.isnan(total) else flush(int(total.view(np.uint32)))


ATOM_ORACLE = {
    isa.AtomOp.FADD: lambda old, b, c: f32_add(old, b),
    isa.AtomOp.ADD: lambda old, b, c: (old + b) % 2 ** 32,
    isa.AtomOp.EXCH: lambda old, b, c: b,
    isa.AtomOp.MIN: lambda old, b, c: _out(min(_i32(old), _i32(b))),
    isa.AtomOp.MAX: lambda old, b, c: _out(max(_i32(old), _i32(b))),
    isa.AtomOp.MINU: lambda old, b, c: min(old, b),
    isa.AtomOp.MAXU: lambda old, b, c: max(old, b),
    isa.AtomOp.AND: lambda old, b, c: old & b,
    isa.AtomOp.OR: lambda old, b, c: old | b,
    isa.AtomOp.XOR: lambda old, b, c: old ^ b,
    isa.AtomOp.INC: lambda old, b, c: 0 if old >= b else old + 1,      # PTX atom.inc.u32
    isa.AtomOp.DEC: lambda old, b, c: b if old == 0 or old > b else old - 1,
    isa.AtomOp.CAS: lambda old, b, c: c if old == b else old,
}

ARITY = {name: isa.Op[name].arity for name in isa.ALU_SEMANTICS}


def test_every_op_has_an_oracle():
    assert set(ORACLE) == set(isa.ALU_SEMANTICS)
    assert set(ATOM_ORACLE) == set(isa.AtomOp) == set(isa.ATOM_SEMANTICS)
    assert {op.name for op in isa.Op if op.kind is isa.Kind.ALU} == set(isa.ALU_SEMANTICS)


# --- random inputs ---------------------------------------------------------
@pytest.mark.parametrize("name", sorted(isa.ALU_SEMANTICS))
@settings(max_examples=120, deadline=None)
@given(a=u32s, b=u32s, c=u32s)
def test_alu_matches_oracle(name, a, b, c):
    args = (a, b, c)[:ARITY[name]]
    got = isa.ALU_SEMANTICS[name](*args)
    assert 0 <= got <= M32
    assert got == ORACLE[name](*args), f"{name}{tuple(hex(x) for x in args)}"


@pytest.mark.parametrize("op", list(isa.AtomOp), ids=lambda o: o.name)
@settings(max_examples=120, deadline=None)
@given(old=u32s, b=u32s, c=u32s)
def test_atomic_matches_oracle(op, old, b, c):
    assert isa.ATOM_SEMANTICS[op](old, b, c) == ATOM_ORACLE[op](old, b, c)


# --- every combination of edge values --------------------------------------
@pytest.mark.parametrize("name", sorted(isa.ALU_SEMANTICS))
def test_alu_edge_cases(name):
    edges = EDGES if ARITY[name] < 3 else [0, 1, 4, 31, 32, 33, 255, 256 + 4, INT_MIN, M32]
    for args in itertools.product(edges, repeat=ARITY[name]):
        assert isa.ALU_SEMANTICS[name](*args) == ORACLE[name](*args), f"{name}{tuple(hex(x) for x in args)}"


@pytest.mark.parametrize("op", list(isa.AtomOp), ids=lambda o: o.name)
def test_atomic_edge_cases(op):
    for old, b, c in itertools.product(EDGES[::2], repeat=3):
        assert isa.ATOM_SEMANTICS[op](old, b, c) == ATOM_ORACLE[op](old, b, c)


# --- documented special cases, by hand ----------------------------------------
HAND = [
    ("DIV", (7, 0), M32), ("DIV", (INT_MIN, 0), M32), ("DIV", (INT_MIN, M32), INT_MIN),
    ("DIV", (_out(-7), 2), _out(-3)), ("DIV", (7, _out(-2)), _out(-3)), ("DIV", (_out(-7), _out(-2)), 3),
    ("REM", (7, 0), 7), ("REM", (INT_MIN, M32), 0), ("REM", (_out(-7), 2), _out(-1)), ("REM", (7, _out(-2)), 1),
    ("DIVU", (7, 0), M32), ("REMU", (7, 0), 7), ("DIVU", (M32, 2), INT_MAX),
    ("DIVR", (7, 3), 4), ("DIVR", (3, 3), 0), ("DIVR", (2, 3), 2), ("DIVR", (M32, INT_MIN), INT_MAX),
    ("DIVQ", (3, 3, 5), 11), ("DIVQ", (2, 3, 5), 10), ("DIVQ", (0, 0, INT_MIN), 1), ("DIVQ", (M32, 1, M32), M32),
    ("DIVR4", (7, 3), 1), ("DIVR4", (9, 3), 0), ("DIVR4", (8, 3), 2), ("DIVR4", (2, 3), 2), ("DIVR4", (M32, INT_MIN), INT_MAX),
    ("DIVR4", (M32, 0x5555_5555), 0), ("DIVR4", (M32 - 1, 0x5555_5555), 0x5555_5554), ("DIVR4", (5, 0), 5),
    ("DIVQ4", (9, 3, 5), 23), ("DIVQ4", (8, 3, 5), 22), ("DIVQ4", (2, 3, INT_MIN), 0), ("DIVQ4", (M32, 1, M32), M32),
    ("SHL", (1, 31), INT_MIN), ("SHL", (1, 32), 0), ("SHL", (1, 33), 0), ("SHL", (1, M32), 0),
    ("SHR", (M32, 31), 1), ("SHR", (M32, 32), 0), ("SHR", (M32, 255), 0),
    ("SRA", (INT_MIN, 31), M32), ("SRA", (INT_MIN, 32), M32), ("SRA", (INT_MIN, M32), M32), ("SRA", (INT_MAX, 33), 0),
    ("MULHI", (M32, M32), 0), ("MULHI", (INT_MIN, INT_MIN), 0x4000_0000), ("MULHIU", (M32, M32), M32 - 1),
    ("MUL", (0x1_0000, 0x1_0000), 0), ("ADD", (M32, 1), 0), ("SUB", (0, 1), M32),
    ("MIN", (M32, 0), M32), ("MINU", (M32, 0), 0), ("MAX", (INT_MIN, INT_MAX), INT_MAX),
    ("SETLT", (M32, 0), 1), ("SETLTU", (M32, 0), 0),
    ("SEL", (2, 10, 20), 10), ("SEL", (0, 10, 20), 20),
    ("POPC", (M32,), 32), ("POPC", (0,), 0), ("CLZ", (0,), 32), ("CLZ", (1,), 31), ("CLZ", (INT_MIN,), 0),
    ("BREV", (1,), INT_MIN), ("BREV", (0x0000_00F0,), 0x0F00_0000),
    ("BFEU", (0xABCD_1234, 8, 8), 0x12), ("BFE", (0xABCD_1234, 12, 8), 0xFFFF_FFD1), ("BFE", (0x0000_0700, 8, 3), M32),
    ("BFEU", (0xABCD_1234, 8, 0), 0), ("BFE", (0xABCD_1234, 8, 0), 0),
    ("BFEU", (0xF000_0000, 28, 8), 0xF), ("BFE", (0xF000_0000, 28, 8), M32),   # field runs past bit 31
    ("BFE", (INT_MIN, 40, 4), M32), ("BFEU", (INT_MIN, 40, 4), 0),             # start beyond the msb
    ("BFEU", (0xABCD_1234, 0x108, 0x208), 0x12),                              # only the low 8 bits of pos/len count
]


@pytest.mark.parametrize("name,args,want", HAND, ids=[f"{n}{a}" for n, a, _ in HAND])
def test_documented_cases(name, args, want):
    assert isa.ALU_SEMANTICS[name](*args) == want
    assert ORACLE[name](*args) == want   # the oracle agrees with the hand value too


def test_atomic_inc_dec_wrap():
    inc, dec = isa.ATOM_SEMANTICS[isa.AtomOp.INC], isa.ATOM_SEMANTICS[isa.AtomOp.DEC]
    assert [inc(v, 3, 0) for v in range(6)] == [1, 2, 3, 0, 0, 0]
    assert [dec(v, 3, 0) for v in range(6)] == [3, 0, 1, 2, 3, 3]
    assert isa.ATOM_SEMANTICS[isa.AtomOp.CAS](5, 5, 9) == 9
    assert isa.ATOM_SEMANTICS[isa.AtomOp.CAS](5, 4, 9) == 5


# --- shuffles ----------------------------------------------------------------
def _shfl_c(mode, width):
    """The c operand CUDA's __shfl_*_sync(.., width) passes to shfl.sync."""
    clamp = 0 if mode is isa.ShflMode.UP else 0x1F
    return ((32 - width) << 8) | clamp


I, U, D, X = isa.ShflMode.IDX, isa.ShflMode.UP, isa.ShflMode.DOWN, isa.ShflMode.BFLY
# (mode, width, b) -> source lane for lanes 0..3, worked out from the CUDA docs:
# idx: segment base + b % width; up/down: lane -/+ b if it stays in the segment;
# bfly: lane ^ b unless that lies in a *later* segment (CUDA: "each group of
# width threads can access elements from earlier groups", PTX: j <= maxLane);
# otherwise the lane's own value.
SHFL_TABLE = {
    (I, 4, 0): [0, 0, 0, 0], (I, 4, 2): [2, 2, 2, 2], (I, 4, 5): [1, 1, 1, 1],
    (I, 2, 0): [0, 0, 2, 2], (I, 2, 1): [1, 1, 3, 3], (I, 2, 3): [1, 1, 3, 3],
    (I, 1, 0): [0, 1, 2, 3], (I, 1, 3): [0, 1, 2, 3],
    (U, 4, 0): [0, 1, 2, 3], (U, 4, 1): [0, 0, 1, 2], (U, 4, 2): [0, 1, 0, 1], (U, 4, 3): [0, 1, 2, 0],
    (U, 4, 4): [0, 1, 2, 3], (U, 2, 1): [0, 0, 2, 2], (U, 2, 2): [0, 1, 2, 3], (U, 1, 1): [0, 1, 2, 3],
    (D, 4, 0): [0, 1, 2, 3], (D, 4, 1): [1, 2, 3, 3], (D, 4, 2): [2, 3, 2, 3], (D, 4, 3): [3, 1, 2, 3],
    (D, 4, 4): [0, 1, 2, 3], (D, 2, 1): [1, 1, 3, 3], (D, 2, 2): [0, 1, 2, 3], (D, 1, 1): [0, 1, 2, 3],
    (X, 4, 0): [0, 1, 2, 3], (X, 4, 1): [1, 0, 3, 2], (X, 4, 2): [2, 3, 0, 1], (X, 4, 3): [3, 2, 1, 0],
    (X, 4, 4): [0, 1, 2, 3], (X, 2, 1): [1, 0, 3, 2], (X, 2, 2): [0, 1, 0, 1], (X, 2, 3): [0, 1, 1, 0],
    (X, 1, 1): [0, 0, 2, 2],
}


@pytest.mark.parametrize("key", SHFL_TABLE, ids=lambda k: f"{k[0].name}-w{k[1]}-b{k[2]}")
def test_shfl_source_lane_table(key):
    mode, width, b = key
    got = [isa.shfl_source_lane(mode, lane, b, _shfl_c(mode, width)) for lane in range(isa.LANES)]
    assert got == SHFL_TABLE[key]


def test_shfl_full_width_stays_in_the_warp():
    # width 32 (c = 0x1f): sources past lane 3 do not exist here, so a lane reads itself
    assert [isa.shfl_source_lane(D, l, 1, 0x1F) for l in range(4)] == [1, 2, 3, 3]
    assert [isa.shfl_source_lane(X, l, 2, 0x1F) for l in range(4)] == [2, 3, 0, 1]
    assert [isa.shfl_source_lane(I, l, 6, 0x1F) for l in range(4)] == [0, 1, 2, 3]
    assert [isa.shfl_source_lane(U, l, 1, 0) for l in range(4)] == [0, 0, 1, 2]


def _cuda_shfl_source(mode, lane, b, width):
    """CUDA's documented __shfl_*_sync(.., b, width) source lane on a warp of
    LANES threads: segments of `width` lanes; a source outside the segment
    (for xor: in a later segment) or past the warp is the lane itself."""
    base, b = lane - lane % width, b % 32
    if mode is I:
        src = base + b % width
    elif mode is U:
        src = lane - b if lane - b >= base else lane
    elif mode is D:
        src = lane + b if lane + b < base + width else lane
    else:
        src = lane ^ b if lane ^ b < base + width else lane
    return src if src < isa.LANES else lane


@settings(max_examples=300, deadline=None)
@given(mode=st.sampled_from(list(isa.ShflMode)), lane=st.integers(0, isa.LANES - 1),
       b=st.one_of(st.integers(0, 40), st.integers(0, M32)), width=st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_shfl_source_lane_matches_cuda_width_rule(mode, lane, b, width):
    assert isa.shfl_source_lane(mode, lane, b, _shfl_c(mode, width)) == _cuda_shfl_source(mode, lane, b, width)


# --- program checks ------------------------------------------------------------
def _block(n_alu):
    ins = [isa.Instr(isa.Op.ADD, isa.Reg(1), (isa.Reg(1), isa.Imm(1))) for _ in range(n_alu)]
    return isa.MachineBlock(ins, isa.Terminator(isa.Term.EXIT))


def test_check_program_rom_limit():
    prog = isa.Program("big", [_block(1)] * (isa.ROM_BLOCKS + 1), [])
    with pytest.raises(isa.MachineLimitError, match=f"{isa.ROM_BLOCKS + 1} ROM blocks; the ROM holds {isa.ROM_BLOCKS}"):
        isa.check_program(prog)


# --- docs/isa.md stays in step with the constants ---------------------------------
def limits_table() -> str:
    """The limits table of docs/isa.md, rendered from isa.py's values."""
    rows = [
        ("LANES", isa.LANES, "threads per warp (`warpSize`)"),
        ("NUM_REGS", isa.NUM_REGS, "registers per lane, r0 included"),
        ("USABLE_REGS", isa.USABLE_REGS, "registers a kernel may allocate (r1..r31)"),
        ("MAX_WARPS", isa.MAX_WARPS, "warps per thread block"),
        ("MACHINE_BLOCK_THREADS", isa.MACHINE_BLOCK_THREADS, "threads the machine runs at once"),
        ("MAX_BLOCK_THREADS", isa.MAX_BLOCK_THREADS, "threads per thread block: over MACHINE_BLOCK_THREADS, "
         "the block runs in tiles of the machine's threads (docs/lowering.md)"),
        ("MAX_GRID_BLOCKS", isa.MAX_GRID_BLOCKS, "thread blocks per launch"),
        ("GLOBAL_WORDS", isa.GLOBAL_WORDS, f"32-bit words of global memory ({4 * isa.GLOBAL_WORDS} bytes)"),
        ("SHARED_WORDS", isa.SHARED_WORDS, f"32-bit words of shared memory per block ({4 * isa.SHARED_WORDS} bytes)"),
        ("CONST_WORDS", isa.CONST_WORDS, "32-bit words of CONST space (parameters, then `.const` data)"),
        ("ROM_BLOCKS", isa.ROM_BLOCKS, "machine blocks in the program ROM"),
        ("BLOCK_SLOTS", isa.BLOCK_SLOTS, "passes per machine block (ROM slots), a terminator's pass of its own excluded"),
    ]
    lines = ["| constant | value | meaning |", "| --- | --- | --- |"]
    lines += [f"| `{name}` | {value} | {meaning} |" for name, value, meaning in rows]
    return "\n".join(lines)


def test_docs_limits_table_matches_isa():
    from pathlib import Path
    doc = (Path(__file__).parent.parent / "docs" / "isa.md").read_text()
    assert limits_table() in doc, \
        "regenerate the table: python -c 'import tests.test_isa as t; print(t.limits_table())'"
