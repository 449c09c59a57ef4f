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
  row r (the other terms are +-0), so the update touches one row; l2norm's (k * k).sum() is
  k[r]**2 exactly, so it is computed on that entry alone. Heads with more nonzeros fall back
  to the dense formulas. When no head has a key or a query (no bank of the layer is addressed
  by this token) the state is untouched and the output is 0: the rest is skipped.
* A head whose every weight is zero keeps a zero state and adds nothing: it is skipped.
* Text tokens (whose embedding is zero on every dim a circuit layer reads) leave the circuit
  layers silent: every pre-activation is 0, the key is 0, the state is untouched.

The step itself runs in C by default (`native.c`, the same formulas, one call a token instead
of about 700 small torch ops; `native=False` keeps the torch ops). Its sums run in index order
and its exp is libm's, so where values are noisy (above) its last bits may differ from torch's;
the tests hold both against the stock path. It sums an MLP's gates input by input over the
nonzero inputs only, and computes only the neurons that are on (an integer pass turns the
FPU's tens of thousands off): a skipped term is +-0, which changes no running sum (native.c).

A batch of B launches runs in lockstep (`step_batch`; `step` is the case B = 1): the states
are [B, heads, d_k, d_v], the residuals [B, N], the products CSR @ [cols, B] (column b is
launch b). Rows never mix: every norm, activation and reduction is per row (the RMS norms
reduce each launch's contiguous [N] row exactly as for one launch), a product's column b
reads only column b, and the delta rule treats (launch, head) as one more head. So every
launch computes what it would alone: the same hidden state bit for bit, up to the summation
order of a CSR mm against a CSR mv, which matters only for the noisy sums above. When any
launch of the batch addresses a layer's bank, the others run its GDN with k = q = 0: S + 0 =
S and an output of +-0, as in the stock path, which runs every layer. Launches leave the
batch (`keep`) or a finished launch's row takes a new one (`reset`).

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
import os
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F

from qwengpu.errors import QwenGpuError

MIN_MARGIN = 0.25
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
NO_DECAY_A_LOG = -100.0       # exp(A_log) == 0 in float32 below about -103.3


class FastPathError(QwenGpuError):
    """The model breaks an assumption of the fast path, or a token it cannot decide."""


def _nonzero(mask: torch.Tensor) -> torch.Tensor:
    return torch.nonzero(mask).flatten()


def _f32(p: torch.Tensor) -> torch.Tensor:
    return p.detach().to(torch.float32)


@dataclass
class Sparse:
    """y = W h for a matrix with few nonzeros, as a CSR matrix: W[rows, cols] over the columns it
    reads (`cols` None: every column, in order); `rows` None: every row (the output keeps the
    matrix's row layout). Inputs and outputs are columns, one per launch: h [in, B] -> y [out, B]."""
    cols: torch.Tensor | None
    rows: torch.Tensor | None
    csr: torch.Tensor
    nnz: int
    gain: torch.Tensor | None = None     # (1 + w) of the norm in front, on `cols`, as a column [cols, 1]

    @classmethod
    def of(cls, dense: torch.Tensor, nonzero_rows: bool = False, all_cols: bool = False) -> "Sparse":
        nz = dense != 0
        cols = None if all_cols else _nonzero(nz.any(0))
        rows = _nonzero(nz.any(1)) if nonzero_rows else None
        compact = dense if rows is None else dense[rows]
        return cls.gathered(_f32(compact if cols is None else compact[:, cols]), cols, rows)

    @classmethod
    def gathered(cls, compact: torch.Tensor, cols: torch.Tensor | None, rows: torch.Tensor | None = None) -> "Sparse":
        """From W[rows][:, cols] (float32) already gathered."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # "sparse CSR support is in beta"
            csr = compact.to_sparse_csr()
            # int32 indices: the CSR product would otherwise convert int64 ones on every call
            csr = torch.sparse_csr_tensor(csr.crow_indices().int(), csr.col_indices().int(), csr.values(), csr.shape)
        return cls(cols, rows, csr, int((compact != 0).sum()))

    def saved(self) -> dict:
        """Its tensors as plain data (cache.py); `restored` inverts it."""
        c = self.csr
        return {"cols": self.cols, "rows": self.rows, "crow": c.crow_indices(), "col": c.col_indices(),
                "values": c.values(), "shape": list(c.shape), "nnz": self.nnz, "gain": self.gain}

    @classmethod
    def restored(cls, d: dict) -> "Sparse":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # "sparse CSR support is in beta"
            # checked: a damaged cache entry must fail here, not crash the C step
            csr = torch.sparse_csr_tensor(d["crow"], d["col"], d["values"], tuple(d["shape"]), check_invariants=True)
        return cls(d["cols"], d["rows"], csr, int(d["nnz"]), d["gain"])

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        return _product(self.csr, h if self.cols is None else h.index_select(0, self.cols))

    def normed(self, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """W norm(x) for residuals x [B, N] with norm(x) = (x * r) * gain (Qwen3_5RMSNorm, r [B, 1]),
        computed on `cols` only: [rows, B]."""
        return _product(self.csr, x.T.index_select(0, self.cols) * r.T * self.gain)

    def after_norm(self, gain: torch.Tensor) -> "Sparse":
        self.gain = gain[self.cols].contiguous()[:, None]
        return self

    def add_to(self, x: torch.Tensor, h: torch.Tensor) -> None:
        """x += W h, in place on the residuals x [B, N] (the columns W does not write get + 0 in the
        stock add: unchanged)."""
        x.index_add_(1, self.rows, self(h).T)


@dataclass
class Gdn:
    heads: torch.Tensor            # used head indices
    proj: Sparse                   # rows: q, k, v, z of each used head, then b (one product: they read the same h)
    out: Sparse                    # [N, used heads * d_v]
    norm_w: torch.Tensor           # [d_v]
    width: int                     # 2 d_k + 2 d_v: a head's rows in `proj`
    d_k: int
    bases: dict = field(default_factory=dict, repr=False)

    def base(self, batch: int) -> torch.Tensor:
        """[B, heads, 1, 1]: the first row of (launch, head) in S.view(-1, d_v), S [B, heads, d_k, d_v]."""
        if batch not in self.bases:
            self.bases[batch] = (torch.arange(batch * len(self.heads)) * self.d_k).view(batch, -1, 1, 1)
        return self.bases[batch]


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
    """A batch of launches: the recurrent states of the used heads per circuit layer,
    [B, used heads, d_k, d_v] (row b: launch b)."""
    states: list[torch.Tensor]
    tokens: int = 0                                                 # steps run
    last: torch.Tensor | None = field(default=None, repr=False)    # [B, N]: the residuals after the circuit

    @property
    def batch(self) -> int:
        return self.states[0].shape[0]


class RecurrentStates:
    """The slice of a DynamicCache that the host readback uses (`Readout.read_global`), for one
    launch of a batch."""

    def __init__(self, fast: "FastModel", state: FastState, row: int = 0):
        self.fast, self.state, self.row = fast, state, row

    def get_recurrent_state(self, layer: int) -> torch.Tensor:
        return torch.from_numpy(self.fast.recurrent_state(self.state, layer, self.row))[None]


class FastModel:
    """The circuit layers of `model` (a stock Qwen3_5ForCausalLM), compacted.

    `circuit_layers` and `gpu_token_ids` ([first, end)) default to the model config's
    qwengpu block (a merged checkpoint)."""

    def __init__(self, model, circuit_layers: int | None = None, gpu_token_ids=None, threads: int | None = None,
                 native: bool | None = None, tensors=None):
        """From a loaded stock model; or, with `model` None, from `tensors` (a
        weights.CheckpointTensors: see `from_checkpoint`)."""
        from qwengpu.fast.weights import ModuleTensors
        src = tensors if model is None else ModuleTensors(model)
        cfg = src.config if model is not None else text_config(src.config)
        block = getattr(cfg, "qwengpu", None) or {}
        if circuit_layers is None or gpu_token_ids is None:
            if not block:
                raise FastPathError("the model config has no qwengpu block: pass circuit_layers and gpu_token_ids")
            circuit_layers = block["circuit_layers"] if circuit_layers is None else circuit_layers
            gpu_token_ids = block["gpu_token_ids"] if gpu_token_ids is None else gpu_token_ids
        self.config = cfg
        self.L = int(circuit_layers)
        # while stepping: the C step's worker threads over a batch's rows (default: every core), or
        # torch's threads (default 1: its ops here are too small to split)
        self.threads = threads
        self.first, self.end = (int(i) for i in gpu_token_ids)
        self.N = cfg.hidden_size
        self.eps = cfg.rms_norm_eps
        self.H, self.dk, self.dv = cfg.linear_num_value_heads, cfg.linear_key_head_dim, cfg.linear_value_head_dim
        self.Hk = cfg.linear_num_key_heads
        self._check_config(cfg)
        with torch.no_grad():
            self.layers = [self._layer(src, i) for i in range(self.L)]
            self.read_any = _nonzero(self._read_mask())
            self._embeddings(src)
            self._head(src, cfg)
        self.native = _native_step(self, native)

    @classmethod
    def from_checkpoint(cls, path, dtype: str = "float32", cache: bool = True, threads: int | None = None,
                        native: bool | None = None) -> "FastModel":
        """The fast path of the merged checkpoint folder `path` read straight from its safetensors
        files (only the circuit layers, the GPU tokens' embedding and head rows, the final norm and
        the rows of the later layers' writers that the head reads), never building the stock model.
        Every tensor is cast to `dtype` first, as the stock load does: the result is the one
        `FastModel(runtime.load_model(path, dtype)[0])` gives. `cache`: the compact matrices come
        from / go to build/fast-cache (qwengpu.fast.cache) keyed by the checkpoint's
        fingerprint, the dtype and this code."""
        from qwengpu.fast import cache as fast_cache
        from qwengpu.fast.weights import CheckpointTensors
        tensors = CheckpointTensors(path, dtype)
        file = fast_cache.entry(path, dtype) if cache else None
        data = fast_cache.load(file)
        if data is not None:
            try:
                return cls._restore(data, tensors, threads, native)
            except (KeyError, TypeError, ValueError, RuntimeError) as e:
                warnings.warn(f"fast-path cache entry {file} does not fit ({e}); rebuilding it",
                              fast_cache.FastCacheWarning)
        fast = cls(None, tensors=tensors, threads=threads, native=native)
        if file is not None:
            fast_cache.save(file, fast._saved())
        return fast

    _SCALARS = ("L", "first", "end", "N", "eps", "H", "Hk", "dk", "dv", "vocab")

    def _saved(self) -> dict:
        """What the constructor derived, as plain data (cache.py)."""
        def layer(lay: Layer) -> dict:
            g, m = lay.gdn, lay.mlp
            return {"gdn": None if g is None else {"heads": g.heads, "proj": g.proj.saved(), "out": g.out.saved(),
                                                   "norm_w": g.norm_w, "width": g.width, "d_k": g.d_k},
                    "mlp": None if m is None else {"gate_up": m.gate_up.saved(), "down": m.down.saved()}}
        return {"format": "FastModel", **{k: getattr(self, k) for k in self._SCALARS},
                "layers": [layer(lay) for lay in self.layers], "read_any": self.read_any,
                "emb_cols": self.emb_cols, "emb": self.emb, "head": self.head.saved()}

    @classmethod
    def _restore(cls, d: dict, tensors, threads, native) -> "FastModel":
        if d.get("format") != "FastModel":
            raise ValueError("not a FastModel entry")
        self = cls.__new__(cls)
        for k in cls._SCALARS:
            setattr(self, k, d[k])
        self.config, self.threads = text_config(tensors.config), threads
        self.layers = [Layer(None if (g := lay["gdn"]) is None else
                             Gdn(g["heads"], Sparse.restored(g["proj"]), Sparse.restored(g["out"]), g["norm_w"],
                                 int(g["width"]), int(g["d_k"])),
                             None if (m := lay["mlp"]) is None else
                             Mlp(Sparse.restored(m["gate_up"]), Sparse.restored(m["down"])))
                       for lay in d["layers"]]
        self.read_any, self.emb_cols, self.emb = d["read_any"], d["emb_cols"], d["emb"]
        self.head = Sparse.restored(d["head"])
        self._src, self._silent_ok = tensors, set()
        self.native = _native_step(self, native)
        return self

    # ---- load ---------------------------------------------------------------------------------
    def _check_config(self, cfg) -> None:
        types = list(cfg.layer_types)
        bad = [i for i in range(self.L) if types[i] != "linear_attention"]
        if self.L > len(types) or bad:
            raise FastPathError(f"circuit layers must be the first {self.L} layers and linear_attention; "
                                f"layer types are {types[:self.L]}")
        if self.Hk <= 0 or self.H % self.Hk:
            raise FastPathError(f"{self.H} GDN value heads for {self.Hk} key heads: not a multiple of it")
        if cfg.hidden_act != "silu":
            raise FastPathError(f"hidden_act {cfg.hidden_act!r}: the fast path implements silu")
        if not 0 <= self.first < self.end <= cfg.vocab_size:
            raise FastPathError(f"GPU token ids [{self.first}, {self.end}) are outside the vocabulary "
                                f"of {cfg.vocab_size}")

    def _layer(self, src, i: int) -> Layer:
        pre = f"model.layers.{i}."
        gdn, mlp = self._gdn(src, pre + "linear_attn.", i), self._mlp(src, pre + "mlp.")
        if gdn is not None:
            gdn.proj.after_norm(1.0 + _f32(src.get(pre + "input_layernorm.weight")))
        if mlp is not None:
            mlp.gate_up.after_norm(1.0 + _f32(src.get(pre + "post_attention_layernorm.weight")))
        return Layer(gdn, mlp)

    def _gdn(self, src, pre: str, i: int) -> Gdn | None:
        self._check_gdn(src, pre, i)
        H, Hk, dk, dv = self.H, self.Hk, self.dk, self.dv
        group = H // Hk                  # value heads h share key head h // group (grouped heads)
        qkv, z, b, out = (src.get(pre + n + ".weight") for n in ("in_proj_qkv", "in_proj_z", "in_proj_b", "out_proj"))
        # a head whose values are all zero keeps a zero state and outputs 0 whatever its key and
        # query (shared by a group of value heads on grouped hosts): only its own rows count
        used = ((qkv != 0).any(1)[2 * Hk * dk:].view(H, dv).any(1) | (z != 0).any(1).view(H, dv).any(1)
                | (b != 0).any(1) | (out != 0).any(0).view(H, dv).any(1))
        heads = _nonzero(used)
        if not len(heads):
            return None
        per_head = [torch.cat([qkv[k * dk:(k + 1) * dk], qkv[(Hk + k) * dk:(Hk + k + 1) * dk],
                               qkv[2 * Hk * dk + h * dv:2 * Hk * dk + (h + 1) * dv], z[h * dv:(h + 1) * dv]])
                    for h in heads.tolist() for k in [h // group]]
        proj = torch.cat(per_head + [b[heads]])
        return Gdn(heads, Sparse.of(proj), Sparse.of(out[:, _head_rows(heads, dv, 0)], nonzero_rows=True, all_cols=True),
                   _f32(src.get(pre + "norm.weight")), 2 * dk + 2 * dv, dk)

    def _check_gdn(self, src, pre: str, i: int) -> None:
        where = f"circuit layer {i}"
        A_log = src.get(pre + "A_log")
        decay = torch.exp(_f32(A_log))
        if (decay != 0).any():
            raise FastPathError(f"{where}: A_log must be <= {NO_DECAY_A_LOG} (no decay); "
                                f"max is {float(A_log.max()):g}")
        if (src.get(pre + "dt_bias") != 0).any() or (src.get(pre + "in_proj_a.weight") != 0).any():
            raise FastPathError(f"{where}: dt_bias and in_proj_a must be zero")
        conv = _f32(src.get(pre + "conv1d.weight"))
        ident = torch.zeros_like(conv)
        ident[..., -1] = 1.0
        # the stock module has no conv bias (a checkpoint's would not be loaded); a model's own counts
        bias = src.get(pre + "conv1d.bias", optional=True) if getattr(src, "model", None) is not None else None
        if bias is not None or not torch.equal(conv, ident):
            raise FastPathError(f"{where}: the conv must be [0, ..., 0, 1] per channel without bias "
                                "(the current token only)")

    def _mlp(self, src, pre: str) -> Mlp | None:
        gate, up, down = (src.get(pre + n + ".weight") for n in ("gate_proj", "up_proj", "down_proj"))
        live = _nonzero((gate != 0).any(1) & (up != 0).any(1) & (down != 0).any(0))
        if not len(live):
            return None
        return Mlp(Sparse.of(torch.cat([gate[live], up[live]])),
                   Sparse.of(down[:, live], nonzero_rows=True, all_cols=True))

    def _read_mask(self) -> torch.Tensor:
        mask = torch.zeros(self.N, dtype=torch.bool)
        for lay in self.layers:
            subs = ([lay.gdn.proj] if lay.gdn else []) + ([lay.mlp.gate_up] if lay.mlp else [])
            for sub in subs:
                mask[sub.cols] = True
        return mask

    EMBED = "model.embed_tokens.weight"

    def _embeddings(self, src) -> None:
        self._src = src                       # text-token rows are read when first seen (`_silent`)
        self._silent_ok: set[int] = set()
        self.vocab = src.shape(self.EMBED)[0]
        gpu = src.rows(self.EMBED, self.first, self.end)
        self.emb_cols = _nonzero((gpu != 0).any(0))
        self.emb = _f32(gpu[:, self.emb_cols])

    def _head(self, src, cfg) -> None:
        """The GPU rows of the output head on the dims they read, times the final norm's gains;
        checks that no later layer writes those dims."""
        tied = getattr(cfg, "tie_word_embeddings", False)
        head = self.EMBED if tied or "lm_head.weight" not in src else "lm_head.weight"
        if not tied and head == self.EMBED:
            raise FastPathError("the checkpoint has no lm_head.weight and its config does not tie it to the embedding")
        rows = src.rows(head, self.first, self.end)
        cols = _nonzero((rows != 0).any(0))
        gain = 1.0 + _f32(src.get("model.norm.weight"))[cols]
        if (gain <= 0).any():
            raise FastPathError("the final norm has a non-positive gain on a dim the GPU tokens' head rows read")
        for j in range(self.L, len(cfg.layer_types)):
            pre = f"model.layers.{j}."
            mixer = "linear_attn.out_proj.weight" if cfg.layer_types[j] == "linear_attention" else "self_attn.o_proj.weight"
            if any((src.rows_at(pre + w, cols.tolist()) != 0).any() for w in ("mlp.down_proj.weight", mixer)):
                raise FastPathError(f"layer {j} (after the circuit) writes a dim the GPU tokens' head rows read")
        self.head = Sparse.gathered(_f32(rows[:, cols]) * gain, cols)

    # ---- run ----------------------------------------------------------------------------------
    def new_state(self, batch: int = 1) -> FastState:
        """Zero states for `batch` launches."""
        return FastState([torch.zeros(batch, len(lay.gdn.heads) if lay.gdn else 0, self.dk, self.dv)
                          for lay in self.layers])

    def reset(self, state: FastState, row: int) -> None:
        """Launch `row` of the batch starts afresh (its states zero; the other rows untouched)."""
        with self._running():                   # states made in inference mode change only there
            for S in state.states:
                S[row].zero_()

    def keep(self, state: FastState, rows) -> None:
        """Compact the batch to the launches `rows` (in that order): the others leave it."""
        index = torch.as_tensor(list(rows), dtype=torch.long)
        with self._running():
            state.states = [S.index_select(0, index) for S in state.states]
            if state.last is not None:
                state.last = state.last.index_select(0, index)

    def step(self, state: FastState, token_id: int) -> int:
        """Run one token through the circuit layers; the next token id (argmax over the GPU ids).
        The batch-of-one case of `step_batch`."""
        if state.batch != 1:
            raise FastPathError(f"step runs a batch of one launch; this state holds {state.batch} (use step_batch)")
        return _raise(self.step_batch(state, [token_id])[0])

    def step_batch(self, state: FastState, token_ids, decide=None) -> list:
        """One token per launch of the batch, in lockstep; the next token id of every launch in
        `decide` (default: all; the others get None, e.g. launches still in their prompt). A launch
        whose next token is unclear gets a FastPathError (returned, not raised: the rest go on)."""
        token_ids = [int(t) for t in token_ids]
        if len(token_ids) != state.batch:
            raise FastPathError(f"{len(token_ids)} tokens for a batch of {state.batch} launches")
        for t in token_ids:
            if not self.first <= t < self.end:
                raise FastPathError(f"token {t} is not a GPU token (ids {self.first}..{self.end - 1}): "
                                    "the circuit decides the next token only after a GPU token")
        rows = range(state.batch) if decide is None else [b for b in range(state.batch) if decide[b]]
        with self._running():
            state.last = self._hidden(state, self.embedding(token_ids))
            out: list = [None] * state.batch
            for b, nxt in zip(rows, self.next_tokens(state.last, rows)):
                out[b] = nxt
        return out

    def prefill(self, state: FastState, token_ids) -> int | None:
        """The prompt of one launch through the same recurrence, token by token (text tokens leave
        the circuit silent); the next token after the last one, None when that is a text token."""
        token_ids = [int(t) for t in token_ids]
        if not token_ids:
            raise FastPathError("prefill needs at least one token")
        for i, t in enumerate(token_ids):
            if not self.first <= t < self.end:
                self._silent(state, t)
            elif i + 1 < len(token_ids):
                self.step_batch(state, [t], decide=[False])
            else:
                return self.step(state, t)
        return None

    @contextlib.contextmanager
    def _running(self):
        before = torch.get_num_threads()
        if self.native is None:
            torch.set_num_threads(self.threads or 1)
        try:
            with torch.inference_mode():
                yield
        finally:
            torch.set_num_threads(before)

    def _silent(self, state: FastState, token_id: int) -> None:
        if not 0 <= token_id < self.vocab:
            raise FastPathError(f"token id {token_id} is outside the vocabulary of {self.vocab}")
        if token_id not in self._silent_ok:
            row = self._src.rows(self.EMBED, token_id, token_id + 1)[0, self.read_any]
            if (row != 0).any():
                raise FastPathError(f"token {token_id} is neither a GPU token nor silent in the circuit "
                                    "(its embedding has a dim a circuit layer reads)")
            self._silent_ok.add(token_id)
        state.tokens += 1

    def embedding(self, token_ids: list[int]) -> torch.Tensor:
        """The residuals [B, N] of GPU tokens."""
        rows = self.emb.index_select(0, torch.tensor(token_ids) - self.first)
        return torch.zeros(len(token_ids), self.N).index_copy_(1, self.emb_cols, rows)

    def _hidden(self, state: FastState, x: torch.Tensor) -> torch.Tensor:
        """The residuals [B, N] after the circuit layers (updates the states)."""
        if self.native is not None:
            self.native.hidden(state.states, x, self.threads or CORES)
        else:
            for lay, S in zip(self.layers, state.states):
                self.layer(lay, S, x)
        state.tokens += 1
        return x

    def layer(self, lay: Layer, S: torch.Tensor, x: torch.Tensor) -> None:
        """One decoder layer, in place on the residuals x [B, N] (stock order: norm, GDN, add, norm,
        MLP, add). Every op works on each launch's row alone: rows never mix."""
        if lay.gdn is not None:
            o = self.gdn(lay.gdn, S, x, self.rms(x))
            if o is not None:
                lay.gdn.out.add_to(x, o)
        if lay.mlp is not None:
            gate_up = lay.mlp.gate_up.normed(x, self.rms(x))         # [2 * live, B]
            gate, up = gate_up.chunk(2)
            lay.mlp.down.add_to(x, F.silu(gate) * up)

    def rms(self, x: torch.Tensor) -> torch.Tensor:
        """Qwen3_5RMSNorm's factor rsqrt(mean(x**2) + eps) per row of x [B, N] (the whole residual)."""
        return torch.rsqrt(x.pow(2).mean(-1, keepdim=True).add_(self.eps))

    def gdn(self, g: Gdn, S: torch.Tensor, x: torch.Tensor, r: torch.Tensor) -> torch.Tensor | None:
        """One token per launch through the used heads (the stock recurrent path), S [B, heads,
        d_k, d_v] in place: the gated norm's output [heads * d_v, B], None when it is all zero and
        the states are untouched."""
        B, hu, dk, dv = S.shape
        y = g.proj.normed(x, r)                        # [rows, B]: per head q k v z, then b
        act = F.silu(y[:hu * g.width]).T.reshape(B, hu, g.width)    # conv = identity on the current token
        qk = act[..., :2 * dk].view(B, hu, 2, dk)
        most = int(torch.count_nonzero(qk, dim=-1).max())
        if most == 0:              # no key, no query: S + 0 delta^T = S, and o = 0 reads as exactly 0
            return None
        v, z = act[..., 2 * dk:2 * dk + dv], act[..., 2 * dk + dv:]
        beta = torch.sigmoid(y[hu * g.width:]).T.reshape(B * hu, 1)
        if most == 1:
            # per (launch, head) at most one nonzero in q and in k: l2norm on that entry alone
            # ((x * x).sum() is its square exactly: the other terms are +0)
            at = qk.abs().argmax(-1, keepdim=True)                # [B, hu, 2, 1]
            val = qk.gather(-1, at)
            val = val * torch.rsqrt(val * val + 1e-6)
            rows = g.base(B) + at                                  # row of S.view(-1, d_v)
            o = delta_rule_rows(S.view(-1, dv), rows[:, :, 1].flatten(), val[:, :, 1].reshape(B * hu, 1),
                                rows[:, :, 0].flatten(), val[:, :, 0].reshape(B * hu, 1) / (dk ** 0.5),
                                v.reshape(B * hu, dv), beta)
        else:
            qk = l2norm(qk)
            o = delta_rule(S.view(B * hu, dk, dv), qk[:, :, 0].reshape(B * hu, dk) / (dk ** 0.5),
                           qk[:, :, 1].reshape(B * hu, dk), v.reshape(B * hu, dv), beta.view(-1), onehot=False)
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True).add_(self.eps))      # Qwen3_5RMSNormGated
        return ((g.norm_w * o).view(B, hu, dv) * z).view(B, hu * dv).T

    def next_tokens(self, hidden: torch.Tensor, rows) -> list:
        """The next token of each launch in `rows` of hidden [B, N]: an id, or a FastPathError
        when the margin is below MIN_MARGIN (the stock path's rounding could then decide)."""
        rows = list(rows)
        if not rows:
            return []
        h = hidden if len(rows) == hidden.shape[0] else hidden.index_select(0, torch.tensor(rows))
        if self.end - self.first == 1:
            return [self.first] * len(rows)
        out = []
        for top, second, best, other in zip(*self._top2(h)):
            if top - second < MIN_MARGIN:
                out.append(FastPathError(f"no clear next token: GPU tokens {self.first + best} and "
                                         f"{self.first + other} have logits {top:g} and {second:g} "
                                         f"(margin below {MIN_MARGIN})"))
            else:
                out.append(self.first + best)
        return out

    def _top2(self, h: torch.Tensor):
        """Per row of h [B, N]: the largest and second GPU-token logits and their indices (lists)."""
        if self.native is not None:
            top, at = self.native.top2(h)
            return top[:, 0].tolist(), top[:, 1].tolist(), at[:, 0].tolist(), at[:, 1].tolist()
        logits = self.head(h.T)                                     # [GPU tokens, B]
        top, best = logits.max(0)
        logits.scatter_(0, best[None], -float("inf"))
        second, other = logits.max(0)
        return top.tolist(), second.tolist(), best.tolist(), other.tolist()

    def next_token(self, hidden: torch.Tensor) -> int:
        """The next token after one residual [N] (raises when it is unclear)."""
        with self._running():
            return _raise(self.next_tokens(hidden[None], [0])[0])

    def recurrent_state(self, state: FastState, layer: int, row: int = 0) -> np.ndarray:
        """Launch `row`'s recurrent state of layer `layer`, [heads, d_k, d_v] in the stock layout
        (unused heads 0)."""
        if not 0 <= layer < self.L:
            raise FastPathError(f"layer {layer} is not a circuit layer (0..{self.L - 1})")
        full = torch.zeros(self.H, self.dk, self.dv)
        g = self.layers[layer].gdn
        if g is not None:
            full[g.heads] = state.states[layer][row]
        return full.numpy()

    def cache(self, state: FastState, row: int = 0) -> RecurrentStates:
        """An object with get_recurrent_state(layer) -> [1, heads, d_k, d_v] (launch `row`), like a
        DynamicCache."""
        return RecurrentStates(self, state, row)


# Qwen3_5TextConfig's defaults for the keys the fast path reads (a config.json may leave them out)
TEXT_DEFAULTS = {"hidden_act": "silu", "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
                 "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
                 "linear_num_value_heads": 32, "vocab_size": 248320, "hidden_size": 4096, "num_hidden_layers": 32}


def text_config(cfg: dict) -> SimpleNamespace:
    """A Qwen3.5 text config.json (dict) as attributes, with the stock defaults filled in (layer_types
    as Qwen3_5TextConfig derives it: every 4th layer (full_attention_interval) full attention)."""
    if "text_config" in cfg:
        raise FastPathError("a multimodal config (text_config inside): the fast path reads merged text-only "
                            "checkpoints (qgpu build writes them); pass fast=False / --stock")
    out = {**TEXT_DEFAULTS, **cfg}
    if out.get("layer_types") is None:
        every = out.get("full_attention_interval", 4)
        out["layer_types"] = ["linear_attention" if (i + 1) % every else "full_attention"
                              for i in range(out["num_hidden_layers"])]
    return SimpleNamespace(**out)


def _native_step(fast: FastModel, native: bool | None):
    """native.c's step for `fast` (None: the torch ops); `native` None: the C step when a compiler
    is found, else torch with a warning; True: the C step or an error; False: torch."""
    if native is False:
        return None
    from qwengpu.fast.native import NativeError, NativeStep
    try:
        return NativeStep(fast)
    except NativeError as e:
        if native:
            raise
        warnings.warn(f"the fast path runs its torch ops (slower): {e}")
        return None


def _product(csr: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """csr @ h for h [cols, B]: column b is launch b's. One launch: torch.mv (the CSR mm costs about
    three CSR mvs on this CPU); the products are exact (integers, powers of two) either way."""
    return torch.mv(csr, h[:, 0]).unsqueeze(1) if h.shape[1] == 1 else torch.mm(csr, h)


def _raise(result):
    if isinstance(result, Exception):
        raise result
    return result


def _head_rows(heads: torch.Tensor, width: int, offset: int) -> torch.Tensor:
    """Row indices of the given heads' blocks (`width` rows each) in a matrix starting at `offset`."""
    return (offset + heads[:, None] * width + torch.arange(width)).flatten()


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The stock l2norm (transformers' Qwen3.5 GDN), over the last dim."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def delta_rule(S: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
               onehot: bool | None = None) -> torch.Tensor:
    """The stock recurrent step without decay, in place on S [heads, d_k, d_v]; the output [heads, d_v].
    q (scaled) and k [heads, d_k] are l2-normalized, v [heads, d_v], beta [heads]; `onehot`: every
    head's k and q have at most one nonzero (None: check). A batch is more heads: (launch, head).

    kv_mem = sum_r S[r] k[r]; S += k (beta (v - kv_mem))^T; o = sum_r S[r] q[r]. With at most
    one nonzero k[r] (q[r]) per head every other term is +-0, so only that row takes part."""
    if onehot is None:
        onehot = int(torch.count_nonzero(torch.stack([k, q]), dim=-1).max()) <= 1
    if not onehot:
        kv_mem = (S * k.unsqueeze(-1)).sum(dim=-2)
        delta = (v - kv_mem) * beta.unsqueeze(-1)
        S.add_(k.unsqueeze(-1) * delta.unsqueeze(-2))
        return (S * q.unsqueeze(-1)).sum(dim=-2)
    base = torch.arange(S.shape[0]) * S.shape[1]
    kat, qat = k.abs().argmax(-1), q.abs().argmax(-1)     # the nonzero entry (any when all are 0: value 0)
    return delta_rule_rows(S.view(-1, S.shape[-1]), base + kat, k.gather(-1, kat[:, None]),
                           base + qat, q.gather(-1, qat[:, None]), v, beta.view(-1, 1))


def delta_rule_rows(rows: torch.Tensor, krow: torch.Tensor, kval: torch.Tensor, qrow: torch.Tensor,
                    qval: torch.Tensor, v: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """The one-hot delta rule on S.view(-1, d_v) in place: head i's key is kval[i] at row krow[i],
    its query qval[i] at row qrow[i] (values [heads, 1]); v [heads, d_v], beta [heads, 1]."""
    row = rows.index_select(0, krow)
    rows.index_copy_(0, krow, row + kval * ((v - row * kval) * beta))
    return rows.index_select(0, qrow) * qval
