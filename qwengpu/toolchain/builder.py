"""Writing the virtual IR (cfg.py). The translator (translate/) and the micro-coder
(microcode.py) both emit through a `Builder`: instructions into the current block, with
constant operands folded, fresh virtual registers, new blocks and their terminators. So the
expansions they share (pairs.py, division.py) come out the same from either.
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.toolchain.cfg import VBlock, VInstr, VTerm, simplify

Op, Imm, Term = isa.Op, isa.Imm, isa.Term


class Builder:
    """Emits into block `cur` of `blocks`; virtual registers above `nvreg` are free."""
    line = 0        # the PTX line the instructions come from

    def __init__(self, blocks: list[VBlock], nvreg: int = 0):
        self.blocks, self.cur, self.nvreg = blocks, 0, nvreg

    def new_vreg(self) -> int:
        self.nvreg += 1
        return self.nvreg

    @property
    def block(self) -> VBlock:
        return self.blocks[self.cur]

    def emit(self, op: Op, *srcs, mod=None, dst: int | None = None, result: bool = True):
        """Append `dst = op(srcs)`; returns dst, or a fresh register when dst is None (none
        when not `result`). An ALU op whose operands fold (cfg.simplify) is its value instead:
        returned, or copied into dst."""
        srcs = [self.renamed(s) for s in srcs]
        if op.kind is isa.Kind.ALU and op is not Op.MOV:
            folded = simplify(op, srcs)
            if folded is not None:
                return folded if dst is None else self.emit(Op.MOV, folded, dst=dst)
        if dst is None and result:
            dst = self.temporary()
        self.block.instrs.append(VInstr(op, dst, srcs, mod, self.line))
        return dst

    def renamed(self, operand):
        """The register that holds `operand`'s value now (the translator renames results)."""
        return operand

    def temporary(self) -> int:
        """A fresh register for a result."""
        return self.new_vreg()

    # -- blocks ----------------------------------------------------------------
    def new_block(self) -> int:
        self.blocks.append(VBlock())
        return len(self.blocks) - 1

    def terminate(self, term: VTerm) -> None:
        """End the current block with `term`, unless it has ended already."""
        if self.block.term is None:
            self.block.term = term

    def switch_to(self, b: int) -> None:
        """Continue in block b; an unterminated current block falls through to it."""
        self.terminate(VTerm(Term.JMP, b))
        self.cur = b

    def branch(self, cond, taken, other) -> None:
        """taken() where cond holds, other() where not, both going on in one block
        after; a constant cond (say, from a constant divisor) emits only the path
        it picks, in place."""
        if isinstance(cond, Imm):
            (taken if cond.value else other)()
            return
        yes, no, after = self.new_block(), self.new_block(), self.new_block()
        self.terminate(VTerm(Term.BRC, yes, cond, no))
        for block, path in ((yes, taken), (no, other)):
            self.cur = block
            path()
            self.terminate(VTerm(Term.JMP, after))
        self.cur = after
