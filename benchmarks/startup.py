"""Model-engine start-up: time to the first generated token, total wall time and peak RSS of one command.

    .venv/bin/python benchmarks/startup.py demo                       # qgpu demo (stand-in, fast path)
    .venv/bin/python benchmarks/startup.py run                        # qgpu run kernels/dot.cu --engine model
    .venv/bin/python benchmarks/startup.py launch --model build/fixture-2b/merged --dtype bfloat16 [--kernel dot]
    ... [--repo DIR]   # the code of another checkout (e.g. `git archive` of an older commit) with this venv

Each command runs in a fresh child process under `/usr/bin/time -v`: `demo` is `qgpu demo`
(qwengpu.cli's app with argv ["demo"]), `run` is README's dot command on the model engine (RUN_DOT), `launch` a `Device(engine="model", model=..., dtype=...)`
launch of one suite kernel (fast path, check="replay"). The child notes the wall-clock time of its
first generated token (runtime.LaunchRun.take, which every route feeds each token, wrapped; in an
older checkout runtime.launch_on_model's on_token); the parent prints one JSON
line: first_token_s (from just before the child was spawned), wall_s and peak_rss_gb (time -v's
"Maximum resident set size"), and the child's exit status.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN_DOT = ["run", "kernels/dot.cu", "--engine", "model", "--grid", "1", "--block", "4", "--arg", "i32:[1,2,3]",
           "--arg", "i32:[4,5,6]", "--arg", "i32:zeros(1)", "--arg", "3"]


def child(args) -> None:
    try:
        from qwengpu.driver import runtime
    except ImportError:                          # a checkout from before qwengpu.driver
        from qwengpu.machine import runtime
    mark = args.mark

    def first():
        if not os.path.exists(mark):
            Path(mark).write_text(repr(time.time()))

    if hasattr(runtime, "LaunchRun"):            # every route's generated tokens go through LaunchRun.take
        take = runtime.LaunchRun.take

        def marked_take(self, token_id):
            first()
            return take(self, token_id)
        runtime.LaunchRun.take = marked_take
    else:                                        # an older checkout (--repo): launch_on_model's on_token
        real = runtime.launch_on_model

        def launch_on_model(*a, on_token=None, **kw):
            def on_first(token):
                first()
                if on_token:
                    on_token(token)
            return real(*a, on_token=on_first, **kw)
        runtime.launch_on_model = launch_on_model
    if args.what in ("demo", "run"):
        from qwengpu.cli import app
        sys.argv = ["qgpu"] + (["demo"] if args.what == "demo" else RUN_DOT)
        app()
    else:
        from qwengpu.api import Device
        from qwengpu.suite import discover, run_case
        case = next(c for c in discover() if c.name == args.kernel)
        dev = Device("model", model=Path(args.model), dtype=args.dtype, check="replay", max_tokens=1_000_000)
        r = run_case(case, dev)
        print(json.dumps({"kernel": r.name, "passed": r.passed, "tokens": r.tokens}))
        if not r.passed:
            sys.exit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["demo", "run", "launch"])
    ap.add_argument("--model", default=str(REPO / "build" / "standin-merged"))
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--kernel", default="dot")
    ap.add_argument("--repo", type=Path, default=REPO, help="run the qwengpu code of this checkout")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mark", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    with tempfile.TemporaryDirectory() as tmp:
        mark = os.path.join(tmp, "first")
        cmd = ["/usr/bin/time", "-v", sys.executable, str(Path(__file__).resolve()), args.what, "--child",
               "--mark", mark, "--model", args.model, "--dtype", args.dtype, "--kernel", args.kernel]
        env = {**os.environ, "PYTHONPATH": str(args.repo.resolve())}
        start = time.time()
        proc = subprocess.run(cmd, cwd=args.repo, env=env, capture_output=True, text=True)
        first = float(Path(mark).read_text()) - start if os.path.exists(mark) else None
    err = proc.stderr
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", err)
    wall_s = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))) if wall else None
    status = re.search(r"Exit status: (\d+)", err)
    record = {"what": args.what, "model": args.model if args.what == "launch" else "stand-in",
              "dtype": args.dtype if args.what == "launch" else "default", "repo": str(args.repo),
              "first_token_s": None if first is None else round(first, 2),
              "wall_s": wall_s, "peak_rss_gb": round(int(rss.group(1)) / 1e6, 2) if rss else None,
              "exit": int(status.group(1)) if status else proc.returncode}
    if record["exit"]:
        record["stderr_tail"] = err[-2000:]
    print(json.dumps(record))


if __name__ == "__main__":
    main()
