"""The workload kernels (kernels/workloads/: 32x32 matmuls in int32 and float32, in 16-thread and
256-thread blocks, a 64x64 stencil, a 4,096-element scan, sort and sum (the sum in one block of
1,024 threads), a 16 KiB histogram, a 1,000-float softmax), each sized to use global memory past word 1,024: every one passes on the
interpreter with both front ends, through the suite's own code path (qwengpu.suite.run_case, as
`qgpu suite --dir kernels/workloads` runs them), checked word for word against its NumPy
reference. In the model (replay checked) CI runs the cheapest, reduce_1024 (94,071 generated
tokens); all of them is the documented heavy check `qgpu suite --engine model --check replay
--dir kernels/workloads` (docs/testing.md)."""
import pytest

from qwengpu.api import Device
from qwengpu.suite import DEFAULT_DIR, discover, run_case, unpaired

WORKLOADS_DIR = DEFAULT_DIR / "workloads"
WORKLOADS = ["histogram_16k", "matmul256_f32", "matmul256_int32", "matmul_f32", "matmul_int32", "reduce_1024",
             "scan_4096", "softmax_1000", "sort_4096", "stencil_64x64"]


@pytest.mark.parametrize("frontend", ["clang", "nvrtc"])
@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_passes_on_interp(name, frontend):
    cases = discover(WORKLOADS_DIR)
    assert [c.name for c in cases] == WORKLOADS and unpaired(WORKLOADS_DIR) == []   # none missing, none unlisted
    [case] = [c for c in cases if c.name == name]
    report = run_case(case, Device("interp", frontend))
    assert report.passed, f"{name} on {frontend}: {report.reason}"
    assert report.instructions and report.blocks and report.passes      # it ran


def test_the_cheapest_workload_in_the_model():
    """reduce_1024 in the stand-in merged model: a block of 1,024 threads (64 tiles of the
    machine's 16), its 4,096 inputs paged past word 1,024; every token replay checked."""
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    [case] = [c for c in discover(WORKLOADS_DIR) if c.name == "reduce_1024"]
    report = run_case(case, Device("model", check="replay", max_tokens=1_000_000))
    assert report.passed, report.reason
    assert report.tokens > 90_000
