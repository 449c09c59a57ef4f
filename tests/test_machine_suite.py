"""The kernel suite in the stand-in merged model, batched (qwengpu.suite.run_batched through
qwengpu.driver.runtime.launch_many on the exact fast path): every kernel's outputs against its
NumPy reference, every generated token against the interpreter's stream (replay) and global memory
after HALT. Batched launches generate the token streams of the same launches run one at a time, and
a launch's error stays with that launch. (tests/test_machine_kernels.py holds the fast path against
the stock transformers forward.)"""
import copy
import dataclasses
import time

import numpy as np
import pytest

from qwengpu import isa
from qwengpu.api import Device
from qwengpu.errors import ExecutionError, LaunchError
from qwengpu.launch import Launch
from qwengpu.driver import DEFAULT_BATCH, runtime
from qwengpu.suite import discover, load_spec, run_batched

MAX_BATCH = DEFAULT_BATCH


@pytest.fixture(scope="module")
def device():
    dev = Device("model", check="replay", max_tokens=1_000_000)
    dev.model_and_machine()                      # the model loads once for this module
    return dev


def job(device, name):
    """The Launch of suite kernel `name` on the model engine (its copy-out: output_words())."""
    case = next(c for c in discover() if c.name == name)
    spec = load_spec(case)
    grid, block, args = spec.launch()
    fn = device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    return Launch.build(fn.program, grid, block, copy.deepcopy(list(args)))


def test_whole_suite_exact_in_model_batched(device):
    """All 83 kernels (557,755 generated tokens; about 6 minutes on 2 cores with the C step)."""
    cases = discover()
    start = time.perf_counter()
    reports = run_batched(cases, device, MAX_BATCH)
    wall = time.perf_counter() - start
    failed = {r.name: r.reason for r in reports if not r.passed}
    assert not failed, failed
    assert len(reports) == len(cases) >= 83
    assert all(r.tokens > r.passes > 0 for r in reports)
    print(f"\nsuite in the model, batched ({MAX_BATCH}): {len(reports)} kernels, "
          f"{sum(r.tokens for r in reports)} generated tokens, {wall:.0f} s")


BATCHED = ["dot", "nested_divergence", "pool3_shared", "atomic_inc", "warp_broadcast"]


def test_batched_streams_equal_single_launches(device):
    """Two rows for five launches: rows are reused and the batch shrinks; no replay check here, so
    that the comparison with the single launches is the only judge."""
    fast, machine = device.model_and_machine()
    batched = [job(device, name) for name in BATCHED]
    runs = runtime.launch_many(fast, machine, batched, max_tokens=20_000, max_batch=2)
    for name, run, b in zip(BATCHED, runs, batched):
        alone = job(device, name)                  # the same launch, copy-out included
        want = runtime.launch_on_model(fast, machine, alone, max_tokens=20_000)
        assert isinstance(run, runtime.ModelRun), (name, run)
        assert [str(t) for t in run.stream] == [str(t) for t in want.stream], name
        assert (run.tokens, run.passes, run.instructions) == (want.tokens, want.passes, want.instructions)
        np.testing.assert_array_equal(b.memory, alone.memory, err_msg=name)


def test_a_launch_error_stays_with_that_launch(device):
    fast, machine = device.model_and_machine()
    dot, long_one = job(device, "dot"), job(device, "warp_broadcast")
    # a launch the prompt cannot load: a copy-out word past global memory
    bad_copy_out = dataclasses.replace(dot, memory=dot.memory.copy(), copy_out=[isa.GLOBAL_WORDS])
    done = []
    runs = runtime.launch_many(fast, machine, [long_one, bad_copy_out, dot], max_tokens=100, check="replay",
                               on_done=lambda i, r: done.append(i))
    assert isinstance(runs[0], ExecutionError) and "within 100 tokens" in str(runs[0])   # 160 tokens; dot 30
    assert isinstance(runs[1], LaunchError) and "outside global memory" in str(runs[1])
    assert isinstance(runs[2], runtime.ModelRun) and runs[2].stream[-1].kind == "HALT"
    assert sorted(done) == [0, 1, 2]
