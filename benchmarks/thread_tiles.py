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

def cost(fn, grid, block, args) -> dict:
    launch = fn.launch(grid, block, args)
    return dict(rom=len(launch.program.blocks), shared=launch.program.shared_words,
                prompt=len(protocol.prompt(launch)), generated=len(protocol.expected_stream(launch).tokens))


def workload(device, name, block=None) -> dict:
    """A workload kernel's launch, or with another block size."""
    [case] = [c for c in discover(Path(__file__).resolve().parents[1] / "kernels" / "workloads") if c.name == name]
    spec = load_spec(case)
    grid, own, args = spec.launch()
    fn = device.compile(case.source.read_text(), case.source.name).get_function(spec.KERNEL)
    return cost(fn, grid, block or own, args)


def main() -> None:
    device = Device("model", model="<not loaded>")
    scale = device.compile(SCALE).get_function("scale")
    x = np.arange(256, dtype=np.int32)
    rows = [("scale 256 ints: 1 block of 256 vs 16 blocks of 16",
             cost(scale, 1, 256, [x.copy(), 256]), cost(scale, 16, 16, [x.copy(), 256])),
            ("reduce_1024 (sum of 4,096 ints): 1 block of 1,024 vs 1 block of 16 (256 inputs a thread)",
             workload(device, "reduce_1024"), workload(device, "reduce_1024", block=16)),
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
