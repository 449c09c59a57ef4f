"""The machine's layer plan: where each unit sits, in one table (docs/machine.md, "Layer plan").

The front is one stage a layer (L0-L4); then the pre-ALU (a pair's first instruction,
encoding.py), then the ALU's operands and the terminator's condition with its result forwarded,
then the ALU beside the terminator. From the execute stage on, each first layer follows from
the depths of the units before it, computed here: the units (alu.py, warp.py, branch.py,
scheduler.py, atomic.py) take their depth from this module and the machine's stages their
layers. `PLAN` maps each unit to the span of layers its neurons and GDN heads use; the build
records what each unit really touched (Machine.footprint) and tests/test_machine_plan.py checks
the two agree. Nothing here imports the units, so any of them may import it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """Layers first .. first + depth - 1."""
    first: int
    depth: int

    @property
    def last(self) -> int:
        return self.first + self.depth - 1

    @property
    def layers(self) -> range:
        return range(self.first, self.first + self.depth)


# ---- the units' depths (layers from their first) ----
ALU_LAYERS = 6            # alu.py: results readable 6 layers after the operands
FPU_LAYERS = 18           # fpu.py: its results readable 18 layers after its first
WARP_LAYERS = 4           # warp.py: SHFL/VOTE
SCHEDULER_LAYERS = 3      # scheduler.py
STACK_AT = 2              # branch.py: the SIMT stack's bank layer, from the terminator's first
TERMINATOR_LAYERS = STACK_AT + 3    # then the live entries and the new top
CHANGE_LAYERS = 2         # branch.py: the status bits that change, then whether any of each half does
LSU_LAYERS = 4            # store queue; global memory (2 layers of banks); shared, CONST, the load's result
PAGED_LAYERS = 8          # global memory above isa.LANE_GLOBAL_WORDS: one copy, read lane by lane (120 heads)
WRITEBACK_LAYERS = 2      # the queues; the copy-out's fields they took cleared
ATOMIC_LAYERS = 2         # atomic.py: the read-modify-write unit
NEXT_TOKEN_LAYERS = 4     # next_token.py: E1-E4

# ---- first layers ----
L_IN = 0                  # registers written by tokens
L_ROM = 1                 # config, ROM word 0, the pre-ALU's word, decode
L_STATUS = 2              # warp status, pending writeback, TERM, the scheduler's turn
L_PRE_REG = 3             # the pre-ALU's operands (register file)
L_PRE = 4                 # the pre-ALU (a pair's first instruction), the copy-out table
L_REG = L_PRE + ALU_LAYERS        # special registers, register file, operands (the pre-ALU's result forwarded)
L_IMM = L_REG - 1         # the ALU's immediates (ROM words 1-3) and the terminator's condition register
L_FIXED = L_IMM - 1       # the special-register table and the parameter bank, read for fixed operands
L_SRC = L_FIXED - 1       # ROM word 4 (SRC: which operands are fixed, and by what)
L_EXEC = L_REG + 1        # ALU, warp unit
L_BRANCH = L_EXEC         # terminator and SIMT stack, beside the ALU (its condition may be forwarded too)
L_SCHED = L_STATUS + 1    # the scheduler reads the statuses
L_STACK = L_BRANCH + STACK_AT
L_CHANGE = L_BRANCH + TERMINATOR_LAYERS   # whether the terminator changed each half of the status
EXEC_END = max(L_EXEC + ALU_LAYERS, L_EXEC + WARP_LAYERS, L_BRANCH + TERMINATOR_LAYERS,
               L_SCHED + SCHEDULER_LAYERS)      # the first layer that reads every execute result
L_Q = EXEC_END            # the load/store unit: store queue, memories
L_LOAD = L_Q + LSU_LAYERS - 1     # shared and CONST memory, a load's result in place of its address
L_WB = L_Q + LSU_LAYERS   # writeback queues; the atomic's old value
L_PAGED = L_WB + 1        # global memory above the lane words; a word read there moves to its lane's r
L_ATOM = L_PAGED + PAGED_LAYERS   # the atomic unit (its old value: the paged memory's last layer)
L_FPU = L_EXEC + 3        # the FPU (the operands live on): where the ALU's layers leave its neurons and residual room
L_RESULTQ = L_FPU + FPU_LAYERS    # the result queue reads r after the FPU wrote it
L_MOVE = L_RESULTQ - 1    # a paged word read moves to its LD's lane (CONST's paged words: the layer before)
L_NEXT = max(L_ATOM + ATOMIC_LAYERS, L_RESULTQ)   # the atomic queue; next-token logic E1
LAYERS = L_NEXT + NEXT_TOKEN_LAYERS
assert L_CHANGE + CHANGE_LAYERS <= L_WB, "the writeback queues read the status change"

# ---- each unit's layers, as the build lays them out (checked against the circuit) ----
PLAN: dict[str, Span] = {
    "inputs": Span(L_IN, 1),
    "fetch": Span(L_ROM, L_IMM + 1 - L_ROM),                  # TERM, the terminator's flag at L_STATUS, the
                                                              # pre-immediate at L_PRE_REG, words 1-3 at L_IMM
    "status": Span(L_ROM, 2),                                 # the CTA pass's initial masks at L_ROM
    "operands": Span(L_PRE_REG, L_EXEC + 1 - L_PRE_REG),      # the pre-ALU's (L_PRE_REG), the condition
                                                              # replica (L_IMM), the ALU's (L_REG), cleared at L_EXEC
    "scheduler": Span(L_STATUS, L_SCHED + SCHEDULER_LAYERS - L_STATUS),    # the turn at L_STATUS
    "pre_alu": Span(L_PRE, ALU_LAYERS),
    "warp": Span(L_EXEC, WARP_LAYERS),
    "alu": Span(L_EXEC, ALU_LAYERS),                          # the warp unit's result joins at its last
    "fpu": Span(L_FPU, FPU_LAYERS),                           # beside the ALU and the LSU, into the ALU's r
    "branch": Span(L_BRANCH, L_CHANGE + CHANGE_LAYERS - L_BRANCH),  # terminator, then the status change
    "copy_unit": Span(L_IN, EXEC_END - L_IN),                 # enables L0-L1, table L_PRE, addresses EXEC_END - 1
    "lsu": Span(L_Q, L_MOVE + 1 - L_Q),                       # the paged words from L_PAGED - 1
    "writeback": Span(L_WB, L_RESULTQ + 1 - L_WB),           # the queues; the result banks at L_RESULTQ
    "atomic": Span(L_ATOM - 1, L_NEXT + 2 - L_ATOM),          # old at L_ATOM - 1, the unit, its queue at L_NEXT
    "warp_pcs": Span(L_NEXT - 1, 2),                          # the gated write at L_NEXT - 1, the registers
    "next_token": Span(L_NEXT, NEXT_TOKEN_LAYERS),
}
