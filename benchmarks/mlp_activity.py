"""How much of the circuit's MLP work a token needs: per kernel, over every token of the launch
(its prompt's GPU tokens and the generated ones) on the stand-in merged model, the share of the
gate weights that multiply a nonzero input (what native.c's `mlp` sums) and the share in the rows of
neurons that are on (gate > -89: what silu leaves nonzero), of all the gate weights.

    .venv/bin/python benchmarks/mlp_activity.py [KERNEL ...]   (default: dot float/saxpy float/fdot)
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu import bench  # noqa: E402
from qwengpu.driver import runtime  # noqa: E402
from qwengpu.fast.model import FastModel  # noqa: E402


def measure(fast, machine, name: str) -> tuple[int, float, float]:
    directory, _, kernel = ("kernels/" + name).rpartition("/")
    totals = [0, 0, 0]                               # all gate weights, with a nonzero input, in rows that are on
    layer, gates = FastModel.layer, {}

    def counting(self, lay, S, x):
        if lay.mlp is not None:
            g = lay.mlp.gate_up
            u = x.T.index_select(0, g.cols) * self.rms(x).T * g.gain     # the gate's input, [cols, 1]
            if id(lay) not in gates:
                gates[id(lay)] = g.csr.to_dense()[:g.csr.shape[0] // 2]
            W = gates[id(lay)]
            nz = W != 0
            totals[0] += int(nz.sum())
            totals[1] += int(nz[:, u[:, 0] != 0].sum())
            totals[2] += int(nz[(W @ u)[:, 0] > -89].sum())
        return layer(self, lay, S, x)

    FastModel.layer = counting
    try:
        run, _, _ = bench.run_fast(fast, machine, bench.kernel_launch(kernel, Path(directory)))
    finally:
        FastModel.layer = layer
    return run.tokens, totals[1] / totals[0], totals[2] / totals[0]


def main(names: list[str]) -> None:
    path = bench._model_path(None)
    fast, machine = FastModel.from_checkpoint(path, "float32", native=False), runtime.readout_of(path)
    weights = sum(int((lay.mlp.gate_up.csr.to_dense()[:lay.mlp.gate_up.csr.shape[0] // 2] != 0).sum())
                  for lay in fast.layers if lay.mlp is not None)
    print(f"gate weights of the circuit's MLPs: {weights:,} a token")
    print("| kernel | generated tokens | gate weights with a nonzero input | in neurons that are on |")
    print("| --- | --- | --- | --- |")
    with torch.inference_mode():
        for name in names:
            tokens, nonzero, on = measure(fast, machine, name)
            print(f"| {name} | {tokens} | {nonzero:.3f} | {on:.3f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["dot", "float/saxpy", "float/fdot"])
