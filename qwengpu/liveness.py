"""Liveness: the values each block of a control-flow graph leaves live, for the register
allocator (virtual registers, toolchain/regalloc.py) and the ROM encoding (machine
registers, machine/encoding.py), which give it their blocks as plain reads and writes.
"""
from __future__ import annotations


def live_out(succs: list[list[int]], blocks: list[list[tuple[list, object]]]) -> list[set]:
    """The values live at each block's end. `succs[b]`: block b's successors; `blocks[b]`:
    what b does, in order, a step (values read, value written or None) each, its terminator's
    reads last. The least fixpoint of: a block's live-out is the union of its successors'
    live-in, its live-in what it reads before writing, and its live-out less what it writes."""
    exposed, written = [], []
    for steps in blocks:
        reads, writes = set(), set()
        for read, write in steps:
            reads |= set(read) - writes
            if write is not None:
                writes.add(write)
        exposed.append(reads)
        written.append(writes)
    live_in, out = [set() for _ in succs], [set() for _ in succs]
    changed = True
    while changed:
        changed = False
        for b in reversed(range(len(succs))):
            o = set().union(*(live_in[s] for s in succs[b]))
            i = exposed[b] | (o - written[b])
            if (o, i) != (out[b], live_in[b]):
                out[b], live_in[b], changed = o, i, True
    return out
