"""What the copy-out costs: per suite kernel, the words copied out, the generated tokens they take
and the prompt tokens of their table, counted on the reference streams (the tokens the model must
generate, which replay holds it to; no model needed).

    .venv/bin/python benchmarks/copyout_cost.py [--json]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from qwengpu.api import Device
from qwengpu.driver import protocol
from qwengpu.suite import discover, load_spec


def kernel_cost(case) -> dict:
    spec = load_spec(case)
    grid, block, args = spec.launch()
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    L = fn.launch(grid, block, list(args))
    words = L.copy_out                       # output_words()
    arrays = sum(a.array.size for a in L.arrays) + fn.program.static_global_words
    bare = dataclasses.replace(L, copy_out=None)
    with_copy, without = protocol.expected_stream(L), protocol.expected_stream(bare)
    prompt_with, prompt_without = len(protocol.prompt(L)), len(protocol.prompt(bare))
    return {"kernel": case.name, "words": len(words), "array_words": arrays,
            "generated": len(with_copy.tokens), "copy_tokens": len(with_copy.tokens) - len(without.tokens),
            "prompt": prompt_with, "copy_prompt_tokens": prompt_with - prompt_without}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [kernel_cost(c) for c in discover()]
    total = {k: sum(r[k] for r in rows) for k in rows[0] if k != "kernel"}
    if a.json:
        json.dump({"kernels": rows, "total": total}, sys.stdout, indent=1)
        return 0
    print(f"{'kernel':24} {'words':>6} {'of':>6} {'copy tokens':>12} {'of generated':>13} {'prompt +':>9}")
    for r in rows + [{"kernel": "TOTAL", **total}]:
        print(f"{r['kernel']:24} {r['words']:6} {r['array_words']:6} {r['copy_tokens']:12} {r['generated']:13} "
              f"{r['copy_prompt_tokens']:9}")
    print(f"copy-out: {total['copy_tokens'] / total['generated']:.1%} of the generated tokens, "
          f"{total['copy_tokens'] / max(1, total['words']):.2f} tokens per word")
    return 0


if __name__ == "__main__":
    sys.exit(main())
