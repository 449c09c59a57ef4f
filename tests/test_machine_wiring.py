"""The machine's decode neurons (wiring.flag_if) through a stock Qwen3.5 layer: a flag whose
condition misses by one bit is exactly 0 even when its inputs carry a GDN read's noise. The
ALU's gated units multiply a flag's error by their constants; a DIVR4 whose DIVQ4 flag read
-3e-7 instead of 0 once computed a wrong remainder (isqrt_bsearch)."""
import numpy as np
import pytest

from qwengpu.circuit.check import MLP_HOST, run_cases
from qwengpu.circuit.host import circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import build_model, encode
from qwengpu.machine.wiring import flag_if, match

WANT = 0b1011


@pytest.mark.parametrize("noise", [0.0, 3e-7, -3e-7])
def test_a_flag_that_misses_one_bit_is_exactly_zero_under_read_noise(noise):
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 64))
    bits = c.input("bits", 4)
    flag = c.field("flag", 1, 0)
    flag_if(c, 0, [(*match(bits, WANT), bits.width)], {flag[0]: 1})
    words = np.array([WANT] + [WANT ^ 1 << i for i in range(4)] + [0, 0b0100])
    x = encode(c, {bits: words}, len(words))
    x[:, list(bits.dims)] *= 1 + noise                  # a read is (1 + noise) times its bit
    got = run_cases(build_model(c, "float32"), c, x)[-1][:, flag[0]]
    assert np.all(got[1:] == 0.0), got                  # one bit (or more) off: exactly 0, not noise
    assert abs(got[0] - 1.0) < 1e-5, got
