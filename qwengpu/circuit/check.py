"""check_circuit: every gadget and memory bank through the stock Qwen3.5 layers, fp32 and bf16.

Each gadget is compiled alone into a small circuit, wrapped in a stock
Qwen3_5ForCausalLM (model.py) and run on random cases packed as the tokens of a few
sequences, with random text tokens interleaved. Outputs are read from the residual
stream and compared with isa.ALU_SEMANTICS (or a plain Python reference). MLP gadgets
must be bit-exact: any output dim that is not exactly its 0.0/1.0 value is a mismatch.
Bank reads must be bit-exact in bf16 and within 0.25 in fp32 (the fp32 read path
rounds at ~1e-6: the 1/sqrt(d_k) query scale and the chunked algorithm). silent_on_text requires
every text token's residual to come out of every circuit layer bit-identical to its
input embedding, and bank states to be unchanged by text tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from qwengpu import isa
from qwengpu.circuit import CircuitError
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as Mem
from qwengpu.circuit.host import QWEN35_2B, HostSpec, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import build_model, encode, run_prefill

# MLP gadgets use a narrow host (no GDN work to speak of); banks use 2B-shaped heads.
MLP_HOST = HostSpec(hidden=64, intermediate=6144, gdn_heads=1, key_dim=16, value_dim=16, conv_kernel=4, eps=1e-6)
BANK_HOST = HostSpec(hidden=64, intermediate=6144, gdn_heads=16, key_dim=128, value_dim=128,
                     conv_kernel=4, eps=1e-6)
TOLERANCE = {"float32": 0.25, "bfloat16": 0.0}     # bank reads
ALU = isa.ALU_SEMANTICS
U32 = 0xFFFF_FFFF


@dataclass
class Spec:
    name: str
    widths: tuple[int, ...]                       # input field widths
    build: Callable                               # (circuit, *input fields) -> list of output fields
    ref: Callable                                 # (*ints) -> tuple of ints
    draw: str = "word"                            # how to draw inputs: word | shift | sel | small
    exhaustive: bool = False                      # small domain: every input combination


def _alu(op, arity=2):
    return lambda *x: (ALU[op](*x[:arity]),)


def specs() -> list[Spec]:
    s = []
    for op in ("and", "or", "xor", "nand", "nor", "xnor"):
        s.append(Spec(f"gate.{op}", (1, 1), lambda c, a, b, op=op: [G.gate(c, 0, op, a, b)],
                      lambda a, b, op=op: (_bool(op, a, b),), exhaustive=True))
    s.append(Spec("gate.not", (1,), lambda c, a: [G.gate(c, 0, "not", a)], lambda a: (1 - a,), exhaustive=True))
    for op in ("AND", "OR", "XOR"):
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.gate(c, 0, op.lower(), a, b)], _alu(op)))
    s.append(Spec("NOT", (32,), lambda c, a: [G.gate(c, 0, "not", a)], lambda a: (a ^ U32,)))
    s.append(Spec("ADD", (32, 32), lambda c, a, b: [G.add(c, 0, a, b)[0]], _alu("ADD")))
    s.append(Spec("SUB", (32, 32), lambda c, a, b: [G.add(c, 0, a, b, sub=True)[0]], _alu("SUB")))
    s.append(Spec("ADDC", (32, 32, 1), lambda c, a, b, ci: list(G.add(c, 0, a, b, cin=ci, carry_out=True)),
                  lambda a, b, ci: ((a + b + ci) & U32, (a + b + ci) >> 32)))
    s.append(Spec("SUBC", (32, 32), lambda c, a, b: list(G.add(c, 0, a, b, sub=True, carry_out=True)),
                  lambda a, b: ((a - b) & U32, int(a >= b))))
    for op in G.SET_TESTS:
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.compare(c, 0, op, a, b)], _alu(op)))
    for op in ("MIN", "MAX", "MINU", "MAXU"):
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.minmax(c, 0, op, a, b)], _alu(op)))
    for op in ("SHL", "SHR", "SRA"):
        s.append(Spec(op, (32, 32), lambda c, a, b, op=op: [G.shift(c, 0, op, a, b)], _alu(op), draw="shift"))
    s.append(Spec("SEL", (32, 32, 32), lambda c, k, a, b: [G.select(c, 0, k, a, b)], _alu("SEL", 3), draw="sel"))
    s.append(Spec("MOV", (32,), lambda c, a: [G.copy(c, 0, a)], _alu("MOV", 1)))
    s.append(Spec("CLEAR", (32,), _clear_build, lambda a: (0,)))
    s.append(Spec("onehot.encode", (5,), lambda c, a: [G.onehot_encode(c, 0, a)], lambda a: (a,),
                  exhaustive=True))
    s.append(Spec("onehot.decode", (32,), _decode_build, lambda a: (a,), draw="onehot", exhaustive=True))
    s.append(Spec("mux4", (2, 32, 32, 32, 32), _mux_build, lambda k, *x: (x[k],), draw="mux"))
    for k in (1, 3, 24, 31):           # plus_constant: VALA's lane words (machine/inputs.py), gated
        s.append(Spec(f"plus{k}.gated", (12, 1), lambda c, a, g, k=k: [_plus_build(c, a, k, g[0])],
                      lambda a, g, k=k: (((a + k) & 0xFFF) * g,), exhaustive=True))
    s.append(Spec("plus24", (12,), lambda c, a: [_plus_build(c, a, 24)], lambda a: ((a + 24) & 0xFFF,),
                  exhaustive=True))
    if hasattr(G, "mul"):
        s.append(Spec("MUL", (32, 32), lambda c, a, b: [G.mul(c, 0, a, b)], _alu("MUL")))
    return s


def _bool(op, a, b):
    return {"and": a & b, "or": a | b, "xor": a ^ b, "nand": 1 - (a & b), "nor": 1 - (a | b),
            "xnor": 1 - (a ^ b)}[op]


def _plus_build(c, a, k, gate=None):
    out = c.field("sum", a.width, 0)
    G.plus_constant(c, 0, list(a.dims), k, out, gate)
    return out


def _clear_build(c, a):
    out = G.copy(c, 0, a)
    G.clear(c, 1, out)
    return [out]                        # read after layer 1: must be exactly cleared


def _decode_build(c, a):
    a.kind = "onehot"
    return [G.onehot_decode(c, 0, a)]


def _mux_build(c, k, *xs):
    sel = G.onehot_encode(c, 0, k)
    return [G.mux(c, 1, sel, list(xs))]


EDGES = [0, 1, 2, 3, 15, 16, 255, 256, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, 0xFFFF_FFFE, 0xFFFF_FFFF,
         0x0000_FFFF, 0xFFFF_0000, 0x0F0F_0F0F, 0xF0F0_F0F0]


def draw_words(rng: np.random.Generator, n: int) -> np.ndarray:
    """Uniform 32-bit words, a quarter of them replaced by edge values and small numbers."""
    x = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    edge = rng.random(n) < 0.25
    x[edge] = rng.choice(np.array(EDGES + list(range(4, 40)), dtype=np.uint64), edge.sum())
    return x


def draw_inputs(spec: Spec, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    if spec.exhaustive:
        sizes = [32 if spec.draw == "onehot" else 1 << w for w in spec.widths]
        grid = np.stack(np.meshgrid(*[np.arange(s, dtype=np.uint64) for s in sizes], indexing="ij"), -1)
        grid = grid.reshape(-1, len(sizes))
        reps = max(1, -(-n // len(grid))) if n else 1
        grid = np.tile(grid, (min(reps, 4), 1))   # every combination, repeated at different positions
        return [grid[:, i] for i in range(len(sizes))]
    cols = []
    for i, w in enumerate(spec.widths):
        if w < 32:
            cols.append(rng.integers(0, 1 << w, n, dtype=np.uint64))
        elif spec.draw == "shift" and i == 1:
            x = draw_words(rng, n)
            small = rng.random(n) < 0.7
            x[small] = rng.integers(0, 40, small.sum(), dtype=np.uint64)
            cols.append(x)
        elif spec.draw == "sel" and i == 0:
            x = draw_words(rng, n)
            x[rng.random(n) < 0.4] = 0
            one = rng.random(n) < 0.2
            x[one] = np.uint64(1) << rng.integers(0, 32, one.sum(), dtype=np.uint64)
            cols.append(x)
        else:
            cols.append(draw_words(rng, n))
    return cols


def compile_spec(spec: Spec, host: HostSpec = MLP_HOST):
    c = Circuit(host, circuit_width(host, 900 if host is QWEN35_2B else 448))
    fields = [c.input(f"in{i}", w) for i, w in enumerate(spec.widths)]
    if spec.draw == "onehot":
        fields[0].kind = "onehot"
    outs = spec.build(c, *fields)
    return c, fields, outs


def interleave_text(x: np.ndarray, n_text: np.ndarray, rng, fraction=0.1):
    """Insert random text tokens (random text dims, zero circuit dims) among the GPU tokens."""
    total = len(x) + int(len(x) * fraction)
    is_text = np.zeros(total, bool)
    is_text[rng.choice(total, total - len(x), replace=False)] = True
    out = np.zeros((total, x.shape[1]))
    out[~is_text] = x
    out[is_text, :n_text] = rng.normal(0, 1, (is_text.sum(), n_text))
    return out, is_text


def run_cases(model, circuit, x: np.ndarray, seq: int = 1024):
    """Pack tokens into [batch, seq] (padding with zero tokens), run one prefill, return per-layer hidden."""
    n = len(x)
    seq = min(seq, n)
    rows = -(-n // seq)
    pad = np.zeros((rows * seq, x.shape[1]))
    pad[:n] = x
    hs, _ = run_prefill(model, pad.reshape(rows, seq, -1))
    return hs.reshape(hs.shape[0], rows * seq, -1)[:, :n]


def run_with_text(model, circuit, emb: np.ndarray, fraction: float = 0.1, seed: int = 1):
    """The GPU tokens `emb` with random text tokens interleaved, through `model`: (per-layer hidden
    states of the GPU tokens, their embeddings). Raises CircuitError if any circuit layer changes
    a text token (the silence rule)."""
    x, is_text = interleave_text(emb, circuit.layout.n, np.random.default_rng(seed), fraction=fraction)
    hs = run_cases(model, circuit, x)
    for layer in range(len(hs)):
        if not np.array_equal(hs[layer][is_text], hs[0][is_text]):
            raise CircuitError(f"layer {layer - 1} changed a text token")
    return hs[:, ~is_text], x[~is_text]


def check_spec(spec: Spec, cases: int, dtypes, rng) -> tuple[dict, bool, float]:
    c, fields, outs = compile_spec(spec)
    cols = draw_inputs(spec, rng, cases)
    n = len(cols[0])
    want = [spec.ref(*(int(col[i]) for col in cols)) for i in range(n)]
    x = encode(c, dict(zip(fields, cols)), n)
    x, is_text = interleave_text(x, c.layout.n, rng)
    mismatches, silent, worst = 0, True, 0.0
    for dtype in dtypes:
        hs = run_cases(build_model(c, dtype), c, x)
        gpu = hs[-1][~is_text]
        bad = np.zeros(n, bool)
        for k, out in enumerate(outs):
            ideal = _ideal(out, [w[k] for w in want])
            dev = np.abs(gpu[:, list(out.dims)] - ideal).max(axis=1)
            worst = max(worst, float(dev.max()))
            bad |= dev > 0.0                     # MLP gadgets: bit-exact in every dtype
        mismatches += int(bad.sum())
        silent &= all(np.array_equal(hs[layer][is_text], hs[0][is_text]) for layer in range(len(hs)))
    result = {"cases": n * len(dtypes), "mismatches": mismatches, "layers": len(c.layers),
              "neurons": sum(layer.neuron_count for layer in c.layers)}
    return result, silent, worst


def _ideal(field, values) -> np.ndarray:
    vals = np.array(values, dtype=np.uint64)
    if field.kind == "onehot":
        vals = vals.astype(np.int64)
        out = np.zeros((len(vals), field.width))
        out[np.arange(len(vals)), vals.astype(np.int64)] = 1
        return out
    return ((vals[:, None] >> np.arange(field.width, dtype=np.uint64)) & np.uint64(1)).astype(np.float64)


# ---------------------------------------------------------------------------
# memory banks
# ---------------------------------------------------------------------------
def compile_banks(host: HostSpec = BANK_HOST):
    """Two banks in one layer: `mem` (128 x 32 bits, 2 replicas: two reads per token) and
    `regs` (16 x 8 bits, write-enable and read-enable)."""
    c = Circuit(host, circuit_width(host, 160))
    f = {name: c.input(name, w) for name, w in
         (("waddr", 7), ("wdata", 32), ("we", 1), ("raddr", 7), ("raddr2", 7),
          ("raddr_r", 4), ("waddr_r", 4), ("wdata_r", 8), ("we_r", 1), ("re_r", 1))}
    mem = Mem.declare_bank(c, 0, "mem", 128, 32, replicas=2)
    regs = Mem.declare_bank(c, 0, "regs", 16, 8)
    Mem.write(c, mem, f["waddr"], f["wdata"], f["we"])
    Mem.write(c, regs, f["waddr_r"], f["wdata_r"], f["we_r"])
    reads = {"mem0": Mem.read(c, mem, f["raddr"], 0), "mem1": Mem.read(c, mem, f["raddr2"], 1),
             "regs": Mem.read(c, regs, f["raddr_r"], 0, enable=f["re_r"])}
    return c, f, reads, (mem, regs)


def bank_program(f, rng, T: int, text_fraction=0.2):
    """Random writes and reads over few addresses (so rows are overwritten often), text tokens
    anywhere; the expected reads from a dict model of the banks (write before read)."""
    v = {"waddr": rng.integers(0, 6, T), "raddr": rng.integers(0, 6, T), "raddr2": rng.integers(0, 128, T),
         "wdata": draw_words(rng, T), "we": rng.integers(0, 2, T), "waddr_r": rng.integers(0, 16, T),
         "raddr_r": rng.integers(0, 16, T), "wdata_r": rng.integers(0, 256, T),
         "we_r": rng.integers(0, 2, T), "re_r": rng.integers(0, 2, T)}
    same = rng.random(T) < 0.5                   # read the address written by the same token
    v["raddr2"][same] = v["waddr"][same]
    text = rng.random(T) < text_fraction
    mem, regs, want = {}, {}, {"mem0": [], "mem1": [], "regs": []}
    for t in range(T):
        if not text[t]:
            if v["we"][t]:
                mem[int(v["waddr"][t])] = int(v["wdata"][t])
            if v["we_r"][t]:
                regs[int(v["waddr_r"][t])] = int(v["wdata_r"][t])
        want["mem0"].append(0 if text[t] else mem.get(int(v["raddr"][t]), 0))
        want["mem1"].append(0 if text[t] else mem.get(int(v["raddr2"][t]), 0))
        want["regs"].append(0 if text[t] or not v["re_r"][t] else regs.get(int(v["raddr_r"][t]), 0))
    return v, text, want, (mem, regs)


def check_banks(steps: int, dtypes, rng, decode_steps: int = 24) -> tuple[dict, bool]:
    """Prefill `steps` tokens (chunked path), then `decode_steps` more one at a time (recurrent
    path); every read is checked, the final states are read back, and each decoded text token
    must leave every state bit-identical."""
    import torch
    c, f, reads, banks = compile_banks()
    T = steps + decode_steps
    v, text, want, final = bank_program(f, rng, T)
    x = encode(c, {f[k]: v[k] for k in f}, T)
    x[text] = 0
    x[text, : c.layout.n] = rng.normal(0, 1, (text.sum(), c.layout.n))
    mismatches, silent, cases = 0, True, 0
    for dtype in dtypes:
        model = build_model(c, dtype)
        hs, kv = run_prefill(model, x[None, :steps], cache=True)
        hs_all = [hs]
        with torch.no_grad():
            for t in range(steps, T):
                before = kv.get_recurrent_state(0).clone()
                step = torch.tensor(x[None, t:t + 1], dtype=torch.float32).to(model.dtype)
                out = model.model(inputs_embeds=step, output_hidden_states=True, use_cache=True, cache=kv)
                hs_all.append(torch.stack([h.float() for h in out.hidden_states[:2]]).numpy())
                if text[t]:
                    silent &= bool(torch.equal(before, kv.get_recurrent_state(0)))
        hs = np.concatenate(hs_all, axis=2)[:, 0]
        silent &= bool(np.array_equal(hs[1][text], hs[0][text]))
        for name, field in reads.items():
            ideal = _ideal(field, want[name])
            dev = np.abs(hs[1][:, list(field.dims)] - ideal).max(axis=1)
            mismatches += int((dev > TOLERANCE[dtype])[~text].sum())
            cases += int((~text).sum())
        mismatches += readback_mismatches(kv.get_recurrent_state(0).float().numpy()[0], banks, final)
    result = {"cases": cases, "mismatches": mismatches, "layers": len(c.layers),
              "neurons": sum(layer.neuron_count for layer in c.layers)}
    return result, silent


def readback_mismatches(state, banks, final) -> int:
    return sum(Mem.read_rows(state, bank) != model for bank, model in zip(banks, final))


# ---------------------------------------------------------------------------
# the whole check
# ---------------------------------------------------------------------------
def check_circuit(cases: int = 10_000, dtypes=("float32", "bfloat16"), seed: int = 0,
                  progress: Callable[[str], None] | None = None) -> dict:
    """Run every gadget and bank through the stock layers. Returns
    {"gadgets": {name: {"cases", "mismatches", "layers", "neurons"}}, "silent_on_text": bool};
    "cases" counts every dtype together (each dtype runs `cases` random cases, or the whole
    domain for exhaustive gadgets)."""
    rng = np.random.default_rng(seed)
    gadgets, silent = {}, True
    for spec in specs():
        if progress:
            progress(spec.name)
        result, ok, _ = check_spec(spec, cases, dtypes, rng)
        gadgets[spec.name] = result
        silent &= ok
    if progress:
        progress("bank")
    result, ok = check_banks(max(64, min(cases // 20, 480)), dtypes, rng)
    gadgets["bank.rw"] = result
    silent &= ok
    return {"gadgets": gadgets, "silent_on_text": bool(silent)}


def cost_table(host: HostSpec = QWEN35_2B) -> list[dict]:
    """Per gadget, compiled against `host`: MLP layers, neurons (total and widest layer), and the
    circuit dims it needs beyond its inputs (outputs + temporaries at their peak)."""
    rows = []
    for spec in specs():
        c, fields, _ = compile_spec(spec, host)
        inputs = c.layout.anchor.width + sum(f.width for f in fields)
        rows.append({"name": spec.name, "layers": len(c.layers),
                     "neurons": sum(layer.neuron_count for layer in c.layers),
                     "widest": max(layer.neuron_count for layer in c.layers),
                     "dims": c.layout.high_water() - inputs})
    return rows


def passed(report: dict) -> bool:
    """No mismatch anywhere and silent on text."""
    return report["silent_on_text"] and all(r["mismatches"] == 0 for r in report["gadgets"].values())
