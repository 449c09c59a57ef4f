"""One compiled decoder layer: a Gated DeltaNet part and a SwiGLU MLP part, as weight
arrays with the exact Qwen3.5 parameter names and shapes.

Exactness rules every neuron follows (docs/circuit.md):
  * a neuron computes relu(y) for an integer y as silu(M*y) * (1/M): gate_proj holds
    M * (integer coefficients) on data dims and the bias on the anchor, up_proj reads
    only the anchor and gives exactly 1/M. silu(M*y) is exactly M*y for y >= 1 and
    exactly 0 for y <= -1 in fp32 and bf16 (M = 128).
  * positive pre-activations y stay <= 256 (integers exact in bf16); negative ones
    may be large (they only need to stay negative).

Silence rule, enforced in one place (`weights()`): gate_proj, up_proj, in_proj_qkv,
in_proj_z and in_proj_b read no text dim, and nothing writes a text dim. On a text
token (zero in every circuit dim) the layer's output is then exactly 0.
"""
from __future__ import annotations

import copy

import numpy as np

from qwengpu.circuit import CircuitError
from qwengpu.circuit.residual import GAIN_LOG2, NORM_OUT, ResidualLayout

M = 128          # silu scale of MLP neurons and GDN keys/queries
RAIL = 32.0      # value of an "on" rail stored in a GDN row (silu(32) == 32 exactly)
Z_GATE = 32.0    # in_proj_z pre-activation of a read head (silu(32) == 32 exactly)
BETA = 32.0      # in_proj_b pre-activation: sigmoid(32) == 1.0 exactly
A_LOG = -200.0   # exp(A_log) underflows to 0: the state never decays
MAX_POSITIVE = 256


class CompiledLayer:
    def __init__(self, layout: ResidualLayout, index: int):
        self.layout, self.index = layout, index
        host = layout.host
        self.host = host
        self.neurons: list[tuple[dict[int, int], int, dict[int, float]]] = []
        N, H, Hv, dk, dv = layout.columns, host.gdn_heads, host.value_heads, host.key_dim, host.value_dim
        self.heads_used = 0
        self.qkv = np.zeros((2 * H * dk + Hv * dv, N), np.float32)   # bf16-exact values: fp32 holds them
        self.z = np.zeros((Hv * dv, N), np.float32)
        self.b = np.zeros((Hv, N), np.float32)
        self.out = np.zeros((N, Hv * dv), np.float32)

    # ---- MLP ---------------------------------------------------------------
    def relu(self, terms: dict[int, int], bias: int, out: dict[int, float]) -> None:
        """One neuron: adds c * relu(sum(terms[d] * x[d]) + bias) to residual dim d for (d, c) in out.

        Exact when the argument is an integer; `positive_max` of the argument must stay
        <= 256 (checked by the gadget that knows the ranges). A field is written from the layer
        it was allocated at on: the allocator may give its dims to another field until then."""
        for d in out:
            field = self.layout.holder.get(d)
            if field is not None and field.born > self.index:
                raise CircuitError(f"layer {self.index} writes field {field.name!r}, allocated from layer "
                                   f"{field.born}: its dims may hold another field here")
        self.neurons.append((dict(terms), int(bias), dict(out)))

    # ---- GDN ---------------------------------------------------------------
    def take_heads(self, count: int, what: str) -> list[int]:
        """`count` heads with queries and keys of their own: on a grouped host (several value
        heads share a key head) the first value head of each key head's group, the others
        left zero. A head is named by its value head: its state, gates and output."""
        if self.heads_used + count > self.host.gdn_heads:
            raise CircuitError(f"layer {self.index}: {what} needs {count} GDN heads, "
                               f"{self.host.gdn_heads - self.heads_used} of {self.host.gdn_heads} left")
        heads = [k * self.host.group for k in range(self.heads_used, self.heads_used + count)]
        self.heads_used += count
        return heads

    def q_row(self, head: int, row: int) -> np.ndarray:
        return self.qkv[head // self.host.group * self.host.key_dim + row]

    def k_row(self, head: int, row: int) -> np.ndarray:
        H, dk = self.host.gdn_heads, self.host.key_dim
        return self.qkv[(H + head // self.host.group) * dk + row]

    def v_row(self, head: int, col: int) -> np.ndarray:
        H, dk, dv = self.host.gdn_heads, self.host.key_dim, self.host.value_dim
        return self.qkv[2 * H * dk + head * dv + col]

    def remap(self, perm: np.ndarray, columns: int) -> None:
        """Moves residual dim d to perm[d] (-1: no field holds d at this layer, so nothing may
        use it) in every matrix and neuron, which then address `columns` dims. The matrices are
        kept sparse from here on (a built machine's dense ones took gigabytes): matrix() gives
        them dense."""
        for name in ("qkv", "z", "b"):
            self._check_unused(getattr(self, name), perm, f"{name} reads")
            setattr(self, name, _Sparse(_moved(getattr(self, name), perm, columns)))
        self._check_unused(self.out.T, perm, "the GDN writes")
        self.out = _Sparse(_moved(self.out.T, perm, columns).T)
        dims = {d for terms, _, out in self.neurons for d in (*terms, *out)}
        unused = sorted(d for d in dims if perm[d] < 0)
        if unused:
            raise CircuitError(f"layer {self.index}: a neuron uses residual dim {unused[0]}, which no field holds here")
        self.neurons = [({int(perm[d]): k for d, k in terms.items()}, bias, {int(perm[d]): k for d, k in out.items()})
                        for terms, bias, out in self.neurons]

    def _check_unused(self, m: np.ndarray, perm: np.ndarray, what: str) -> None:
        bad = np.flatnonzero((perm < 0) & np.any(m != 0, axis=0))
        if bad.size:
            raise CircuitError(f"layer {self.index}: {what} residual dim {bad[0]}, which no field holds here")

    # ---- weights -----------------------------------------------------------
    def matrix(self, name: str) -> np.ndarray:
        """GDN matrix `name` (qkv, z, b, out), dense."""
        m = getattr(self, name)
        return m.dense() if isinstance(m, _Sparse) else m

    def weights(self, intermediate: int | None = None) -> dict[str, np.ndarray]:
        """Parameters of a Qwen3_5DecoderLayer (linear_attention), float64, names relative to the layer."""
        lay, host = self.layout, self.host
        if lay.columns != lay.total:
            raise CircuitError(f"layer {self.index}: the circuit was built with slack; compact() it first")
        N, n, H, Hv, dk, dv = lay.total, lay.n, host.gdn_heads, host.value_heads, host.key_dim, host.value_dim
        I = intermediate or max(len(self.neurons), 1)
        if len(self.neurons) > I or len(self.neurons) > host.intermediate:
            raise CircuitError(f"layer {self.index} needs {len(self.neurons)} MLP neurons; "
                               f"the host has {min(I, host.intermediate)}")
        anchor, A = lay.anchor[0], lay.normed_anchor
        gate, up, down = (np.zeros(s, np.float32) for s in ((I, N), (I, N), (N, I)))
        for j, (terms, bias, out) in enumerate(self.neurons):
            for d, c in terms.items():
                gate[j, d] += M * c / NORM_OUT        # undo the norm's exact 2**-8
            # a bias needs up to 16 significant bits: split it over two anchor dims (8 bits each)
            hi, lo = split_bias(bias)
            gate[j, anchor] += M * lo / A
            gate[j, lay.anchor[1]] += M * hi / A
            up[j, anchor] = 1.0 / (M * A)
            for d, c in out.items():
                down[d, j] += c
        norm = np.zeros(N)
        norm[n:] = 2.0 ** GAIN_LOG2 - 1.0          # (1 + w) = 256 on circuit dims
        conv = np.zeros((2 * H * dk + Hv * dv, 1, host.conv_kernel))
        conv[:, 0, -1] = 1.0                      # identity on the current token
        w = {
            "input_layernorm.weight": norm, "post_attention_layernorm.weight": norm.copy(),
            "mlp.gate_proj.weight": gate, "mlp.up_proj.weight": up, "mlp.down_proj.weight": down,
            "linear_attn.in_proj_qkv.weight": self.matrix("qkv"), "linear_attn.in_proj_z.weight": self.matrix("z"),
            "linear_attn.in_proj_b.weight": self.matrix("b"), "linear_attn.in_proj_a.weight": np.zeros((Hv, N)),
            "linear_attn.conv1d.weight": conv, "linear_attn.dt_bias": np.zeros(Hv),
            "linear_attn.A_log": np.full(Hv, A_LOG), "linear_attn.norm.weight": np.ones(dv),
            "linear_attn.out_proj.weight": self.matrix("out"),
        }
        check_silence(w, n, self.index)
        check_bf16_exact(w, self.index)
        return w

    @property
    def neuron_count(self) -> int:
        return len(self.neurons)

    def split_mlp(self, limit: int) -> list["CompiledLayer"]:
        """This layer as consecutive layers of at most `limit` MLP neurons each: the first keeps
        the GDN heads, the others have none. One MLP's neurons all read the residual before any
        of them writes it; split, a neuron sees what earlier parts wrote, so no neuron may come
        after one that writes a dim it reads (every neuron reads the anchor: its bias)."""
        if len(self.neurons) <= limit:
            return [self]
        groups = _ordered_groups(self.neurons, set(self.layout.anchor.dims))
        big = max(groups, key=len)
        if len(big) > limit:
            raise CircuitError(f"layer {self.index}: {len(big)} MLP neurons read each other's writes and "
                               f"cannot be split; the host has {limit} a layer")
        parts: list[list[int]] = [[]]
        for g in groups:
            if len(parts[-1]) + len(g) > limit:
                parts.append([])
            parts[-1] += g
        return [self._with_neurons([self.neurons[j] for j in part], gdn=(i == 0)) for i, part in enumerate(parts)]

    def _with_neurons(self, neurons: list, gdn: bool) -> "CompiledLayer":
        out = copy.copy(self)
        out.neurons = neurons
        if not gdn:
            out.heads_used = 0
            for name in ("qkv", "z", "b", "out"):
                m = getattr(self, name)
                setattr(out, name, _Sparse.empty(m.shape, m.dtype) if isinstance(m, _Sparse) else np.zeros_like(m))
        return out


def _ordered_groups(neurons: list, always_read: set[int]) -> list[list[int]]:
    """Indices of `neurons` in groups that must share a layer (a cycle of reads and writes), the
    groups in an order where a neuron that reads a dim comes no later than any neuron writing it:
    the strongly connected components of "v reads what u writes" (v -> u), in topological order
    (Tarjan, iterative: emits a component after every component it reaches)."""
    writers: dict[int, list[int]] = {}
    for u, (_, _, out) in enumerate(neurons):
        for d in out:
            writers.setdefault(d, []).append(u)
    edges = [sorted({u for d in set(terms) | always_read for u in writers.get(d, ()) if u != v})
             for v, (terms, _, _) in enumerate(neurons)]
    index, low, on_stack, stack, emitted = {}, {}, set(), [], []
    for root in range(len(neurons)):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                u = edges[v][i]
                if u not in index:
                    work.append((u, 0))
                elif u in on_stack:
                    low[v] = min(low[v], index[u])
                continue
            if low[v] == index[v]:
                group = []
                while True:
                    u = stack.pop()
                    on_stack.discard(u)
                    group.append(u)
                    if u == v:
                        break
                emitted.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return emitted[::-1]


class _Sparse:
    """A float32 matrix kept as its nonzero entries."""

    def __init__(self, dense: np.ndarray):
        self.shape, self.dtype = dense.shape, dense.dtype
        self.rows, self.cols = np.nonzero(dense)
        self.values = dense[self.rows, self.cols]

    @classmethod
    def empty(cls, shape: tuple[int, int], dtype) -> "_Sparse":
        out = cls(np.zeros((0, 0), dtype))
        out.shape = shape
        return out

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape, self.dtype)
        out[self.rows, self.cols] = self.values
        return out


def _moved(m: np.ndarray, perm: np.ndarray, columns: int) -> np.ndarray:
    """m's columns moved by perm (columns with perm -1 dropped) into a matrix of `columns` columns."""
    out = np.zeros((m.shape[0], columns), m.dtype)
    keep = np.flatnonzero(perm >= 0)
    out[:, perm[keep]] = m[:, keep]
    return out


def split_bias(bias: int) -> tuple[int, int]:
    """bias = hi + lo with hi a multiple of 256 and |lo| < 256: both exact in bf16."""
    lo = int(np.sign(bias)) * (abs(bias) % 256)
    hi = bias - lo
    if abs(hi) >= 256 * 256:
        raise CircuitError(f"neuron bias {bias} too large (limit {256 * 256 - 1})")
    return hi, lo


def check_bf16_exact(w: dict[str, np.ndarray], index: int) -> None:
    """Every weight must survive the cast to bf16 unchanged (the same circuit runs in fp32 and
    bf16): exact in fp32, with the low 16 bits of the fp32 pattern zero."""
    for name, value in w.items():
        v32 = value.astype(np.float32)
        ok = (v32.astype(np.float64) == value) & ((v32.view(np.uint32) & 0xFFFF) == 0)
        if not ok.all():
            raise CircuitError(f"layer {index}: {name} has weights not exact in bf16, e.g. {value[~ok][:3].tolist()}")


READS_CIRCUIT_ONLY = ("mlp.gate_proj.weight", "mlp.up_proj.weight", "linear_attn.in_proj_qkv.weight",
                      "linear_attn.in_proj_z.weight", "linear_attn.in_proj_b.weight",
                      "linear_attn.in_proj_a.weight")
WRITES_CIRCUIT_ONLY = ("mlp.down_proj.weight", "linear_attn.out_proj.weight")


def check_silence(w: dict[str, np.ndarray], n: int, index: int) -> None:
    """Every weight that decides whether anything happens reads only circuit dims; nothing writes text dims."""
    for name in READS_CIRCUIT_ONLY:
        if np.any(w[name][:, :n]):
            raise CircuitError(f"layer {index}: {name} reads a text dim (breaks silence on text tokens)")
    for name in WRITES_CIRCUIT_ONLY:
        if np.any(w[name][:n]):
            raise CircuitError(f"layer {index}: {name} writes a text dim")


class Circuit:
    """A stack of compiled layers over one residual layout."""

    def __init__(self, host, width: int, slack: int = 0):
        """`width` circuit dims; the allocator may hand out `slack` more while the circuit is built,
        which compact() then packs into `width`."""
        self.host = host
        self.layout = ResidualLayout(host, width, slack)
        self.layers: list[CompiledLayer] = []

    def compact(self) -> None:
        """Packs every field into the lowest dims free over its lifetime (ResidualLayout.pack) and
        moves the layers' weights with them: a dim's field at layer L is the one born <= L <= died
        (or the layer a view's clear released that dim)."""
        lay, n, last = self.layout, self.layout.n, len(self.layers) - 1
        columns = lay.columns
        moved = lay.pack()
        for layer in self.layers:
            perm = np.full(columns, -1)
            perm[:n] = np.arange(n)
            for f, old in moved:
                for d, new in zip(old, f.dims):
                    if f.born <= layer.index <= min(f.ends.get(new, f.died), last):
                        perm[d] = new
            layer.remap(perm, lay.total)

    def layer(self, index: int) -> CompiledLayer:
        while len(self.layers) <= index:
            self.layers.append(CompiledLayer(self.layout, len(self.layers)))
        return self.layers[index]

    def input(self, name: str, width: int, kind: str = "bits", vmax: int = 1):
        return self.layout.alloc(name, width, born=-1, kind=kind, vmax=vmax)

    def field(self, name: str, width: int, at: int, kind: str = "bits", vmax: int = 1):
        return self.layout.alloc(name, width, born=at, kind=kind, vmax=vmax)

    def clear(self, field, at: int) -> None:
        """Layer `at`'s MLP subtracts the field (exact for 0/1 and small ints) and frees its dims.
        Both signs: a GDN read can leave a 0 bit slightly negative, and a later field on these
        dims (an int field reads them times 256) would start from that residue."""
        lay = self.layer(at)
        for d in field.dims:
            lay.relu({d: 1 / field.scale}, 0, {d: -field.scale})
            lay.relu({d: -1 / field.scale}, 0, {d: field.scale})
        self.layout.release(field, at)

    def fit_mlps(self, limit: int) -> list[int]:
        """Splits every layer with more than `limit` MLP neurons (CompiledLayer.split_mlp), for a
        host whose MLPs are narrower than the circuit's widest. Returns each layer's new index
        (where its GDN heads are now)."""
        layers, where = [], []
        for lay in self.layers:
            where.append(len(layers))
            layers += lay.split_mlp(limit)
        for i, lay in enumerate(layers):
            lay.index = i
        self.layers = layers
        return where

    def weights(self) -> list[dict[str, np.ndarray]]:
        intermediate = max([lay.neuron_count for lay in self.layers] + [1])
        return [lay.weights(intermediate) for lay in self.layers]

    def digest(self) -> str:
        """sha256 over every weight's bytes in a fixed order (same circuit -> same digest)."""
        import hashlib
        h = hashlib.sha256()
        for i, w in enumerate(self.weights()):
            for name in sorted(w):
                h.update(f"{i}.{name}{w[name].shape}".encode())
                h.update(np.ascontiguousarray(w[name], dtype=np.float64).tobytes())
        return h.hexdigest()
