"""The FPU circuit alone (tests/test_machine_fpu.py's build, stock Qwen3.5 layers in fp32) with its
inputs carrying an fp32 GDN read's noise, as the machine's operands and op flags do: a 1 bit reads
as 1 - u, a 0 bit as -u, u uniform in [0, NOISE * 2**-23] (NOISE 1 is about what the stand-in's
operands measured: 1 - 2**-24 and -2**-23). Prints the mismatches by op and, per field, the first
layer where a dim strays more than 1e-3 from an integer and its worst distance: where a chain of carry resolutions and
gates amplifies the noise past a margin. No model build: about a minute.

    python benchmarks/fpu_noise.py [NOISE] [CASES_PER_MODE]
"""
import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_machine_fpu import LANES, MODES, cases, compiled, draw_ffma, model, semantics  # noqa: E402

from qwengpu import isa  # noqa: E402
from qwengpu.circuit.check import run_with_text  # noqa: E402
from qwengpu.circuit.model import encode  # noqa: E402
from qwengpu.machine import fpu  # noqa: E402


def main(noise: float, per: int) -> None:
    rng = np.random.default_rng(11)
    a, b, cc = (np.concatenate(x, axis=1) for x in zip(*(draw_ffma(rng, per) for _ in MODES)))
    names, modes = np.array(["FFMA"] * a.shape[1]), [m for m in MODES for _ in range(per)]
    a2, b2, names2, modes2, _ = cases(8, seed=5)                  # every other op, c random
    a, b = np.concatenate([a, a2], 1), np.concatenate([b, b2], 1)
    cc = np.concatenate([cc, rng.integers(0, 1 << 32, a2.shape, dtype=np.uint64)], 1)
    names, modes = np.concatenate([names, names2]), modes + list(modes2)
    c, op, rnd, fa, fb, r, end, fc = compiled()
    values = {op[o]: (names == o).astype(np.uint64) for o in fpu.FPU_OPS}
    for m in MODES:
        values[rnd[m.name]] = np.array([md is m for md in modes], dtype=np.uint64)
    for lane in range(LANES):
        values[fa[lane]], values[fb[lane]], values[fc[lane]] = a[lane], b[lane], cc[lane]
    emb = encode(c, values, a.shape[1])
    for f in values:
        x = emb[:, list(f.dims)]
        u = rng.uniform(0, noise * 2.0 ** -23, x.shape)
        emb[:, list(f.dims)] = np.where(x == 1, 1 - u, -u)
    hs, _ = run_with_text(model("float32"), c, emb)
    bad = collections.Counter()
    for lane in range(LANES):
        raw = hs[-1][:, list(r[lane].dims)].astype(np.float64)
        got = ((np.rint(raw) == 1).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1)
        for i in range(a.shape[1]):
            x, y, z = int(a[lane, i]), int(b[lane, i]), int(cc[lane, i])
            want = (isa.FLOAT_SEMANTICS["FFMA"](modes[i], x, y, z) if names[i] == "FFMA"
                    else 0 if names[i] == "none" else semantics(names[i], modes[i], x, y))
            bad[str(names[i])] += int(got[i]) != want
    print(f"noise {noise}: {a.shape[1] * LANES} lane cases, mismatches {dict(+bad) or 0}")
    first, worst, byl = {}, collections.Counter(), collections.Counter()
    for f in c.layout.fields:
        for d in f.dims if f.born >= 0 else ():
            for L in range(f.born + 1, min(f.ends.get(d, f.died), len(hs) - 1) + 1):
                v = hs[L][:, d].astype(np.float64) / f.scale
                dev = np.abs(v - np.rint(v)).max()
                name = f.name.split(".fpu.")[-1]
                worst[name] = max(worst[name], dev)
                byl[name, L] = max(byl[name, L], dev)
                if dev > 1e-3:
                    first[name] = min(first.get(name, L), L)
    for name, L in sorted(first.items(), key=lambda t: t[1]):
        print(f"  +{L:<3} {name:<10} worst {worst[name]:.1e}")
    for name in TRACE:
        print(name, " ".join(f"+{L}:{byl[name, L]:.0e}" for L in range(len(hs)) if (name, L) in byl))


TRACE = sys.argv[3:]

if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0, int(sys.argv[2]) if len(sys.argv) > 2 else 30)
