"""The machine's packed words (qwengpu/machine/words.py) hold every value isa's limits allow and
refuse the rest by name."""
import pytest

from qwengpu import isa
from qwengpu.errors import MachineLimitError
from qwengpu.machine import words
from qwengpu.machine.words import CONFIG, CT1, CT2, SREG, STATUS, Word

ALL_WORDS = (*SREG, CONFIG, CT1, CT2, STATUS)


@pytest.mark.parametrize("word", ALL_WORDS, ids=lambda w: w.name)
def test_fields_tile_the_word_from_bit_0_without_overlap(word):
    bits = [b for name, f in word.fields.items() for i in range(f.count) for b in word.bits(name, i)]
    assert sorted(bits) == bits == list(range(word.width))
    assert word.width <= 32


LARGEST = [(SREG[0], "tid_x", isa.MAX_BLOCK_THREADS - 1), (SREG[0], "tid_y", isa.MAX_BLOCK_THREADS - 1),
           (SREG[1], "tid_z", isa.MAX_BLOCK_THREADS - 1), (SREG[1], "ctaid_z", isa.MAX_GRID_BLOCKS - 1),
           (SREG[2], "ntid_x", isa.MAX_BLOCK_THREADS), (SREG[2], "nctaid_z", isa.MAX_GRID_BLOCKS),
           (CONFIG, "nwarps", 1 << isa.MAX_WARPS - 1), (CONFIG, "last_cta", isa.MAX_GRID_BLOCKS - 1),
           (CONFIG, "mask", (1 << isa.LANES) - 1), (CT1, "pc", isa.ROM_BLOCKS - 1),
           (CT2, "sp", words.STACK_DEPTH - 1), (CT2, "alive", (1 << isa.LANES) - 1),
           (CT2, "phase", words.PHASES - 1)]


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
