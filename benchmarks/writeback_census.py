"""Where the suite's generated tokens go, and what other writeback designs would need, counted on
the interpreter's traces (the streams replay holds the model to; no model needed).

    .venv/bin/python benchmarks/writeback_census.py [--json] [--block-slots N]

Prints the reference streams' tokens by kind (EXEC: also the passes of pairs and of terminators
of their own, counting those that continuing tokens run; the continuing tokens by kind), then
for each payload width w the writeback tokens (VAL/VALU/VALA/VALQ/VALP) if a
word went in w-bit parts as today's protocol sends them (one VALU per part when every active
lane's value is equal, else one VALA when they are d + s * lane from lane 0 and below 2 ** w,
else one VALQ when all are below 2 ** Q_BITS, else lane by lane one VALP for lanes 2p and
2p + 1 both below 2 ** (w / 2), or each lane's parts up to its highest nonzero one, or one token
for a word whose bits above part 0 are all ones) and the ids VAL, VALU and
PART would need; the same sent part by part (one VALU for a part every lane shares, else each
lane's); sign-extended at any part (a negative value's high parts that are all ones left out
after any part, a flag in its last token); and with a machine block per pass that writes back
only the registers live after the block (an estimate for machine v2, docs/machine.md, "Next"). `--block-slots N`
lowers the suite as if isa.BLOCK_SLOTS were N (the circuit is not built, so any N counts).

A pair's first instruction (encoding.py) is forwarded, never written back, so the writeback
columns leave it out.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys

from qwengpu import interp, isa
from qwengpu.api import Device
from qwengpu.driver import protocol
from qwengpu.machine.encoding import encode, live_out
from qwengpu.machine.tokens import AP_STRIDES, Q_BITS, with_exec
from qwengpu.machine.words import WORD_BITS
from qwengpu.suite import discover, load_spec

WIDTHS = (8, 10, 11, 12, 16)


def parts(value: int, width: int, signed: bool = False) -> int:
    """Tokens of one lane's word: one when its bits above part 0 are all ones (as the protocol
    sends it), else its parts up to the highest nonzero one; `signed`: up to the last part
    that is not all ones."""
    if value >> width == (1 << WORD_BITS - width) - 1:
        return 1
    n = max(1, -(-value.bit_length() // width))
    if signed and value >> (WORD_BITS - 1):
        n = min(n, max(1, -(-(~value & (1 << WORD_BITS) - 1).bit_length() // width)))
    return n


def writeback(lanes: list[int], values: list[int], width: int, signed: bool = False) -> int:
    if len(set(values)) == 1:
        return parts(values[0], width, signed)
    if lanes[0] == 0 and max(values) < 1 << width and any(
            all(v == (values[0] + s * l) % (1 << width) for l, v in zip(lanes, values)) for s in AP_STRIDES):
        return 1                                     # VALA
    if max(values) < 1 << Q_BITS:
        return 1                                     # VALQ
    out, i = 0, 0                                    # lane by lane: VALP (half a part a lane), else VALs
    while i < len(lanes):
        if lanes[i] % 2 == 0 and lanes[i + 1:i + 2] == [lanes[i] + 1] and max(values[i:i + 2]) < 1 << width // 2:
            out, i = out + 1, i + 2
        else:
            out, i = out + parts(values[i], width, signed), i + 1
    return out


def partwise(values: list[int], width: int) -> int:
    """Part k as one VALU when every lane's part k is equal, else a VAL per lane."""
    mask = (1 << width) - 1
    return sum(1 if len({v >> width * k & mask for v in values}) == 1 else len(values)
               for k in range(max(parts(v, width) for v in values)))


def ids(width: int) -> int:
    """Ids of VAL (per lane), VALU and PART for w-bit parts of a word (VAL and VALU: and part 0
    with the bits above it all ones)."""
    per_word = sum(1 << min(width, WORD_BITS - lo) for lo in range(0, WORD_BITS, width))
    return (isa.LANES + 2) * per_word + (isa.LANES + 1) * (1 << width)


def kernel_census(case) -> dict:
    spec = load_spec(case)
    grid, block, args = spec.launch()
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    L = fn.launch(grid, block, list(args))
    stream = protocol.expected_stream(L)            # L.copy_out: output_words()
    kinds = collections.Counter(t.kind for t in stream.tokens)
    outs, codes = live_out(L.program), encode(L.program)
    for t in with_exec(stream.tokens):
        if t.kind == "EXEC":
            p = codes[t.args[1]].pass_at(t.args[2])
            kinds["EXEC (terminator passes)"] += p.main is None and p.pre is None
            kinds["EXEC (pairs)"] += p.pre is not None
    for t in stream.tokens:                 # the last writeback token of a pass that also runs the next
        if t.cont:
            kinds[f"{t.kind} (continuing)"] += 1
    steps = interp.run_launch(dataclasses.replace(L, memory=L.memory.copy()), trace=True, max_passes=1_000_000,
                              keep_fault=True).steps          # the trace expected_stream reads
    every, by_part, signed, live = (collections.Counter() for _ in range(4))
    for step in steps:
        b, writes = L.program.blocks[step.pc], iter(step.reg_writes)
        lanes = [l for l in range(isa.LANES) if step.mask >> l & 1]
        paired = {p.pre for p in codes[step.pc].passes}
        ran = {p.main for p in codes[step.pc].passes}
        for i, ins in enumerate(b.instrs):
            if not ins.dst.n:
                continue
            values = [next(writes)[2] for _ in lanes]
            if ins.op is isa.Op.ATOM or i in paired or i not in ran:
                continue                    # an atomic's old value goes lane by lane; a pair's first is
                                            # forwarded; one in no pass is read as a fixed operand
            last = all(later.dst.n != ins.dst.n for later in b.instrs[i + 1:])
            for w in WIDTHS:
                every[w] += writeback(lanes, values, w)
                by_part[w] += partwise(values, w)
                signed[w] += writeback(lanes, values, w, signed=True)
                live[w] += writeback(lanes, values, w) if last and ins.dst.n in outs[step.pc] else 0
    return {"kernel": case.name, "tokens": len(stream.tokens), "kinds": dict(kinds),
            "writeback": dict(every), "partwise_writeback": dict(by_part), "signed_writeback": dict(signed),
            "live_writeback": dict(live)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--block-slots", type=int, default=isa.BLOCK_SLOTS)
    a = ap.parse_args()
    isa.BLOCK_SLOTS = a.block_slots
    rows = [kernel_census(c) for c in discover()]
    kinds, every, by_part, signed, live = (collections.Counter() for _ in range(5))
    for r in rows:
        kinds.update(r["kinds"])
        every.update(r["writeback"])
        by_part.update(r["partwise_writeback"])
        signed.update(r["signed_writeback"])
        live.update(r["live_writeback"])
    total = sum(r["tokens"] for r in rows)
    if a.json:
        json.dump({"kernels": rows, "tokens": total, "kinds": kinds, "writeback": every,
                   "partwise_writeback": by_part, "signed_writeback": signed, "live_writeback": live},
                  sys.stdout, indent=1)
        return 0
    print(f"suite: {total:,} generated tokens")
    for kind, n in kinds.most_common():
        print(f"  {kind:32} {n:9,} {n / total:6.1%}")
    print(f"\n{'part bits':>9} {'ids':>8} {'writeback':>10} {'part by part':>13} {'sign-extended':>14} "
          f"{'live-out only':>14}")
    for w in WIDTHS:
        print(f"{w:9} {ids(w):8,} {every[w]:10,} {by_part[w]:13,} {signed[w]:14,} {live[w]:14,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
