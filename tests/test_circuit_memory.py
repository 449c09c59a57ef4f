"""GDN memory banks through the stock Qwen3.5 layers: chunked prefill, recurrent decode,
text tokens anywhere, state readback."""
import numpy as np
import pytest

from qwengpu.circuit import memory as Mem
from qwengpu.circuit.check import check_banks
from qwengpu.circuit.memory import read_rows
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


def counter_program(rng, n: int, counts: int = 5):
    """Random starts, steps (the count kept below `counts`), other GPU tokens and text tokens
    (-2), and the count each GPU token reads."""
    start, step, want, count = [], [], [], None
    for _ in range(n):
        r = rng.random()
        if count is None or r < 0.3:
            count = int(rng.integers(counts))
            start.append(count), step.append(0)
        elif r < 0.7 and count + 1 < counts:
            count += 1
            start.append(-1), step.append(1)
        else:
            start.append(-2 if r > 0.85 else -1), step.append(0)
        want.append(count)
    return start, step, want


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("path", ["prefill", "decode"])
def test_counter_counts_through_stock_layers(dtype, path):
    """Mem.counter: a start sets the count, a step adds one, every token reads it (one-hot, exact
    in bf16, within fp32's read noise), text tokens in between change nothing."""
    from qwengpu.circuit.check import BANK_HOST
    c = Circuit(BANK_HOST, circuit_width(BANK_HOST, 200))
    start, step = c.input("start", 5), c.input("step", 1)
    reading = Mem.counter(c, 0, "count", list(start.dims), list(step.dims))
    out = c.field("count", 5, 0)
    stepped = c.field("stepped", 5, 0)              # the count, only on step tokens
    for s in range(5):
        Mem.count_is(c, 0, reading, s, {out[s]: 1})
        Mem.count_is(c, 0, reading, s, {stepped[s]: 1}, when={step[0]: 1}, need=1)
    c.clear(reading, 0)
    rng = np.random.default_rng(7)
    s, k, want = counter_program(rng, 120)
    x = encode(c, {start: [1 << si if si >= 0 else 0 for si in s], step: k}, len(s))
    text = np.array(s) == -2
    x[text] = 0
    x[text, : c.layout.n] = rng.normal(size=(text.sum(), c.layout.n))
    model = build_model(c, dtype)
    hs, _ = run_prefill(model, x[None]) if path == "prefill" else run_decode(model, x[None])
    got = hs[1][0][:, list(out.dims)]
    ideal = np.zeros_like(got)
    ideal[np.arange(len(s)), want] = 1
    assert np.array_equal(hs[1][0][text], hs[0][0][text])     # text tokens pass through unchanged
    gpu = ~text
    tolerance = 0.0 if dtype == "bfloat16" else 1e-4
    assert np.abs(got[gpu] - ideal[gpu]).max() <= tolerance
    ideal[np.array(k) == 0] = 0
    assert np.abs(hs[1][0][:, list(stepped.dims)][gpu] - ideal[gpu]).max() <= tolerance
    assert len(set(want)) == 5 and text.sum() > 5 and sum(k) > 20
