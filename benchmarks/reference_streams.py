"""Every suite kernel's reference token stream, as digests: the launch prompt the model engine
feeds (ROM, memory images, tables) and the stream the model must then generate (from the
reference interpreter's trace), for the program lowered for the model. No model is loaded.

    .venv/bin/python benchmarks/reference_streams.py [-k PATTERN] [--frontend clang|nvrtc] [--dir DIR] > streams.txt

One line per kernel (name, prompt tokens, stream tokens, sha256 of both), then the digest of
all lines. A refactoring that must not change behaviour leaves this output identical: run it
before and after and diff the two files.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu.api import Device  # noqa: E402
from qwengpu.driver import protocol  # noqa: E402
from qwengpu.suite import discover, load_spec  # noqa: E402


def streams(case, device) -> tuple[list, list]:
    spec = load_spec(case)
    grid, block, args = spec.launch()
    fn = device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    launch = fn.launch(grid, block, list(args))
    return protocol.prompt(launch), protocol.expected_stream(launch).tokens     # copy-out: output_words()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", dest="pattern", default=None)
    ap.add_argument("--frontend", default="clang", choices=["clang", "nvrtc"])
    ap.add_argument("--dir", default=None, help="kernel directory (default: the suite's, ./kernels)")
    args = ap.parse_args()
    device = Device("model", args.frontend, model="<not loaded>")
    lines = []
    for case in discover(*([args.dir] if args.dir else []), pattern=args.pattern):
        prompt, stream = streams(case, device)
        text = "\n".join(map(str, prompt)) + "\n--\n" + "\n".join(map(str, stream))
        lines.append(f"{case.name} {len(prompt)} {len(stream)} {hashlib.sha256(text.encode()).hexdigest()[:16]}")
        print(lines[-1], flush=True)
    print(f"all {len(lines)} kernels: {hashlib.sha256(chr(10).join(lines).encode()).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
