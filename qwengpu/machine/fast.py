"""The exact fast path: the circuit layers of a merged model, token by token, on compact matrices.

The stock transformers decode step runs every layer of the merged model over dense matrices
that are > 99% zeros, through slow torch fallbacks (causal_conv1d_update, the recurrent
gated delta rule). `FastModel` extracts, once, the nonzero structure of each circuit layer
(the residual dims each matrix reads, the dims it writes, the GDN heads in use) and runs
only that, with the stock decode path's formulas op for op (RMS norm, silu, l2norm, the
1/sqrt(d_k) query scale, the delta rule, the gated RMS norm, SwiGLU), in float32.

Why the result is the stock path's, bit for bit in float32:

* The residual is kept whole (N floats), so every RMS norm reduces the same vector.
  A matrix product over the gathered columns drops only terms with weight 0, and adding
  +-0 changes no sum; the circuit's products and sums are exact (integers, powers of two:
  docs/circuit.md), so the summation order does not matter either. The one exception: a
  float32 GDN read is 1 - O(1e-7), and an MLP that sums several such noisy values before
  requantizing them may round its last bit differently from the stock BLAS order (never
  enough to move a threshold neuron or a token; the tests check both cases).
* The conv is [0, .., 0, 1] per channel: the current token only (no conv state).
  exp(A_log) is exactly 0 in float32: no decay. in_proj_a and dt_bias are 0 (checked).
* Keys and queries are, after silu and l2norm, exact one-hot vectors (or zero) per head.
  With one nonzero k[r] the stock sums (S * k).sum(-2) and S + k delta^T reduce exactly to
  row r (the other terms are +-0), so the update touches one row; heads with more nonzeros
  fall back to the dense formulas. When no head has a key or a query (no bank of the layer is
  addressed by this token) the state is untouched and the output is 0: the rest is skipped.
* A head whose every weight is zero keeps a zero state and adds nothing: it is skipped.
* Text tokens (whose embedding is zero on every dim a circuit layer reads) leave the circuit
  layers silent: every pre-activation is 0, the key is 0, the state is untouched.

Why the next token is the stock argmax over the GPU vocabulary (checked at load):

* The layers after the circuit write no dim that a GPU token's head row reads (their
  out_proj / o_proj / down_proj rows there are zero), so those dims reach the final norm
  as the circuit left them.
* The final norm multiplies every dim by the same r = rsqrt(mean(h**2) + eps) > 0, then by
  its gain g_d, so logit(t) = r * sum_d W[t, d] g_d h_d over those dims: positive scaling
  keeps the argmax. The circuit's output code wins by a margin >= 1; a margin below 0.25
  raises (the stock path's rounding could then decide).

In a bf16 model the stock path rounds to bf16 where this path keeps float32 (e.g. a GDN read
is 1.0 in bf16, 1 - 6e-8 in float32); the circuit is exact in both, so the token stream is
the same.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from qwengpu.errors import QwenGpuError

MIN_MARGIN = 0.25
NO_DECAY_A_LOG = -100.0       # exp(A_log) == 0 in float32 below about -103.3


class FastPathError(QwenGpuError):
    """The model breaks an assumption of the fast path, or a token it cannot decide."""


def _nonzero(mask: torch.Tensor) -> torch.Tensor:
    return torch.nonzero(mask).flatten()


def _f32(p: torch.Tensor) -> torch.Tensor:
    return p.detach().to(torch.float32)


@dataclass
class Sparse:
    """y = W h for a matrix with few nonzeros: W[rows, cols] as a CSR matrix over the columns it
    reads; `rows` None: every row (the output keeps the matrix's row layout)."""
    cols: torch.Tensor
    rows: torch.Tensor | None
    csr: torch.Tensor
    nnz: int
    gain: torch.Tensor | None = None     # (1 + w) of the norm in front, on `cols`

    @classmethod
    def of(cls, dense: torch.Tensor, nonzero_rows: bool = False) -> "Sparse":
        nz = dense != 0
        cols = _nonzero(nz.any(0))
        rows = _nonzero(nz.any(1)) if nonzero_rows else None
        return cls.gathered(_f32(dense[:, cols] if rows is None else dense[rows][:, cols]), cols, rows)

    @classmethod
    def gathered(cls, compact: torch.Tensor, cols: torch.Tensor, rows: torch.Tensor | None = None) -> "Sparse":
        """From W[rows][:, cols] (float32) already gathered."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # "sparse CSR support is in beta"
            csr = compact.to_sparse_csr()
            # int32 indices: the CSR product would otherwise convert int64 ones on every call
            csr = torch.sparse_csr_tensor(csr.crow_indices().int(), csr.col_indices().int(), csr.values(), csr.shape)
        return cls(cols, rows, csr, int((compact != 0).sum()))

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        return torch.mv(self.csr, h.index_select(0, self.cols))

    def normed(self, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """W norm(x) with norm(x) = (x * r) * gain (Qwen3_5RMSNorm), computed on `cols` only."""
        return torch.mv(self.csr, x.index_select(0, self.cols) * r * self.gain)

    def after_norm(self, gain: torch.Tensor) -> "Sparse":
        self.gain = gain[self.cols].contiguous()
        return self

    def add_to(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """x + W h, in place on x (the rows W does not write get + 0 in the stock add: unchanged)."""
        return x.index_add_(0, self.rows, self(h))


@dataclass
class Gdn:
    heads: torch.Tensor            # used head indices
    proj: Sparse                   # rows: q, k, v, z, b of the used heads (one product: they read the same h)
    out: Sparse                    # [N, used heads * d_v]
    norm_w: torch.Tensor           # [d_v]
    base: torch.Tensor             # arange(used heads) * d_k: each head's first row in S.view(-1, d_v)


@dataclass
class Mlp:
    gate_up: Sparse                # rows: gate then up, live neurons only
    down: Sparse                   # [N, live neurons]


@dataclass
class Layer:
    gdn: Gdn | None
    mlp: Mlp | None


@dataclass
class FastState:
    """Recurrent states of the used heads, per circuit layer: [used heads, d_k, d_v]."""
    states: list[torch.Tensor]
    tokens: int = 0
    last: torch.Tensor | None = field(default=None, repr=False)    # hidden after the circuit


class RecurrentStates:
    """The slice of a DynamicCache that the host readback uses (`Machine.read_global`)."""

    def __init__(self, fast: "FastModel", state: FastState):
        self.fast, self.state = fast, state

    def get_recurrent_state(self, layer: int) -> torch.Tensor:
        return torch.from_numpy(self.fast.recurrent_state(self.state, layer))[None]


class FastModel:
    """The circuit layers of `model` (a stock Qwen3_5ForCausalLM), compacted.

    `circuit_layers` and `gpu_token_ids` ([first, end)) default to the model config's
    qwengpu block (a merged checkpoint)."""

    def __init__(self, model, circuit_layers: int | None = None, gpu_token_ids=None, threads: int | None = 1):
        cfg = model.config
        block = getattr(cfg, "qwengpu", None) or {}
        if circuit_layers is None or gpu_token_ids is None:
            if not block:
                raise FastPathError("the model config has no qwengpu block: pass circuit_layers and gpu_token_ids")
            circuit_layers = block["circuit_layers"] if circuit_layers is None else circuit_layers
            gpu_token_ids = block["gpu_token_ids"] if gpu_token_ids is None else gpu_token_ids
        self.L = int(circuit_layers)
        self.threads = threads          # torch threads while stepping: 1 (these ops are too small to split)
        self.first, self.end = (int(i) for i in gpu_token_ids)
        self.N = cfg.hidden_size
        self.eps = cfg.rms_norm_eps
        self.H, self.dk, self.dv = cfg.linear_num_value_heads, cfg.linear_key_head_dim, cfg.linear_value_head_dim
        self._check_config(cfg)
        layers = model.model.layers
        with torch.no_grad():
            self.layers = [self._layer(layers[i], i) for i in range(self.L)]
            self.read_any = _nonzero(self._read_mask())
            self._embeddings(model)
            self._head(model, layers)

    # ---- load ---------------------------------------------------------------------------------
    def _check_config(self, cfg) -> None:
        types = list(cfg.layer_types)
        bad = [i for i in range(self.L) if types[i] != "linear_attention"]
        if self.L > len(types) or bad:
            raise FastPathError(f"circuit layers must be the first {self.L} layers and linear_attention; "
                                f"layer types are {types[:self.L]}")
        if cfg.linear_num_key_heads != cfg.linear_num_value_heads:
            raise FastPathError("grouped GDN heads (key heads != value heads) are not supported")
        if cfg.hidden_act != "silu":
            raise FastPathError(f"hidden_act {cfg.hidden_act!r}: the fast path implements silu")
        if not 0 <= self.first < self.end <= cfg.vocab_size:
            raise FastPathError(f"GPU token ids [{self.first}, {self.end}) are outside the vocabulary "
                                f"of {cfg.vocab_size}")

    def _layer(self, layer, i: int) -> Layer:
        gdn, mlp = self._gdn(layer.linear_attn, i), self._mlp(layer.mlp)
        if gdn is not None:
            gdn.proj.after_norm(1.0 + _f32(layer.input_layernorm.weight))
        if mlp is not None:
            mlp.gate_up.after_norm(1.0 + _f32(layer.post_attention_layernorm.weight))
        return Layer(gdn, mlp)

    def _gdn(self, attn, i: int) -> Gdn | None:
        self._check_gdn(attn, i)
        H, dk, dv = self.H, self.dk, self.dv
        qkv, z, b, out = (w.detach() for w in (attn.in_proj_qkv.weight, attn.in_proj_z.weight,
                                                attn.in_proj_b.weight, attn.out_proj.weight))
        qkv_rows = (qkv != 0).any(1)
        used = (qkv_rows[:H * dk].view(H, dk).any(1) | qkv_rows[H * dk:2 * H * dk].view(H, dk).any(1)
                | qkv_rows[2 * H * dk:].view(H, dv).any(1) | (z != 0).any(1).view(H, dv).any(1)
                | (b != 0).any(1) | (out != 0).any(0).view(H, dv).any(1))
        heads = _nonzero(used)
        if not len(heads):
            return None
        qkv_of = torch.cat([_head_rows(heads, dk, 0), _head_rows(heads, dk, H * dk), _head_rows(heads, dv, 2 * H * dk)])
        proj = torch.cat([qkv[qkv_of], z[_head_rows(heads, dv, 0)], b[heads]])
        return Gdn(heads, Sparse.of(proj), Sparse.of(out[:, _head_rows(heads, dv, 0)], nonzero_rows=True),
                   _f32(attn.norm.weight), torch.arange(len(heads)) * dk)

    def _check_gdn(self, attn, i: int) -> None:
        where = f"circuit layer {i}"
        decay = torch.exp(_f32(attn.A_log))
        if (decay != 0).any():
            raise FastPathError(f"{where}: A_log must be <= {NO_DECAY_A_LOG} (no decay); "
                                f"max is {float(attn.A_log.max()):g}")
        if (attn.dt_bias != 0).any() or (attn.in_proj_a.weight != 0).any():
            raise FastPathError(f"{where}: dt_bias and in_proj_a must be zero")
        conv = _f32(attn.conv1d.weight)
        ident = torch.zeros_like(conv)
        ident[..., -1] = 1.0
        if attn.conv1d.bias is not None or not torch.equal(conv, ident):
            raise FastPathError(f"{where}: the conv must be [0, ..., 0, 1] per channel without bias "
                                "(the current token only)")

    def _mlp(self, mlp) -> Mlp | None:
        gate, up, down = (w.detach() for w in (mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight))
        live = _nonzero((gate != 0).any(1) & (up != 0).any(1) & (down != 0).any(0))
        if not len(live):
            return None
        return Mlp(Sparse.of(torch.cat([gate[live], up[live]])), Sparse.of(down[:, live], nonzero_rows=True))

    def _read_mask(self) -> torch.Tensor:
        mask = torch.zeros(self.N, dtype=torch.bool)
        for lay in self.layers:
            subs = ([lay.gdn.proj] if lay.gdn else []) + ([lay.mlp.gate_up] if lay.mlp else [])
            for sub in subs:
                mask[sub.cols] = True
        return mask

    def _embeddings(self, model) -> None:
        emb = model.model.embed_tokens.weight
        self.embed = model.model.embed_tokens
        gpu = emb[self.first:self.end]
        self.emb_cols = _nonzero((gpu != 0).any(0))
        self.emb = _f32(gpu[:, self.emb_cols])

    def _head(self, model, layers) -> None:
        """The GPU rows of the output head on the dims they read, times the final norm's gains;
        checks that no later layer writes those dims."""
        rows = model.lm_head.weight[self.first:self.end]
        cols = _nonzero((rows != 0).any(0))
        gain = 1.0 + _f32(model.model.norm.weight)[cols]
        if (gain <= 0).any():
            raise FastPathError("the final norm has a non-positive gain on a dim the GPU tokens' head rows read")
        for j in range(self.L, len(layers)):
            lay = layers[j]
            mixer = getattr(lay, "linear_attn", None)
            writers = [lay.mlp.down_proj.weight,
                       mixer.out_proj.weight if mixer is not None else lay.self_attn.o_proj.weight]
            if any((w[cols] != 0).any() for w in writers):
                raise FastPathError(f"layer {j} (after the circuit) writes a dim the GPU tokens' head rows read")
        self.head = Sparse.gathered(_f32(rows[:, cols]) * gain, cols)

    # ---- run ----------------------------------------------------------------------------------
    def new_state(self) -> FastState:
        return FastState([torch.zeros(len(lay.gdn.heads) if lay.gdn else 0, self.dk, self.dv)
                          for lay in self.layers])

    def step(self, state: FastState, token_id: int) -> int:
        """Run one token through the circuit layers; the next token id (argmax over the GPU ids)."""
        with self._running():
            return self._step(state, int(token_id))

    def prefill(self, state: FastState, token_ids) -> int | None:
        """The prompt through the same recurrence, token by token (text tokens leave the circuit
        silent); the next token after the last one, None when that is a text token."""
        token_ids = [int(t) for t in token_ids]
        if not token_ids:
            raise FastPathError("prefill needs at least one token")
        with self._running():
            for t in token_ids[:-1]:
                if self.first <= t < self.end:
                    state.last = self.hidden(state, t)
                else:
                    self._silent(state, t)
            last = token_ids[-1]
            if not self.first <= last < self.end:
                self._silent(state, last)
                return None
            return self._step(state, last)

    @contextlib.contextmanager
    def _running(self):
        before = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            with torch.no_grad():
                yield
        finally:
            torch.set_num_threads(before)

    def _step(self, state: FastState, token_id: int) -> int:
        if not self.first <= token_id < self.end:
            raise FastPathError(f"token {token_id} is not a GPU token (ids {self.first}..{self.end - 1}): "
                                "the circuit decides the next token only after a GPU token")
        state.last = self.hidden(state, token_id)
        return self.next_token(state.last)

    def _silent(self, state: FastState, token_id: int) -> None:
        if not 0 <= token_id < self.embed.num_embeddings:
            raise FastPathError(f"token id {token_id} is outside the vocabulary of {self.embed.num_embeddings}")
        row = self.embed.weight[token_id, self.read_any]
        if (row != 0).any():
            raise FastPathError(f"token {token_id} is neither a GPU token nor silent in the circuit "
                                "(its embedding has a dim a circuit layer reads)")
        state.tokens += 1

    def embedding(self, token_id: int) -> torch.Tensor:
        return torch.zeros(self.N).index_copy_(0, self.emb_cols, self.emb[token_id - self.first])

    def hidden(self, state: FastState, token_id: int) -> torch.Tensor:
        """The residual [N] after the circuit layers for one GPU token (updates the states)."""
        x = self.embedding(token_id)
        for lay, S in zip(self.layers, state.states):
            x = self.layer(lay, S, x)
        state.tokens += 1
        return x

    def run_embedding(self, state: FastState, x: torch.Tensor) -> torch.Tensor:
        """The residual after the circuit layers for an arbitrary input vector [N] (tests)."""
        x = _f32(x).clone()
        for lay, S in zip(self.layers, state.states):
            x = self.layer(lay, S, x)
        state.tokens += 1
        return x

    def layer(self, lay: Layer, S: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """One decoder layer on the residual x [N] (stock order: norm, GDN, add, norm, MLP, add)."""
        if lay.gdn is not None:
            o = self.gdn(lay.gdn, S, x, self.rms(x))
            if o is not None:
                lay.gdn.out.add_to(x, o)
        if lay.mlp is not None:
            gate, up = lay.mlp.gate_up.normed(x, self.rms(x)).chunk(2)
            lay.mlp.down.add_to(x, F.silu(gate) * up)
        return x

    def rms(self, x: torch.Tensor) -> torch.Tensor:
        """Qwen3_5RMSNorm's factor rsqrt(mean(x**2) + eps), over the whole residual."""
        return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def gdn(self, g: Gdn, S: torch.Tensor, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor | None:
        """One token through the used heads (the stock recurrent path): the gated norm's output
        [heads * d_v], None when it is all zero and the states are untouched."""
        hu, dk, dv = len(g.heads), self.dk, self.dv
        qkv, z, b = g.proj.normed(x, r).split([hu * (2 * dk + dv), hu * dv, hu])
        qkv = F.silu(qkv)                                 # conv = identity on the current token
        qk = l2norm(qkv[:2 * hu * dk].view(2 * hu, dk))   # per row: as the stock's per-head l2norm
        most = int(torch.count_nonzero(qk, dim=-1).max())
        if most == 0:              # no key, no query: S + 0 delta^T = S, and o = 0 reads as exactly 0
            return None
        o = delta_rule(S, qk[:hu] / (dk ** 0.5), qk[hu:], qkv[2 * hu * dk:].view(hu, dv), torch.sigmoid(b), g.base,
                       onehot=most == 1)
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + self.eps)       # Qwen3_5RMSNormGated
        return ((g.norm_w * o) * F.silu(z.view(hu, dv))).flatten()

    def next_token(self, hidden: torch.Tensor) -> int:
        logits = self.head(hidden)
        top, best = (float(v) for v in logits.max(0))
        logits[int(best)] = -float("inf")
        second, other = (float(v) for v in logits.max(0)) if len(logits) > 1 else (-float("inf"), best)
        if top - second < MIN_MARGIN:
            raise FastPathError(f"no clear next token: GPU tokens {self.first + int(best)} and "
                                f"{self.first + int(other)} have logits {top:g} and {second:g} "
                                f"(margin below {MIN_MARGIN})")
        return self.first + int(best)

    def recurrent_state(self, state: FastState, layer: int) -> np.ndarray:
        """Layer `layer`'s recurrent state [heads, d_k, d_v] in the stock layout (unused heads 0)."""
        if not 0 <= layer < self.L:
            raise FastPathError(f"layer {layer} is not a circuit layer (0..{self.L - 1})")
        full = torch.zeros(self.H, self.dk, self.dv)
        g = self.layers[layer].gdn
        if g is not None:
            full[g.heads] = state.states[layer]
        return full.numpy()

    def cache(self, state: FastState) -> RecurrentStates:
        """An object with get_recurrent_state(layer) -> [1, heads, d_k, d_v], like a DynamicCache."""
        return RecurrentStates(self, state)


def _head_rows(heads: torch.Tensor, width: int, offset: int) -> torch.Tensor:
    """Row indices of the given heads' blocks (`width` rows each) in a matrix starting at `offset`."""
    return (offset + heads[:, None] * width + torch.arange(width)).flatten()


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The stock l2norm (transformers' Qwen3.5 GDN), over the last dim."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def delta_rule(S: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
               base: torch.Tensor, onehot: bool | None = None) -> torch.Tensor:
    """The stock recurrent step without decay, in place on S [heads, d_k, d_v]; the output [heads, d_v].
    `base` = arange(heads) * d_k; `onehot`: every head's k and q have at most one nonzero (None: check).

    kv_mem = sum_r S[r] k[r]; S += k (beta (v - kv_mem))^T; o = sum_r S[r] q[r]. With at most
    one nonzero k[r] (q[r]) per head every other term is +-0, so only that row takes part."""
    if onehot is None:
        onehot = int(torch.count_nonzero(torch.stack([k, q]), dim=-1).max()) <= 1
    if not onehot:
        kv_mem = (S * k.unsqueeze(-1)).sum(dim=-2)
        delta = (v - kv_mem) * beta.unsqueeze(-1)
        S.add_(k.unsqueeze(-1) * delta.unsqueeze(-2))
        return (S * q.unsqueeze(-1)).sum(dim=-2)
    rows = S.view(-1, S.shape[-1])
    r = base + k.abs().argmax(-1)             # the nonzero row (any row when k == 0: then kr == 0)
    kr = k.view(-1).index_select(0, r).unsqueeze(-1)
    row = rows.index_select(0, r)
    rows.index_copy_(0, r, row + kr * ((v - row * kr) * beta.unsqueeze(-1)))
    r = base + q.abs().argmax(-1)
    return rows.index_select(0, r) * q.view(-1).index_select(0, r).unsqueeze(-1)
