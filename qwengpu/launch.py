"""Launch layout: check a launch against the machine and lay out its memory.

One place for this logic, used by every engine (docs/architecture.md, "Launch
memory layout"): global memory starts with the kernel's __device__ variables
(program.global_init), then each array argument in argument order; a pointer
parameter's CONST word holds its array's byte address, a scalar's its 32-bit
value. Memory is words (np.uint32): a float32 array is stored as its bits, and a float
parameter's word is its float32's bits (`scalar_word` says which values convert, and how).
After the engine ran, `copy_back` writes each array's words back into
the caller's array in place. `output_words` are the words the kernel may write: what the model
engine copies out into its tokens at the end, those below isa.LANE_GLOBAL_WORDS (the others it
reads from the model's state: qwengpu/driver/copyout.py).

A Launch is checked once, when it is made (`build` from a kernel's arguments, `from_words` from
words set by hand), and every engine and the driver take it as it is: its CONST image and its
program's ROM encoding are computed once, on first use.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from numbers import Integral
from typing import Sequence

import numpy as np

from qwengpu import isa
from qwengpu.errors import LaunchError, MachineLimitError, plural
from qwengpu.machine.encoding import BlockCode, encode

ARRAY_DTYPES = (np.dtype(np.int32), np.dtype(np.uint32), np.dtype(np.float32))
F32_MAX = float(np.finfo(np.float32).max)
Dim3 = tuple[int, int, int]


@dataclass
class ArraySlot:
    """Where an array argument lives in global memory."""
    index: int            # argument position
    array: np.ndarray     # the caller's array (written back in place)
    word: int             # first global word

    @property
    def words(self) -> slice:
        return slice(self.word, self.word + self.array.size)


@dataclass(eq=False)
class Launch:
    """A checked launch: grid/block as (x, y, z), the CONST parameter words (index =
    Param.word), global memory (the engines update it in place) and `copy_out`, the global words
    the host needs back: the model engine writes those below isa.LANE_GLOBAL_WORDS as tokens at
    the end (copyout.py; None: no copy-out)."""
    program: isa.Program
    grid: Dim3
    block: Dim3
    params: list[int]
    memory: np.ndarray
    arrays: list[ArraySlot] = field(default_factory=list)
    slot_of: dict[int, ArraySlot] = field(default_factory=dict)     # array argument -> its slot
    copy_out: list[int] | None = None

    @classmethod
    def build(cls, program: isa.Program, grid, block, args: Sequence,
              names: Sequence[str] | None = None) -> "Launch":
        """A kernel's launch with its arguments laid out; its copy-out is output_words().
        `names`: the parameters' source names for messages (default: the PTX names)."""
        isa.check_program(program)
        grid3, block3 = check_grid_block(grid, block, program)
        names = list(names or [p.name for p in program.params])
        if len(args) != len(program.params):
            raise LaunchError(f"kernel {program.name} takes {plural(len(program.params), 'argument')} "
                              f"({', '.join(names) or 'none'}); {len(args)} "
                              f"{'was' if len(args) == 1 else 'were'} given")
        memory = np.zeros(isa.GLOBAL_WORDS, dtype=np.uint32)
        for word, value in program.global_init.items():
            memory[word] = isa.u32(value)
        params = [0] * (max([p.word + 1 for p in program.params] + [0]))
        arrays: list[ArraySlot] = []
        slot_of: dict[int, ArraySlot] = {}
        next_word = program.static_global_words
        for i, (param, arg) in enumerate(zip(program.params, args)):
            what = f"argument {i} ({names[i]})"
            pointer = False if param.float else param.pointer       # a float parameter is never an address
            if pointer is not None and (isinstance(arg, np.ndarray) != pointer or isinstance(arg, (list, tuple))):
                raise LaunchError(_mistyped(what, param, arg))
            if isinstance(arg, np.ndarray):
                check_array(what, arg)
                slot = _alias(what, arg, arrays)
                if slot is None:
                    slot = ArraySlot(i, arg, next_word)
                    arrays.append(slot)
                    next_word += arg.size
                slot_of[i] = slot
                params[param.word] = slot.word * 4  # byte address
            else:
                params[param.word] = scalar_word(what, arg, param.bits, param.float)
        _check_writeable(program, slot_of, names)
        if next_word > isa.GLOBAL_WORDS:
            raise MachineLimitError(f"kernel {program.name} needs {next_word} words of global memory "
                                    f"({program.static_global_words} for __device__ variables, "
                                    f"{next_word - program.static_global_words} for array arguments); "
                                    f"the limit is {isa.GLOBAL_WORDS} words")
        for slot in arrays:
            memory[slot.words] = slot.array.view(np.uint32)
        launch = cls(program, grid3, block3, params, memory, arrays, slot_of)
        launch.copy_out = launch.output_words()
        return launch

    @classmethod
    def from_words(cls, program: isa.Program, grid=1, block=1, params: Sequence[int] = (),
                   memory: np.ndarray | None = None, copy_out: Sequence[int] | None = None) -> "Launch":
        """A launch of words set by hand (the interpreter's API, tests, fuzzers): `params` the CONST
        parameter words, `memory` all of global memory (np.uint32[GLOBAL_WORDS], updated in place;
        None: zeros)."""
        isa.check_program(program)
        grid3, block3 = check_grid_block(grid, block, program)
        memory = np.zeros(isa.GLOBAL_WORDS, dtype=np.uint32) if memory is None else memory
        check_memory(memory)
        params = [int(v) for v in params]
        if len(params) > isa.CONST_WORDS:
            raise MachineLimitError(f"{len(params)} parameter words; the limit is {isa.CONST_WORDS} CONST words")
        need = max([p.word + 1 for p in program.params] + [0])
        if len(params) < need:
            raise LaunchError(f"kernel {program.name} reads {plural(need, 'parameter word')}; {len(params)} "
                              f"{'was' if len(params) == 1 else 'were'} given")
        return cls(program, grid3, block3, params, memory, copy_out=None if copy_out is None else list(copy_out))

    @functools.cached_property
    def const(self) -> list[int]:
        """CONST space: the parameter words, then the program's .const data over them."""
        const = [0] * isa.CONST_WORDS
        const[:len(self.params)] = [isa.u32(v) for v in self.params]
        for word, value in self.program.const_init.items():
            const[word] = isa.u32(value)
        return const

    @functools.cached_property
    def code(self) -> list[BlockCode]:
        """The program's ROM encoding: what the prompt loads and the token streams name."""
        return encode(self.program)

    @property
    def machine_block(self) -> Dim3:
        """The block the machine runs: the tile of a block of more threads than it has (threads.py)."""
        return self.program.tile or self.block

    @property
    def ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def output_words(self) -> list[int]:
        """The global words the kernel may write, in address order: the arrays of the parameters
        the lowering's may-write analysis names (program.writes) and, when it says so, the
        __device__ region; every array and that region when the program has no analysis."""
        writes = getattr(self.program, "writes", None)
        words = set(range(self.program.static_global_words)) if writes is None or writes.static else set()
        for i, slot in self.slot_of.items():
            if writes is None or i in writes.params:
                words.update(range(slot.word, slot.word + slot.array.size))
        return sorted(words)

    def copy_back(self) -> None:
        """Write each array's final words into the caller's array, as bits (a float32 array's
        floats come back exactly, NaN payloads included)."""
        for slot in self.arrays:
            final = self.memory[slot.words]
            if np.array_equal(final, slot.array.view(np.uint32)):
                continue
            if not slot.array.flags.writeable:
                raise LaunchError(f"argument {slot.index} is a read-only numpy array, but the kernel wrote to it "
                                  f"(its results are lost): pass a writeable array (a .copy() is one)")
            slot.array.view(np.uint32)[:] = final


def _check_writeable(program: isa.Program, slot_of: dict[int, ArraySlot], names: list[str]) -> None:
    """Refuse, before the launch, a read-only array (np.frombuffer, a read-only view) passed for a
    parameter the kernel stores through (program.writes): the results could not come back into
    it. Input-only arrays may be read-only. When the may-write analysis gave up (writes.traced
    False: every pointer parameter named) or there is none, the launch can't tell which arrays
    are written: copy_back refuses one the kernel did change, after the launch."""
    writes = program.writes
    if writes is None or not writes.traced:
        return
    for i, slot in slot_of.items():
        if i in writes.params and not slot.array.flags.writeable:
            raise LaunchError(f"argument {i} ({names[i]}) is a read-only numpy array, but kernel {program.name} "
                              f"stores through {names[i]}: pass a writeable array (a .copy() is one)")


def _mistyped(what: str, param: isa.Param, arg) -> str:
    if param.pointer:
        if isinstance(arg, (list, tuple)):
            return (f"{what} is a pointer parameter and got a Python {type(arg).__name__}: pass a numpy array, "
                    f"{_numpy_hint(arg)} (or dtype=np.uint32); the kernel's writes come back into it")
        got = f"the integer {arg!r}" if isinstance(arg, Integral) else f"{type(arg).__name__} {_short(arg)}"
        return f"{what} is a pointer parameter: pass a 1-D int32/uint32/float32 numpy array (got {got})"
    kind = "a float parameter: pass a float" if param.float else "an integer parameter: pass an integer"
    if isinstance(arg, (list, tuple)):
        return f"{what} is {kind} (got a Python {type(arg).__name__} {_short(arg)})"
    return f"{what} is {kind} (got an array of {arg.size} {arg.dtype})"


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + " ..." + text[-1]


def _numpy_hint(items) -> str:
    """np.array([1, 2, 3], dtype=np.int32) for a list or tuple (long ones shortened); float32 when
    an item is a float."""
    shown = [repr(v) for v in list(items)[:6]] + (["..."] if len(items) > 6 else [])
    floating = any(isinstance(v, (float, np.floating)) for v in items)
    return f"np.array([{', '.join(shown)}], dtype=np.{'float32' if floating else 'int32'})"


def as_dim3(name: str, value) -> Dim3:
    """1-3 positive ints (or one int) -> (x, y, z), missing sizes 1."""
    dims = (value,) if isinstance(value, Integral) else tuple(value) if isinstance(value, Sequence) else None
    if (not dims or len(dims) > 3
            or not all(isinstance(d, Integral) and not isinstance(d, bool) and d >= 1 for d in dims)):
        raise LaunchError(f"{name} must be 1 to 3 positive integers (x, y, z), got {value!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    return dims  # type: ignore[return-value]


def check_grid_block(grid, block, program: isa.Program | None = None) -> tuple[Dim3, Dim3]:
    """The grid and block as dims, checked against the machine and against the block `program`
    was lowered for: a block of more threads than the machine runs at once needs a program lowered
    for it (toolchain/threads.py; Function.launch lowers it)."""
    grid3, block3 = as_dim3("grid", grid), as_dim3("block", block)
    tiled = block3 if isa.block_tile(block3) else None   # the block a program must be lowered for
    if program is not None and program.block != tiled:
        name = program.name
        if program.block is None:
            raise LaunchError(f"kernel {name} was lowered for blocks of up to {isa.MACHINE_BLOCK_THREADS} threads; a "
                              f"block of {block3} runs in tiles, from a program lowered for it "
                              f"(toolchain.lower(..., block={block3}); Function.launch does this)")
        raise LaunchError(f"kernel {name} was lowered for a block of {program.block}, not {block3}")
    blocks = grid3[0] * grid3[1] * grid3[2]
    if blocks > isa.MAX_GRID_BLOCKS:
        raise MachineLimitError(f"a grid of {grid3} has {blocks} thread blocks; "
                                f"the limit is {isa.MAX_GRID_BLOCKS} blocks per launch")
    return grid3, block3


def scalar_word(what: str, value, bits: int = 32, float_param: bool = False) -> int:
    """A scalar argument as its 32-bit parameter word. An integer parameter takes a Python/numpy
    integer (signed or unsigned range), never a float. A float parameter (`float_param`: declared
    .f32) takes the float32's bits: an np.float32 as it is (NaN payloads too); a Python float (a
    double, np.float64 too) rounded to the nearest float32, as C converts a double argument, but
    refused where that rounding would overflow to inf or flush a nonzero to 0 (np.float32(x) passes
    those); an integer only when float32 holds it exactly (every one up to 2**24 in magnitude)."""
    if isinstance(value, (list, tuple)):
        raise LaunchError(f"{what} got a Python {type(value).__name__}: pass "
                          f"{'a float' if float_param else 'an integer'}, or for an array "
                          f"a numpy array, {_numpy_hint(value)}")
    if float_param:
        if bits != 32:
            raise LaunchError(f"{what} is a {bits}-bit float parameter (.f{bits}); the machine passes float "
                              f"parameters as float (.f32) only")
        return f32_word(what, value)
    if isinstance(value, (float, np.floating)):
        raise LaunchError(f"{what} is an integer parameter and got the float {_float_repr(value)}: pass an "
                          f"integer (a float is not converted: int(x) truncates, round(x) rounds)")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise LaunchError(f"{what} must be a 1-D int32/uint32/float32 numpy array or an integer, "
                          f"got {type(value).__name__}")
    v = int(value)
    if not -(1 << 31) <= v < (1 << 32):
        raise LaunchError(f"{what} = {v} does not fit in 32 bits (range -2**31 .. 2**32-1)")
    if bits < 32 and not -(1 << (bits - 1)) <= v < (1 << bits):
        raise LaunchError(f"{what} = {v} does not fit in the {bits}-bit parameter "
                          f"(range -2**{bits - 1} .. 2**{bits}-1)")
    if bits > 32 and v < 0:
        # the machine passes a 64-bit parameter as one word, zero-extended
        raise LaunchError(f"{what} = {v} is a {bits}-bit parameter, passed zero-extended from 32 bits; "
                          f"it must be 0 .. 2**32-1")
    return isa.u32(v)


def f32_word(what: str, value) -> int:
    """The bits of a float parameter's value (rules in scalar_word)."""
    if isinstance(value, np.float32):
        return int(np.array(value, np.float32).view(np.uint32))
    if isinstance(value, np.float16):
        return int(np.array(value, np.float32).view(np.uint32))         # exact: float16 is in float32
    if isinstance(value, float):                                        # np.float64 is one too
        with np.errstate(over="ignore"):
            rounded = np.array(value, np.float64).astype(np.float32)   # nearest, ties to even
        if np.isfinite(value) and (np.isinf(rounded) or (rounded == 0 and value != 0)):
            happens = "overflows float32 to inf" if np.isinf(rounded) else "rounds to 0 in float32"
            raise LaunchError(f"{what} is a float parameter and {value!r} {happens} (float32 holds "
                              f"magnitudes {float(np.finfo(np.float32).smallest_subnormal):.1e} .. "
                              f"{F32_MAX:.7e}): pass np.float32({value!r}) to accept that")
        return int(rounded.view(np.uint32))
    if isinstance(value, Integral) and not isinstance(value, (bool, np.bool_)):
        v = int(value)
        odd = abs(v) >> ((abs(v) & -abs(v)).bit_length() - 1) if v else 0   # v without its trailing zero bits
        if odd.bit_length() > 24 or abs(v).bit_length() > 128:
            raise LaunchError(f"{what} is a float parameter and got the integer {v}, which float32 cannot hold "
                              f"exactly (it holds every integer up to 2**24 in magnitude): pass np.float32({v}) "
                              f"to round it")
        return int(np.array(float(v), np.float64).astype(np.float32).view(np.uint32))
    raise LaunchError(f"{what} is a float parameter: pass a float, an np.float32 or an integer, "
                      f"got {type(value).__name__}")


def _float_repr(value) -> str:
    """1.5 for a Python float, 0.1 for np.float32(0.1) (numpy's shortest form for its own type)."""
    return repr(float(value)) if isinstance(value, float) else str(value)


def check_memory(memory) -> None:
    if not isinstance(memory, np.ndarray) or memory.dtype != np.uint32 or memory.shape != (isa.GLOBAL_WORDS,):
        got = f"{memory.dtype}{list(memory.shape)}" if isinstance(memory, np.ndarray) else type(memory).__name__
        raise LaunchError(f"memory must be np.uint32[{isa.GLOBAL_WORDS}] (global memory); got {got}")


def check_array(what: str, arr: np.ndarray) -> None:
    if arr.ndim != 1 or arr.dtype not in ARRAY_DTYPES:
        hint = (" (the machine's floats are float32: pass .astype(np.float32))"
                if arr.ndim == 1 and arr.dtype.kind == "f" else "")
        raise LaunchError(f"{what} must be a 1-D int32, uint32 or float32 numpy array, "
                          f"got {arr.dtype}{list(arr.shape)}{hint}")
    if not arr.flags.c_contiguous:
        raise LaunchError(f"{what} must be contiguous (pass np.ascontiguousarray(...))")
    if arr.size == 0:       # it would get the next array's address: a stray write would land there
        raise LaunchError(f"{what} is an empty array: pass at least one element")


def _alias(what: str, arr: np.ndarray, placed: list[ArraySlot]) -> ArraySlot | None:
    """The same memory passed twice shares one address, as it would on a GPU."""
    for slot in placed:
        if (slot.array.size == arr.size > 0
                and slot.array.__array_interface__["data"][0] == arr.__array_interface__["data"][0]):
            return slot
        if np.shares_memory(slot.array, arr):
            raise LaunchError(f"{what} partly overlaps argument {slot.index}; pass the same array or separate ones")
    return None
