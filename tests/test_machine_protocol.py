"""The launch protocol: the prompt decodes back to the launch, and the expected stream of
small hand-written programs equals token lists derived by hand from docs/machine.md."""
from collections import defaultdict

import numpy as np
import pytest

from qwengpu import isa
from qwengpu.errors import DeadlockError, MachineLimitError, MemoryFault
from qwengpu.isa import Imm, Instr, MachineBlock, Op, Param, Program, Reg, SReg, Space, Term, Terminator
from qwengpu.machine.encoding import Pass, encode, encode_block
from qwengpu.driver.protocol import Stream, compare, expected_stream, prompt
from qwengpu.launch import Launch
from qwengpu.machine.tokens import PUT_TARGETS, ROM_WORDS, Token, with_exec

r = Reg


def T(kind, *args):
    return Token(kind, tuple(args))


def exec_(w, pc, s):
    return T("EXEC", w, pc, s)


def C(kind, *args):
    """A continuing token: it also runs the next pass of its block, so no EXEC follows it."""
    return Token(kind, tuple(args), cont=True)


def parts(value, n):
    """The first n 12-bit parts of a word (docs/protocol.md: bits 0-11, 12-23, 24-31)."""
    return [(k, value >> 12 * k & 0xFFF) for k in range(n)]


def vals(lane, value, nparts):
    return [T("VAL", lane, *p) for p in parts(value, nparts)]


def valu(value, nparts):
    """A value every active lane gets: written once, for all of them."""
    return [T("VALU", *p) for p in parts(value, nparts)]


def jmp(target):
    return Terminator(Term.JMP, target)


EXIT = Terminator(Term.EXIT)


# --- an independent decoder of the prompt -----------------------------------------
def decode_prompt(tokens):
    """Replay LATCH/PAGE/PART/PUT as docs/protocol.md describes them: {target: {row: word}}, a
    GLOBAL row being the word page * 1024 + latch. Also checks the format: PART runs start at 0,
    ascend by one and end on a nonzero part (or are a single part), one LATCH per row per
    section, and the prompt ends with CTA 0."""
    assert tokens[-1] == T("CTA", 0) and all(t.kind in ("LATCH", "PAGE", "PART", "PUT") for t in tokens[:-1])
    tables = defaultdict(dict)
    latch, page, staged, run, latched = None, 0, [0] * 3, [], []
    for t in tokens[:-1]:
        if t.kind == "LATCH":
            assert not run
            latch = t.args[0]
            latched.append(latch)
        elif t.kind == "PAGE":
            assert not run
            page = t.args[0]
        elif t.kind == "PART":
            k, d = t.args
            assert k == len(run), "parts ascend from 0"
            staged[k:] = [d] + [0] * (2 - k)
            run.append(d)
        else:
            assert run and (len(run) == 1 or run[-1] != 0), "up to the highest nonzero part"
            word = sum(p << 12 * k for k, p in enumerate(staged))
            assert word != 0, "zero words are not written"
            target = PUT_TARGETS[t.args[0]]
            row = latch
            if target.endswith(".PAGED"):    # a word past the lane words: its page, then the latch
                target, row = target[:-len(".PAGED")], page * 1024 + latch
            assert row not in tables[target]
            tables[target][row] = word
            run = []
    return tables, latched


def divergent_program(load_at=4, **kw):
    """tid < 2 takes B1 (r3 = 5, exits), the others B2 (r3 = 0x300), reconverging at B3 (a load)."""
    blocks = [
        MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)), Instr(Op.SETLT, r(2), (r(1), Imm(2)))],
                     Terminator(Term.BRC, 1, r(2), 2, 3)),
        MachineBlock([Instr(Op.MOV, r(3), (Imm(5),))], EXIT),
        MachineBlock([Instr(Op.MOV, r(3), (Imm(0x300),))], jmp(3)),
        MachineBlock([Instr(Op.LD, r(4), (Imm(0), Imm(load_at)), Space.GLOBAL)], EXIT),
    ]
    return Program("div", blocks, [Param("a", 0), Param("b", 1)], **kw)


def test_prompt_decodes_back_to_the_launch():
    program = divergent_program(const_init={5: 0xDEAD_BEEF, 6: 0})
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    memory[[0, 7, 1023]] = [0x100, 0xFFFF_FFFF, 3]
    grid, block = (3, 2), (3, 2, 2)                      # 6 thread blocks of 12 threads: 3 warps
    tables, latched = decode_prompt(prompt(Launch.from_words(program, grid, block, [0x1234, 0], memory)))
    # ROM: every slot's words at row pc (unwritten rows read 0)
    for pc, code in enumerate(encode(program)):
        for s in range(isa.BLOCK_SLOTS):
            words = code.words[s] if s < len(code.words) else (0,) * ROM_WORDS
            assert [tables[f"ROM{s}.{j}"].get(pc, 0) for j in range(ROM_WORDS)] == list(words)
        for s in range(isa.BLOCK_SLOTS - 1):
            assert [tables[f"PRE{s}.{j}"].get(pc, 0) for j in range(2)] == list(code.pre_words.get(s, (0, 0)))
        assert tables["TERM"].get(pc, 0) == code.term
    assert sorted(tables["GLOBAL"].items()) == [(0, 0x100), (7, 0xFFFF_FFFF), (1023, 3)]
    assert tables["CONST"] == {0: 0x1234, 5: 0xDEAD_BEEF}
    # special-register table, decoded field by field: words 0-2 a row per warp, word 3 a row per block
    for warp in range(3):
        s0, s1, s2 = (tables[f"SREG{j}"].get(warp, 0) for j in range(3))
        for lane in range(4):
            tz, ty, tx = np.unravel_index(warp * 4 + lane, (2, 2, 3))
            assert (s0 >> 4 * lane & 15, s1 >> 4 * lane & 15, s1 >> 16 + 4 * lane & 15) == (tx, ty, tz)
        assert (s0 >> 16 & 31, s0 >> 21 & 31, s2 >> 27 & 31) == (3, 2, 2)          # ntid
        assert [s2 >> 9 * i & 511 for i in range(3)] == [3, 2, 1]                    # nctaid
    assert not any(row >= 3 for j in range(3) for row in tables[f"SREG{j}"])        # no 4th warp
    for cta in range(6):
        cz, cy, cx = np.unravel_index(cta, (1, 2, 3))
        s3 = tables["SREG3"].get(cta, 0)
        assert (s3 & 255, s3 >> 8 & 255, s3 >> 16 & 255) == (cx, cy, cz)
    config = tables["CONFIG"][0]
    assert config & 15 == 0b0100 and config >> 20 & 255 == 5
    assert [config >> 4 + 4 * w & 15 for w in range(4)] == [15, 15, 15, 0]
    # one LATCH per row within each section
    assert latched.count(0) == 5        # ROM, GLOBAL, CONST, SREG, CONFIG


def test_prompt_words_past_1024_go_through_pages():
    """Word w >= 1024 is PAGE(w // 1024) then LATCH(w % 1024), its parts, PUT(GLOBAL.PAGED): the pages in
    order after page 0's words, each page once; a launch within words 0..1023 has no PAGE at all."""
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    memory[[3, 1023, 1024, 5000, 5001, 16383]] = [9, 1, 0x12345, 0xABC, 0x7000_0000, 0xFFFF_FFFF]
    program = Program("k", [MachineBlock([], EXIT)], [])
    toks = prompt(Launch.from_words(program, 1, 1, [], memory))
    put = T("PUT", PUT_TARGETS.index("GLOBAL.PAGED"))
    # 5000 = 4 * 1024 + 904, 5001 = 4 * 1024 + 905, 16383 = 15 * 1024 + 1023, 1024 = 1 * 1024 + 0
    assert [t for t in toks if t.kind == "PAGE"] == [T("PAGE", 1), T("PAGE", 4), T("PAGE", 15)]
    i = toks.index(T("PAGE", 1))
    assert toks[i - 3:i] == [T("LATCH", 1023), T("PART", 0, 1), T("PUT", PUT_TARGETS.index("GLOBAL"))]   # page 0 first
    assert toks[i:i + 5] == [T("PAGE", 1), T("LATCH", 0), T("PART", 0, 0x345), T("PART", 1, 0x12), put]
    i = toks.index(T("PAGE", 4))
    assert toks[i:i + 8] == [T("PAGE", 4), T("LATCH", 904), T("PART", 0, 0xABC), put,
                             T("LATCH", 905), T("PART", 0, 0x7000_0000), put, T("PAGE", 15)]   # 0x70000000: whole
    assert toks[i + 8:i + 11] == [T("LATCH", 1023), T("PART", 0, 0xFFFF_FFFF), put]
    tables, _ = decode_prompt(toks)
    assert tables["GLOBAL"] == {3: 9, 1023: 1, 1024: 0x12345, 5000: 0xABC, 5001: 0x7000_0000, 16383: 0xFFFF_FFFF}
    # the same launch without its words past 1023: no PAGE, and exactly the prompt's other tokens
    low = memory.copy()
    low[1024:] = 0
    plain = prompt(Launch.from_words(program, 1, 1, [], low))
    assert not any(t.kind == "PAGE" for t in plain)
    assert plain == toks[:toks.index(T("PAGE", 1))] + toks[toks.index(T("LATCH", 1023), i) + 3:]


def test_prompt_lanes_past_the_thread_count_are_zero():
    tables, _ = decode_prompt(prompt(Launch.from_words(divergent_program(), 1, 5, [0, 0])))
    assert tables["SREG0"][1] == 4 | 5 << 16 | 1 << 21    # warp 1: tid.x = 4 in lane 0, lanes 1-3 zero; ntid 5, 1
    assert sorted(tables["SREG2"]) == [0, 1]       # one thread block of two warps
    assert "SREG1" not in tables and "SREG3" not in tables      # tid.y, tid.z and block 0's indices: 0
    assert tables["CONFIG"][0] == 0b0010 | 0b1111 << 4 | 0b0001 << 8 | 0 << 20


def test_prompt_word_parts_up_to_the_highest_nonzero_part_or_one_whole_word():
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    memory[2:6] = 0x00FF_0000, 0xF000_0001, 0xF000_0000, 0xFFFF_F123
    toks = prompt(Launch.from_words(Program("k", [MachineBlock([], EXIT)], []), 1, 1, [], memory))
    put = T("PUT", PUT_TARGETS.index("GLOBAL"))
    i = toks.index(T("LATCH", 2))
    assert toks[i:i + 4] == [T("LATCH", 2), T("PART", 0, 0), T("PART", 1, 0xFF0), put]
    i = toks.index(T("LATCH", 3))
    assert toks[i:i + 5] == [T("LATCH", 3), T("PART", 0, 1), T("PART", 1, 0), T("PART", 2, 0xF0), put]
    # bits 0-19 zero (a short float), or bits 12-31 all ones (-3805): one token for the word
    i = toks.index(T("LATCH", 4))
    assert toks[i:i + 3] == [T("LATCH", 4), T("PART", 0, 0xF000_0000), put]
    i = toks.index(T("LATCH", 5))
    assert toks[i:i + 3] == [T("LATCH", 5), T("PART", 0, 0xFFFF_F123), put]


# --- expected streams, derived by hand --------------------------------------------
def test_straight_line_with_store():
    blocks = [
        MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)),
                      Instr(Op.ADD, r(0), (r(1), Imm(1))),            # writes r0: no VAL
                      Instr(Op.SHL, r(2), (r(1), Imm(2))),
                      Instr(Op.ST, r(0), (r(2), Imm(0), r(1)), Space.GLOBAL)], jmp(1)),
        MachineBlock([Instr(Op.MOV, r(3), (Imm(0x0100_0000),))], EXIT),
    ]
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 3, [], memory))
    want = [exec_(0, 0, 0), C("VALA", 1, 0),               # tid: 0, 1, 2 = 0 + 1 * lane; runs pass 1
            C("VALA", 4, 0),                            # tid << 2 (the ADD, dead, pairs with the SHL); runs pass 2
            T("ST", 0), T("ST", 1), T("ST", 2),                                # the JMP runs in the ST's pass
            exec_(0, 1, 0), T("VALU", 0, 1 << 24),     # same stack entry and mask: no CT1 (nor CT2); MOV and EXIT; a whole word
            T("HALT")]                 # every lane of the thread block exits: no CT1 (no top of stack), nor CT2
    assert got.tokens == want
    assert not any(got.dont_care)               # no CT1, whose fields alone may be don't-care here
    assert got.memory[:4].tolist() == [0, 1, 2, 0] and not memory.any()   # the caller's memory is untouched


def test_a_pass_that_writes_nothing_back_leaves_the_next_pass_to_an_exec():
    blocks = [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)),
                            Instr(Op.SHL, r(2), (r(1), Imm(2))),
                            Instr(Op.ST, r(0), (r(2), Imm(0), r(1)), Space.GLOBAL),
                            Instr(Op.MOV, r(3), (Imm(7),))], EXIT)]
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 3))
    want = [exec_(0, 0, 0), C("VALA", 1, 0),                 # tid, and the store's pass (the SHL pairs into it)
            T("ST", 0), T("ST", 1), T("ST", 2),              # no register written back: nothing to continue
            exec_(0, 0, 2), *valu(7, 1),                     # the MOV, and the EXIT in its pass
            T("HALT")]
    assert got.tokens == want


def test_with_exec_writes_out_the_passes_continuing_tokens_run():
    blocks = [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)),
                            Instr(Op.ADD, r(2), (r(1), Imm(3))),            # read after the next one: no pair
                            Instr(Op.ADD, r(3), (r(1), Imm(5))),            # pairs with the last ADD
                            Instr(Op.ADD, r(4), (r(2), r(3)))], EXIT)]
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 2)).tokens
    assert got[:4] == [exec_(0, 0, 0), C("VALA", 1, 0), C("VALA", 1, 3), T("VALA", 2, 8)]    # r4 = 2 tid + 8
    assert with_exec(got)[:7] == [exec_(0, 0, 0), T("VALA", 1, 0), exec_(0, 0, 1), T("VALA", 1, 3),
                                  exec_(0, 0, 2), T("VALA", 2, 8), got[4]]
    with pytest.raises(ValueError, match=r"VALA s1 0x03 \+ continues no pass"):
        with_exec(got[2:])
    plain = [Token(t.kind, t.args) for t in got]         # the model forgot to continue: a mismatch of its own
    assert compare(got, plain).fields == ("cont",) and compare(got, plain).index == 1


def test_divergent_branch_partial_exit_and_reconvergence():
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    memory[1] = 0xABCDEF
    got = expected_stream(Launch.from_words(divergent_program(), 1, 4, [0, 0], memory)).tokens
    want = [exec_(0, 0, 0), C("VALA", 1, 0),            # and the BRC's pass, which SETLT's pre-ALU forwards r2 to
            T("CT1", 1, 0b0011, 0),
            exec_(0, 1, 0), *valu(5, 1),                                        # the others fold
            T("CT1", 2, 0b1100, 0), T("CT2", 0b1100, 0, 0),                     # lanes 0, 1 exit
            exec_(0, 2, 0), *valu(0x300, 1),
            T("CT1", 3, 0b1100, 0),                     # reconverged: the same mask, but another stack entry
            exec_(0, 3, 0), *valu(0xABCDEF, 2),
            T("HALT")]
    assert got == want
    # a load from byte address -4 faults: FAULT right after the load's EXEC
    faulty = expected_stream(Launch.from_words(divergent_program(load_at=-4), 1, 4, [0, 0], memory))
    assert faulty.tokens == want[:want.index(exec_(0, 3, 0)) + 1] + [T("FAULT")]
    assert isinstance(faulty.fault, MemoryFault) and "load at global byte address" in str(faulty.fault)


def test_lanes_that_exit_without_a_new_top_of_stack_leave_with_ct2_alone():
    """A BRC whose taken lanes exit (target -1) keeps the warp's stack entry: the mask the
    machine reads is the old one ANDed with alive, so only CT2 (lanes 1-3 gone) follows; then
    lane 0's block, and its EXIT ends the thread block: no CT2 before HALT."""
    blocks = [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),))], Terminator(Term.BRC, -1, r(1), 1, -1)),
              MachineBlock([Instr(Op.MOV, r(2), (Imm(5),))], EXIT)]
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 4)).tokens
    assert got == [exec_(0, 0, 0), T("CT2", 0b0001, 0, 0), exec_(0, 1, 0), *valu(5, 1), T("HALT")]


def test_barrier_with_two_warps():
    blocks = [MachineBlock([], Terminator(Term.BAR, 1)), MachineBlock([], EXIT)]
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 6)).tokens
    assert got == [exec_(0, 0, 0), T("CT2", 0b1111, 1, 1),       # the mask stays: no CT1
                   exec_(1, 0, 0), T("CT2", 0b0011, 1, 1),
                   exec_(0, 1, 0), T("CT2", 0, 1, 0),           # its EXEC cleared wait; all exit: no CT1
                   exec_(1, 1, 0), T("HALT")]                   # the thread block's last lanes exit: no CT2


def test_a_released_warp_needs_no_ct2_to_stop_waiting():
    blocks = [MachineBlock([], Terminator(Term.BAR, 1)),
              MachineBlock([Instr(Op.MOV, r(1), (Imm(5),))], jmp(2)), MachineBlock([], EXIT)]
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 4)).tokens
    assert got == [exec_(0, 0, 0), T("CT2", 0b1111, 1, 1),
                   exec_(0, 1, 0), *valu(5, 1),             # its EXEC cleared wait: no CT2(0b1111, 1, 0)
                   exec_(0, 2, 0), T("HALT")]


def test_two_thread_blocks():
    """ctaid.x + 1 per thread block (ctaid.x an ADD's fixed operand: its S2R runs in no pass)."""
    blocks = [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.CTAID_X),)), Instr(Op.ADD, r(2), (r(1), Imm(1)))], EXIT)]
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 2, 1)).tokens
    per_block = lambda c: [exec_(0, 0, 0), *valu(c + 1, 1)]         # its end is the next CTA's or HALT's
    assert got == per_block(0) + [T("CTA", 1)] + per_block(1) + [T("HALT")]


def test_deadlock_ends_in_fault():
    """Lane 1 waits at a barrier that lane 0 (diverged, never reconverging) cannot reach: the
    lanes that arrived are the BRC's CT1 mask (0b0010, not CT2's alive 0b0011; the BAR keeps
    it, so no CT1 of its own), then FAULT. The BRC's condition tid.x is a fixed operand: its
    S2R runs in no pass, so the block is its terminator's pass alone."""
    blocks = [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),))], Terminator(Term.BRC, 1, r(1), 2, -1)),
              MachineBlock([], Terminator(Term.BAR, 2)), MachineBlock([], EXIT)]
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 2))
    assert got.tokens == [exec_(0, 0, 0), T("CT1", 1, 0b0010, 0),
                          exec_(0, 1, 0), T("CT2", 0b0011, 1, 1), T("FAULT")]
    assert isinstance(got.fault, DeadlockError)


@pytest.mark.parametrize("lanes, values, want", [
    ([0, 1, 2, 3], [7, 7, 7, 7], [T("VALU", 0, 7)]),
    ([0, 1, 2, 3], [5, 6, 7, 8], [T("VALA", 1, 5)]),
    ([0, 2], [0x100, 0x110], [T("VALA", 8, 0x100)]),                  # by lane index: 0x100 + 8 * 2
    ([0, 1, 3], [4092, 4093, 4095], [T("VALA", 1, 4092)]),            # the largest that fits part 0
    ([0, 1, 2, 3], [4090, 4094, 2, 6], [T("VALA", 4, 4090)]),         # wraps in part 0's 12 bits, as the circuit adds
    ([0, 1], [4095, 4096], [T("VAL", 0, 0, 0xFFF), T("VAL", 1, 0, 0), T("VAL", 1, 1, 1)]),     # 4096: part 1
    ([1, 2, 3], [9, 10, 11], [T("VAL", 1, 0, 9), T("VALP", 1, 10 + 11 * 64)]),   # not from lane 0; lanes 2, 3 a pair
    ([0, 1, 2], [10, 13, 16], [T("VALP", 0, 10 + 13 * 64), T("VAL", 2, 0, 16)]),   # stride 3
    ([0, 1], [9, 8], [T("VALP", 0, 9 + 8 * 64)]),                                  # downwards
    ([0, 1, 2], [10, 11, 13], [T("VALP", 0, 10 + 11 * 64), T("VAL", 2, 0, 13)]),   # not a progression
    ([0, 1, 2, 3], [63, 64, 1, 62], [T("VAL", 0, 0, 63), T("VAL", 1, 0, 64), T("VALP", 1, 1 + 62 * 64)]),  # 64: not small
    ([0, 2], [5, 40], [T("VAL", 0, 0, 5), T("VAL", 2, 0, 40)]),                   # lanes 0, 2: not a pair
    ([1, 2], [3, 9], [T("VAL", 1, 0, 3), T("VAL", 2, 0, 9)]),                     # lanes 1, 2: not a pair
    ([0, 1, 2, 3], [1, 0, 3, 7], [T("VALQ", 1 | 0 << 3 | 3 << 6 | 7 << 9)]),   # each below 8: 3 bits a lane
    ([1, 3], [5, 2], [T("VALQ", 5 << 3 | 2 << 9)]),                           # lanes not given: 0
    ([0, 1, 2, 3], [0, 1, 2, 3], [T("VALA", 1, 0)]),                          # small, and a progression: VALA
    ([0, 1], [6, 9], [T("VALP", 0, 6 + 9 * 64)]),                             # 9 is not below 8, both below 64
    ([0, 1, 2, 3], [0xFFFFFFFF] * 4, [T("VALU", 0, 0xFFFFFFFF)]),      # -1: bits above part 0 all ones, one token
    ([0, 1], [0xFFFFF000, 0xFFFFF001], [T("VAL", 0, 0, 0xFFFFF000), T("VAL", 1, 0, 0xFFFFF001)]),   # no VALA
    ([0], [0xFFFFEFFF], [T("VALU", 0, 0xFFF), T("VALU", 1, 0xFFE), T("VALU", 2, 0xFF)]),   # -4097: three parts
    ([0, 1], [0x7FFFF000, 1], [T("VAL", 0, 0, 0), T("VAL", 0, 1, 0xFFF), T("VAL", 0, 2, 0x7F),
                               T("VAL", 1, 0, 1)]),                                  # bit 31 clear: parts
    ([0, 1, 2, 3], [0x3FC0_0000] * 4, [T("VALU", 0, 0x3FC0_0000)]),   # 1.5: bits 0-19 zero, one token
    ([0, 1], [0x40D0_0000, 0x8000_0000], [T("VAL", 0, 0, 0x40D0_0000), T("VAL", 1, 0, 0x8000_0000)]),  # 6.5, -0.0
    ([0], [0x0010_0000], [T("VALU", 0, 0x0010_0000)]),                # bit 20 alone: the lowest top bit
    ([0], [0x0008_0000], [T("VALU", 0, 0), T("VALU", 1, 0x80)]),      # bit 19 alone: parts
    ([0], [0x3FC0_8000], [T("VALU", 0, 0), T("VALU", 1, 0xC08), T("VALU", 2, 0x3F)]),   # bit 15 set: parts
])
def test_writeback_tokens_pick_valu_vala_or_val(lanes, values, want):
    from qwengpu.machine.tokens import writeback_tokens
    assert writeback_tokens(lanes, values) == want


def test_vala_features_are_part_0_and_a_one_hot_stride():
    from qwengpu.machine.tokens import AP_STRIDES, features
    f = features(T("VALA", 4, 0x123))
    assert f["STRIDE"] == [int(s == 4) for s in AP_STRIDES]
    assert f["SD"] == [0x123 >> i & 1 for i in range(12)] + [0] * 20 and f["SE"] == [1, 1, 1]


def test_valq_features_and_spelling():
    """VALQ(d) carries its 12 bits in part 0 of SD (lane l's value in bits 3l..3l+2) like VALA."""
    from qwengpu.machine.tokens import features, unpack_small
    f = features(T("VALQ", 0b111_000_101_001))
    assert f["SD"] == [1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 1] + [0] * 20 and f["SE"] == [1, 1, 1]
    assert unpack_small(0b111_000_101_001) == [1, 5, 0, 7] and str(T("VALQ", 0b111_000_101_001)) == "VALQ 1,5,0,7"


def test_valp_features_and_spelling():
    """VALP(p, d) names lanes 2p and 2p + 1 (LANE two-hot) and carries both values in SD's low 12
    bits, the even lane's in bits 0-5; it writes no stage head (its lanes' words come from SD)."""
    from qwengpu.machine.tokens import features, unpack_pair
    f = features(T("VALP", 1, 5 | 33 << 6))
    assert f["LANE"] == [0, 0, 1, 1] and "SE" not in f
    assert f["SD"] == [1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1] + [0] * 20
    assert unpack_pair(5 | 33 << 6) == (5, 33) and str(T("VALP", 1, 5 | 33 << 6)) == "VALP l23 5,33"


def test_a_whole_word_token_stages_every_part():
    """VAL/VALU(0, word) of a whole word (bits above part 0 all ones, or bits 0-19 zero and the word
    not 0) sets every SD bit of the word and writes all three stage heads (SE), so the register gets
    the word in one token; other data past part 0 is refused. A prompt's PART takes the whole word
    too; an atomic's new value (whole=False) goes part by part, as the next-token logic writes it."""
    from qwengpu.machine.tokens import features, part_tokens
    f = features(T("VAL", 2, 0, 0xFFFFF123))
    assert f["SD"] == [0xFFFFF123 >> i & 1 for i in range(32)] and f["SE"] == [1, 1, 1]
    assert f["LANE"] == [0, 0, 1, 0]
    assert features(T("VALU", 0, 0xFFFFF000))["SD"] == [0] * 12 + [1] * 20
    assert features(T("VAL", 1, 0, 0x40D0_0000))["SD"] == [0x40D0_0000 >> i & 1 for i in range(32)]   # 6.5
    with pytest.raises(ValueError, match="does not fit"):
        features(T("VAL", 0, 0, 0x7FFFF123))
    with pytest.raises(ValueError, match="does not fit"):
        features(T("VALU", 0, 0x3FC0_8000))                     # bits 0-19 not all zero
    assert part_tokens("PART", 0xFFFFFFFF) == [T("PART", 0, 0xFFFFFFFF)]
    assert features(T("PART", 0, 0xFFFFFFFF))["SD"] == [1] * 32 and features(T("PART", 0, 0xFFFFFFFF))["SE"] == [1, 1, 1]
    assert part_tokens("PART", 0xFFFFFFFF, whole=False) == [T("PART", 0, 0xFFF), T("PART", 1, 0xFFF),
                                                           T("PART", 2, 0xFF)]


def test_every_token_kind_has_argument_names():
    from qwengpu.driver.protocol import ARG_NAMES
    from qwengpu.machine.tokens import KINDS, all_tokens
    assert set(ARG_NAMES) == set(KINDS)
    assert all(len(ARG_NAMES[t.kind]) == len(t.args) for t in all_tokens())


def test_vocabulary_ids_follow_the_token_table_run_by_run():
    from qwengpu.machine.tokens import Vocab, all_tokens
    table, vocab = all_tokens(), Vocab(first_id=100)
    assert len(vocab) == len(table) == len(set(table))
    assert [vocab.id(t) for t in table] == list(range(100, 100 + len(table)))
    assert [vocab.token(100 + i) for i in range(len(table))] == table
    for bad in (Token("VAL", (4, 0, 0)), Token("HALT", (), True), Token("EXEC", (0, 0, 99)), Token("NOPE")):
        with pytest.raises(ValueError, match="is not a GPU token"):
            vocab.id(bad)
    for bad in (99, 100 + len(table)):
        with pytest.raises(ValueError, match="is not a GPU token"):
            vocab.token(bad)


# --- compare ----------------------------------------------------------------------
STREAM = Stream([exec_(0, 1, 0), *vals(2, 0x12345, 2), T("CT1", 0, 0, 0), T("CT2", 0, 1, 0), T("HALT")],
                [frozenset(), frozenset(), frozenset(), frozenset({"pc", "mask", "sp"}), frozenset(), frozenset()])


@pytest.mark.parametrize("index, token, fields", [
    (0, exec_(0, 2, 0), ("pc",)), (0, exec_(1, 1, 3), ("warp", "slot")), (1, T("ST", 2), ("kind",)),
    (2, T("VAL", 2, 1, 0x13), ("data",)), (2, T("VAL", 1, 1, 0x12), ("lane",)),
    (4, T("CT2", 0, 2, 0), ("phase",)), (4, T("CT2", 1, 1, 1), ("alive", "wait")),
])
def test_compare_names_the_first_differing_field(index, token, fields):
    got = list(STREAM.tokens)
    got[index] = token
    if index < 4:
        got[index + 1] = exec_(3, 3, 3)          # a later difference is not the one reported
    m = compare(STREAM, got)
    assert (m.index, m.fields, m.got, m.expected) == (index, fields, str(token), str(STREAM.tokens[index]))
    assert f"token {index}: expected {STREAM.tokens[index]}, got {token}" in str(m)


def test_compare_honours_dont_cares_and_length():
    got = list(STREAM.tokens)
    got[3] = T("CT1", 77, 5, 6)
    assert compare(STREAM, got) is None
    assert compare(STREAM.tokens, got).fields == ("pc", "mask", "sp")      # a plain list has no don't-cares
    short = compare(STREAM, got[:-1])
    assert (short.index, short.fields, short.got) == (5, ("length",), "<end of stream>")
    long = compare(STREAM, got + [T("HALT")])
    assert (long.index, long.fields, long.expected) == (6, ("length",), "<end of stream>")


def test_atomics_run_lane_by_lane():
    # old = atomicAdd(&g[1], 300 + tid) by 3 lanes on one word that holds 5; then a second
    # atomic whose result is discarded (dst r0): no VAL tokens for it
    blocks = [
        MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)),
                      Instr(Op.ADD, r(2), (r(1), Imm(300))),
                      Instr(Op.ATOM, r(3), (Imm(4), r(2), Imm(0)), (Space.GLOBAL, isa.AtomOp.ADD))], jmp(1)),
        MachineBlock([Instr(Op.ATOM, r(0), (Imm(4), Imm(1), Imm(0)), (Space.GLOBAL, isa.AtomOp.EXCH))], EXIT),
    ]
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    memory[1] = 5
    got = expected_stream(Launch.from_words(Program("k", blocks, []), 1, 3, [], memory))
    olds, news = [5, 305, 606], [305, 606, 908]           # lane order: 5+300, +301, +302

    def new_parts(v):
        return [T("PART", *p) for p in parts(v, 1)]       # every value here is below 4096
    atomics = []
    for l in range(3):
        atomics += [T("AT", l), *vals(l, olds[l], 1), *new_parts(news[l]), T("AW", l)]
    exch = []
    for l in range(3):
        exch += [T("AT", l), T("PART", 0, 1), T("AW", l)]
    want = [exec_(0, 0, 0), C("VALA", 1, 0), *atomics,          # the ADD runs in the ATOM's pre-ALU
            exec_(0, 1, 0), *exch, T("HALT")]
    assert got.tokens == want
    assert got.memory[1] == 1


def test_term_slot_folds_the_terminator_into_the_last_instruction_unless_it_writes_the_condition():
    mov = lambda d: Instr(Op.MOV, r(d), (Imm(1),))
    brc = Terminator(Term.BRC, 1, r(2), 2, 3)
    live = set(range(isa.NUM_REGS))        # every register live after the block: no pairs

    def term_slot(block):
        return encode_block(block, live).term_slot
    assert term_slot(MachineBlock([], EXIT)) == 0                      # no instruction: a pass of its own
    assert term_slot(MachineBlock([mov(1), mov(2)], brc)) == 2         # writes the condition
    assert term_slot(MachineBlock([mov(2), mov(1)], brc)) == 1         # an earlier one may
    assert term_slot(MachineBlock([mov(2)], Terminator(Term.BAR, 1))) == 0
    assert term_slot(MachineBlock([mov(0)], EXIT)) == 0
    # the TERM word carries the slot, the kind and the condition register
    word = encode_block(MachineBlock([mov(1), mov(2)], brc), live).term
    from qwengpu.machine.words import TERM
    field = lambda name: word >> TERM[name].offset & (1 << TERM[name].width) - 1
    assert (field("slot"), field("op"), field("cond"), field("target"), field("fallthrough")) == (2, 1, 2, 1, 2)
    assert field("reconv") == 3
    # no reconvergence point: the block's own pc, which no BRC reconverges at (the encoder refuses it)
    none = Terminator(Term.BRC, 1, r(2), 2)
    word = encode_block(MachineBlock([mov(1)], none), live, pc=5).term
    assert field("reconv") == 5
    loop = Program("loop", [MachineBlock([mov(1)], Terminator(Term.BRC, 0, r(1), 1, 0)), MachineBlock([], EXIT)], [])
    with pytest.raises(MachineLimitError, match="block B0 of kernel loop reconverges at itself"):
        encode(loop)


# --- pairs (encoding.py): an ALU op whose result nothing after the next instruction reads ---------
def test_a_pair_forwards_the_pre_alu_result_and_writes_nothing_back():
    blocks = [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)),
                            Instr(Op.ADD, r(2), (r(1), Imm(5))),             # read by the SHL only
                            Instr(Op.SHL, r(3), (r(1), r(2)))], jmp(1)),      # tid << (tid + 5)
              MachineBlock([Instr(Op.MOV, r(4), (r(3),))], EXIT)]
    program = Program("k", blocks, [])
    code = encode(program)[0]
    assert code.passes == (Pass(0, 0), Pass(1, 2, 1))
    from qwengpu.machine.words import OPCODES, PRE, ROM0
    field = lambda word, w, name: word >> w[name].offset & (1 << w[name].width) - 1
    shl, pre = code.words[1][0], code.pre_words[1]
    assert [field(shl, ROM0, n) for n in ("a", "b")] == [1, 0]                    # b forwarded, reads r0
    assert [field(pre[0], PRE, n) for n in ("op", "a", "b", "imm", "fwd")] == [OPCODES.index("ADD"), 1, 0, 0b010, 0b010]
    assert pre[1] == 5
    got = expected_stream(Launch.from_words(program, 1, 3))
    want = [exec_(0, 0, 0), C("VALA", 1, 0),
            *vals(0, 0, 1), *vals(1, 64, 1), *vals(2, 256, 1),          # no VAL of r2; not a progression
            exec_(0, 1, 0), *vals(0, 0, 1), *vals(1, 64, 1), *vals(2, 256, 1),
            T("HALT")]
    assert got.tokens == want


@pytest.mark.parametrize("first, then, live, pairs", [
    (Instr(Op.ADD, r(2), (r(1), Imm(5))), [Instr(Op.MOV, r(3), (r(2),))], set(), True),
    (Instr(Op.ADD, r(2), (r(1), Imm(5))), [Instr(Op.MOV, r(3), (r(2),))], {2}, False),      # live after the block
    (Instr(Op.ADD, r(2), (r(1), Imm(5))), [Instr(Op.MOV, r(3), (r(2),))], {2, 3}, False),
    (Instr(Op.ADD, r(2), (r(1), Imm(5))), [Instr(Op.MOV, r(3), (r(2),)), Instr(Op.MOV, r(2), (r(3),))],
     {2}, True),                                                                       # overwritten before the end
    (Instr(Op.ADD, r(2), (r(1), Imm(5))), [Instr(Op.MOV, r(3), (r(1),)), Instr(Op.MOV, r(4), (r(2),))],
     set(), False),                                                                    # read after the next one
    (Instr(Op.SEL, r(2), (r(1), Imm(5), Imm(6))), [Instr(Op.MOV, r(3), (r(2),))], set(), False),   # two immediates
    (Instr(Op.LD, r(2), (r(1), Imm(0)), Space.GLOBAL), [Instr(Op.MOV, r(3), (r(2),))], set(), False),  # not ALU
    (Instr(Op.ADD, r(2), (r(1), Imm(5))), [], set(), False),                           # no next instruction
    (Instr(Op.SHL, r(2), (r(1), Imm(2))), [Instr(Op.LD, r(3), (r(4), r(2)), Space.GLOBAL)], set(),
     True),                                 # an address (a fault's message evaluates it: faults.py)
    (Instr(Op.SHL, r(2), (r(1), Imm(2))), [Instr(Op.ST, r(0), (r(4), Imm(0), r(2)), Space.GLOBAL)], set(),
     True),                                 # a store's data
])
def test_pairs_take_an_alu_op_whose_result_dies_in_the_next_instruction(first, then, live, pairs):
    block = MachineBlock([first, *then], EXIT)
    assert (encode_block(block, live).passes[0].pre == 0) == pairs


def test_the_branch_condition_is_forwarded_only_into_the_last_pass():
    from qwengpu.machine.words import PRE, TERM
    field = lambda word, w, name: word >> w[name].offset & (1 << w[name].width) - 1
    setlt, brc = Instr(Op.SETLT, r(2), (r(1), Imm(5))), Terminator(Term.BRC, 0, r(2), 1, 1)
    mov = lambda d: Instr(Op.MOV, r(d), (r(1),))

    def code(instrs, live=frozenset()):
        return encode_block(MachineBlock(instrs, brc), set(live))
    pair = code([setlt, mov(3)])               # the terminator runs in the MOV's pass, r2 from the pre-ALU
    assert pair.passes == (Pass(0, 1, 0),)
    assert field(pair.pre_words[0][0], PRE, "tfwd") == 1 and field(pair.term, TERM, "cond") == 0
    alone = code([mov(3), setlt])              # the last instruction writes r2: the MOV pairs with it
    assert alone.passes == (Pass(0, 1, 0), Pass(1, None))
    assert field(alone.pre_words[0][0], PRE, "tfwd") == 0 and field(alone.term, TERM, "cond") == 2
    only = code([setlt])                       # ... or with the terminator's pass
    assert only.passes == (Pass(0, None, 0),) and field(only.pre_words[0][0], PRE, "tfwd") == 1
    assert code([setlt], live={2}).passes == (Pass(0, 0), Pass(1, None))           # r2 live after the block
    assert code([setlt, mov(3), mov(4)]).passes == (Pass(0, 0), Pass(1, 2, 1))     # read after the pair's pass
    full = [Instr(Op.LD, r(d), (r(1), Imm(0)), Space.GLOBAL) for d in (3, 4, 5)] + [setlt]
    assert code(full).passes[-1] == Pass(3, None, 3)        # the last of BLOCK_SLOTS pairs with the terminator
    blocks = [MachineBlock(full, brc), MachineBlock([], EXIT)]
    tables, _ = decode_prompt(prompt(Launch.from_words(Program("k", blocks, []), 1, 4)))
    assert tables["PRE3.0"][0] == code(full).pre_words[3][0]


# --- loads past the lane words (isa.LANE_GLOBAL_WORDS): read lane by lane -------------------------
def far_load_program(offset, dst=3):
    """r3 = global[4 tid + offset] (bytes), then r4 = r3 + 1; the SHL runs in the load's pre-ALU."""
    return Program("far", [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)),
                                         Instr(Op.SHL, r(2), (r(1), Imm(2))),
                                         Instr(Op.LD, r(dst), (r(2), Imm(offset)), Space.GLOBAL),
                                         Instr(Op.ADD, r(4), (r(3), Imm(1)))], EXIT)], [])


def test_a_load_past_the_lane_words_writes_back_lane_by_lane():
    """Lanes 0-2 of a 3-thread block load words 1023, 1024, 1025 (byte offset 4092): lane 1's word is
    past 1023, so every active lane's word comes as LD(l) and its VALs, lane 3 (inactive) none; the
    last VAL continues into the ADD's pass. The values, by hand: 7, 0x12345 (two parts), -2 (a whole
    word); the ADD's 8, 0x12346, -1 write back as any result."""
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    memory[1023:1026] = [7, 0x12345, 0xFFFF_FFFE]
    got = expected_stream(Launch.from_words(far_load_program(4092), 1, 3, [], memory)).tokens
    assert got[:2] == [exec_(0, 0, 0), C("VALA", 1, 0)]                    # tid, continuing into the load's pass
    assert got[2:] == [T("LD", 0), T("VAL", 0, 0, 7),
                       T("LD", 1), T("VAL", 1, 0, 0x345), T("VAL", 1, 1, 0x12),
                       T("LD", 2), C("VAL", 2, 0, 0xFFFF_FFFE),
                       T("VAL", 0, 0, 8), T("VAL", 1, 0, 0x346), T("VAL", 1, 1, 0x12), T("VAL", 2, 0, 0xFFFF_FFFF),
                       T("HALT")]
    # the same load 4 bytes lower reads words 1022..1024: still one lane past 1023
    memory[1022] = 5
    lower = expected_stream(Launch.from_words(far_load_program(4088), 1, 3, [], memory)).tokens
    assert [t for t in lower if t.kind == "LD"] == [T("LD", 0), T("LD", 1), T("LD", 2)]
    # within the lane words (words 1021..1023: 0, 5, 7) the load writes back as before, no LD
    inside = expected_stream(Launch.from_words(far_load_program(4084), 1, 3, [], memory)).tokens
    assert inside[2:] == [C("VALQ", 0 | 5 << 3 | 7 << 6),                     # each below 8
                          T("VALP", 0, 1 | 6 << 6), T("VAL", 2, 0, 8), T("HALT")]   # the ADD's 1, 6, 8


def test_a_far_load_to_r0_writes_nothing_and_pages_any_word():
    """A load to r0 past the lane words has no tokens (the ADD reads r3 = 0: VALU 1); one lane's word
    anywhere in 1024..16383 makes a load go lane by lane (here lane 0 reads word 16383, the last)."""
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    memory[16383] = 0x0ABC
    got = expected_stream(Launch.from_words(far_load_program(4 * 16383, dst=0), 1, 1, [], memory)).tokens
    assert got == [exec_(0, 0, 0), C("VALU", 0, 0), exec_(0, 0, 2), T("VALU", 0, 1), T("HALT")]
    got = expected_stream(Launch.from_words(far_load_program(4 * 16383), 1, 1, [], memory)).tokens
    assert got == [exec_(0, 0, 0), C("VALU", 0, 0), T("LD", 0), C("VAL", 0, 0, 0xABC), T("VALU", 0, 0xABD), T("HALT")]
