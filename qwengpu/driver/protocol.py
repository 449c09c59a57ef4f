"""The launch protocol: the prompt that loads a launch into the machine, and the token
stream the model must then generate (docs/protocol.md; the design is docs/machine.md).

`prompt` only tokenizes the launch (ROM words, memory images, the special-register table
and the configuration); it does none of the kernel's work. `expected_stream` derives the
tokens the model must write from the reference interpreter's trace, for `--check replay`.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from qwengpu import interp, isa
from qwengpu.driver import copyout
from qwengpu.errors import MachineLimitError, MemoryFault
from qwengpu.launch import Launch
from qwengpu.machine.encoding import BlockCode
from qwengpu.machine.tokens import (LATCH_BITS, PUT_TARGETS, Token, continuing, part_tokens, tok, with_exec,
                                    writeback_tokens)
from qwengpu.machine.words import CONFIG, PHASES, SREG, SREG_BLOCK_WORD

# each kind's arguments by name: the fields compare() reports and don't-cares name
ARG_NAMES = {"LATCH": ("value",), "PAGE": ("page",), "PART": ("part", "data"), "PUT": ("target",), "CTA": ("cta",),
             "EXEC": ("warp", "pc", "slot"), "VAL": ("lane", "part", "data"), "VALU": ("part", "data"),
             "VALA": ("stride", "data"), "VALQ": ("data",), "VALP": ("pair", "data"),
             "ST": ("lane",), "AT": ("lane",), "AW": ("lane",), "LD": ("lane",),
             "CT1": ("pc", "mask", "sp"), "CT2": ("alive", "phase", "wait"),
             "COPY": ("group",), "HALT": (), "FAULT": ()}
CHECKS = (None, "replay")             # how a run's generated stream may be checked


# ---------------------------------------------------------------------------
# The prompt
# ---------------------------------------------------------------------------
def word_tokens(target: str, value: int) -> list[Token]:
    """PART(0, d0) .. PART(k_max, d) PUT(target), or PART(0, word) PUT(target) for a whole word
    (tokens.whole_word): stage the word, then write it at the latched row."""
    return part_tokens("PART", value) + [tok("PUT", PUT_TARGETS.index(target))]


def rows_tokens(rows: dict[int, list[tuple[str, int]]]) -> list[Token]:
    """One LATCH per row with a nonzero word, then that row's nonzero words (zero rows read 0)."""
    out = []
    for row, writes in rows.items():
        writes = [(target, value) for target, value in writes if value]
        if not writes:
            continue
        if not 0 <= row < 1 << LATCH_BITS:
            raise MachineLimitError(f"row {row} does not fit the {LATCH_BITS}-bit latch")
        out.append(tok("LATCH", row))
        for target, value in writes:
            out += word_tokens(target, value)
    return out


def space_tokens(target: str, words: Iterable[tuple[int, int]]) -> list[Token]:
    """A memory space's nonzero words (index, value): its lane words (isa.LANE_WORDS) by PUT(target)
    at row = index, then the words above, page by page: PAGE(k) and PUT(target.PAGED) at row =
    index - k * 2 ** LATCH_BITS. A launch within the lane words has the prompt it always had."""
    lane_words = isa.LANE_WORDS[isa.Space[target]]
    low, pages = {}, {}
    for w, value in words:
        if not value:
            continue
        if w < lane_words:
            low[w] = [(target, value)]
        else:
            page, row = divmod(w, 1 << LATCH_BITS)
            pages.setdefault(page, {})[row] = [(f"{target}.PAGED", value)]
    out = rows_tokens(low)
    for page, rows in sorted(pages.items()):
        out += [tok("PAGE", page)] + rows_tokens(rows)
    return out


def thread_masks(block: tuple[int, int, int]) -> list[int]:
    """Each warp's initial lane mask (lanes past the block's thread count are off)."""
    threads = block[0] * block[1] * block[2]
    return [sum(1 << l for l in range(isa.LANES) if w * isa.LANES + l < threads)
            for w in range(-(-threads // isa.LANES))]


def warp_sreg_words(grid, block, warp: int) -> tuple[int, int, int]:
    """Words 0-2 of the special-register table's row for `warp` (words.SREG; lanes past the
    block's thread count are 0)."""
    (gx, gy, gz), (bx, by, bz) = grid, block
    threads = [t for t in range(warp * isa.LANES, (warp + 1) * isa.LANES) if t < bx * by * bz]
    tid_x, tid_y, tid_z = ([t % bx for t in threads], [t // bx % by for t in threads],
                           [t // (bx * by) for t in threads])
    s0, s1, s2, _ = SREG
    return (s0.pack(tid_x=tid_x, ntid_x=bx, ntid_y=by), s1.pack(tid_y=tid_y, tid_z=tid_z),
            s2.pack(nctaid_x=gx, nctaid_y=gy, nctaid_z=gz, ntid_z=bz))


def block_sreg_word(grid, cta: int) -> int:
    """Word 3 of the special-register table's row for thread block `cta`: its indices."""
    gx, gy, _ = grid
    return SREG[SREG_BLOCK_WORD].pack(ctaid_x=cta % gx, ctaid_y=cta // gx % gy, ctaid_z=cta // (gx * gy))


def config_word(grid, block) -> int:
    """The CONFIG word (words.CONFIG)."""
    masks = thread_masks(block)
    return CONFIG.pack(nwarps=1 << len(masks) - 1, last_cta=grid[0] * grid[1] * grid[2] - 1, mask=masks)


def prompt(launch: Launch) -> list[Token]:
    """The prefill: ROM, GLOBAL and CONST (space_tokens), the special-register table, CONFIG and
    the copy-out list (launch.copy_out: the global words the model writes as tokens at the end,
    copyout.py), then CTA(0)."""
    grid, block = launch.grid, launch.machine_block
    rom = {pc: [(f"ROM{s}.{j}", w) for s, words in enumerate(code.words) for j, w in enumerate(words)]
           + [(f"PRE{s}.{j}", w) for s, words in code.pre_words.items() for j, w in enumerate(words)]
           + [("TERM", code.term)] for pc, code in enumerate(launch.code)}
    warps = len(thread_masks(block))
    sregs = {w: [(f"SREG{j}", v) for j, v in enumerate(warp_sreg_words(grid, block, w))] for w in range(warps)}
    for c in range(launch.ctas):
        sregs.setdefault(c, []).append((f"SREG{SREG_BLOCK_WORD}", block_sreg_word(grid, c)))
    first, rows = copyout.prompt_words(launch.copy_out or ())
    config = {0: [("CONFIG", config_word(grid, block)), ("COPY0", first)]}
    table = {g: [("COPYTAB", row)] for g, row in rows.items()}
    memory = launch.memory
    return (rows_tokens(rom) + space_tokens("GLOBAL", ((w, int(memory[w])) for w in np.flatnonzero(memory)))
            + space_tokens("CONST", enumerate(launch.const))
            + [t for rows in (sregs, config, table) for t in rows_tokens(rows)] + [tok("CTA", 0)])


# ---------------------------------------------------------------------------
# The stream the model must generate
# ---------------------------------------------------------------------------
@dataclass
class Stream:
    """The expected generated tokens; dont_care[i] names token i's fields that may differ.
    memory is global memory after the launch (the interpreter's); fault the interpreter's
    error when the launch ends in FAULT."""
    tokens: list[Token] = field(default_factory=list)
    dont_care: list[frozenset[str]] = field(default_factory=list)
    memory: np.ndarray | None = None
    fault: Exception | None = None

    def add(self, token: Token, dont_care: frozenset[str] = frozenset()) -> None:
        self.tokens.append(token)
        self.dont_care.append(dont_care)

    def extend(self, tokens) -> None:
        for t in tokens:
            self.add(t)


def _next_pass_of_same_warp(steps: list[interp.Step]) -> list[interp.Step | None]:
    """For each pass, the warp's next pass in the same thread block (None if it has none)."""
    later: dict[tuple[int, int], interp.Step] = {}
    out: list[interp.Step | None] = [None] * len(steps)
    for i in range(len(steps) - 1, -1, -1):
        key = (steps[i].block_id, steps[i].warp)
        out[i] = later.get(key)
        later[key] = steps[i]
    return out


def _instruction_tokens(stream: Stream, step: interp.Step, instrs: list[isa.Instr], code: BlockCode,
                        until: int | None = None) -> None:
    """The block's passes (those before the pass of instruction `until`, and that pass's EXEC). A
    pass whose writeback tokens end it runs the next pass of the block in its last one: that token
    continues (tokens.continuing) in place of the next pass's EXEC. An instruction in no pass
    (its result read only as a fixed operand: encoding.py) writes nothing back. A global, shared
    or CONST load with an active lane's word past its lane words (isa.LANE_WORDS) is read lane by lane,
    so it writes back lane by lane too: LD(l) and lane l's VALs for each active lane."""
    lanes = [l for l in range(isa.LANES) if step.mask >> l & 1]
    writes, stores = iter(step.reg_writes), iter(step.mem_writes)
    loads = [i for i, ins in enumerate(instrs[:step.ran]) if ins.op is isa.Op.LD]
    loaded = dict(zip(loads, step.loads))        # instruction -> its lanes' words (Step.loads)
    ran = 0                  # the instructions whose register writes the trace has given

    def values(i):
        nonlocal ran
        for j in range(ran, i + 1):          # those in no pass, then instruction i
            out = []
            for l in lanes if instrs[j].dst.n else ():
                lane, r, value = next(writes)
                assert (lane, r) == (l, instrs[j].dst.n), "interp trace out of step with the program"
                out.append(value)
        ran = i + 1
        return out

    written = False          # the pass before ended with its writeback tokens
    for p in code.passes:
        if written:
            stream.tokens[-1] = continuing(stream.tokens[-1])
        else:
            stream.add(tok("EXEC", step.warp, step.pc, p.slot))
        written = False
        if p.pre is not None:                # forwarded in the pass, never written back
            values(p.pre)
        if p.main is None or p.main == until:
            break
        ins = instrs[p.main]
        if ins.op is isa.Op.ST:
            for l in lanes:
                next(stores)
                stream.add(tok("ST", l))
        elif ins.op is isa.Op.ATOM:       # lane by lane: old -> register, new -> memory
            old = values(p.main)
            for l, value in zip(lanes, old or [None] * len(lanes)):
                stream.add(tok("AT", l))
                if ins.dst.n:
                    stream.extend(part_tokens("VAL", value, l))
                stream.extend(part_tokens("PART", next(stores)[2], whole=False))
                stream.add(tok("AW", l))
        else:
            if ins.dst.n and ins.op is isa.Op.LD and max(loaded[p.main]) >= isa.LANE_WORDS[ins.mod]:
                for l, value in zip(lanes, values(p.main)):
                    stream.add(tok("LD", l))
                    stream.extend(part_tokens("VAL", value, l))
                written = True
            elif ins.dst.n:
                stream.extend(writeback_tokens(lanes, values(p.main)))
                written = True


def expected_stream(launch: Launch) -> Stream:
    """The tokens after the prompt, from the interpreter's trace (docs/protocol.md), ending
    with the copy-out of the words launch.copy_out (when there is no fault) and HALT.

    CT1 is the warp's new top of stack, which is where its next pass starts, and comes only
    when the top is another stack entry (a push, a pop, an exit: `Step.new_top`; the model's
    stack depth changes exactly then) or its mask changed other than by lanes that exit (the
    machine reads a status mask ANDed with alive), and some lane is alive; otherwise the next
    EXEC of the warp carries its new pc. Its sp is always don't-care (the lazy stack's depth
    may differ from interp's), and so is CT1 of a warp that, before a deadlock's FAULT, never
    runs again. CT2 comes only when the warp's alive lanes or barrier phase change (EXIT,
    BAR: the wait bit it sets at a BAR is cleared by the warp's next EXEC), after CT1 if there
    is one, and not when the thread block's last live lanes exit. After a BAR, the mask is the
    lanes that arrived, also when the warp never runs again (it is its next pass's mask when
    every live lane arrived): a divergent barrier (some live lanes of the warp did not arrive,
    interp's DeadlockError) ends the stream with that BAR's [CT1 (pc don't-care)] CT2 and
    FAULT. A memory fault ends the stream with FAULT right after the faulting instruction's
    EXEC; other interpreter errors propagate. launch.memory is not modified."""
    program, codes = launch.program, launch.code
    traced = replace(launch, memory=launch.memory.copy())
    run = interp.run_launch(traced, trace=True, max_passes=1_000_000, keep_fault=True)
    steps, fault = run.steps, run.fault
    masks = thread_masks(launch.machine_block)
    stream = Stream(memory=traced.memory, fault=fault)
    following = _next_pass_of_same_warp(steps)
    for i, step in enumerate(steps):
        if not i or step.block_id != steps[i - 1].block_id:
            if i:
                stream.add(tok("CTA", step.block_id))
            status = [(mask, 0, 0) for mask in masks]          # alive, phase mod PHASES, wait
        instrs, term = program.blocks[step.pc].instrs, program.blocks[step.pc].term
        if isinstance(fault, MemoryFault) and i == len(steps) - 1:     # up to the faulting memory op's EXEC
            _instruction_tokens(stream, step, instrs, codes[step.pc], until=step.ran)
            break
        _instruction_tokens(stream, step, instrs, codes[step.pc])
        w, bar = step.warp, term.kind is isa.Term.BAR
        alive, phase, _ = status[w]
        status[w] = (alive, phase, 0)                       # its EXEC cleared wait
        alive &= ~step.exited
        new = (alive, (phase + bar) % PHASES, int(bar))
        nxt = following[i]
        if alive and nxt is not None:
            if step.new_top or nxt.mask != step.mask & alive:      # the mask is read ANDed with alive
                stream.add(tok("CT1", nxt.pc, nxt.mask, 0), frozenset({"sp"}))
        elif alive and bar:                                 # never runs again: a deadlock follows
            if step.new_top:
                stream.add(tok("CT1", 0, step.mask, 0), frozenset({"pc", "sp"}))
        elif alive:
            assert fault, "a live warp without a next pass: interp should have raised"
            stream.add(tok("CT1", 0, 0, 0), frozenset({"pc", "mask", "sp"}))
        status[w], old = new, status[w]
        if new != old and not _thread_block_ends(status):
            stream.add(tok("CT2", *new))
    if not fault:
        stream.extend(copyout.expected_tokens(launch.copy_out or (), traced.memory))
    stream.add(tok("FAULT" if fault else "HALT"))
    return stream


def _thread_block_ends(status: list[tuple[int, int, int]]) -> bool:
    """Whether no warp of the thread block is alive: then the next token is the next CTA, the
    copy-out's first COPY or HALT, with no CT2 before it (every status is reset or never read again)."""
    return not any(alive for alive, _, _ in status)


def pass_counts(codes: list[BlockCode], stream: Iterable[Token]) -> tuple[int, int]:
    """(instructions, blocks) the stream's EXEC passes ran, for a program of ROM encoding `codes`
    (Launch.code): a pair's pass runs two instructions, a terminator pass of its own none, a
    block's first pass also those in no pass (read as fixed operands: encoding.py); a block's
    last pass ends it."""
    instructions = blocks = 0
    for t in with_exec(list(stream)):
        if t.kind != "EXEC":
            continue
        _, pc, slot = t.args
        p = codes[pc].pass_at(slot) if pc < len(codes) else None
        if p is not None:
            instructions += (p.main is not None) + (p.pre is not None)
            instructions += len(codes[pc].unrun) if slot == 0 else 0
            blocks += p is codes[pc].passes[-1]
    return instructions, blocks


# ---------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------
END = "<end of stream>"


@dataclass(frozen=True)
class Mismatch:
    index: int                 # position in the generated stream
    expected: str
    got: str
    fields: tuple[str, ...]    # "kind", "length", "cont", or the argument names that differ

    def __str__(self):
        return (f"token {self.index}: expected {self.expected}, got {self.got} "
                f"({', '.join(self.fields)} differ{'s' if len(self.fields) == 1 else ''})")


def check_token(expected: Stream, index: int, got: Token) -> Mismatch | None:
    """Token `index` of a generated stream against the expected one, honouring don't-cares."""
    if index >= len(expected.tokens):
        return Mismatch(index, END, str(got), ("length",))
    want = expected.tokens[index]
    if want.kind != got.kind:
        return Mismatch(index, str(want), str(got), ("kind",))
    if want.cont != got.cont:
        return Mismatch(index, str(want), str(got), ("cont",))
    skip = expected.dont_care[index]
    differ = tuple(name for name, a, b in zip(ARG_NAMES[want.kind], want.args, got.args)
                   if a != b and name not in skip)
    return Mismatch(index, str(want), str(got), differ) if differ else None


def compare(expected: Stream | list[Token], got: list[Token]) -> Mismatch | None:
    """The first mismatch of a whole generated stream (a list of tokens means no don't-cares)."""
    if not isinstance(expected, Stream):
        expected = Stream(list(expected), [frozenset()] * len(expected))
    for i, token in enumerate(got):
        mismatch = check_token(expected, i, token)
        if mismatch:
            return mismatch
    if len(got) < len(expected.tokens):
        return Mismatch(len(got), str(expected.tokens[len(got)]), END, ("length",))
    return None
