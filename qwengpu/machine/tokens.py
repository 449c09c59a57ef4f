"""The GPU vocabulary: token kinds, their payloads and their feature sets.

Every GPU token is a set of *features*: named 0/1 dims of the circuit residual (plus the
anchor). Payloads are stored pre-decoded (part k of a word sits in stage head k's
field, a warp is both one-hot and bits, ...) so the bottom layers read them
without any MLP work. With the tied head the same vector is the token's output code:
the top of the circuit leaves 2 * features(next) - 1 on the feature dims, so the next
token's logit beats every other GPU token's by at least 1 (docs/machine.md).
"""
from __future__ import annotations

import bisect
import functools
import itertools
from dataclasses import dataclass

import numpy as np

from qwengpu import isa
from qwengpu.machine.words import (CT1, CT2, CTA_BITS, GROUP_BITS, PARTS, PHASES, PRE_SLOTS, SREG, WARP_BITS, WORD_BITS,
                                   bits_for)

SLOTS = isa.BLOCK_SLOTS + 1          # a machine block's passes: its instructions', then its terminator's
ROM_WORDS = 5                        # 32-bit ROM words per slot (qwengpu/machine/encoding.py); a pre slot has 2
SREG_WORDS = len(SREG)               # 32-bit words of a special-register table row
# PUT(GLOBAL) writes global word latch (a lane word), PUT(GLOBAL.PAGED) word page * 2 ** LATCH_BITS +
# latch, PAGE(k) setting the page; PUT(CONST) and PUT(CONST.PAGED) the same for CONST
GLOBAL_PAGES = isa.GLOBAL_WORDS // isa.LANE_GLOBAL_WORDS
PUT_TARGETS = tuple([f"ROM{s}.{j}" for s in range(isa.BLOCK_SLOTS) for j in range(ROM_WORDS)] + ["TERM"]
                    + [f"PRE{p}.{j}" for p in range(PRE_SLOTS) for j in range(2)]
                    + ["GLOBAL", "SHARED", "CONST", "CONFIG"] + [f"SREG{j}" for j in range(SREG_WORDS)]
                    + ["COPY0", "COPYTAB", "GLOBAL.PAGED", "CONST.PAGED"])
KINDS = ("LATCH", "PAGE", "PART", "PUT", "CTA", "EXEC", "VAL", "VALU", "VALA", "VALQ", "VALP", "ST", "AT", "AW", "LD", "CT1",
         "CT2", "COPY", "HALT", "FAULT")
# VALA(s, d): lane l's value is (d + s * l) mod 2 ** 12 on every active lane, lane 0 among them
AP_STRIDES = (1, 2, 4, 8)
# VALQ(d): lane l's value is bits Q_BITS * l .. of d, each active lane's below 2 ** Q_BITS
Q_BITS = 3
# VALP(p, d): lanes 2p and 2p + 1 (both written) take bits 0.. and P_BITS.. of d, each below 2 ** P_BITS
P_BITS = 6
# the writeback tokens that may continue: the last one of a pass that does not end its block also
# runs the block's next pass (it is that pass's EXEC too; docs/machine.md, step 16)
CONTINUABLE = ("VAL", "VALU", "VALA", "VALQ", "VALP")
# the row latch addresses every PUT target's rows (the special-register table: a row per warp or block)
LATCH_BITS = bits_for(max(isa.ROM_BLOCKS, isa.LANE_GLOBAL_WORDS, isa.LANE_SHARED_WORDS, isa.LANE_CONST_WORDS,
                          isa.MAX_GRID_BLOCKS, isa.MAX_WARPS) - 1)

# feature fields in residual order: name -> width
FEATURES = {
    "kind": len(KINDS),       # one-hot
    "V": LATCH_BITS,          # LATCH value, PAGE's page (bits)
    "SD": WORD_BITS,          # PART/VAL/VALU: part k's data in SD[PARTS[k]] (VALA, VALQ, VALP: part 0; a
                              # VAL/VALU whole word, words.whole_word: all 32 bits)
    "SE": len(PARTS),         # PART/VAL/VALU/VALA/VALQ: stage head j written iff j >= k (thermometer)
    "STRIDE": len(AP_STRIDES),      # VALA stride, one-hot
    "LANE": isa.LANES,        # VAL/ST/AT/AW/LD lane, one-hot; VALP's two lanes
    "PT": len(PUT_TARGETS),   # PUT target, one-hot
    "W": isa.MAX_WARPS,       # EXEC warp, one-hot
    "WB": WARP_BITS,          # EXEC warp, bits
    "PC": CT1["pc"].width,    # EXEC/CT1 block index, bits
    "SLOT": SLOTS,            # EXEC slot, one-hot
    "MASK": CT1["mask"].width,      # CT1 top-of-stack mask, bits
    "SP": CT1["sp"].width,          # CT1 stack depth, bits
    "ALIVE": CT2["alive"].width,    # CT2 lanes not exited, bits
    "PHASE": CT2["phase"].width,    # CT2 barriers passed mod PHASES, bits
    "WAIT": CT2["wait"].width,      # CT2 waiting at a barrier
    "CTA": CTA_BITS,          # CTA thread block index, bits
    "CG": GROUP_BITS,         # COPY: the group of LANES global words it copies out, bits
    "CONT": 1,                # a continuing VAL/VALU/VALA/VALQ/VALP
}


@dataclass(frozen=True)
class Token:
    kind: str
    args: tuple[int, ...] = ()
    cont: bool = False        # a CONTINUABLE token that also runs its block's next pass

    def __str__(self):
        return self._text() + (" +" if self.cont else "")

    def _text(self):
        a = self.args
        if self.kind == "EXEC":
            return f"EXEC w{a[0]} B{a[1]}.{a[2]}"
        if self.kind == "VAL":
            return f"VAL l{a[0]} p{a[1]} {a[2]:#04x}"
        if self.kind in ("PART", "VALU"):
            return f"{self.kind} p{a[0]} {a[1]:#04x}"
        if self.kind == "VALA":
            return f"VALA s{a[0]} {a[1]:#04x}"
        if self.kind == "VALQ":
            return "VALQ " + ",".join(str(q) for q in unpack_small(a[0]))
        if self.kind == "VALP":
            return f"VALP l{2 * a[0]}{2 * a[0] + 1} " + ",".join(map(str, unpack_pair(a[1])))
        if self.kind == "PUT":
            return f"PUT {PUT_TARGETS[a[0]]}"
        if self.kind == "CT1":
            return f"CT1 B{a[0]} m{a[1]:04b} sp{a[2]}"
        if self.kind == "CT2":
            return f"CT2 alive{a[0]:04b} ph{a[1]} w{a[2]}"
        if self.kind == "COPY":
            return f"COPY g{a[0]}"
        if self.kind in ("ST", "AT", "AW", "LD"):
            return f"{self.kind} l{a[0]}"
        return self.kind + (" " + " ".join(map(str, a)) if a else "")


def tok(kind: str, *args: int) -> Token:
    return Token(kind, tuple(args))


def continuing(token: Token) -> Token:
    """The token's continuing variant: it also runs the next pass of its block."""
    if token.kind not in CONTINUABLE:
        raise ValueError(f"{token} cannot continue a block")
    return Token(token.kind, token.args, True)


def runs_pass(token: Token) -> bool:
    """Whether the token starts a machine pass: an EXEC, or a continuing writeback token."""
    return token.kind == "EXEC" or token.cont


def with_exec(stream: list[Token]) -> list[Token]:
    """The stream with every continuing token written as its plain token and the EXEC it stands
    for, EXEC(w, pc, s + 1) after the pass EXEC(w, pc, s) before it: what fault and pass
    accounting read."""
    out, last = [], None
    for t in stream:
        if t.cont:
            if last is None:
                raise ValueError(f"{t} continues no pass")
            last = tok("EXEC", last.args[0], last.args[1], last.args[2] + 1)
            out += [Token(t.kind, t.args), last]
            continue
        if t.kind == "EXEC":
            last = t
        out.append(t)
    return out


def part_count(value: int) -> int:
    """Parts 0..k_max of a word, k_max its highest nonzero part (1 for zero)."""
    return next(k + 1 for k, bits in enumerate(PARTS) if value >> bits.stop == 0)


HIGH_ONES = (1 << WORD_BITS) - (1 << PARTS[1].start)     # a word's bits above part 0
TOP_BITS = 12                                              # a whole word's nonzero top bits
LOW_ZEROS = (1 << WORD_BITS - TOP_BITS) - 1                # ... and the bits below them, all zero


def whole_word(value: int) -> bool:
    """Whether VAL, VALU and a prompt's PART carry the word in one token, kind(*head, 0, word): its
    bits above part 0 all ones (-4096..-1 as an int32), or only its top TOP_BITS bits nonzero (a
    float with a short mantissa: 1.5, -2.0, 6.5)."""
    return value & HIGH_ONES == HIGH_ONES or (value & LOW_ZEROS == 0 and value != 0)


def part_tokens(kind: str, value: int, *head: int, whole: bool = True) -> list[Token]:
    """kind(*head, k, part k) for k = 0..k_max: how PART, VAL and VALU carry a word; a whole word
    is one token, kind(*head, 0, word), unless `whole` is False (an atomic's new value: the
    next-token logic writes it part by part)."""
    if whole and whole_word(value):
        return [tok(kind, *head, 0, value)]
    return [tok(kind, *head, k, value >> PARTS[k].start & (1 << len(PARTS[k])) - 1)
            for k in range(part_count(value))]


def writeback_tokens(lanes: list[int], values: list[int]) -> list[Token]:
    """The words of `lanes` (in lane order) as the model writes them: one VALU per part when
    they are all equal, else one VALA when they are progression(d, s, lane) with lane 0 among
    them (an address or index by thread: 4 tokens -> 1), else one VALQ when each is below
    2 ** Q_BITS (flags, small counts), else lane by lane: one VALP for lanes 2p and 2p + 1 when both
    are below 2 ** P_BITS, else each lane's VALs."""
    if len(set(values)) == 1:
        return part_tokens("VALU", values[0])
    stride = progression(lanes, values)
    if stride:
        return [tok("VALA", stride, values[0])]
    if max(values) >> Q_BITS == 0:
        return [tok("VALQ", pack_small(lanes, values))]
    out, i = [], 0
    while i < len(lanes):
        pair = values[i:i + 2]
        if lanes[i] % 2 == 0 and lanes[i + 1:i + 2] == [lanes[i] + 1] and max(pair) >> P_BITS == 0:
            out.append(tok("VALP", lanes[i] // 2, pack_pair(*pair)))
            i += 2
        else:
            out += part_tokens("VAL", values[i], lanes[i])
            i += 1
    return out


def pack_small(lanes: list[int], values: list[int]) -> int:
    """VALQ's payload: each lane's value (< 2 ** Q_BITS) in its Q_BITS bits, lanes not given 0."""
    return sum(v << Q_BITS * l for l, v in zip(lanes, values))


def unpack_small(d: int) -> list[int]:
    """Each lane's value in a VALQ payload."""
    return [d >> Q_BITS * l & (1 << Q_BITS) - 1 for l in range(isa.LANES)]


def pack_pair(low: int, high: int) -> int:
    """VALP's payload: the even lane's value (< 2 ** P_BITS) in the low bits, the odd lane's above."""
    return low | high << P_BITS


def unpack_pair(d: int) -> tuple[int, int]:
    """The even and the odd lane's values in a VALP payload."""
    return d & (1 << P_BITS) - 1, d >> P_BITS


def progression(lanes: list[int], values: list[int]) -> int | None:
    """The stride s in AP_STRIDES with values == lane_word(values[0], s, lane), when lanes start
    at lane 0 and every value fits part 0; None otherwise."""
    if lanes[0] != 0 or max(values) >> len(PARTS[0]):
        return None
    return next((s for s in AP_STRIDES if all(v == lane_word(values[0], s, l) for l, v in zip(lanes, values))),
                None)


def lane_word(d: int, stride: int, lane: int) -> int:
    """Lane `lane`'s word of a VALA(stride, d): d + stride * lane in part 0's 12 bits (the sum
    wraps like the circuit's adder, gadgets.plus_constant)."""
    return (d + stride * lane) % (1 << len(PARTS[0]))


def _bits(value: int, width: int) -> list[int]:
    if not 0 <= value < 1 << width:
        raise ValueError(f"{value} does not fit {width} bits")
    return [value >> i & 1 for i in range(width)]


def _onehot(value: int, width: int) -> list[int]:
    if not 0 <= value < width:
        raise ValueError(f"{value} out of range 0..{width - 1}")
    return [int(i == value) for i in range(width)]


ONEHOT = ("kind", "LANE", "PT", "W", "SLOT", "STRIDE")
# each kind's arguments: the fields they set, one per argument (PART, VAL and VALU set SD and SE below)
ARG_FIELDS = {"LATCH": ("V",), "PAGE": ("V",), "PUT": ("PT",), "EXEC": (("W", "WB"), "PC", "SLOT"), "VAL": ("LANE",),
              "ST": ("LANE",), "AT": ("LANE",), "AW": ("LANE",), "LD": ("LANE",), "CT1": ("PC", "MASK", "SP"),
              "CT2": ("ALIVE", "PHASE", "WAIT"), "CTA": ("CTA",), "COPY": ("CG",)}


def _field(name: str, value: int) -> list[int]:
    return (_onehot if name in ONEHOT else _bits)(value, FEATURES[name])


def features(token: Token) -> dict[str, list[int]]:
    """The token's feature values per field (fields not listed are 0)."""
    k, a = token.kind, token.args
    f = {"kind": _field("kind", KINDS.index(k))}
    for names, value in zip(ARG_FIELDS.get(k, ()), a):
        for name in (names,) if isinstance(names, str) else names:
            f[name] = _field(name, value)
    if token.cont:
        f["CONT"] = [1]
    if k == "VALA":
        f["STRIDE"] = _field("STRIDE", AP_STRIDES.index(a[0]))
    if k == "VALP":                        # two lanes; the payload in part 0's SD, no stage head written
        f["LANE"] = [int(l // 2 == a[0]) for l in range(isa.LANES)]
        f["SD"] = _bits(a[1], 2 * P_BITS) + [0] * (WORD_BITS - 2 * P_BITS)
    if k in ("PART", "VAL", "VALU", "VALA", "VALQ"):
        part, data = (0 if k in ("VALA", "VALQ") else a[-2]), a[-1]
        bits = PARTS[part]
        sd = [0] * WORD_BITS
        if part == 0 and whole_word(data):        # a whole word: every part
            sd = _bits(data, WORD_BITS)
        else:
            sd[bits.start: bits.stop] = _bits(data, len(bits))
        f["SD"], f["SE"] = sd, [int(j >= part) for j in range(len(PARTS))]
    return f


def token_runs() -> list[tuple[str, bool, list[tuple[int, ...]]]]:
    """The vocabulary as runs of one kind: (kind, cont, each token's args), in vocabulary order."""
    r = range
    parts = [(k, d) for k, bits in enumerate(PARTS) for d in r(1 << len(bits))]
    whole = [(0, HIGH_ONES | d) for d in r(1 << len(PARTS[0]))]
    whole += [(0, t << WORD_BITS - TOP_BITS) for t in r(1, 1 << TOP_BITS)]
    runs = [("LATCH", False, [(v,) for v in r(1 << LATCH_BITS)]),
            ("PAGE", False, [(k,) for k in r(GLOBAL_PAGES)]),
            ("PART", False, parts + whole),
            ("PUT", False, [(t,) for t in r(len(PUT_TARGETS))]),
            ("CTA", False, [(c,) for c in r(isa.MAX_GRID_BLOCKS)]),
            ("EXEC", False, [(w, pc, s) for w in r(isa.MAX_WARPS) for pc in r(isa.ROM_BLOCKS) for s in r(SLOTS)]),
            ("VAL", False, [(l, *p) for l in r(isa.LANES) for p in parts + whole]),
            ("VALU", False, parts + whole),
            ("VALA", False, [(s, d) for s in AP_STRIDES for d in r(1 << len(PARTS[0]))]),
            ("VALQ", False, [(d,) for d in r(1 << Q_BITS * isa.LANES)]),
            ("VALP", False, [(p, d) for p in r(isa.LANES // 2) for d in r(1 << 2 * P_BITS)])]
    runs += [(kind, True, args) for kind, _, args in runs if kind in CONTINUABLE]
    runs += [(kind, False, [(l,) for l in r(isa.LANES)]) for kind in ("ST", "AT", "AW", "LD")]
    runs += [("CT1", False, [(pc, m, sp) for pc in r(isa.ROM_BLOCKS) for m in r(1 << isa.LANES)
                             for sp in r(1 << FEATURES["SP"])]),
             ("CT2", False, [(al, ph, wt) for al in r(1 << isa.LANES) for ph in r(PHASES) for wt in r(2)]),
             ("COPY", False, [(g,) for g in r(1 << GROUP_BITS)]),
             ("HALT", False, [()]), ("FAULT", False, [()])]
    return runs


def all_tokens() -> list[Token]:
    """Every GPU token, in vocabulary order."""
    return [Token(kind, args, cont) for kind, cont, run in token_runs() for args in run]


class Vocab:
    """GPU tokens <-> ids (offset by the text vocabulary) <-> feature vectors. Ids are found run by
    run (token_runs), so a process that only maps a launch's tokens never builds all 252,602."""

    def __init__(self, first_id: int = 0):
        self.first_id = first_id
        self.runs = token_runs()
        self.starts = list(itertools.accumulate((len(args) for _, _, args in self.runs), initial=0))
        self.run_of = {(kind, cont): i for i, (kind, cont, _) in enumerate(self.runs)}
        assert len(self.run_of) == len(self.runs), "one run per kind and cont"
        self._places: dict[int, dict] = {}        # run -> {args: place in the run}, built on first use
        self.offsets, off = {}, 0
        for name, width in FEATURES.items():
            self.offsets[name] = off
            off += width
        self.width = off

    def __len__(self):
        return self.starts[-1]

    @functools.cached_property
    def tokens(self) -> list[Token]:
        return all_tokens()

    def id(self, token: Token) -> int:
        run = self.run_of.get((token.kind, token.cont))
        if run is not None:
            if run not in self._places:
                self._places[run] = {args: i for i, args in enumerate(self.runs[run][2])}
            place = self._places[run].get(token.args)
            if place is not None:
                return self.first_id + self.starts[run] + place
        raise ValueError(f"{token} is not a GPU token")

    def token(self, token_id: int) -> Token:
        i = token_id - self.first_id
        if not 0 <= i < len(self):
            raise ValueError(f"token id {token_id} is not a GPU token")
        run = bisect.bisect_right(self.starts, i) - 1
        kind, cont, args = self.runs[run]
        return Token(kind, args[i - self.starts[run]], cont)

    def vector(self, token: Token) -> np.ndarray:
        v = np.zeros(self.width)
        for name, values in features(token).items():
            v[self.offsets[name]: self.offsets[name] + len(values)] = values
        return v

    @functools.cached_property
    def matrix(self) -> np.ndarray:
        """[len(vocab), width] feature vectors, rows in vocabulary order (all distinct)."""
        m = np.stack([self.vector(t) for t in self.tokens])
        return m

    def name(self, token: Token) -> str:
        """The tokenizer's spelling of a GPU token."""
        return "<|gpu:" + str(token).replace(" ", "_") + "|>"
