"""The FPU circuit alone with an fp32 GDN read's noise on its inputs, as the machine's operands
and op flags have it (test_machine_fpu.run_with_read_noise: a 1 bit reads as 1 - u, a 0 bit as -u,
u uniform in [0, NOISE * 2**-23]; NOISE 1 is what the stand-in's operands measured). Prints the
mismatches by op and, per field, the first layer where a dim strays more than 1e-3 from an integer
and its worst distance: where carry resolutions and gates amplify the noise past a margin. No
model build: about a minute.

    python benchmarks/fpu_noise.py [NOISE] [CASES_PER_MODE] [FIELD ...]   (FIELD: its worst by layer)
"""
import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_machine_fpu import compiled, run_with_read_noise  # noqa: E402


def main(noise: float, per: int) -> None:
    hs, bad, cases_run = run_with_read_noise(noise, per)
    print(f"noise {noise}: {cases_run} lane cases, mismatches {dict(+bad) or 0}")
    first, worst, byl = {}, collections.Counter(), collections.Counter()
    c = compiled()[0]
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
