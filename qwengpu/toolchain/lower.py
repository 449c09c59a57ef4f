"""Lower a parsed PTX kernel to an isa.Program.

Pipeline (docs/lowering.md describes each stage):
  1. layout      parameters -> CONST words, .const/.global/.shared variables -> addresses
  2. spaces      where each register's address points (for generic ld/st/atom)
  3. translate   PTX instructions -> virtual IR (unbounded virtual registers,
                 basic blocks with machine terminators); 64-bit values become
                 register pairs, 8/16-bit values live zero-extended in one register
  4. clean up    constant/copy propagation, dead-code elimination, CFG
                 simplification, redundant masks, address adds into LD/ST,
                 if-conversion (off by default),
                 branches on values, fold-friendly order (cfg.py)
  5. regalloc    liveness, interference graph, colouring into r1..r15,
                 rematerialisation and spilling (regalloc.py)
  6. blocks      balance pure instructions across barriers, pack into machine
                 blocks (<= BLOCK_SLOTS instructions, in order but for one move
                 that lets a BRC fold into the last instruction's pass),
                 fold empty jumps, reconvergence = immediate post-dominator
                 (with the return-path rule)
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.errors import CompileError
from qwengpu.toolchain import ptx
from qwengpu.toolchain.blocks import machine_program
from qwengpu.toolchain.inline import inline_calls
from qwengpu.toolchain.layout import layout
from qwengpu.toolchain.lint import shuffle_warnings
from qwengpu.toolchain.microcode import EXPANDABLE, MODEL_EXPANSIONS, expand_ops
from qwengpu.toolchain.cfg import (branch_on_values, drop_redundant_masks, eliminate_dead_code, fold_address_adds,
                                   fold_friendly, hoist_loads, if_convert, propagate_constants, propagate_copies,
                                   simplify_cfg)
from qwengpu.toolchain.ptx import plain_name
from qwengpu.toolchain.regalloc import allocate_registers
from qwengpu.toolchain.spaces import address_spaces
from qwengpu.toolchain.translate import Translator
from qwengpu.toolchain.writes import kernel_writes

__all__ = ["lower", "find_kernel", "plain_name", "EXPANDABLE", "MODEL_EXPANSIONS"]

# ---------------------------------------------------------------------------
# Kernel lookup
# ---------------------------------------------------------------------------
def find_kernel(module: ptx.Module, kernel_name: str) -> ptx.Function:
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


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------
def lower(module: ptx.Module, kernel_name: str, expand: frozenset[str] = frozenset()) -> isa.Program:
    """`expand`: names of ALU ops (from EXPANDABLE) to rewrite into other ops,
    for an engine without them (the model engine: MODEL_EXPANSIONS)."""
    unknown = sorted(set(expand) - EXPANDABLE)
    if unknown:
        raise ValueError(f"cannot expand {', '.join(unknown)}; expandable ops: {', '.join(sorted(EXPANDABLE))}")
    fn = inline_calls(module, find_kernel(module, kernel_name))
    lay = layout(module, fn)
    tr = Translator(module, fn, lay, address_spaces(fn, lay.symbols))
    blocks = tr.run()
    propagate_constants(blocks)
    propagate_copies(blocks)
    eliminate_dead_code(blocks)
    if any(ins.op.name in expand for b in blocks for ins in b.instrs):   # else: the same program as without
        tr.nvreg = expand_ops(blocks, expand, tr.nvreg)
        propagate_constants(blocks)
        propagate_copies(blocks)
        eliminate_dead_code(blocks)
    drop_redundant_masks(blocks)
    fold_address_adds(blocks)
    blocks = simplify_cfg(blocks)
    tr.nvreg = if_convert(blocks, tr.nvreg)
    blocks = simplify_cfg(blocks)
    branch_on_values(blocks)
    hoist_loads(blocks)
    fold_friendly(blocks)
    alloc = allocate_registers(blocks, plain_name(fn.name), tr.nvreg, lay.shared_words)
    shared_words = isa.SHARED_WORDS if alloc.spill_slots else lay.shared_words
    printf_buffer = next((addr // 4 for name, (space, addr) in lay.symbols.items()
                          if space == "global" and "__qg_printf_buffer" in name), None)
    writes = kernel_writes(fn, lay.params, lay.symbols, lay.static_global_words,
                           lambda ins, addr: tr.space_of(ins, ins.parts, addr))
    shape = isa.Program(plain_name(fn.name), [], lay.params, lay.const_init, lay.global_init, lay.static_global_words,
                        shared_words, alloc.regs_used, printf_buffer, writes)
    prog = machine_program(blocks, lambda v: alloc.colours.get(v, 0), shape)
    isa.check_program(prog)
    prog.warnings = shuffle_warnings(module, fn, tr.ptx_constants)
    return prog
