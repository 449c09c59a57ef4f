"""What a block of more than 16 threads costs (docs/lowering.md, "Thread tiles"): the same work
as one launch of large blocks, run in tiles of the machine's 16 threads, and in blocks of 16,
side by side: ROM blocks, shared words, the prompt's tokens and the tokens the model generates
(the reference stream, from the interpreter's trace: no model is loaded).

    .venv/bin/python benchmarks/thread_tiles.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu.api import Device  # noqa: E402
from qwengpu.driver import protocol  # noqa: E402
from qwengpu.suite import discover, load_spec  # noqa: E402

SCALE = r"""extern "C" __global__ void scale(int *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 3 + 1;
}"""

# each block sums its blockDim.x inputs into out[blockIdx.x]
REDUCE = r"""extern "C" __global__ void reduce(const int *in, int *out) {
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}"""


def cost(fn, grid, block, args) -> dict:
    launch = fn.launch(grid, block, args)
    return dict(rom=len(launch.program.blocks), shared=launch.program.shared_words,
                prompt=len(protocol.prompt(launch)), generated=len(protocol.expected_stream(launch).tokens))


def workload(device, name) -> dict:
    [case] = [c for c in discover(Path(__file__).resolve().parents[1] / "kernels" / "workloads") if c.name == name]
    spec = load_spec(case)
    grid, block, args = spec.launch()
    return cost(device.compile(case.source.read_text(), case.source.name).get_function(spec.KERNEL), grid, block, args)


def main() -> None:
    device = Device("model", model="<not loaded>")
    scale, reduce = (device.compile(src).get_function(n) for src, n in ((SCALE, "scale"), (REDUCE, "reduce")))
    x = np.arange(256, dtype=np.int32)
    rows = [("scale 256 ints: 1 block of 256 vs 16 blocks of 16",
             cost(scale, 1, 256, [x.copy(), 256]), cost(scale, 16, 16, [x.copy(), 256])),
            ("reduce 256 ints: 1 block of 256 vs 16 blocks of 16 (16 partial sums)",
             cost(reduce, 1, 256, [x, np.zeros(1, np.int32)]), cost(reduce, 16, 16, [x, np.zeros(16, np.int32)])),
            ("32x32 int32 matmul: 16x16 tiles, 4 blocks of 256 vs 4x4 tiles, 64 blocks of 16",
             workload(device, "matmul256_int32"), workload(device, "matmul_int32")),
            ("32x32 float32 matmul: the same",
             workload(device, "matmul256_f32"), workload(device, "matmul_f32"))]
    print("| work | ROM blocks | shared words | prompt tokens | generated tokens | generated, tiled / 16 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for what, big, small in rows:
        pair = lambda k: f"{big[k]:,} / {small[k]:,}"      # noqa: E731
        print(f"| {what} | {pair('rom')} | {pair('shared')} | {pair('prompt')} | {pair('generated')} | "
              f"{big['generated'] / small['generated']:.2f} |")


if __name__ == "__main__":
    main()
