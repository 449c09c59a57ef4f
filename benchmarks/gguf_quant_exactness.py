"""What GGUF's 16-bit and quantised types do to the circuit's weights (docs/engines-llamacpp.md).

    .venv-llamacpp/bin/python benchmarks/gguf_quant_exactness.py build/engines/standin-merged [--layers 0,4] [--json]

For each 2-D weight of the chosen circuit layers (default: all of them, config.json's
qwengpu.circuit_layers), and the GPU token rows of the embedding and the LM head, this rounds the
bf16 weights as llama.cpp would store them (f16: a cast; q8_0, q4_0, q5_0: gguf-py's reference
quantiser, blocks of 32 along each row, dequantised back) and counts the weights whose value
changes: nonzero weights changed, zero weights made nonzero, and the largest absolute change.
bf16 and f32 change nothing (the checkpoint is bf16). Runs in the llama.cpp venv (gguf, torch,
safetensors, numpy), or any python with those and --gguf-py DIR.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

TYPES = ("F16", "Q8_0", "Q5_0", "Q4_0")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--layers", default=None, help="comma-separated layer indices (default: every circuit layer)")
    ap.add_argument("--gguf-py", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.gguf_py:
        sys.path.insert(0, str(a.gguf_py))
    import gguf
    import numpy as np
    import torch
    from safetensors import safe_open

    cfg = json.loads((a.model / "config.json").read_text())
    q = cfg["qwengpu"]
    first, end = q["gpu_token_ids"]
    layers = ([int(x) for x in a.layers.split(",")] if a.layers else list(range(q["circuit_layers"])))
    weight_map = json.loads((a.model / "model.safetensors.index.json").read_text())["weight_map"]
    prefixes = tuple(f"model.layers.{i}." for i in layers)
    chosen = {k: v for k, v in weight_map.items() if k.startswith(prefixes)
              or k in ("model.embed_tokens.weight", "lm_head.weight")}
    totals = {t: {"weights": 0, "nonzero": 0, "nonzero_changed": 0, "zero_made_nonzero": 0, "max_abs_change": 0.0,
                  "tensors_changed": 0} for t in TYPES}
    per_tensor = []
    by_file: dict[str, list[str]] = {}
    for k, f in chosen.items():
        by_file.setdefault(f, []).append(k)
    for fname, names in sorted(by_file.items()):
        with safe_open(a.model / fname, "pt") as fh:
            for name in sorted(names):
                t = fh.get_tensor(name)
                if name in ("model.embed_tokens.weight", "lm_head.weight"):
                    t = t[first:end]                 # the GPU tokens' rows: the circuit's
                if t.ndim != 2 or t.shape[-1] % 32:
                    continue                          # 1-D tensors stay f32 in every GGUF type
                w = t.float().numpy()
                nz = w != 0
                row = {"tensor": name, "shape": list(w.shape)}
                for typ in TYPES:
                    if typ == "F16":
                        back = w.astype(np.float16).astype(np.float32)
                    else:
                        qt = gguf.GGMLQuantizationType[typ]
                        back = gguf.quants.dequantize(gguf.quants.quantize(w, qt), qt).reshape(w.shape)
                    changed = back != w
                    s = totals[typ]
                    n_nz = int((changed & nz).sum())
                    s["weights"] += w.size
                    s["nonzero"] += int(nz.sum())
                    s["nonzero_changed"] += n_nz
                    s["zero_made_nonzero"] += int((changed & ~nz).sum())
                    s["tensors_changed"] += int(bool(changed.any()))
                    if changed.any():
                        with np.errstate(invalid="ignore"):
                            s["max_abs_change"] = max(s["max_abs_change"], float(np.nanmax(np.abs(back - w)[changed])))
                    row[typ] = n_nz
                per_tensor.append(row)
                print(f"{name:55s} {str(list(w.shape)):16s} " + " ".join(f"{typ}:{row[typ]}" for typ in TYPES),
                      file=sys.stderr, flush=True)
    report = {"model": str(a.model), "layers": layers, "gpu_rows": [first, end], "types": totals}
    if a.json:
        report["tensors"] = per_tensor
        print(json.dumps(report, indent=2))
    else:
        for typ, s in totals.items():
            print(f"{typ}: {s['nonzero_changed']:,} of {s['nonzero']:,} nonzero circuit weights change "
                  f"({s['tensors_changed']} tensors), {s['zero_made_nonzero']:,} zeros become nonzero, "
                  f"largest change {s['max_abs_change']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
