"""The exact fast path (qwengpu/fast/model.py) against the stock transformers path.

A toy machine is compiled with qwengpu.circuit: a token carries (we, waddr, raddr, data);
layer 0 keeps a bank written at waddr and read at raddr, layer 1 a second bank written with
what layer 0 computed, and the top layer emits the output code of the next token, which
depends on both banks. It is wrapped in a stock Qwen3_5ForCausalLM whose vocabulary is a few
text tokens followed by every GPU token (embeddings = field encodings). The same token
streams run through stock prefill + decode (DynamicCache) and through FastModel: the hidden
state after the circuit layers must be bit-identical in float32 (within bf16 rounding in
bf16), the recurrent states equal, and the next tokens (argmax of the stock logits over the
GPU ids) identical.
"""
import copy
import dataclasses
import functools

import numpy as np
import pytest
import torch
from transformers.cache_utils import DynamicCache
from transformers.models.qwen3_5.modeling_qwen3_5 import torch_recurrent_gated_delta_rule

from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as Mem
from qwengpu.circuit.host import HostSpec, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import build_model, encode
from qwengpu.fast.model import FastModel, FastPathError, delta_rule, l2norm

HOST = HostSpec(hidden=64, intermediate=512, gdn_heads=4, key_dim=64, value_dim=64, conv_kernel=4, eps=1e-6)
GROUPED = dataclasses.replace(HOST, group=2)     # two value heads a key head, as Qwen3.5-4B and 9B
FIELDS = (("we", 1), ("waddr", 3), ("raddr", 3), ("data", 4))
TEXT = 8                                        # text token ids 0..7, GPU ids from 8
GPU = 1 << sum(w for _, w in FIELDS)


def toy_circuit(requantize: bool = True, host: HostSpec = HOST):
    """(circuit, input fields). Next token: we = s0, waddr = s1..s3, raddr = r2, data = r2 ^ s,
    where s = mem[raddr] ^ data (after this token's write) and r2 = hist[waddr] after
    hist[raddr] = s.

    GDN reads are 1 - O(1e-7) in float32; `requantize` snaps them to exact bits (an always-on
    neuron relu(x + 128) - 128, as the machine's control stage does) before an MLP combines
    them. Without it the xor gates sum noisy terms, whose float32 rounding depends on the
    summation order (stock BLAS vs compact products)."""
    c = Circuit(host, circuit_width(host, 120))
    f = {name: c.input(name, w) for name, w in FIELDS}
    mem = Mem.declare_bank(c, 0, "mem", 8, 4, replicas=2)     # read from the second head: key head 1
    Mem.write(c, mem, f["waddr"], f["data"], f["we"])
    rd = Mem.read(c, mem, f["raddr"], 1)
    at = 0
    if requantize:
        rd, at = snap(c, 0, rd), 1
    s = G.gate(c, at, "xor", rd, f["data"], name="s")
    hist = Mem.declare_bank(c, at + 1, "hist", 8, 4)
    Mem.write(c, hist, f["raddr"], s)
    r2 = Mem.read(c, hist, f["waddr"], 0)
    at += 1
    if requantize:
        r2, at = snap(c, at, r2), at + 1
    x = G.gate(c, at, "xor", r2, s, name="x")
    nxt = {"we": [s[0]], "waddr": list(s.dims[1:4]), "raddr": list(r2.dims[:3]), "data": list(x.dims)}
    top, lay = at + 1, c.layout
    for name, _ in FIELDS:                   # output code 2 * next - 1; the input's features cleared
        for d, src in zip(f[name].dims, nxt[name]):
            G.relu(c, top, {src: 1}, 0, {d: 2})
            G.relu(c, top, {d: 1}, 0, {d: -1})
            G.const_one(c, top, {d: -1})
    G.const_one(c, top, {d: -lay.anchor_value for d in lay.anchor.dims})
    return c, f


def snap(c, at, read):
    out = c.field(f"{read.name}.q", read.width, at)
    for src, d in zip(read.dims, out.dims):
        G.relu(c, at, {src: 1}, 128, {d: 1})
        G.const_one(c, at, {d: -128})
    return out


def unpack(index: int) -> dict[str, int]:
    out, lo = {}, 0
    for name, w in FIELDS:
        out[name] = index >> lo & ((1 << w) - 1)
        lo += w
    return out


def reference_next(tokens: list[int]) -> list[int]:
    """The toy machine in plain Python: the next GPU index after each token (text tokens: None)."""
    mem, hist, out = {}, {}, []
    for t in tokens:
        if t < TEXT:
            out.append(None)
            continue
        v = unpack(t - TEXT)
        if v["we"]:
            mem[v["waddr"]] = v["data"]
        s = mem.get(v["raddr"], 0) ^ v["data"]
        hist[v["raddr"]] = s
        r2 = hist.get(v["waddr"], 0)
        fields = {"we": s & 1, "waddr": s >> 1, "raddr": r2 & 7, "data": r2 ^ s}
        out.append(TEXT + sum(fields[name] << lo for (name, _), lo in zip(FIELDS, (0, 1, 4, 7))))
    return out


@functools.lru_cache(maxsize=None)
def toy_model(dtype: str, requantize: bool = True, host: HostSpec = HOST, mlp_limit: int = 0):
    """mlp_limit: split the layers into MLPs of at most that many neurons (Circuit.fit_mlps)."""
    if dtype == "bfloat16":                      # the same (bf16-exact) weights, cast
        return copy.deepcopy(toy_model("float32", requantize, host, mlp_limit)).to(torch.bfloat16)
    c, f = toy_circuit(requantize, host)
    if mlp_limit:
        c.fit_mlps(mlp_limit)
    model = build_model(c, "float32")
    idx = np.arange(GPU)
    gpu = encode(c, {f[name]: [unpack(i)[name] for i in idx] for name, _ in FIELDS}, GPU)
    emb = np.zeros((TEXT + GPU, c.layout.total), np.float32)
    emb[:TEXT, :HOST.hidden] = np.random.default_rng(5).normal(0, 1, (TEXT, HOST.hidden))
    emb[TEXT:] = gpu
    model.resize_token_embeddings(TEXT + GPU)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.from_numpy(emb))
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()   # tied head
    model.config.qwengpu = {"circuit_layers": len(c.layers), "gpu_token_ids": [TEXT, TEXT + GPU]}
    return model.eval()


@functools.lru_cache(maxsize=None)
def fast_model(dtype: str, requantize: bool = True, native: bool = True, host: HostSpec = HOST,
               mlp_limit: int = 0) -> FastModel:
    """native: the C step (native.c); False: the torch ops. Both are held against the stock path."""
    return FastModel(toy_model(dtype, requantize, host, mlp_limit), native=native)


NATIVE = pytest.mark.parametrize("native", [True, False], ids=["c", "torch"])


def stream(rng, n: int, text: float = 0.15) -> list[int]:
    """Random GPU tokens over few addresses (rows are overwritten and reread), some text tokens."""
    toks = (TEXT + rng.integers(0, GPU, n)).tolist()
    for i in np.flatnonzero(rng.random(n) < text):
        if 0 < i < n - 1:
            toks[i] = int(rng.integers(0, TEXT))
    return toks


@torch.no_grad()
def stock_run(model, tokens: list[int], prefill: int):
    """Prefill `prefill` tokens, then decode the rest one by one: (hidden after the circuit
    layers [T, N] float32, GPU-restricted argmax after each token [T], cache)."""
    L = model.config.qwengpu["circuit_layers"]
    cache = DynamicCache(config=model.config)
    hidden, nxt = [], []
    for chunk in [tokens[:prefill]] + [[t] for t in tokens[prefill:]]:
        out = model(input_ids=torch.tensor([chunk]), cache=cache, use_cache=True, output_hidden_states=True)
        hidden.append(out.hidden_states[L][0].float())
        nxt += (TEXT + out.logits[0, :, TEXT:].float().argmax(-1)).tolist()
    return torch.cat(hidden).numpy(), nxt, cache


# ---------------------------------------------------------------------------
def test_toy_reference_is_not_trivial():
    rng = np.random.default_rng(0)
    nxt = reference_next(stream(rng, 200, text=0))
    assert len(set(nxt)) > 50                    # the banks make the next token vary


@NATIVE
@pytest.mark.parametrize("dtype, host, mlp_limit", [("float32", HOST, 0), ("bfloat16", HOST, 0),
                                                    ("float32", GROUPED, 0), ("float32", HOST, 5)],
                         ids=["float32", "bfloat16", "grouped", "split"])
def test_stream_matches_stock(dtype, host, mlp_limit, native):
    """Teacher-forced random tokens: hidden after the circuit, next tokens, recurrent states
    (also on a grouped host, whose key heads each serve two value heads, and with every MLP
    split into layers of at most 5 neurons, as on a host with narrower MLPs)."""
    rng = np.random.default_rng(1)
    T, prefill = (48, 24) if dtype == "float32" else (16, 8)
    tokens = stream(rng, T)
    model = toy_model(dtype, host=host, mlp_limit=mlp_limit)
    fm = fast_model(dtype, native=native, host=host, mlp_limit=mlp_limit)
    hs, stock_next, cache = stock_run(model, tokens, prefill)
    state = fm.new_state()
    fast_next = fm.prefill(state, tokens[:prefill])
    gpu = np.array([t >= TEXT for t in tokens])
    want = reference_next(tokens)
    assert fast_next == stock_next[prefill - 1] == want[prefill - 1]
    probe = fm.new_state()                       # the prompt's positions (stock: the chunked algorithm)
    for i, t in enumerate(tokens[:prefill]):
        if t >= TEXT:
            assert fm.step(probe, t) == stock_next[i]
            if dtype == "float32":
                np.testing.assert_array_equal(probe.last[0].numpy(), hs[i], err_msg=f"prompt token {i}")
    for i in range(prefill, T):
        t = tokens[i]
        if t < TEXT:
            assert fm.prefill(state, [t]) is None        # text: the circuit stays silent
            continue
        got = fm.step(state, t)
        assert got == stock_next[i] == want[i], f"token {i}"
        ref = hs[i]
        if dtype == "float32":
            np.testing.assert_array_equal(state.last[0].numpy(), ref, err_msg=f"hidden after token {i}")
        else:
            np.testing.assert_allclose(state.last[0].numpy()[HOST.hidden:], ref[HOST.hidden:], atol=2e-6)
    assert gpu.sum() < T                         # the stream had text tokens
    for layer in range(fm.L):
        np.testing.assert_array_equal(fm.recurrent_state(state, layer),
                                      cache.get_recurrent_state(layer)[0].float().numpy())


@NATIVE
def test_decode_only_bit_identical_fp32(native):
    """Every GPU token of a stock decode-only run (the recurrent path throughout)."""
    rng = np.random.default_rng(2)
    tokens = stream(rng, 40)
    model, fm = toy_model("float32"), fast_model("float32", native=native)
    hs, stock_next, _ = stock_run(model, tokens, 1)
    state = fm.new_state()
    for i, t in enumerate(tokens):
        if t < TEXT:
            fm.prefill(state, [t])
            continue
        assert fm.step(state, t) == stock_next[i]
        np.testing.assert_array_equal(state.last[0].numpy(), hs[i], err_msg=f"token {i}")


@NATIVE
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_greedy_generation_matches_stock(dtype, native):
    """Closed loop: each path feeds back its own argmax; the streams must be identical."""
    rng = np.random.default_rng(3)
    prompt = stream(rng, 12)
    steps = 12 if dtype == "float32" else 6
    model, fm = toy_model(dtype), fast_model(dtype, native=native)
    cache = DynamicCache(config=model.config)
    ids, stock = prompt, []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(input_ids=torch.tensor([ids]), cache=cache, use_cache=True, logits_to_keep=1).logits[0, -1]
            ids = [TEXT + int(logits[TEXT:].argmax())]
            stock += ids
    state = fm.new_state()
    fast = [fm.prefill(state, prompt)]
    while len(fast) < steps:
        fast.append(fm.step(state, fast[-1]))
    assert fast == stock
    ref = reference_next(prompt + stock)
    assert stock == ref[len(prompt) - 1:len(prompt) + steps - 1]


def test_cache_adapter_layout():
    fm = fast_model("float32")
    state = fm.new_state()
    fm.prefill(state, [TEXT + (1 | 5 << 1 | 0 << 4 | 9 << 7), TEXT])     # mem[5] = 9
    got = fm.cache(state).get_recurrent_state(0)
    assert tuple(got.shape) == (1, HOST.gdn_heads, HOST.key_dim, HOST.value_dim)
    assert got.dtype == torch.float32
    head = fm.layers[0].gdn.heads[0]
    rails = got[0, head, 5]
    bits = [int(rails[2 * i] > 16) for i in range(4)]
    assert bits == [1, 0, 0, 1] and float(got[0, head, 4].abs().max()) == 0.0
    with pytest.raises(FastPathError, match="not a circuit layer"):
        fm.recurrent_state(state, 5)


@NATIVE
def test_batch_rows_are_single_launches(native):
    """Launches in lockstep: every row's next tokens, hidden state (bit for bit) and recurrent
    states are those of the same launch run alone; rows leave (keep) and are reused (reset)."""
    rng = np.random.default_rng(7)
    fm = fast_model("float32", native=native)
    streams = [stream(rng, 30, text=0) for _ in range(4)]
    alone = []
    for toks in streams:
        state, nxt, hid = fm.new_state(), [], []
        for t in toks:
            nxt.append(fm.step(state, t))
            hid.append(state.last[0].clone())
        alone.append((nxt, hid, [fm.recurrent_state(state, layer) for layer in range(fm.L)]))
    stop = [30, 12, 20, 30]                      # tokens each launch runs for
    batch, rows, pos, waiting, steps = fm.new_state(3), [0, 1, 2], [0, 0, 0], [3], 0
    while rows:
        decide = [p % 4 != 1 for p in pos]       # some rows are mid-prompt: no next token
        out = fm.step_batch(batch, [streams[r][p] for r, p in zip(rows, pos)], decide)
        for b, (r, p) in enumerate(zip(rows, pos)):
            want_next, want_hidden, want_states = alone[r]
            assert out[b] == (want_next[p] if decide[b] else None), (r, p)
            assert torch.equal(batch.last[b], want_hidden[p]), (r, p)
            if p == 29:
                for layer in range(fm.L):
                    np.testing.assert_array_equal(fm.recurrent_state(batch, layer, b), want_states[layer])
        pos, steps = [p + 1 for p in pos], steps + 1
        done = [b for b, (r, p) in enumerate(zip(rows, pos)) if p == stop[r]]
        for b in done[:len(waiting)]:            # a finished launch's row starts the next one
            fm.reset(batch, b)
            rows[b], pos[b] = waiting.pop(), 0
        keep = [b for b in range(len(rows)) if pos[b] < stop[rows[b]]][::-1]    # reversed: rows reorder too
        rows, pos = [rows[b] for b in keep], [pos[b] for b in keep]
        if rows:
            fm.keep(batch, keep)
    assert steps == 12 + 30                      # launch 3 started when launch 1 left, at step 12


# ---------------------------------------------------------------------------
@pytest.mark.parametrize("onehot", [True, False])
def test_delta_rule_matches_transformers(onehot):
    """One decode step of transformers' recurrent gated delta rule (no decay) on random tensors."""
    rng = np.random.default_rng(4)
    H, dk, dv = 3, 16, 8
    S = torch.tensor(rng.normal(0, 1, (H, dk, dv)), dtype=torch.float32)
    q, k = (torch.tensor(rng.normal(0, 1, (H, dk)), dtype=torch.float32) for _ in range(2))
    if onehot:
        q, k = torch.zeros(H, dk), torch.zeros(H, dk)
        q[torch.arange(H), torch.tensor([1, 5, 9])] = 128.0
        k[torch.arange(H - 1), torch.tensor([1, 7])] = 128.0      # the last head: no key
    v = torch.tensor(rng.normal(0, 1, (H, dv)), dtype=torch.float32)
    beta = torch.sigmoid(torch.tensor(rng.normal(0, 1, H), dtype=torch.float32))
    want_o, want_S = torch_recurrent_gated_delta_rule(
        q[None, None], k[None, None], v[None, None], g=torch.zeros(1, 1, H), beta=beta[None, None],
        initial_state=S[None].clone(), output_final_state=True, use_qk_l2norm_in_kernel=True)
    S_fast = S.clone()
    o = delta_rule(S_fast, l2norm(q) / dk ** 0.5, l2norm(k), v, beta)
    if onehot:                                   # one nonzero row: exactly the stock values
        assert torch.equal(o, want_o[0, 0]) and torch.equal(S_fast, want_S[0])
    else:
        torch.testing.assert_close(o, want_o[0, 0], rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(S_fast, want_S[0], rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------
def _broken(edit):
    model = copy.deepcopy(toy_model("float32"))
    with torch.no_grad():
        edit(model)
    return model


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.model.layers[0].linear_attn.A_log.fill_(-5.0), "A_log"),
    (lambda m: m.model.layers[1].linear_attn.dt_bias.fill_(1.0), "dt_bias"),
    (lambda m: m.model.layers[0].linear_attn.conv1d.weight[:, 0, 0].fill_(0.5), "conv"),
    (lambda m: m.model.layers[-1].self_attn.o_proj.weight.fill_(1.0), "after the circuit"),
    (lambda m: m.model.norm.weight.fill_(-2.0), "non-positive gain"),
])
def test_rejects_models_it_cannot_run_exactly(edit, message):
    with pytest.raises(FastPathError, match=message):
        FastModel(_broken(edit))


def test_rejects_bad_tokens_and_configs():
    fm = fast_model("float32")
    state = fm.new_state()
    with pytest.raises(FastPathError, match="not a GPU token"):
        fm.step(state, 3)
    with pytest.raises(FastPathError, match="at least one token"):
        fm.prefill(state, [])
    loud = _broken(lambda m: m.model.embed_tokens.weight[2, HOST.hidden + 5].fill_(1.0))
    with pytest.raises(FastPathError, match="neither a GPU token nor silent"):
        FastModel(loud).prefill(FastModel(loud).new_state(), [2, TEXT])
    with pytest.raises(FastPathError, match="no clear next token"):
        fm.next_token(torch.zeros(fm.N))
    unclear = fm.next_tokens(torch.zeros(2, fm.N), [0, 1])      # in a batch: returned per launch
    assert all(isinstance(e, FastPathError) for e in unclear)
    with pytest.raises(FastPathError, match="batch of one"):
        fm.step(fm.new_state(2), TEXT)
    with pytest.raises(FastPathError, match="3 tokens for a batch of 2"):
        fm.step_batch(fm.new_state(2), [TEXT] * 3)
    bare = _broken(lambda m: None)
    bare.config.qwengpu = None
    with pytest.raises(FastPathError, match="qwengpu block"):
        FastModel(bare)
    L = len(bare.model.layers) - 1               # the circuit layers, then one full-attention layer
    FastModel(bare, circuit_layers=L, gpu_token_ids=[TEXT, TEXT + GPU])
    with pytest.raises(FastPathError, match="linear_attention"):
        FastModel(bare, circuit_layers=L + 1, gpu_token_ids=[TEXT, TEXT + GPU])


@NATIVE
def test_noisy_reads_keep_the_token_stream(native):
    """Without requantized reads the xor gates sum float32-noisy terms (reads are 1 - O(1e-7)):
    the hidden may then differ from stock in the last bits (summation order), never the tokens."""
    rng = np.random.default_rng(6)
    tokens = stream(rng, 32, text=0)
    model, fm = toy_model("float32", False), fast_model("float32", False, native)
    hs, stock_next, cache = stock_run(model, tokens, 1)
    state = fm.new_state()
    for i, t in enumerate(tokens):
        assert fm.step(state, t) == stock_next[i] == reference_next(tokens)[i]
        np.testing.assert_allclose(state.last[0].numpy(), hs[i], atol=1e-6, rtol=0)
    for layer in range(fm.L):
        np.testing.assert_allclose(fm.recurrent_state(state, layer),
                                   cache.get_recurrent_state(layer)[0].float().numpy(), atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------
def test_machine_kernel_replay_on_fast_path():
    """A suite kernel on the merged model through FastModel: every generated token against the
    interpreter's expected stream, then global memory read back through the cache adapter.
    (qgpu bench also runs the stock path on the same kind of launch and compares.)"""
    from qwengpu.bench import kernel_launch
    from qwengpu.driver import protocol, runtime
    from qwengpu.model.merge import default_merged_model
    path = default_merged_model()            # rebuilt when the machine changed
    machine = runtime.readout_of(path)
    model, _ = runtime.load_model(path, "bfloat16")
    fast = FastModel(model)
    # what the model engine loads: the same compact matrices read from the safetensors files alone
    assert_same_derived(FastModel.from_checkpoint(path, "bfloat16", cache=False)._saved(), fast._saved())
    del model
    L = kernel_launch("abs_neg").launch
    want = L.memory.copy()
    expected = protocol.expected_stream(L)                  # with L's copy-out, as the run below
    run = runtime.launch_on_model(fast, machine, L, max_tokens=5000, check="replay")
    assert run.stream[-1].kind == "HALT" and run.tokens == len(expected.tokens) and run.passes > 50   # a real run
    assert run.copied and not np.array_equal(L.memory, want)       # the kernel wrote its outputs


# ---------------------------------------------------------------------------
@pytest.mark.parametrize("onehot", [True, False])
def test_native_delta_rule_matches_transformers(onehot):
    """native.c's delta rule, head by head, against transformers' recurrent gated delta rule
    (no decay, l2norm in the kernel) on random tensors; keys and queries as silu left them."""
    from qwengpu.fast.native import F32P, library
    rng = np.random.default_rng(8)
    H, dk, dv = 3, 16, 8
    S = rng.normal(0, 1, (H, dk, dv)).astype(np.float32)
    q, k = (rng.normal(0, 1, (H, dk)).astype(np.float32) for _ in range(2))
    if onehot:
        q, k = np.zeros((H, dk), np.float32), np.zeros((H, dk), np.float32)
        q[np.arange(H), [1, 5, 9]] = 128.0
        k[np.arange(H - 1), [1, 7]] = 128.0      # the last head: no key
    v = rng.normal(0, 1, (H, dv)).astype(np.float32)
    beta = (1 / (1 + np.exp(-rng.normal(0, 1, H)))).astype(np.float32)
    want_o, want_S = torch_recurrent_gated_delta_rule(
        *(torch.from_numpy(a)[None, None] for a in (q, k, v)), g=torch.zeros(1, 1, H),
        beta=torch.from_numpy(beta)[None, None], initial_state=torch.from_numpy(S)[None].clone(),
        output_final_state=True, use_qk_l2norm_in_kernel=True)
    got_S, o, tmp = S.copy(), np.zeros((H, dv), np.float32), np.zeros(dv, np.float32)
    ptr = lambda a: a.ctypes.data_as(F32P)      # noqa: E731
    for h in range(H):
        qh, kh = q[h].copy(), k[h].copy()
        library().qg_delta_rule(ptr(got_S[h]), ptr(qh), ptr(kh), ptr(v[h]), float(beta[h]), dk, dv,
                                ptr(o[h]), ptr(tmp))
    tol = dict(rtol=0, atol=0) if onehot else dict(rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(torch.from_numpy(o), want_o[0, 0], **tol)
    torch.testing.assert_close(torch.from_numpy(got_S), want_S[0], **tol)


def test_native_build_errors(monkeypatch, tmp_path):
    from qwengpu.fast import native
    monkeypatch.setattr(native, "CACHE", tmp_path)
    model = toy_model("float32")
    for cc, message in [("no-such-compiler-qg", "no C compiler"), ("false", "false failed to build")]:
        monkeypatch.setenv("CC", cc)
        native.library.cache_clear()
        with pytest.raises(native.NativeError, match=message):
            FastModel(model, native=True)
    monkeypatch.delenv("CC")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setattr(native, "CACHE", blocked / "native")      # cannot be made: its parent is a file
    native.library.cache_clear()
    with pytest.raises(native.NativeError, match="cannot build the C step"):
        FastModel(model, native=True)
    with pytest.warns(UserWarning, match="torch ops"):
        fm = FastModel(model)                    # the default falls back to the torch ops, loudly
    assert fm.native is None
    assert fm.step(fm.new_state(), TEXT + 5) == reference_next([TEXT + 5])[0]
    native.library.cache_clear()


def test_native_refuses_non_finite_mlp_weights():
    """The C step skips the terms of zero inputs and off neurons, which is exact only when every
    skipped term is +-0: a weight of inf (inf * 0 is NaN) must send it back to the torch ops."""
    from qwengpu.fast import native

    def poison(m):
        gate = m.model.layers[0].mlp.gate_proj.weight
        gate[tuple(torch.nonzero(gate)[0])] = float("inf")
    with pytest.raises(native.NativeError, match="not finite"):
        FastModel(_broken(poison), native=True)


# --------------------------------------------------------------------------- from the checkpoint files
def assert_same_derived(a, b, where="fast"):
    """Two FastModel._saved() trees: equal tensors (dtype, shape, bits), equal scalars."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_same_derived(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_derived(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    else:
        assert a == b, where


@functools.lru_cache(maxsize=None)
def _saved_toy(tmp_root: str, sharded: bool) -> str:
    """The toy model (float32 weights) written with save_pretrained: one model.safetensors, or
    shards with an index."""
    import json
    from pathlib import Path
    out = Path(tmp_root) / ("sharded" if sharded else "single")
    model = toy_model("float32")
    if sharded:             # a final-norm gain that bf16 rounds (1.1): the load must cast as the stock one does
        model = copy.deepcopy(model)
        with torch.no_grad():
            model.model.norm.weight.fill_(0.1)
    model.save_pretrained(out, max_shard_size="200KB" if sharded else "10GB")
    cfg = json.loads((out / "config.json").read_text())      # the rest of a merged checkpoint's block
    cfg["qwengpu"].update(base_hidden_size=HOST.hidden, base_rms_norm_eps=HOST.eps, base_vocab_size=TEXT)
    (out / "config.json").write_text(json.dumps(cfg))
    return str(out)


@pytest.fixture(scope="module")
def saved_toy(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("toy-checkpoints"))
    return lambda sharded=False: _saved_toy(root, sharded)


@NATIVE
@pytest.mark.parametrize("dtype, sharded", [("float32", False), ("bfloat16", True)])
def test_from_checkpoint_matches_stock(saved_toy, monkeypatch, tmp_path, dtype, sharded, native):
    """FastModel.from_checkpoint reads the safetensors files itself: the same compact matrices as
    FastModel(stock model loaded in `dtype`), and the same hidden states, recurrent states and
    tokens as the stock transformers forward of that loaded model."""
    from pathlib import Path
    from qwengpu.driver import runtime
    path = saved_toy(sharded)
    assert (Path(path) / ("model.safetensors.index.json" if sharded else "model.safetensors")).is_file()
    monkeypatch.setenv("QWENGPU_FAST_CACHE", str(tmp_path / "cache"))
    stock, _ = runtime.load_model(path, dtype)
    fm = FastModel.from_checkpoint(path, dtype, native=native)
    assert_same_derived(fm._saved(), FastModel(stock, native=native)._saved())
    rng = np.random.default_rng(11)
    T, prefill = (40, 12) if dtype == "float32" else (16, 6)
    tokens = stream(rng, T)
    hs, stock_next, cache = stock_run(stock, tokens, prefill)
    state = fm.new_state()
    assert fm.prefill(state, tokens[:prefill]) == stock_next[prefill - 1]
    for i in range(prefill, T):
        if tokens[i] < TEXT:
            assert fm.prefill(state, [tokens[i]]) is None
            continue
        assert fm.step(state, tokens[i]) == stock_next[i] == reference_next(tokens)[i], f"token {i}"
        if dtype == "float32":
            np.testing.assert_array_equal(state.last[0].numpy(), hs[i], err_msg=f"hidden after token {i}")
    for layer in range(fm.L):
        np.testing.assert_array_equal(fm.recurrent_state(state, layer),
                                      cache.get_recurrent_state(layer)[0].float().numpy())


def test_from_checkpoint_cache(saved_toy, monkeypatch, tmp_path):
    """The first load writes build/fast-cache's entry, the second reads it (no dense read at all)
    and computes the same; other code's entry replaces the stale one; a changed checkpoint gets a
    new entry; a torn entry is rebuilt; an unwritable folder warns and loads without it; 'off'
    disables it."""
    import shutil
    import warnings
    from qwengpu.fast import cache as fast_cache, weights
    src = tmp_path / "ckpt"
    shutil.copytree(saved_toy(), src)
    folder = tmp_path / "cache"
    monkeypatch.setenv("QWENGPU_FAST_CACHE", str(folder))
    first = FastModel.from_checkpoint(src, "float32")
    entries = list(folder.glob("*.pt"))
    assert len(entries) == 1
    calls = []
    real_get = weights.CheckpointTensors.get
    monkeypatch.setattr(weights.CheckpointTensors, "get", lambda *a, **k: calls.append(a[1]) or real_get(*a, **k))
    second = FastModel.from_checkpoint(src, "float32")
    assert calls == []                                          # from the cache
    assert_same_derived(second._saved(), first._saved())
    tokens = stream(np.random.default_rng(12), 20)
    outs = []
    for fm in (first, second):
        state = fm.new_state()
        outs.append([fm.prefill(state, [t]) for t in tokens])
    assert outs[0] == outs[1] and any(o is not None for o in outs[0])
    format_now = fast_cache.FORMAT
    monkeypatch.setattr(fast_cache, "FORMAT", format_now + 1)   # other code: its entry replaces the stale one
    FastModel.from_checkpoint(src, "float32")
    assert len(list(folder.glob("*.pt"))) == 1 and not entries[0].exists()
    monkeypatch.setattr(fast_cache, "FORMAT", format_now)
    FastModel.from_checkpoint(src, "bfloat16")                  # another dtype: another entry
    assert len(list(folder.glob("*.pt"))) == 2
    cfg = src / "config.json"
    cfg.write_text(cfg.read_text() + " ")                        # another checkpoint's bytes: a new key
    FastModel.from_checkpoint(src, "float32")
    assert len(list(folder.glob("*.pt"))) == 3
    torn = fast_cache.entry(src, "float32")
    torn.write_bytes(b"not a torch file")
    with pytest.warns(fast_cache.FastCacheWarning, match="unreadable"):
        again = FastModel.from_checkpoint(src, "float32")
    assert_same_derived(again._saved(), first._saved())
    assert fast_cache.load(torn) is not None                     # rewritten
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("QWENGPU_FAST_CACHE", str(blocked / "cache"))
    with pytest.warns(fast_cache.FastCacheWarning, match="not writable.*going on without the cache"):
        fm = FastModel.from_checkpoint(src, "float32")
    assert_same_derived(fm._saved(), first._saved())
    monkeypatch.setenv("QWENGPU_FAST_CACHE", "off")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FastModel.from_checkpoint(src, "float32")


def test_from_checkpoint_errors(saved_toy, tmp_path, monkeypatch):
    """Bad folders and tensors the fast path cannot read: QwenGpuErrors naming the problem."""
    import json
    import shutil
    from safetensors.torch import load_file, save_file
    from qwengpu.errors import QwenGpuError
    from qwengpu.model import CheckpointError
    monkeypatch.setenv("QWENGPU_FAST_CACHE", "off")
    with pytest.raises(QwenGpuError, match="no config.json"):
        FastModel.from_checkpoint(tmp_path / "nothing")
    src = tmp_path / "ckpt"
    shutil.copytree(saved_toy(), src)
    with pytest.raises(QwenGpuError, match="dtype 'float16'"):
        FastModel.from_checkpoint(src, "float16")
    weights = load_file(src / "model.safetensors")
    del weights["model.layers.1.linear_attn.in_proj_z.weight"]
    save_file(weights, src / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="no tensor 'model.layers.1.linear_attn.in_proj_z.weight'"):
        FastModel.from_checkpoint(src)
    cfg = (src / "config.json").read_text()
    (src / "config.json").write_text(json.dumps({"text_config": json.loads(cfg)}))
    with pytest.raises(FastPathError, match="multimodal config"):
        FastModel.from_checkpoint(src)
    (src / "config.json").write_text(cfg)
    (src / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no weights \\(neither model.safetensors"):
        FastModel.from_checkpoint(src)


def test_from_checkpoint_text_defaults():
    """A config.json without layer_types / hidden_act gets Qwen3_5TextConfig's defaults (the stock
    config's), so both paths read the same model."""
    from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
    from qwengpu.fast.model import text_config
    raw = {"num_hidden_layers": 8, "hidden_size": 64, "vocab_size": 300}
    ours, stock = text_config(raw), Qwen3_5TextConfig(**raw)
    for key in ("layer_types", "hidden_act", "rms_norm_eps", "tie_word_embeddings", "linear_key_head_dim",
                "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads"):
        assert getattr(ours, key) == getattr(stock, key), key


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.model.layers[0].linear_attn.A_log.fill_(-5.0), "A_log"),
    (lambda m: m.model.layers[1].linear_attn.dt_bias.fill_(1.0), "dt_bias"),
    (lambda m: m.model.layers[0].linear_attn.conv1d.weight[:, 0, 0].fill_(0.5), "conv"),
    (lambda m: m.model.layers[-1].self_attn.o_proj.weight.fill_(1.0), "after the circuit"),
    (lambda m: m.model.layers[-1].mlp.down_proj.weight.fill_(1.0), "after the circuit"),
    (lambda m: m.model.norm.weight.fill_(-2.0), "non-positive gain"),
])
def test_from_checkpoint_rejects_models_it_cannot_run_exactly(edit, message, tmp_path, monkeypatch):
    """The load-time checks on the tensors read from the files (the later layers' writers: only the
    rows the head reads)."""
    monkeypatch.setenv("QWENGPU_FAST_CACHE", "off")
    _broken(edit).save_pretrained(tmp_path / "broken")
    with pytest.raises(FastPathError, match=message):
        FastModel.from_checkpoint(tmp_path / "broken")


@pytest.mark.parametrize("seed", range(4))
def test_native_top2_with_block_bounds_equals_a_full_scan(seed):
    """native.c's top2 computes only the head blocks whose bound can hold the best two; it must
    give what a scan of every row gives: the largest logit, lowest index on a tie, then the
    largest of the rest. Rows are built like GPU tokens (a kind column per block, then payload
    bits), so the bounds differ and prune; integer weights and inputs make every sum exact, so
    the ties (equal rows in different blocks, few payload bits) are real."""
    from types import SimpleNamespace
    from qwengpu.fast.model import Sparse
    from qwengpu.fast.native import HEAD_BLOCK, NativeStep
    rng = np.random.default_rng(seed)
    blocks, payload = 4, 5
    W = np.zeros((blocks * HEAD_BLOCK, blocks + payload), np.float32)
    for b in range(blocks):
        W[b * HEAD_BLOCK:(b + 1) * HEAD_BLOCK, b] = 1
    W[:, blocks:] = rng.integers(0, 2, size=(len(W), payload))
    W[3 * HEAD_BLOCK + 9] = W[HEAD_BLOCK + 4]          # equal rows, the later one in a block that ranks first
    W[3 * HEAD_BLOCK + 10, blocks:] = 2
    step = NativeStep(SimpleNamespace(L=0, layers=[], N=W.shape[1], dk=1, dv=1, eps=1e-6,
                                      head=Sparse.gathered(torch.from_numpy(W), None)))
    code = 2 * W[rng.integers(len(W), size=16)] - 1                # output codes of some rows
    h = np.concatenate([code, rng.integers(-2, 3, size=(32, W.shape[1])), 2 * W[HEAD_BLOCK + 4:HEAD_BLOCK + 5] - 1,
                        np.zeros((1, W.shape[1]))]).astype(np.float32)
    h[-2, 3] = 1                                                   # block 3 too: both equal rows tie at the top
    top, at = step.top2(torch.from_numpy(h))
    for b, x in enumerate(h.astype(np.int64)):
        logits = W.astype(np.int64) @ x
        i1 = int(np.argmax(logits))
        rest = logits.copy()
        rest[i1] = logits.min() - 1
        i2 = int(np.argmax(rest))
        assert (at[b].tolist(), top[b].tolist()) == ([i1, i2], [logits[i1], logits[i2]]), b
    h[0, 3] = np.inf                                 # a bound that is not finite: a scan of every row
    top, at = step.top2(torch.from_numpy(h[:1]))
    with np.errstate(invalid="ignore"):
        logits = [sum(w * x for w, x in zip(W[t], h[0]) if w) for t in range(len(W))]    # nonzeros only
    i1 = 0
    for t in range(len(W)):
        i1 = t if logits[t] > logits[i1] else i1
    assert at[0, 0] == i1 and top[0, 0] == np.inf


def test_a_dense_block_is_off_only_through_an_all_negative_bias_column():
    """native._off_column: the column whose weights are all negative and largest in magnitude, and
    the input from which its smallest weight times it is below -89 (90 / that weight's size)."""
    from qwengpu.fast.native import _off_column
    w = np.array([[1.0, -2.0, 3.0], [-128.0, -384.0, -640.0], [-64.0, -64.0, -64.0]], np.float32)
    assert _off_column(w) == (1, 90.0 / 128.0)          # column 1: every row <= -90 from 90/128 on
    assert _off_column(np.array([[-1.0, 2.0], [0.0, -3.0]], np.float32)) == (-1, 0.0)   # a row could be on
