"""GDN memory banks through the stock Qwen3.5 layers: chunked prefill, recurrent decode,
text tokens anywhere, state readback."""
import numpy as np
import pytest

from qwengpu.circuit import memory as Mem
from qwengpu.circuit.check import check_banks, read_rows
from qwengpu.circuit.host import TINY, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import build_model, decode, encode, recurrent_state, run_decode, run_prefill


def test_random_program_prefill_then_decode_both_dtypes():
    """Two banks, two replicas, write-enable, read-enable, 20% text tokens; 150 prefill + 12 decode tokens."""
    result, silent = check_banks(150, ("float32", "bfloat16"), np.random.default_rng(3), decode_steps=12)
    assert result["mismatches"] == 0
    assert result["cases"] > 600
    assert silent


def sliced_bank():
    """A 32-bit bank on a host with 32-dim heads: each word spans 4 heads (8 bits each)."""
    c = Circuit(TINY, circuit_width(TINY, 200))
    addr, data, we, raddr = c.input("addr", 3), c.input("data", 32), c.input("we", 1), c.input("raddr", 3)
    bank = Mem.declare_bank(c, 0, "m", 8, 32)
    Mem.write(c, bank, addr, data, we)
    out = Mem.read(c, bank, raddr)
    return c, (addr, data, we, raddr), out, bank


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("path", ["prefill", "decode"])
def test_sliced_word_write_read_overwrite(dtype, path):
    c, (addr, data, we, raddr), out, bank = sliced_bank()
    assert len(bank.replicas[0]) == 4
    #            write 5   read 5      disabled write  read 5      overwrite+read   unwritten
    steps = [(5, 0xDEADBEEF, 1, 5), (0, 0, 0, 5), (5, 0x1234, 0, 5), (2, 7, 0, 5), (5, 0xFFFFFFFF, 1, 5), (0, 0, 0, 3)]
    cols = [np.array(col, dtype=np.uint64) for col in zip(*steps)]
    x = encode(c, dict(zip((addr, data, we, raddr), cols)), len(steps))
    text = np.zeros((3, c.layout.total))
    text[:, : c.layout.n] = np.random.default_rng(0).normal(size=(3, c.layout.n))
    x = np.concatenate([text[:1], x[:3], text[1:], x[3:]])            # text tokens in between
    model = build_model(c, dtype)
    hs, kv = run_prefill(model, x[None], cache=True) if path == "prefill" else run_decode(model, x[None])
    got, err = decode(hs[1][0], out)
    gpu = [i for i in range(len(x)) if i not in (0, 4, 5)]
    assert got[gpu].tolist() == [0xDEADBEEF, 0xDEADBEEF, 0xDEADBEEF, 0xDEADBEEF, 0xFFFFFFFF, 0]
    assert np.array_equal(hs[1][0][[0, 4, 5]], hs[0][0][[0, 4, 5]])
    assert read_rows(recurrent_state(kv, 0)[0], bank) == {5: 0xFFFFFFFF}
    if dtype == "bfloat16":
        assert err == 0.0


def test_text_tokens_leave_state_bit_identical_in_decode():
    c, (addr, data, we, raddr), out, bank = sliced_bank()
    model = build_model(c, "float32")
    x = encode(c, {addr: [1], data: [99], we: [1], raddr: [1]}, 1)
    _, kv = run_prefill(model, x[None], cache=True)
    import torch
    before = kv.get_recurrent_state(0).clone()
    text = np.zeros((1, 1, c.layout.total))
    text[0, 0, : c.layout.n] = 3.0
    with torch.no_grad():
        model.model(inputs_embeds=torch.tensor(text, dtype=torch.float32), use_cache=True, cache=kv)
    assert torch.equal(before, kv.get_recurrent_state(0))
