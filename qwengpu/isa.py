"""The qwengpu machine: limits, opcodes, semantics and program format.

This module is the single source of truth for the instruction set. The PTX
lowering emits it, the reference interpreter executes it, and the circuit
compiler builds weights for it. Every ALU op's exact 32-bit semantics is a
plain Python function on unsigned 32-bit ints, defined once here; the float ops'
(FLOAT_SEMANTICS) are fp32's functions on bit patterns, with a rounding mode or
a comparison as the instruction's `mod`.

See docs/isa.md for the prose description.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from qwengpu import fp32
from qwengpu.errors import MachineLimitError, plural
from qwengpu.fp32 import Rnd

# ---------------------------------------------------------------------------
# Machine limits
# ---------------------------------------------------------------------------
LANES = 4                 # threads per warp (warpSize)
NUM_REGS = 32             # per lane; r0 always reads 0, writes to r0 are dropped
USABLE_REGS = NUM_REGS - 1
MAX_WARPS = 4             # warps per thread block
MACHINE_BLOCK_THREADS = LANES * MAX_WARPS    # threads the machine runs at once
MAX_BLOCK_THREADS = 1024  # threads per block, CUDA's limit: a larger block runs in tiles of the machine's
                          # threads (qwengpu/toolchain/threads.py)
MAX_GRID_BLOCKS = 256     # thread blocks per launch (run one after another)
GLOBAL_WORDS = 16384      # 32-bit words of global memory (64 KiB)
LANE_GLOBAL_WORDS = 1024  # the first global words, which every lane of a warp reads in one pass; a load
                          # with an active lane above them reads lane by lane (docs/machine.md, step 28)
SHARED_WORDS = 2048       # 32-bit words of shared memory per thread block (8 KiB)
LANE_SHARED_WORDS = 256   # the first shared words, which every lane reads in one pass; above them, lane by lane
CONST_WORDS = 2048        # kernel parameters followed by .const data
LANE_CONST_WORDS = 128    # the first CONST words, which every lane reads in one pass; above them, lane by lane
ROM_BLOCKS = 128          # machine blocks in the program ROM
BLOCK_SLOTS = 4           # passes per machine block (ROM slots), a terminator's pass of its own excluded

MASK32 = 0xFFFF_FFFF


def u32(x: int) -> int:
    """Wrap any Python int to an unsigned 32-bit value."""
    return x & MASK32


def s32(x: int) -> int:
    """Reinterpret an unsigned 32-bit value as signed."""
    x &= MASK32
    return x - (1 << 32) if x & 0x8000_0000 else x


# ---------------------------------------------------------------------------
# Operands
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Reg:
    n: int

    def __post_init__(self):
        if not 0 <= self.n < NUM_REGS:
            raise ValueError(f"register r{self.n} out of range r0..r{NUM_REGS - 1}")

    def __str__(self):
        return f"r{self.n}"


@dataclass(frozen=True)
class Imm:
    value: int  # stored as unsigned 32-bit

    def __post_init__(self):
        object.__setattr__(self, "value", u32(self.value))

    def __str__(self):
        v = s32(self.value)
        return str(v) if -4096 <= v <= 4096 else hex(self.value)


Operand = Reg | Imm
ZERO = Reg(0)


# ---------------------------------------------------------------------------
# ALU semantics (pure functions of unsigned 32-bit operands)
# ---------------------------------------------------------------------------
def _shl(a, b):
    return 0 if b >= 32 else u32(a << b)


def _shr(a, b):
    return 0 if b >= 32 else a >> b


def _sra(a, b):
    return u32(s32(a) >> min(b, 31))


def _div(a, b):
    """Signed division truncating toward zero; x/0 = -1, INT_MIN/-1 = INT_MIN."""
    if b == 0:
        return MASK32
    q = abs(s32(a)) // abs(s32(b))
    return u32(-q if (s32(a) < 0) != (s32(b) < 0) else q)


def _rem(a, b):
    """Signed remainder with the sign of the dividend; x%0 = x, INT_MIN%-1 = 0."""
    if b == 0:
        return a
    return u32(s32(a) - s32(_div(a, b)) * s32(b))


def _bfe(a, pos, length, signed):
    """PTX bfe.{u32,s32}: pos and len are the low 8 bits of their operands."""
    pos, length = pos & 0xFF, length & 0xFF
    if length == 0:
        return 0
    if signed:
        sign = (a >> min(pos + length - 1, 31)) & 1
    else:
        sign = 0
    out = 0
    for i in range(32):
        bit = ((a >> (pos + i)) & 1) if (i < length and pos + i <= 31) else sign
        out |= bit << i
    return out


def _clz(a):
    return 32 - a.bit_length()


def _brev(a):
    return int(f"{a:032b}"[::-1], 2)


def _digit4(a: int, b: int) -> int:
    """The radix-4 quotient digit: how many of b, 2b, 3b are <= a."""
    return sum(a >= j * b for j in (1, 2, 3))


ALU_SEMANTICS = {
    "MOV": lambda a: a,
    "ADD": lambda a, b: u32(a + b),
    "SUB": lambda a, b: u32(a - b),
    "MUL": lambda a, b: u32(a * b),
    "MULHI": lambda a, b: u32((s32(a) * s32(b)) >> 32),
    "MULHIU": lambda a, b: (a * b) >> 32,
    "AND": lambda a, b: a & b,
    "OR": lambda a, b: a | b,
    "XOR": lambda a, b: a ^ b,
    "SHL": _shl,
    "SHR": _shr,
    "SRA": _sra,
    "MIN": lambda a, b: a if s32(a) <= s32(b) else b,
    "MAX": lambda a, b: a if s32(a) >= s32(b) else b,
    "MINU": min,
    "MAXU": max,
    "SETEQ": lambda a, b: int(a == b),
    "SETNE": lambda a, b: int(a != b),
    "SETLT": lambda a, b: int(s32(a) < s32(b)),
    "SETLE": lambda a, b: int(s32(a) <= s32(b)),
    "SETGT": lambda a, b: int(s32(a) > s32(b)),
    "SETGE": lambda a, b: int(s32(a) >= s32(b)),
    "SETLTU": lambda a, b: int(a < b),
    "SETLEU": lambda a, b: int(a <= b),
    "SETGTU": lambda a, b: int(a > b),
    "SETGEU": lambda a, b: int(a >= b),
    "SEL": lambda c, a, b: a if c else b,      # c != 0 ? a : b
    "DIV": _div,
    "DIVU": lambda a, b: MASK32 if b == 0 else a // b,
    "REM": _rem,
    "REMU": lambda a, b: a if b == 0 else a % b,
    # the two steps of restoring division (the model engine's micro-code for DIV/REM):
    # the remainder loses the divisor when it can, the quotient gains that bit
    "DIVR": lambda a, b: a - b if a >= b else a,
    "DIVQ": lambda a, b, q: u32(2 * q + (a >= b)),
    # radix-4 steps, two quotient bits at once: k = how many of b, 2b, 3b (exact, no wrap) fit in a
    "DIVR4": lambda a, b: a - _digit4(a, b) * b,
    "DIVQ4": lambda a, b, q: u32(4 * q + _digit4(a, b)),
    "POPC": lambda a: bin(a).count("1"),
    "CLZ": _clz,
    "BREV": _brev,
    "BFE": lambda a, p, n: _bfe(a, p, n, True),
    "BFEU": lambda a, p, n: _bfe(a, p, n, False),
}


# ---------------------------------------------------------------------------
# Opcodes
# ---------------------------------------------------------------------------
class FCmp(enum.Enum):
    """FSET's comparison: PTX setp's float comparisons. The ordered ones are false when an
    operand is NaN, the unordered ones (u) true; num: neither is NaN, nan: either is."""
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    EQU = "equ"
    NEU = "neu"
    LTU = "ltu"
    LEU = "leu"
    GTU = "gtu"
    GEU = "geu"
    NUM = "num"
    NAN = "nan"


# fp32 ops on bit patterns, each f(mod, *sources): mod is the instruction's Rnd (FSET: its FCmp;
# FMIN and FMAX: None). F2I/F2U round to a signed/unsigned 32-bit integer, saturating (NaN: 0);
# I2F/U2F from one; FRND to an integral float (cvt.rXi.f32.f32).
FLOAT_SEMANTICS = {
    "FADD": lambda m, a, b: fp32.add(a, b, m),
    "FSUB": lambda m, a, b: fp32.sub(a, b, m),
    "FMUL": lambda m, a, b: fp32.mul(a, b, m),
    "FFMA": lambda m, a, b, c: fp32.fma(a, b, c, m),
    "FDIV": lambda m, a, b: fp32.div(a, b, m),
    "FSQRT": lambda m, a: fp32.sqrt(a, m),
    "FMIN": lambda m, a, b: fp32.min(a, b),
    "FMAX": lambda m, a, b: fp32.max(a, b),
    "FSET": lambda m, a, b: fp32.compare(a, b, m.value),
    "F2I": lambda m, a: fp32.to_int(a, m, signed=True),
    "F2U": lambda m, a: fp32.to_int(a, m, signed=False),
    "I2F": lambda m, a: fp32.from_int(a, m, signed=True),
    "U2F": lambda m, a: fp32.from_int(a, m, signed=False),
    "FRND": lambda m, a: fp32.round_integral(a, m),
}
FLOAT_MODS = {name: FCmp if name == "FSET" else type(None) if name in ("FMIN", "FMAX") else Rnd
              for name in FLOAT_SEMANTICS}      # the type of each float op's mod


class Kind(enum.Enum):
    ALU = "alu"        # pure per-lane function of its sources
    FLOAT = "float"    # pure per-lane fp32 function of its sources and its mod (FLOAT_SEMANTICS)
    SREG = "sreg"      # read a special register
    MEM = "mem"        # load / store / atomic
    WARP = "warp"      # shuffle / vote: reads other lanes


class Op(enum.Enum):
    """Every non-terminator opcode; OP_SPEC gives its kind and source count."""

    # ALU ops: names and arities follow ALU_SEMANTICS
    MOV = "MOV"
    ADD = "ADD"
    SUB = "SUB"
    MUL = "MUL"
    MULHI = "MULHI"
    MULHIU = "MULHIU"
    AND = "AND"
    OR = "OR"
    XOR = "XOR"
    SHL = "SHL"
    SHR = "SHR"
    SRA = "SRA"
    MIN = "MIN"
    MAX = "MAX"
    MINU = "MINU"
    MAXU = "MAXU"
    SETEQ = "SETEQ"
    SETNE = "SETNE"
    SETLT = "SETLT"
    SETLE = "SETLE"
    SETGT = "SETGT"
    SETGE = "SETGE"
    SETLTU = "SETLTU"
    SETLEU = "SETLEU"
    SETGTU = "SETGTU"
    SETGEU = "SETGEU"
    SEL = "SEL"
    DIV = "DIV"
    DIVU = "DIVU"
    REM = "REM"
    REMU = "REMU"
    DIVR = "DIVR"
    DIVQ = "DIVQ"
    DIVR4 = "DIVR4"
    DIVQ4 = "DIVQ4"
    POPC = "POPC"
    CLZ = "CLZ"
    BREV = "BREV"
    BFE = "BFE"
    BFEU = "BFEU"
    # special register read: a = Imm(SReg index)
    S2R = "S2R"
    # memory: LD d, [a + b]   ST [a + b] <- c   ATOM d, [a] (b, c)
    LD = "LD"
    ST = "ST"
    ATOM = "ATOM"
    # warp ops: SHFL d, value a, lane/delta b, clamp/segmask c (PTX encoding)
    SHFL = "SHFL"
    # VOTE d, predicate a, member mask b
    VOTE = "VOTE"
    # fp32 ops (FLOAT_SEMANTICS), last so that the opcodes before them keep their numbers
    FADD = "FADD"
    FSUB = "FSUB"
    FMUL = "FMUL"
    FFMA = "FFMA"
    FDIV = "FDIV"
    FSQRT = "FSQRT"
    FMIN = "FMIN"
    FMAX = "FMAX"
    FSET = "FSET"
    F2I = "F2I"
    F2U = "F2U"
    I2F = "I2F"
    U2F = "U2F"
    FRND = "FRND"

    @property
    def kind(self) -> Kind:
        return OP_SPEC[self][0]

    @property
    def arity(self) -> int:
        return OP_SPEC[self][1]

    @property
    def is_unit(self) -> bool:
        """Memory and warp ops: never executed speculatively (if-conversion keeps them out)."""
        return self.kind in (Kind.MEM, Kind.WARP)


OP_SPEC: dict[Op, tuple[Kind, int]] = {
    Op.MOV: (Kind.ALU, 1),
    Op.ADD: (Kind.ALU, 2),
    Op.SUB: (Kind.ALU, 2),
    Op.MUL: (Kind.ALU, 2),
    Op.MULHI: (Kind.ALU, 2),
    Op.MULHIU: (Kind.ALU, 2),
    Op.AND: (Kind.ALU, 2),
    Op.OR: (Kind.ALU, 2),
    Op.XOR: (Kind.ALU, 2),
    Op.SHL: (Kind.ALU, 2),
    Op.SHR: (Kind.ALU, 2),
    Op.SRA: (Kind.ALU, 2),
    Op.MIN: (Kind.ALU, 2),
    Op.MAX: (Kind.ALU, 2),
    Op.MINU: (Kind.ALU, 2),
    Op.MAXU: (Kind.ALU, 2),
    Op.SETEQ: (Kind.ALU, 2),
    Op.SETNE: (Kind.ALU, 2),
    Op.SETLT: (Kind.ALU, 2),
    Op.SETLE: (Kind.ALU, 2),
    Op.SETGT: (Kind.ALU, 2),
    Op.SETGE: (Kind.ALU, 2),
    Op.SETLTU: (Kind.ALU, 2),
    Op.SETLEU: (Kind.ALU, 2),
    Op.SETGTU: (Kind.ALU, 2),
    Op.SETGEU: (Kind.ALU, 2),
    Op.SEL: (Kind.ALU, 3),
    Op.DIV: (Kind.ALU, 2),
    Op.DIVU: (Kind.ALU, 2),
    Op.REM: (Kind.ALU, 2),
    Op.REMU: (Kind.ALU, 2),
    Op.DIVR: (Kind.ALU, 2),
    Op.DIVQ: (Kind.ALU, 3),
    Op.DIVR4: (Kind.ALU, 2),
    Op.DIVQ4: (Kind.ALU, 3),
    Op.POPC: (Kind.ALU, 1),
    Op.CLZ: (Kind.ALU, 1),
    Op.BREV: (Kind.ALU, 1),
    Op.BFE: (Kind.ALU, 3),
    Op.BFEU: (Kind.ALU, 3),
    Op.S2R: (Kind.SREG, 1),
    Op.LD: (Kind.MEM, 2),
    Op.ST: (Kind.MEM, 3),
    Op.ATOM: (Kind.MEM, 3),
    Op.SHFL: (Kind.WARP, 3),
    Op.VOTE: (Kind.WARP, 2),
    **{Op[name]: (Kind.FLOAT, f.__code__.co_argcount - 1) for name, f in FLOAT_SEMANTICS.items()},
}


class SReg(enum.IntEnum):
    TID_X = 0
    TID_Y = 1
    TID_Z = 2
    NTID_X = 3
    NTID_Y = 4
    NTID_Z = 5
    CTAID_X = 6
    CTAID_Y = 7
    CTAID_Z = 8
    NCTAID_X = 9
    NCTAID_Y = 10
    NCTAID_Z = 11
    LANEID = 12
    WARPID = 13


class Space(enum.Enum):
    GLOBAL = "global"
    SHARED = "shared"
    CONST = "const"     # read-only: kernel parameters, then .const data


# the spaces whose first words every lane of a warp reads in one pass, and how many; the machine
# reads a load with an active lane past them lane by lane (docs/machine.md, step 28)
LANE_WORDS = {Space.GLOBAL: LANE_GLOBAL_WORDS, Space.SHARED: LANE_SHARED_WORDS, Space.CONST: LANE_CONST_WORDS}


class AtomOp(enum.Enum):
    """Atomic read-modify-write ops: new value from (old, b, c)."""
    ADD = "add"
    EXCH = "exch"
    MIN = "min"
    MAX = "max"
    MINU = "minu"
    MAXU = "maxu"
    AND = "and"
    OR = "or"
    XOR = "xor"
    INC = "inc"
    DEC = "dec"
    CAS = "cas"
    FADD = "fadd"       # fp32 add, round to nearest; in global memory subnormals flush to zero


ATOM_SEMANTICS = {
    AtomOp.ADD: lambda old, b, c: u32(old + b),
    AtomOp.EXCH: lambda old, b, c: b,
    AtomOp.MIN: lambda old, b, c: ALU_SEMANTICS["MIN"](old, b),
    AtomOp.MAX: lambda old, b, c: ALU_SEMANTICS["MAX"](old, b),
    AtomOp.MINU: lambda old, b, c: min(old, b),
    AtomOp.MAXU: lambda old, b, c: max(old, b),
    AtomOp.AND: lambda old, b, c: old & b,
    AtomOp.OR: lambda old, b, c: old | b,
    AtomOp.XOR: lambda old, b, c: old ^ b,
    # PTX atom.inc/dec: wrap within [0, b]
    AtomOp.INC: lambda old, b, c: 0 if old >= b else old + 1,
    AtomOp.DEC: lambda old, b, c: b if (old == 0 or old > b) else old - 1,
    # CAS: b = compare value, c = new value
    AtomOp.CAS: lambda old, b, c: c if old == b else old,
    AtomOp.FADD: lambda old, b, c: fp32.add(old, b),
}


def atom_semantics(op: AtomOp, space: Space):
    """The new value's function (old, b, c) of an atomic in `space`: CUDA's global fp32 atomic
    adds flush subnormal inputs and results to zero, shared ones keep them."""
    if op is AtomOp.FADD and space is Space.GLOBAL:
        return lambda old, b, c: fp32.add(old, b, ftz=True)
    return ATOM_SEMANTICS[op]


class ShflMode(enum.Enum):
    IDX = "idx"
    UP = "up"
    DOWN = "down"
    BFLY = "bfly"


class VoteMode(enum.Enum):
    ALL = "all"
    ANY = "any"
    UNI = "uni"
    BALLOT = "ballot"
    ACTIVEMASK = "activemask"   # ignores the predicate


def shfl_source_lane(mode: ShflMode, lane: int, b: int, c: int) -> int:
    """PTX shfl.sync source lane for `lane` (its own lane when out of range).

    c packs the clamp value (bits 4:0) and segment mask (bits 12:8) exactly as
    on a 32-lane GPU, so `__shfl_*_sync(.., width)` with width <= 4 means the
    same here as on real hardware. A source lane outside 0..LANES-1 reads the
    thread's own value.
    """
    bval, cval, segmask = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask & 0x1F)
    min_lane = lane & segmask
    if mode is ShflMode.UP:
        j = lane - bval
        ok = j >= max_lane
    elif mode is ShflMode.DOWN:
        j = lane + bval
        ok = j <= max_lane
    elif mode is ShflMode.BFLY:
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = min_lane | (bval & ~segmask & 0x1F)
        ok = j <= max_lane
    return j if ok and 0 <= j < LANES else lane


# ---------------------------------------------------------------------------
# Instructions, blocks, programs
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Instr:
    """d = op(srcs). `mod` refines MEM/WARP ops: a Space, (Space, AtomOp),
    ShflMode or VoteMode. Writes to r0 are discarded (ST writes no register)."""
    op: Op
    dst: Reg
    srcs: tuple[Operand, ...]
    mod: object = None

    def __post_init__(self):
        if len(self.srcs) != self.op.arity:
            raise ValueError(f"{self.op.name} takes {self.op.arity} sources, got {len(self.srcs)}")

    def __str__(self):
        m = self.mod
        if isinstance(m, tuple):
            m = ".".join(x.value for x in m)
        elif m is not None:
            m = m.value
        name = self.op.name + (f".{m}" if m else "")
        return f"{name} {self.dst}, " + ", ".join(map(str, self.srcs))


class Term(enum.Enum):
    JMP = "jmp"      # goto target
    BRC = "brc"      # if cond != 0 goto target else goto fallthrough; reconverge at reconv
                     # (target -1: the threads with cond != 0 exit, the others go to fallthrough)
    BAR = "bar"      # block-wide barrier, then goto target
    EXIT = "exit"    # the active threads finish


@dataclass(frozen=True)
class Terminator:
    kind: Term
    target: int = -1
    cond: Reg = ZERO
    fallthrough: int = -1
    reconv: int = -1   # immediate post-dominator block (-1: the threads exit first)

    def __str__(self):
        if self.kind is Term.BRC:
            if self.target < 0:
                return f"BRC {self.cond} ? EXIT : B{self.fallthrough}"
            return f"BRC {self.cond} ? B{self.target} : B{self.fallthrough}  (reconv B{self.reconv})"
        if self.kind is Term.EXIT:
            return "EXIT"
        return f"{self.kind.name} B{self.target}"


@dataclass
class MachineBlock:
    instrs: list[Instr]
    term: Terminator


@dataclass(frozen=True)
class Param:
    """A kernel parameter: one 32-bit CONST word. The launch stores a scalar
    argument's value there, or an array argument's global byte address. A
    64-bit PTX parameter (NVRTC pointers) reads that word zero-extended."""
    name: str
    word: int          # its word index in CONST space
    bits: int = 32     # declared PTX width
    pointer: bool | None = None   # True: used as an address; False: used only as an integer; None: unused or unclear
    float: bool = False   # declared .f16/.f32/.f64: the launch stores a float's bits (launch.scalar_word)


@dataclass(frozen=True)
class Writes:
    """The global memory a kernel may write (toolchain/writes.py, a conservative
    may-analysis): `params`, indices into Program.params of the pointer parameters whose
    arrays it may write (through ST or ATOM to GLOBAL, or a generic store that may reach
    global); `static`, whether it may write the __device__-variable region
    [0, static_global_words) (a __device__ variable, the printf buffer). An array passed
    to two parameters is one array: it is written if either parameter is in `params`.
    `params` may name a parameter with Param.pointer None that a launch passes an integer
    (an offset in address arithmetic): it has no array to write. docs/lowering.md says
    what the analysis assumes. `traced`: the analysis followed every store's address, so each
    parameter in `params` is one the kernel stores through; False when it gave up and named
    every pointer parameter (a launch then can't tell which arrays are written until it ran)."""
    params: frozenset[int] = frozenset()
    static: bool = False
    traced: bool = field(default=True, compare=False)


@dataclass
class Program:
    """A lowered kernel: ROM blocks (block 0 is the entry), parameter slots,
    and the static memory images the launch starts from."""
    name: str
    blocks: list[MachineBlock]
    params: list[Param]
    const_init: dict[int, int] = field(default_factory=dict)   # CONST word -> value
    global_init: dict[int, int] = field(default_factory=dict)  # GLOBAL word -> value
    static_global_words: int = 0   # words at the start of GLOBAL reserved for __device__ variables
    shared_words: int = 0
    regs_used: int = 0
    printf_buffer: int | None = None   # GLOBAL word of the device printf buffer (qwengpu/printf.py)
    writes: Writes | None = None       # what it may write; None: unknown (every array and the static region)
    warnings: list[str] = field(default_factory=list)   # compile-time warnings, `FILE:LINE: warning: ...`
    block: tuple[int, int, int] | None = None   # the thread block it runs in tiles of `tile` (threads.py);
    tile: tuple[int, int, int] | None = None    # None: any block of up to MACHINE_BLOCK_THREADS threads

    def listing(self) -> str:
        lines = [f"// kernel {self.name}: {plural(len(self.blocks), 'block')}, {plural(self.regs_used, 'register')}, "
                 f"{plural(self.shared_words, 'shared word')}"]
        for i, b in enumerate(self.blocks):
            lines.append(f"B{i}:")
            lines += [f"    {ins}" for ins in b.instrs]
            lines.append(f"    {b.term}")
        return "\n".join(lines)


def block_tile(block: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """The tile a thread block of these dims runs in: None when it has at most
    MACHINE_BLOCK_THREADS threads (the machine runs it whole); else the dims of its first
    MACHINE_BLOCK_THREADS threads, which must form a box (toolchain/threads.py runs the block as
    tiles of that box). MachineLimitError past MAX_BLOCK_THREADS or when they do not."""
    n, threads = MACHINE_BLOCK_THREADS, math.prod(block)
    if threads <= n:
        return None
    if threads > MAX_BLOCK_THREADS:
        raise MachineLimitError(f"a thread block of {block} has {threads} threads; the limit is "
                                f"{MAX_BLOCK_THREADS} threads per block")
    for c in range(3):
        inner = math.prod(block[:c])
        if n % inner == 0 and block[c] % (n // inner) == 0:
            return block[:c] + (n // inner,) + (1,) * (2 - c)
    raise MachineLimitError(
        f"a thread block of {block} ({threads} threads) cannot run in tiles of {n} consecutive threads: "
        f"over {n} threads a block runs {n} at a time, which must form a box: blockDim.x a multiple of "
        f"{n}, or a divisor of {n} with blockDim.x * blockDim.y a multiple of {n} (or a divisor, with "
        f"the whole block a multiple of {n}); e.g. 64, 256, (16, 16), (8, 8, 4)")


def check_program(p: Program) -> None:
    if not 1 <= len(p.blocks) <= ROM_BLOCKS:
        raise MachineLimitError(f"kernel {p.name} needs {len(p.blocks)} ROM blocks; the ROM holds {ROM_BLOCKS}")
    for i, b in enumerate(p.blocks):
        for t in (b.term.target, b.term.fallthrough, b.term.reconv):
            if t >= len(p.blocks):
                raise ValueError(f"block B{i} jumps to B{t}, past the end of the program")
    if p.shared_words > SHARED_WORDS:
        raise MachineLimitError(f"kernel {p.name} needs {p.shared_words} words of shared memory; the limit is {SHARED_WORDS}")
    if p.static_global_words > GLOBAL_WORDS:
        raise MachineLimitError(f"kernel {p.name} needs {p.static_global_words} words of global memory; the limit is {GLOBAL_WORDS}")
    need_const = max([prm.word + 1 for prm in p.params] + [w + 1 for w in p.const_init] + [0])
    if need_const > CONST_WORDS:
        raise MachineLimitError(f"kernel {p.name} needs {need_const} words of parameters and constants; the limit is {CONST_WORDS}")
    if p.regs_used > USABLE_REGS:
        raise MachineLimitError(f"kernel {p.name} needs {p.regs_used} registers; a lane has {USABLE_REGS}")
