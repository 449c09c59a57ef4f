"""Text drift of a merged model in bf16, like for like, and what is left of it when the one
rounding a tied head forces (the final norm's gain (1 + w) / a**2) is taken away (0 when a is a
power of two: what `qgpu build --exact-bf16` builds, with an untied head instead).

    .venv/bin/python benchmarks/bf16_drift.py [--base standin] [--merged DIR] > drift.json

    .venv/bin/python benchmarks/bf16_drift.py --merged DIR --bf16-only    # any build, bf16 alone

--merged must be a float32 build (default: eval_kl's, the demo circuit; the stand-in's has
n + C = 4n, a = 2, so every other scaled weight is exact in bf16), except with --bf16-only,
which reports eval_kl's bf16 keys alone (for merged models too large to load in fp32 here,
e.g. the machine built with --exact-bf16: 17 GB in bf16). Otherwise it reports eval_kl's keys
and `kl_bf16_final_gain_fp32`: the same like-for-like KL with the merged model's final-norm
weight kept in fp32 (and over the base's own bf16 drift, as `kl_bf16_over_base_drift` is).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu.model import kl  # noqa: E402
from qwengpu.model.merge import resolve_base  # noqa: E402


def final_gain_fp32_kl(base: Path, merged: Path, vocab: int) -> float:
    fp32 = kl.load_merged(merged, torch.float32).model.norm.weight.detach().clone()
    b, m = kl.load_base(base, torch.bfloat16), kl.load_merged(merged, torch.bfloat16)
    m.model.norm.weight = torch.nn.Parameter(fp32)        # the module computes (1 + w) in fp32
    out = [kl._kl(kl._logits(b, ids), kl._logits(m, ids)[:, :vocab])
           for ids in (kl.reference_encode(t) for t in kl.TEXTS)]
    return float(np.concatenate(out).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="standin")
    ap.add_argument("--merged", type=Path, default=None, help="a float32 merged checkpoint (default: eval_kl's)")
    ap.add_argument("--bf16-only", action="store_true", help="eval_kl in bf16 alone (no fp32 load)")
    args = ap.parse_args()
    base = resolve_base(args.base)
    if args.bf16_only:
        result = kl.eval_kl(base, args.merged, dtypes=("bf16",))
        print(json.dumps({k: result[k] for k in ("positions", "kl_bf16", "kl_bf16_max", "circuit_layers")}))
        return
    result = kl.eval_kl(base, args.merged)
    merged = args.merged or kl.demo_merged_dir(base)
    vocab = json.loads((merged / "config.json").read_text())["qwengpu"]["base_vocab_size"]
    result["kl_bf16_final_gain_fp32"] = final_gain_fp32_kl(base, merged, vocab)
    result["kl_bf16_final_gain_fp32_over_base_drift"] = result["kl_bf16_final_gain_fp32"] / result["kl_bf16_base_vs_fp32"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
