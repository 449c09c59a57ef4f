"""Copy-out (qwengpu/driver/copyout.py): the launch's output words as the model writes them
before HALT. Host side against hand-worked cases; in the stand-in merged model, results decoded
from the generated tokens alone against the kernels' NumPy references."""
import copy
import dataclasses

import numpy as np
import pytest

from qwengpu import isa
from qwengpu.api import Device
from qwengpu.errors import ExecutionError, LaunchError, MachineLimitError
from qwengpu.launch import Launch
from qwengpu.driver import copyout, protocol, runtime
from qwengpu.isa import Imm, Instr, MachineBlock, Op, Program, Reg, SReg, Space, Term, Terminator
from qwengpu.machine.tokens import Token, Vocab, continuing
from qwengpu.machine.words import COPY0, COPYROW
from qwengpu.suite import discover, load_spec, mismatches


def t(kind, *args):
    return Token(kind, tuple(args))


def test_groups_and_prompt_rows_by_hand():
    # words 1..8: group 0 lanes 1-3, group 1 whole, group 2 lane 0 (the last)
    assert copyout.groups([8, 1, 2, 3, 4, 5, 6, 7]) == [(0, 0b1110), (1, 0b1111), (2, 0b0001)]
    first, rows = copyout.prompt_words(range(1, 9))
    assert first == 0 | 1 << 8                       # group 0, any
    assert rows == {0: 0b1110 | 1 << 4,               # mask 1110, next group 1
                    2: 0b0001 | 1 << 12}              # mask 0001, last; group 1 needs no row
    assert COPYROW.width == 13 and COPY0.width == 9
    # a gap: the group before it names the next one
    first, rows = copyout.prompt_words([0, 1, 2, 3, 40])
    assert first == 1 << 8 and rows == {0: 0b1111 | 10 << 4, 10: 0b0001 | 1 << 12}
    assert copyout.prompt_words([]) == (0, {})
    with pytest.raises(LaunchError, match=r"copy-out word 16384 is outside global memory \(0..16383\)"):
        copyout.groups([16384])


def test_the_copy_out_carries_the_words_below_1024_alone():
    """Words 1024..16383 are global memory, but no COPY carries them (a group is 8 bits: 0..255);
    the model engine reads them from the model's state."""
    assert copyout.groups([1021, 1023, 1024, 5000, 16383]) == [(255, 0b1010)]     # 1021 = 4 * 255 + 1
    assert copyout.groups([1024, 16383]) == [] and copyout.prompt_words([1024, 16383]) == (0, {})
    mem = np.zeros(16384, dtype=np.uint32)
    mem[[1023, 1024, 9999]] = [6, 7, 8]
    assert copyout.expected_tokens([1023, 1024, 9999], mem) == [t("COPY", 255), t("VALU", 0, 6)]
    assert copyout.decode([t("COPY", 255), t("VALU", 0, 6), t("HALT")], [1023, 1024, 9999]) == {1023: 6}


def test_an_engine_that_returns_only_tokens_refuses_words_past_the_copy_out():
    copyout.check_tokens_only([])
    copyout.check_tokens_only([0, 5, 1023])
    with pytest.raises(MachineLimitError, match=r"^the copy-out covers global words below 1024, .*this launch may "
                                                r"write words up to 5000: run it on the model engine"):
        copyout.check_tokens_only([5, 1023, 5000, 1024])


def test_expected_tokens_by_hand():
    mem = np.zeros(1024, dtype=np.uint32)
    mem[4:8] = [7, 7, 7, 0x1234]
    mem[9] = 0
    assert copyout.expected_tokens([4, 5, 6], mem) == [t("COPY", 1), t("VALU", 0, 7)]
    assert copyout.expected_tokens([6, 7, 9], mem) == [
        t("COPY", 1), t("VAL", 2, 0, 7), t("VAL", 3, 0, 0x234), t("VAL", 3, 1, 0x1),
        t("COPY", 2), t("VALU", 0, 0)]


def test_a_progression_from_lane_0_is_one_vala():
    mem = np.zeros(1024, dtype=np.uint32)
    mem[4:8] = [100, 104, 108, 112]                  # 100 + 4 * lane
    mem[9:12] = [9, 10, 11]                          # lanes 1-3 only: not from lane 0
    assert copyout.expected_tokens([4, 5, 6, 7], mem) == [t("COPY", 1), t("VALA", 4, 100)]
    assert copyout.expected_tokens([4, 6], mem) == [t("COPY", 1), t("VALA", 4, 100)]    # lanes 0 and 2: 108 = 100 + 4 * 2
    assert copyout.expected_tokens([9, 10, 11], mem) == [                      # lanes 2, 3: one VALP
        t("COPY", 2), t("VAL", 1, 0, 9), t("VALP", 1, 10 | 11 << 6)]
    stream = [t("COPY", 1), t("VALA", 4, 100), t("HALT")]
    assert copyout.decode(stream, [4, 5, 6, 7]) == {4: 100, 5: 104, 6: 108, 7: 112}
    with pytest.raises(ExecutionError, match="do not start at lane 0"):
        copyout.decode([t("COPY", 2), t("VALA", 1, 5), t("HALT")], [9, 10, 11])


def test_small_words_are_one_valq():
    mem = np.zeros(1024, dtype=np.uint32)
    mem[12:16] = [1, 0, 7, 3]                        # each below 8, not a progression
    assert copyout.expected_tokens([12, 13, 14, 15], mem) == [t("COPY", 3), t("VALQ", 1 | 7 << 6 | 3 << 9)]
    assert copyout.expected_tokens([13, 14, 15], mem) == [t("COPY", 3), t("VALQ", 7 << 6 | 3 << 9)]
    stream = [t("COPY", 3), t("VALQ", 7 << 6 | 3 << 9), t("HALT")]
    assert copyout.decode(stream, [13, 14, 15]) == {13: 0, 14: 7, 15: 3}
    with pytest.raises(ExecutionError, match="gives lanes outside"):
        copyout.decode([t("COPY", 3), t("VALQ", 1 | 7 << 6), t("HALT")], [13, 14, 15])


def test_two_small_words_of_lanes_2p_and_2p_plus_1_are_one_valp():
    mem = np.zeros(1024, dtype=np.uint32)
    mem[12:16] = [9, 63, 64, 40]                     # not below 8, not a progression; 64 is not below 64
    assert copyout.expected_tokens([12, 13, 14, 15], mem) == [
        t("COPY", 3), t("VALP", 0, 9 | 63 << 6), t("VAL", 2, 0, 64), t("VAL", 3, 0, 40)]
    stream = [t("COPY", 3), t("VAL", 0, 0, 9), t("VAL", 1, 0, 63), t("VALP", 1, 30 | 40 << 6), t("HALT")]
    assert copyout.decode(stream, [12, 13, 14, 15]) == {12: 9, 13: 63, 14: 30, 15: 40}
    for bad in ([t("COPY", 3), t("VALP", 1, 1), t("VAL", 0, 0, 9), t("VAL", 1, 0, 9)],   # out of lane order
                [t("COPY", 3), t("VALP", 0, 1), t("VALP", 1, 1)]):                     # lane 0 is not copied
        with pytest.raises(ExecutionError, match="lane by lane"):
            copyout.decode(bad + [t("HALT")], [13, 14, 15] if len(bad) == 3 else [12, 13, 14, 15])


def test_a_word_whose_high_bits_are_all_ones_is_one_token():
    mem = np.zeros(1024, dtype=np.uint32)
    mem[4:8] = [0xFFFFFFFF, 0xFFFFF000, 0xFFFFEFFF, 5]   # -1, -4096: one token; -4097: three parts
    assert copyout.expected_tokens([4, 5, 6, 7], mem) == [
        t("COPY", 1), t("VAL", 0, 0, 0xFFFFFFFF), t("VAL", 1, 0, 0xFFFFF000),
        t("VAL", 2, 0, 0xFFF), t("VAL", 2, 1, 0xFFE), t("VAL", 2, 2, 0xFF), t("VAL", 3, 0, 5)]
    mem[8:12] = 0xFFFFFFFE                              # -2 on every lane: one VALU
    assert copyout.expected_tokens([8, 9, 10, 11], mem) == [t("COPY", 2), t("VALU", 0, 0xFFFFFFFE)]
    words = list(range(4, 12))
    stream = copyout.expected_tokens(words, mem) + [t("HALT")]
    assert copyout.decode(stream, words) == {w: int(mem[w]) for w in words}


def test_decode_round_trip_and_malformed_streams():
    mem = np.arange(1024, dtype=np.uint32) * 0x01010101
    words = [3, 4, 5, 6, 7, 8, 600]
    tail = copyout.expected_tokens(words, mem) + [t("HALT")]
    stream = [t("EXEC", 0, 0, 0), t("CT1", 0, 0, 0)] + tail
    assert copyout.decode(stream, words) == {w: int(mem[w]) for w in words}
    assert copyout.decode([t("HALT")], []) == {}
    g1 = stream.index(t("COPY", 1))
    broken = {
        "expected COPY g1": stream[:g1] + [t("COPY", 2)] + stream[g1 + 1:],     # another group
        "wrote lanes": stream[:3] + stream[g1:],                               # a group's words lost
        "not \\[0, 1, 2, 3\\]": [s for s in stream if s.kind != "VAL" or s.args[0] != 2],   # a lane lost
        "parts in order": [s for s in stream if s != t("VAL", 2, 1, 0x60)],    # a part lost (word 6: 0x06060606)
        "expected HALT": stream[:-1],
        "after COPY": stream[:3] + [t("VALU", 0, 1)] + stream[3:],            # VALU among VALs
        "continues a pass, but the copy-out runs none": stream[:g1 - 1] + [continuing(stream[g1 - 1])] + stream[g1:],
    }
    for why, bad in broken.items():
        with pytest.raises(ExecutionError, match=why):
            copyout.decode(bad, words)


def test_output_words_follow_the_arrays():
    src = "__global__ void k(int *a, int *b, int n) { a[threadIdx.x] = b[threadIdx.x] + n; }"
    fn = Device().compile(src).get_function("k")
    a, b = np.zeros(5, dtype=np.int32), np.ones(3, dtype=np.int32)
    words = Launch.build(fn.program, 1, 3, [a, b, 2]).output_words()
    start = fn.program.static_global_words
    a_words = list(range(start, start + 5))
    assert words == a_words                                       # b is only read
    fn.program.writes = None            # no analysis (a hand-built program): every array
    assert Launch.build(fn.program, 1, 3, [a, b, 2]).output_words() == a_words + list(range(start + 5, start + 8))
    # the same array twice is one slot, copied once
    both = Launch.build(fn.program, 1, 3, [a, a, 2]).output_words()
    assert both == a_words


@pytest.fixture(scope="module")
def fast_model(standin_fast):
    return standin_fast


@pytest.mark.parametrize("name", ["dot", "atomic_add_global", "partial_warp_reverse", "int64_ops"])
def test_results_decode_from_the_tokens_alone(fast_model, name):
    """The launch's results from its generated tokens only (no state read): into fresh copies of
    the arguments, then against the NumPy reference."""
    fast, machine = fast_model
    case = next(c for c in discover() if c.name == name)
    spec = load_spec(case)
    grid, block, args = spec.launch()
    args = list(args)
    expected = spec.reference(*copy.deepcopy(args))
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    launch = Launch.build(fn.program, grid, block, args)
    on_copy = dataclasses.replace(launch, memory=launch.memory.copy())    # the model's state stays there
    assert on_copy.copy_out == launch.output_words()
    run = runtime.launch_on_model(fast, machine, on_copy, max_tokens=20_000, check="replay")
    stream = [tok for tok in run.stream]
    decoded = copyout.decode(stream, launch.output_words())
    for w, v in decoded.items():
        launch.memory[w] = v
    launch.copy_back()
    assert not mismatches(args, expected, fn.arg_names)
    assert decoded and stream[-1] == t("HALT")


def test_the_runtime_refuses_a_copy_out_that_disagrees_with_the_state():
    before = np.zeros(1024, dtype=np.uint32)
    after = before.copy()
    after[[5, 6]] = [9, 300]
    stream = copyout.expected_tokens([5, 6], after) + [t("HALT")]
    assert runtime.check_copy_out(stream, [5, 6], before, after) == {5: 9, 6: 300}
    wrong = after.copy()
    wrong[6] = 301
    with pytest.raises(ExecutionError, match="says global word 6 is 0x12c, but its state holds 0x12d"):
        runtime.check_copy_out(stream, [5, 6], before, wrong)
    # a changed word the copy-out does not carry: a tokens-only engine would lose it
    short = copyout.expected_tokens([5], after) + [t("HALT")]
    with pytest.raises(ExecutionError, match="changed global word 6 .* does not carry"):
        runtime.check_copy_out(short, [5], before, after)


def test_the_runtime_reads_output_words_past_1024_from_the_state():
    """An output word past the copy-out (5000) comes from the state alone; a changed word that no
    output word names is still the may-write analysis's miss, past 1024 too."""
    before = np.zeros(isa.GLOBAL_WORDS, dtype=np.uint32)
    after = before.copy()
    after[[5, 5000]] = [9, 300]
    stream = copyout.expected_tokens([5, 5000], after) + [t("HALT")]
    assert stream == [t("COPY", 1), t("VALU", 0, 9), t("HALT")]            # lane 1 alone: one VALU
    assert runtime.check_copy_out(stream, [5, 5000], before, after) == {5: 9}
    with pytest.raises(ExecutionError, match="changed global word 5000 .* does not carry"):
        runtime.check_copy_out(stream, [5], before, after)


class ReferenceEngine:
    """An engine that returns only tokens: each prompt's reference stream (protocol.expected_stream)."""

    def __init__(self, vocab, launches):
        self.streams = {tuple(vocab.id(tk) for tk in protocol.prompt(lau)):
                        [vocab.id(tk) for tk in protocol.expected_stream(lau).tokens] for lau in launches}
        self.asked = []

    def generate(self, prompts, *, allowed, stop_ids, max_tokens):
        self.asked += prompts
        return [self.streams[tuple(p)] for p in prompts]


def store_tid_program(word) -> Program:
    """Thread t stores t + 1 to global word `word` + t."""
    r = Reg
    return Program("k", [MachineBlock([Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)),
                                       Instr(Op.ADD, r(2), (r(1), Imm(1))),
                                       Instr(Op.SHL, r(3), (r(1), Imm(2))),
                                       Instr(Op.ST, r(0), (r(3), Imm(4 * word), r(2)), Space.GLOBAL)],
                                      Terminator(Term.EXIT))], [])


def test_a_launch_that_may_write_past_1024_is_refused_on_an_engine():
    """On an engine that returns only tokens (runtime.launch_on_engine) a launch whose output words
    reach 1024 gets the clear error and is never sent; the one beside it runs from its copy-out."""
    vocab = Vocab(first_id=0)
    low = Launch.from_words(store_tid_program(8), 1, 4, copy_out=range(8, 12))
    high = Launch.from_words(store_tid_program(1022), 1, 4, copy_out=range(1022, 1026))
    engine = ReferenceEngine(vocab, [low])
    ran, refused = runtime.launch_on_engine(engine, vocab, [low, high], max_tokens=1000, check="replay")
    assert isinstance(ran, runtime.ModelRun) and ran.copied == {8: 1, 9: 2, 10: 3, 11: 4}
    assert low.memory[8:12].tolist() == [1, 2, 3, 4]
    assert isinstance(refused, MachineLimitError) and "may write words up to 1025" in str(refused)
    assert len(engine.asked) == 1 and not high.memory.any()
