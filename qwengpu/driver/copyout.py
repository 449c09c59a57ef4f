"""Copy-out: the launch's output words, written by the model as tokens before HALT.

After the last thread block the model copies the words the kernel may have written out of
its global memory into the token stream (the device-to-host copy), so the results decode
from the generated tokens alone: what an engine that returns only tokens (vLLM, llama.cpp)
gives. The state readback stays as a cross-check (runtime.py).

Words go in aligned groups of LANES (group g: words LANES * g ..), each like a load by every
lane: `COPY(g)` reads the group's words into the result queue, then the writeback tokens
carry the copied lanes' words (one `VALU` per part when they are equal, one `VALA` when they
step by a stride from lane 0, one `VALQ` when all are small, else lane by lane: one `VALP`
for two small values of lanes 2p and 2p + 1, else `VAL`s: tokens.writeback_tokens), then the
next `COPY` or `HALT`. The prompt holds the group list as a linked list
(words.COPY0: the first group; words.COPYROW: a table row per group): a row left 0 means
"every lane, then group g + 1", so a run of whole groups costs no prompt tokens.

The copy-out carries the lane words alone (below isa.LANE_GLOBAL_WORDS: a COPY's group has
words.GROUP_BITS); the model engine reads the words above from the model's state, and an engine
that returns only tokens refuses a launch that may write them (check_tokens_only).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from qwengpu import isa
from qwengpu.errors import ExecutionError, LaunchError, MachineLimitError
from qwengpu.machine.tokens import Token, lane_word, tok, unpack_pair, unpack_small, writeback_tokens
from qwengpu.machine.words import COPY0, COPYROW, PARTS

FULL = (1 << isa.LANES) - 1


def groups(words: Iterable[int]) -> list[tuple[int, int]]:
    """(group, lane mask) of every group holding one of `words` that the copy-out carries (those
    below isa.LANE_GLOBAL_WORDS), in address order."""
    masks: dict[int, int] = {}
    for w in words:
        if not 0 <= w < isa.GLOBAL_WORDS:
            raise LaunchError(f"copy-out word {w} is outside global memory (0..{isa.GLOBAL_WORDS - 1})")
        if w < isa.LANE_GLOBAL_WORDS:
            masks[w // isa.LANES] = masks.get(w // isa.LANES, 0) | 1 << w % isa.LANES
    return sorted(masks.items())


def check_tokens_only(words: Iterable[int]) -> None:
    """Refuse a launch whose output words (launch.copy_out) reach past the copy-out: an engine
    that returns only tokens has no other way to read them back."""
    last = max(words, default=0)
    if last >= isa.LANE_GLOBAL_WORDS:
        raise MachineLimitError(f"the copy-out covers global words below {isa.LANE_GLOBAL_WORDS}, the only results an "
                                f"engine that returns only tokens can read; this launch may write words up to {last}: "
                                f"run it on the model engine, which reads them from the model's state")


def prompt_words(words: Iterable[int]) -> tuple[int, dict[int, int]]:
    """The COPY0 word and the nonzero COPYTAB rows (group -> COPYROW word) for `words`."""
    gs = groups(words)
    if not gs:
        return 0, {}
    rows = {}
    for i, (g, mask) in enumerate(gs):
        last = i == len(gs) - 1
        after = gs[i + 1][0] if not last else 0
        if (mask, after, last) != (FULL, g + 1, False):
            rows[g] = COPYROW.pack(mask=mask, next=after, last=int(last))
    return COPY0.pack(group=gs[0][0], any=1), rows


def expected_tokens(words: Iterable[int], memory: np.ndarray) -> list[Token]:
    """The copy-out the model must write, given global memory after the launch."""
    out = []
    for g, mask in groups(words):
        lanes = [l for l in range(isa.LANES) if mask >> l & 1]
        out.append(tok("COPY", g))
        out += writeback_tokens(lanes, [int(memory[isa.LANES * g + l]) for l in lanes])
    return out


def decode(stream: Sequence[Token], words: Iterable[int]) -> dict[int, int]:
    """word -> value from the copy-out at the end of a generated stream (HALT last), or an
    ExecutionError saying where the stream is not the copy-out of `words`."""
    gs = groups(words)
    start = next((i for i, t in enumerate(stream) if t.kind == "COPY"), len(stream) - 1)
    tail, pos, out = list(stream[start:]), 0, {}

    def bad(why: str):
        return ExecutionError(f"the copy-out (generated tokens {start}..{start + len(tail) - 1}) is malformed: {why}")

    continuing = next((t for t in tail if t.cont), None)
    if continuing:
        raise bad(f"{continuing} continues a pass, but the copy-out runs none")

    for g, mask in gs:
        if pos >= len(tail) or tail[pos] != tok("COPY", g):
            got = tail[pos] if pos < len(tail) else "the end of the stream"
            raise bad(f"expected COPY g{g}, got {got}")
        pos += 1
        lanes = [l for l in range(isa.LANES) if mask >> l & 1]
        value, count = dict.fromkeys(lanes, 0), dict.fromkeys(lanes, 0)     # parts so far per lane
        if pos < len(tail) and tail[pos].kind == "VALA":                     # one token: d + s * lane
            stride, d = tail[pos].args
            if lanes[0] != 0:
                raise bad(f"{tail[pos]} after COPY g{g}, whose lanes {lanes} do not start at lane 0")
            out.update({isa.LANES * g + l: lane_word(d, stride, l) for l in lanes})
            pos += 1
            continue
        if pos < len(tail) and tail[pos].kind == "VALQ":                     # one token: each lane's bits
            small = unpack_small(tail[pos].args[0])
            if any(v for l, v in enumerate(small) if l not in lanes):
                raise bad(f"{tail[pos]} after COPY g{g} gives lanes outside {lanes}")
            out.update({isa.LANES * g + l: small[l] for l in lanes})
            pos += 1
            continue
        shared = pos < len(tail) and tail[pos].kind == "VALU"
        while pos < len(tail) and tail[pos].kind in ("VAL", "VALU", "VALP"):
            t = tail[pos]
            if t.kind == "VALP":             # two lanes' whole words
                pair = [2 * t.args[0], 2 * t.args[0] + 1]
                if shared or not set(pair) <= set(value) or any(count[l] for l in lanes if l >= pair[0]):
                    raise bad(f"{t} after COPY g{g} (lanes {lanes}: parts in order, lane by lane)")
                for l, v in zip(pair, unpack_pair(t.args[1])):
                    value[l], count[l] = v, 1
                pos += 1
                continue
            *lane, k, d = t.args
            targets = lanes if shared else lane
            if (shared != (t.kind == "VALU") or any(l not in value or count[l] != k for l in targets)
                    or not shared and any(count[l] for l in lanes if l > lane[0])):
                raise bad(f"{t} after COPY g{g} (lanes {lanes}: parts in order, lane by lane)")
            for l in targets:
                value[l] |= d << PARTS[k].start
                count[l] += 1
            pos += 1
        if not all(count.values()):
            raise bad(f"COPY g{g} wrote lanes {[l for l in lanes if count[l]]}, not {lanes}")
        out.update({isa.LANES * g + l: v for l, v in value.items()})
    if tail[pos:] != [tok("HALT")]:
        raise bad(f"expected HALT after the last group, got {' '.join(map(str, tail[pos:])) or 'nothing'}")
    return out
