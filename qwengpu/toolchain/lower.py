"""Lower a parsed PTX kernel to an isa.Program: the toolchain's stages, in order, each in a
module of its own (docs/lowering.md describes them):

  kernel       find_kernel, inline.py: the kernel, its calls inlined
  layout       layout.py: parameters -> CONST words, variables -> addresses
  spaces       spaces.py: where each register's address points (generic ld/st/atom)
  translate    translate/: PTX instructions -> the virtual IR of cfg.py (unbounded virtual
               registers, basic blocks with machine terminators)
  clean up     cfg.py: constant and copy propagation, dead code
  tiles        threads.py, for a block of more threads than the machine's: the kernel as
               loops over tiles of the machine's threads
  micro-code   microcode.py, with `expand`: MULHI/DIV/REM as other ALU ops
  optimise     cfg.py: redundant masks, address adds, if-conversion, branches on values,
               loads first, fold-friendly order
  registers    regalloc.py: colouring into r1..r31, rematerialisation, spills
  writes       writes.py: which global memory the kernel may write
  blocks       blocks.py: machine blocks and reconvergence, the program
  check        isa.check_program, then lint.py's warnings
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.errors import CompileError, MachineLimitError
from qwengpu.toolchain import ptx
from qwengpu.toolchain.blocks import machine_program
from qwengpu.toolchain.cfg import clean_up, optimise
from qwengpu.toolchain.inline import inline_calls
from qwengpu.toolchain.layout import layout
from qwengpu.toolchain.lint import shuffle_warnings
from qwengpu.toolchain.microcode import EXPANDABLE, MODEL_EXPANSIONS, SHARE_LEVELS, expand_ops
from qwengpu.toolchain.ptx import plain_name
from qwengpu.toolchain.regalloc import allocate_registers
from qwengpu.toolchain.spaces import address_spaces
from qwengpu.toolchain.threads import Tiling, check_save_area, tile_threads, tiling
from qwengpu.toolchain.translate import Translator
from qwengpu.toolchain.writes import kernel_writes

__all__ = ["lower", "find_kernel", "plain_name", "EXPANDABLE", "MODEL_EXPANSIONS"]


def lower(module: ptx.Module, kernel_name: str, expand: frozenset[str] = frozenset(),
          share: str | None = None, block: tuple[int, int, int] | None = None) -> isa.Program:
    """`expand`: names of ALU ops (from EXPANDABLE) to rewrite into other ops, for an engine
    without them (the model engine: MODEL_EXPANSIONS). `block`: the thread block the program is
    for, when it has more threads than the machine runs at once (threads.py; the program then
    runs blocks of those dims only). FDIV and FSQRT expand
    inline (about 26 and 13 ROM blocks a use); a kernel whose program then overflows the ROM is
    lowered again with their rare paths in one shared subroutine per op, then with every use a
    call of it (microcode.SHARE_LEVELS): the first that fits, else the smallest. `share`
    names one level instead (tests)."""
    unknown = sorted(set(expand) - EXPANDABLE)
    if unknown:
        raise ValueError(f"cannot expand {', '.join(unknown)}; expandable ops: {', '.join(sorted(EXPANDABLE))}")
    prog = None
    for level in [share] if share else SHARE_LEVELS:
        new, shares = _lower(module, kernel_name, expand, level, tiling(block) if block else None)
        if prog is None or len(new.blocks) < len(prog.blocks):
            prog = new
        if len(prog.blocks) <= isa.ROM_BLOCKS or not shares:
            break
    if prog.tile and len(prog.blocks) > isa.ROM_BLOCKS:
        raise MachineLimitError(f"kernel {prog.name} needs {len(prog.blocks)} ROM blocks for a block of {prog.block} "
                                f"threads, which runs in tiles of {isa.MACHINE_BLOCK_THREADS} (a loop over the tiles "
                                f"between each two barriers); the ROM holds {isa.ROM_BLOCKS}: use blocks of at most "
                                f"{isa.MACHINE_BLOCK_THREADS} threads, or fewer barriers")
    isa.check_program(prog)
    return prog


def _lower(module: ptx.Module, kernel_name: str, expand: frozenset[str], share: str,
           tiles: Tiling | None, save_words: int = 0) -> tuple[isa.Program, bool]:
    """The program at share level `share`, unchecked, and whether it micro-codes an FDIV or FSQRT
    (so another level would lower differently). With `tiles`, laid out with `save_words` for
    the tiles' save area: lowered again with what it turns out to need."""
    fn = inline_calls(module, find_kernel(module, kernel_name))
    lay = layout(module, fn, tiles.threads if tiles else isa.MACHINE_BLOCK_THREADS, save_words)
    spaces = address_spaces(fn, lay.symbols)
    translator = Translator(module, fn, lay, spaces)
    blocks = translator.run()
    clean_up(blocks)
    nvreg = translator.nvreg
    if tiles:
        blocks, nvreg, need = tile_threads(blocks, nvreg, tiles, lay.reserved)
        if need > save_words:
            return _lower(module, kernel_name, expand, share, tiles, need)
        check_save_area(plain_name(fn.name), tiles, need, lay.reserved)
        clean_up(blocks)
    shares = {"FDIV", "FSQRT"} & set(expand) and any(ins.op in (isa.Op.FDIV, isa.Op.FSQRT) for b in blocks
                                                     for ins in b.instrs)
    nvreg = expand_ops(blocks, expand, nvreg, share=share)
    blocks, nvreg = optimise(blocks, nvreg)
    alloc = allocate_registers(blocks, plain_name(fn.name), nvreg, lay.shared_words)
    writes = kernel_writes(fn, lay.params, lay.symbols, lay.static_global_words,
                           lambda ins, addr: translator.space_of(ins, ins.parts, addr))
    shared_words = alloc.spill_top if alloc.spill_slots else lay.shared_words     # spill slots end at spill_top
    shape = isa.Program(plain_name(fn.name), [], lay.params, lay.const_init, lay.global_init, lay.static_global_words,
                        shared_words, alloc.regs_used, lay.printf_buffer, writes,
                        block=tiles.block if tiles else None, tile=tiles.tile if tiles else None)
    prog = machine_program(blocks, lambda v: alloc.colours.get(v, 0), shape)
    prog.warnings = shuffle_warnings(module, fn, translator.ptx_constants)
    return prog, bool(shares)


def find_kernel(module: ptx.Module, kernel_name: str) -> ptx.Function:
    """The kernel by its name, or by its plain name when that is unambiguous (_Z6vecAddPiS_i
    is vecAdd)."""
    kernels = module.kernels
    if kernel_name in kernels:
        return kernels[kernel_name]
    found = [k for n, k in kernels.items() if plain_name(n) == kernel_name]
    if len(found) == 1:
        return found[0]
    listing = ", ".join(sorted(plain_name(n) for n in kernels)) or "none"
    if found:
        raise CompileError(f"kernel name {kernel_name} is ambiguous: {', '.join(k.name for k in found)}")
    raise CompileError(f"no kernel named {kernel_name} in the PTX; available kernels: {listing}")
