"""The machine's packed words, each declared once, with field widths that follow from isa.

The prompt packs them (protocol.py) and the circuit reads their bits by offset (the units:
fetch.py, status.py, next_token.py, ...); docs/protocol.md has the same tables in prose. A word's fields lie end to end from
bit 0 in the order declared; a field with copies (one per lane, one per warp) repeats
`width` bits `count` times.

    SREG0..2  a special-register table row (one per thread block and warp)
    CONFIG    the launch configuration
    CT1, CT2  the payloads of the CT1 and CT2 tokens
    STATUS    a warp's status register: CT1's payload, then CT2's
    COPY0, COPYROW  the copy-out's first group and its table rows (qwengpu/driver/copyout.py)
    ROM0      word 0 of a ROM slot: opcode, registers, space, mod, forwarded operands (encoding.py)
    SRC       word 4 of a ROM slot: where its operands come from when not from the register file
    PRE       a pair's first instruction: opcode, registers, which operand takes its immediate
    TERM      a block's terminator: its targets, kind, condition register and the slot that runs it

The widths are computed from isa when this module is imported; build.check_limits() says
which isa values the circuit can follow.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qwengpu import isa
from qwengpu.errors import MachineLimitError

WORD_BITS = 32          # a word staged by PART tokens and written by PUT
# A PART, VAL or VALU token carries one part of a word: bits PARTS[k] of it (docs/protocol.md,
# "Parts"). 12 bits make every byte address of the 1024-word global memory one token, which is
# what most per-lane results are (docs/machine.md has the counts behind the choice).
PART_BITS = 12
PARTS = tuple(range(lo, min(lo + PART_BITS, WORD_BITS)) for lo in range(0, WORD_BITS, PART_BITS))


def bits_for(n: int) -> int:
    """Bits of an unsigned field that holds 0..n."""
    return max(1, n.bit_length())


TID_BITS = bits_for(isa.MACHINE_BLOCK_THREADS - 1)      # tid.x/y/z: one dim may hold the whole block
NTID_BITS = bits_for(isa.MACHINE_BLOCK_THREADS)
CTA_BITS = bits_for(isa.MAX_GRID_BLOCKS - 1)        # a thread block's index (CTA tokens, ctaid)
NCTA_BITS = bits_for(isa.MAX_GRID_BLOCKS)
WARP_BITS = bits_for(isa.MAX_WARPS - 1)
PC_BITS = bits_for(isa.ROM_BLOCKS - 1)
STACK_DEPTH = 1 + 2 * (isa.LANES - 1)   # SIMT stack depths: a divergent BRC pushes 2, at most LANES - 1 nest
SP_BITS = bits_for(STACK_DEPTH - 1)
GROUP_BITS = bits_for(isa.LANE_GLOBAL_WORDS // isa.LANES - 1)   # copy-out: a group of LANES global words
PHASES = 4              # barrier phase mod 4 tells p - 1, p and p + 1 apart (scheduler.build_scheduler)


@dataclass(frozen=True)
class Bits:
    """One field: `count` copies of `width` bits, copy i at offset + i * width."""
    offset: int
    width: int
    count: int = 1

    def at(self, i: int = 0) -> range:
        """The bit positions of copy i."""
        if not 0 <= i < self.count:
            raise IndexError(f"copy {i} of a field with {self.count}")
        lo = self.offset + i * self.width
        return range(lo, lo + self.width)


class Word:
    """A packed word: named fields laid end to end from bit 0, in the order given as
    name=width or name=(width, count)."""

    def __init__(self, name: str, **fields: int | tuple[int, int]):
        self.name, self.fields, lo = name, {}, 0
        for field, spec in fields.items():
            width, count = spec if isinstance(spec, tuple) else (spec, 1)
            self.fields[field] = Bits(lo, width, count)
            lo += width * count
        self.width = lo
        if self.width > WORD_BITS:
            raise MachineLimitError(f"the {name} word needs {self.width} bits; a word has {WORD_BITS}")

    def __getitem__(self, field: str) -> Bits:
        return self.fields[field]

    def bits(self, field: str, i: int = 0) -> range:
        """Bit positions of copy i of `field`."""
        return self.fields[field].at(i)

    def pack(self, **values: int | Sequence[int]) -> int:
        """The word with these fields (a sequence gives a repeated field's copies 0, 1, ...);
        MachineLimitError names a field whose value does not fit."""
        word = 0
        for field, value in values.items():
            if field not in self.fields:
                raise ValueError(f"the {self.name} word has no field {field!r}")
            f = self.fields[field]
            copies = list(value) if isinstance(value, Sequence) else [value]
            if len(copies) > f.count:
                raise ValueError(f"{self.name}.{field} has {f.count} copies; got {len(copies)} values")
            for i, v in enumerate(copies):
                if not 0 <= v < 1 << f.width:
                    where = f"{self.name}.{field}" + (f"[{i}]" if f.count > 1 else "")
                    raise MachineLimitError(f"{where} = {v} does not fit its {f.width} bits")
                word |= v << f.at(i).start
        return word


# the special-register table: words 0-2 have a row per warp (the thread indices and the launch's
# shape: the same in every thread block), word 3 a row per thread block (its indices). Packed
# for the prompt: a 1-D block's word 1 and thread block 0's word 3 are 0 (not written), and
# word 0's bits stop below part 2.
SREG = (
    Word("SREG0", tid_x=(TID_BITS, isa.LANES), ntid_x=NTID_BITS, ntid_y=NTID_BITS),
    Word("SREG1", tid_y=(TID_BITS, isa.LANES), tid_z=(TID_BITS, isa.LANES)),
    Word("SREG2", nctaid_x=NCTA_BITS, nctaid_y=NCTA_BITS, nctaid_z=NCTA_BITS, ntid_z=NTID_BITS),
    Word("SREG3", ctaid_x=CTA_BITS, ctaid_y=CTA_BITS, ctaid_z=CTA_BITS),
)
SREG_BLOCK_WORD = 3
# where S2R finds each special register: (table word, field); tid fields have a copy per lane
SREG_FIELDS = {
    isa.SReg.TID_X: (0, "tid_x"), isa.SReg.TID_Y: (1, "tid_y"), isa.SReg.TID_Z: (1, "tid_z"),
    isa.SReg.NTID_X: (0, "ntid_x"), isa.SReg.NTID_Y: (0, "ntid_y"), isa.SReg.NTID_Z: (2, "ntid_z"),
    isa.SReg.NCTAID_X: (2, "nctaid_x"), isa.SReg.NCTAID_Y: (2, "nctaid_y"), isa.SReg.NCTAID_Z: (2, "nctaid_z"),
    isa.SReg.CTAID_X: (3, "ctaid_x"), isa.SReg.CTAID_Y: (3, "ctaid_y"), isa.SReg.CTAID_Z: (3, "ctaid_z"),
}
# nwarps one-hot (bit nwarps - 1), each warp's initial lane mask, the last thread block's index
# (last: a one-warp, one-block launch's word fits part 0)
CONFIG = Word("CONFIG", nwarps=isa.MAX_WARPS, mask=(isa.LANES, isa.MAX_WARPS), last_cta=CTA_BITS)
# a warp's status is CT1's payload (top-of-stack pc, mask and stack depth: they change at most
# block ends) then CT2's (lanes not exited, barriers passed mod PHASES, waiting at a barrier:
# they change at EXIT and BAR, and only then does CT2 follow CT1)
_CT1 = {"pc": PC_BITS, "mask": isa.LANES, "sp": SP_BITS}
_CT2 = {"alive": isa.LANES, "phase": bits_for(PHASES - 1), "wait": 1}
CT1, CT2, STATUS = Word("CT1", **_CT1), Word("CT2", **_CT2), Word("STATUS", **_CT1, **_CT2)
# copy-out (qwengpu/driver/copyout.py): the first group to copy, and whether there is any; a
# table row per group that is not "all lanes, then the next group" (rows left 0 mean that)
COPY0 = Word("COPY0", group=GROUP_BITS, any=1)
COPYROW = Word("COPYROW", mask=isa.LANES, next=GROUP_BITS, last=1)

# the ROM (qwengpu/machine/encoding.py): a slot is 5 words, word 0 the operation, words 1-3 the
# immediates of operands a, b, c, word 4 SRC. The op field holds an index into OPCODES, space an
# index into SPACES; mod holds SHFL's or VOTE's mode or an atomic's op (its index in isa's enum)
OPCODES = ("NOP",) + tuple(op.name for op in isa.Op)     # terminators live in TERM, not a slot
SPACES = (isa.Space.GLOBAL, isa.Space.SHARED, isa.Space.CONST)
REG_BITS = bits_for(isa.NUM_REGS - 1)
MOD_BITS = bits_for(max(len(isa.ShflMode) - 1, len(isa.VoteMode) - 1, len(isa.AtomOp) - 1))
ROM0 = Word("ROM0", op=bits_for(len(OPCODES) - 1), dst=REG_BITS, a=REG_BITS, b=REG_BITS,
            space=bits_for(len(SPACES) - 1), c=REG_BITS, mod=MOD_BITS)
# where operands a, b, c and the terminator's condition come from when they are fixed all launch
# long (encoding.Fixed; 0: the register file): 1 + r is special register r (the special-register
# table), SRC_WORD the CONST word `word` (the parameter bank: one CONST word a pass)
SRC_WORD = len(isa.SReg) + 1
SRC = Word("SRC", a=bits_for(SRC_WORD), b=bits_for(SRC_WORD), c=bits_for(SRC_WORD), cond=bits_for(SRC_WORD),
           word=bits_for(isa.LANE_CONST_WORDS - 1))
# a pair's first instruction (encoding.py), run in the pre-ALU of pass p: its opcode, registers, and
# which of its operands a, b, c takes the pass's pre-immediate word (one-hot: at most one is nonzero);
# and for the pass's main instruction, fwd: which of its operands a, b, c take the pre-ALU's
# result, tfwd: whether the terminator's condition is that result. The fields that are nonzero
# in most pairs come first: a PRE word's tokens grow with its highest nonzero part (PART_BITS)
PRE = Word("PRE", op=ROM0["op"].width, fwd=3, tfwd=1, imm=3, a=REG_BITS, b=REG_BITS, c=REG_BITS)
PRE_SLOTS = isa.BLOCK_SLOTS         # the last may pair an instruction with the terminator (encoding.py)
# a block's terminator, one word per pc (the TERM bank, not a slot): its branch target and
# fallthrough pcs (0 when absent), its reconvergence pc (the block's own pc when it has none: a
# branch never reconverges at its own block, encoding.py), its kind
# (index in isa.Term), its condition register, and the slot whose pass runs it
# (encoding.term_slot: the last instruction's, or a pass of its own at slot n), and whether a BRC's
# taken lanes exit (its target -1: isa.Term)
TERM = Word("TERM", target=PC_BITS, fallthrough=PC_BITS, reconv=PC_BITS,
            op=bits_for(len(isa.Term) - 1), cond=REG_BITS, slot=bits_for(isa.BLOCK_SLOTS), exits=1)
