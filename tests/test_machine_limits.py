"""The machine's packed words (qwengpu/machine/words.py) hold every value isa's limits allow and
refuse the rest by name; a build under isa limits the circuit cannot follow is refused naming the
limit (build.check_limits), and smaller ROM and grid limits give a machine that follows them."""
import pytest

from qwengpu import isa
from qwengpu.circuit.host import QWEN35_2B, HostSpec
from qwengpu.errors import MachineLimitError
from qwengpu.isa import MachineBlock, Program, Term, Terminator
from qwengpu.driver import protocol
from qwengpu.launch import Launch
from qwengpu.machine import build, encoding, words
from qwengpu.machine.words import CONFIG, CT1, CT2, OPCODES, PRE, ROM0, SPACES, SREG, TERM, STATUS, Word
from qwengpu.model.standin import standin_config

ALL_WORDS = (*SREG, CONFIG, CT1, CT2, STATUS, ROM0, PRE, TERM)


@pytest.mark.parametrize("word", ALL_WORDS, ids=lambda w: w.name)
def test_fields_tile_the_word_from_bit_0_without_overlap(word):
    bits = [b for name, f in word.fields.items() for i in range(f.count) for b in word.bits(name, i)]
    assert sorted(bits) == bits == list(range(word.width))
    assert word.width <= 32


LARGEST = [(SREG[0], "tid_x", isa.MACHINE_BLOCK_THREADS - 1), (SREG[1], "tid_y", isa.MACHINE_BLOCK_THREADS - 1),
           (SREG[1], "tid_z", isa.MACHINE_BLOCK_THREADS - 1), (SREG[3], "ctaid_z", isa.MAX_GRID_BLOCKS - 1),
           (SREG[0], "ntid_x", isa.MACHINE_BLOCK_THREADS), (SREG[2], "ntid_z", isa.MACHINE_BLOCK_THREADS),
           (SREG[2], "nctaid_z", isa.MAX_GRID_BLOCKS),
           (CONFIG, "nwarps", 1 << isa.MAX_WARPS - 1), (CONFIG, "last_cta", isa.MAX_GRID_BLOCKS - 1),
           (CONFIG, "mask", (1 << isa.LANES) - 1), (CT1, "pc", isa.ROM_BLOCKS - 1),
           (CT1, "sp", words.STACK_DEPTH - 1), (CT2, "alive", (1 << isa.LANES) - 1),
           (CT2, "phase", words.PHASES - 1), (ROM0, "op", len(OPCODES) - 1), (ROM0, "dst", isa.NUM_REGS - 1),
           (ROM0, "c", isa.NUM_REGS - 1), (ROM0, "space", len(SPACES) - 1), (ROM0, "mod", max(isa.SReg)),
           (ROM0, "mod", len(isa.AtomOp) - 1), (TERM, "target", isa.ROM_BLOCKS - 1),
           (TERM, "reconv", isa.ROM_BLOCKS - 1), (PRE, "c", isa.NUM_REGS - 1), (PRE, "fwd", 0b111),
           (TERM, "op", len(isa.Term) - 1), (TERM, "cond", isa.NUM_REGS - 1), (TERM, "slot", isa.BLOCK_SLOTS)]


@pytest.mark.parametrize("word, name, value", LARGEST, ids=lambda x: getattr(x, "name", x))
def test_every_field_holds_the_largest_value_the_limits_allow(word, name, value):
    count = word[name].count
    packed = word.pack(**{name: [value] * count if count > 1 else value})
    for i in range(count):
        bits = word.bits(name, i)
        assert packed >> bits.start & (1 << len(bits)) - 1 == value


def test_pack_refuses_a_value_that_does_not_fit_naming_the_field():
    too_big = 1 << CONFIG["last_cta"].width
    with pytest.raises(MachineLimitError, match=rf"CONFIG.last_cta = {too_big} does not fit its \d+ bits"):
        CONFIG.pack(last_cta=too_big)
    with pytest.raises(MachineLimitError, match=r"CONFIG.mask\[2\] = -1"):
        CONFIG.pack(mask=[0, 0, -1])
    with pytest.raises(ValueError, match="has no field 'lanes'"):
        CONFIG.pack(lanes=1)
    with pytest.raises(ValueError, match=f"has {isa.MAX_WARPS} copies"):
        CONFIG.pack(mask=[0] * (isa.MAX_WARPS + 1))


def test_a_word_wider_than_32_bits_is_refused():
    with pytest.raises(MachineLimitError, match="the W word needs 33 bits"):
        Word("W", a=(11, 3))


# --- isa limits the circuit can or cannot follow (build.check_limits) -------------------------
UNSUPPORTED = [("LANES", 8), ("LANES", 2), ("MAX_WARPS", 8), ("MAX_WARPS", 2), ("MACHINE_BLOCK_THREADS", 32),
               ("NUM_REGS", 64), ("MAX_GRID_BLOCKS", 257), ("MAX_GRID_BLOCKS", 0), ("ROM_BLOCKS", 129),
               ("BLOCK_SLOTS", 5), ("BLOCK_SLOTS", 3), ("GLOBAL_WORDS", 2048), ("GLOBAL_WORDS", 512),
               ("SHARED_WORDS", 512), ("SHARED_WORDS", 128), ("CONST_WORDS", 256), ("CONST_WORDS", 64)]


def test_the_default_limits_are_supported():
    build.check_limits()


@pytest.mark.parametrize("name, value", UNSUPPORTED)
def test_an_unsupported_limit_is_refused_naming_it(monkeypatch, name, value):
    monkeypatch.setattr(isa, name, value)
    with pytest.raises(MachineLimitError, match=rf"^isa\.{name} = {value}, but the machine supports "
                                                rf"(exactly \d+|\d+\.\.\d+): \w"):
        build.check_limits()


def test_the_build_refuses_before_compiling_anything(monkeypatch):
    monkeypatch.setattr(isa, "MAX_WARPS", 8)
    monkeypatch.setattr(build, "Circuit", lambda *a, **k: pytest.fail("the circuit was compiled"))
    with pytest.raises(MachineLimitError, match=r"isa\.MAX_WARPS = 8"):
        build.Machine(QWEN35_2B, 2048)


def test_a_cached_machine_is_not_handed_out_for_changed_limits(monkeypatch):
    build.machine_for_host(QWEN35_2B)               # cached from here on
    monkeypatch.setattr(isa, "GLOBAL_WORDS", 2048)
    with pytest.raises(MachineLimitError, match=r"isa\.GLOBAL_WORDS = 2048"):
        build.machine_for_host(QWEN35_2B)


def test_smaller_rom_and_grid_limits_build_a_machine_that_follows_them(monkeypatch):
    rom, grid = isa.ROM_BLOCKS // 2, isa.MAX_GRID_BLOCKS // 2
    monkeypatch.setattr(isa, "ROM_BLOCKS", rom)
    monkeypatch.setattr(isa, "MAX_GRID_BLOCKS", grid)
    host = HostSpec.from_config(standin_config())  # the limits do not depend on the host: the cheaper build
    m = build.Machine(host, 1984)                   # not machine_for_host: its cache outlives the patch

    def args(kind, i):
        return {t.args[i] for t in m.vocab.tokens if t.kind == kind}
    assert args("CTA", 0) == set(range(grid))
    assert args("EXEC", 1) == args("CT1", 0) == set(range(rom))
    assert m.embeddings().shape[0] == len(m.vocab)
    # a launch of `grid` thread blocks loads with the machine's tokens; one more is refused
    program = Program("k", [MachineBlock([], Terminator(Term.EXIT))], [])
    tokens = protocol.prompt(Launch.from_words(program, grid, 1))
    assert all(m.vocab.id(t) >= 0 for t in tokens)
    with pytest.raises(MachineLimitError, match=f"the limit is {grid}"):
        protocol.prompt(Launch.from_words(program, grid + 1, 1))
    with pytest.raises(MachineLimitError):
        isa.check_program(Program("k", [MachineBlock([], Terminator(Term.EXIT))] * (rom + 1), []))


def test_the_rom_holds_block_slots_passes_a_block():
    loads = [isa.Instr(isa.Op.LD, isa.Reg(k), (isa.Reg(0), isa.Imm(4 * k)), isa.Space.GLOBAL) for k in range(1, 6)]
    five = Program("five", [MachineBlock(loads, Terminator(Term.EXIT))], [])
    with pytest.raises(MachineLimitError, match="block B0 of kernel five takes more than 4 passes"):
        encoding.encode(five)
    # an S2R that nothing reads from the register file runs in no pass: 4 loads and it fit
    s2r = isa.Instr(isa.Op.S2R, isa.Reg(6), (isa.Imm(isa.SReg.TID_X),))
    four = Program("four", [MachineBlock(loads[:4] + [s2r], Terminator(Term.EXIT))], [])
    assert [p.main for p in encoding.encode(four)[0].passes] == [0, 1, 2, 3]
