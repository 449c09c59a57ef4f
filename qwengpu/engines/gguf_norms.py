"""Check (and with --fix, make exact) the RMSNorm gains of a GGUF file converted from a merged
Qwen3.5 checkpoint. Run with the llama.cpp venv's python (it needs gguf, torch and safetensors,
never qwengpu):

    python gguf_norms.py MODEL_DIR FILE.gguf [--fix] [--gguf-py DIR]

Qwen3.5's RMSNorm multiplies by (1 + w), computed by transformers as `1.0 + weight.float()`
(f32); llama.cpp's converter stores the gain 1 + w as an f32 tensor (and a gated-delta-net
`linear_attn.norm.weight`, which multiplies by w itself, as w). For every norm tensor of the
checkpoint this compares the stored f32 values with f32(1 + f32(w)) (or f32(w)) element by
element; --fix writes the exact values in place (the file is memory-mapped, its size unchanged).
A gain stored in a 16-bit or quantised type cannot be fixed in place and is reported.
Prints one JSON line: {"tensors", "elements", "differ", "fixed", "not_f32"}; exit 1 when
something still differs.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("gguf_file", type=Path)
    ap.add_argument("--fix", action="store_true")
    ap.add_argument("--gguf-py", type=Path, default=None, help="the vendored gguf-py folder, if any")
    args = ap.parse_args(argv)
    if args.gguf_py is not None:
        sys.path.insert(0, str(args.gguf_py))
    import gguf
    import numpy as np
    from safetensors import safe_open

    cfg = json.loads((args.model / "config.json").read_text())
    cfg = cfg.get("text_config", cfg)
    weight_map = json.loads((args.model / "model.safetensors.index.json").read_text())["weight_map"]
    reader = gguf.GGUFReader(args.gguf_file, "r+" if args.fix else "r")
    arch = reader.fields["general.architecture"]
    arch_name = bytes(arch.parts[arch.data[0]]).decode()
    arch_id = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch_name)
    names = gguf.get_tensor_name_map(arch_id, cfg["num_hidden_layers"] + cfg.get("mtp_num_hidden_layers", 0))
    tensors = {t.name: t for t in reader.tensors}
    report = {"tensors": 0, "elements": 0, "differ": 0, "fixed": 0, "not_f32": []}
    by_file: dict[str, list[str]] = {}
    for hf, fname in weight_map.items():
        if hf.endswith("norm.weight"):
            by_file.setdefault(fname, []).append(hf)
    for fname, hf_names in sorted(by_file.items()):
        with safe_open(args.model / fname, "pt") as f:
            for hf in sorted(hf_names):
                gname = names.get_name(hf, try_suffixes=(".weight",))
                if gname is None or gname not in tensors:
                    continue       # not in the GGUF (e.g. mtp.* with --no-mtp)
                w = f.get_tensor(hf).float()
                want = (w if hf.endswith("linear_attn.norm.weight") else 1.0 + w).numpy().astype(np.float32)
                t = tensors[gname]
                report["tensors"] += 1
                report["elements"] += want.size
                if t.tensor_type != gguf.GGMLQuantizationType.F32:
                    report["not_f32"].append(f"{gname} ({t.tensor_type.name})")
                    continue
                data = t.data.reshape(-1)
                bad = np.flatnonzero(data != want.reshape(-1))
                report["differ"] += int(bad.size)
                if bad.size and args.fix:
                    data[bad] = want.reshape(-1)[bad]
                    report["fixed"] += int(bad.size)
    if args.fix:
        reader.data.flush()
    print(json.dumps(report), flush=True)
    return 0 if report["differ"] == report["fixed"] and not report["not_f32"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
