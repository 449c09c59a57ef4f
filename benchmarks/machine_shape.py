"""The compiled machine's shape: circuit layers, residual width C, MLP neurons and GDN heads per
layer, on the Qwen3.5-2B host and on the stand-in.

    .venv/bin/python benchmarks/machine_shape.py [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu.circuit.host import QWEN35_2B, HostSpec  # noqa: E402
from qwengpu.machine.build import machine_for_host  # noqa: E402
from qwengpu.model.standin import standin_config  # noqa: E402


def shape(host: HostSpec) -> dict:
    m = machine_for_host(host)
    lay = m.c.layout
    return {"hidden": host.hidden, "layers": len(m.c.layers), "C": lay.width, "merged_width": lay.total,
            "residual_high_water": lay.high_water(), "gpu_tokens": len(m.vocab),
            "neurons": [layer.neuron_count for layer in m.c.layers],
            "heads": [layer.heads_used for layer in m.c.layers],
            "intermediate": host.intermediate, "gdn_heads": host.gdn_heads}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {"qwen3.5-2b": shape(QWEN35_2B), "standin": shape(HostSpec.from_config(standin_config()))}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for name, s in out.items():
        print(f"{name}: n={s['hidden']}, {s['layers']} circuit layers, C={s['C']} (merged width "
              f"{s['merged_width']}, high water {s['residual_high_water']}), {s['gpu_tokens']} GPU tokens")
    s = out["qwen3.5-2b"]
    print(f"\n| layer | MLP neurons (of {s['intermediate']}) | GDN heads (of {s['gdn_heads']}) |")
    print("| --- | --- | --- |")
    for i, (n, h) in enumerate(zip(s["neurons"], s["heads"])):
        print(f"| L{i} | {n} | {h} |")


if __name__ == "__main__":
    main()
