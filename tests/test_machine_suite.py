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
from qwengpu.driver import DEFAULT_BATCH, protocol, runtime
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


def features(device, case) -> tuple[set[str], int]:
    """What a kernel exercises in the model (its ops, terminators and atomic operations, and the
    kinds of the tokens it generates, from the interpreter's stream) and how many tokens it takes."""
    lau = job(device, case.name)
    ops = ({ins.op.name for b in lau.program.blocks for ins in b.instrs}
           | {b.term.kind.name for b in lau.program.blocks}
           | {f"ATOM.{ins.mod[1].name}" for b in lau.program.blocks for ins in b.instrs if ins.op is isa.Op.ATOM})
    tokens = protocol.expected_stream(lau).tokens
    return ops | {f"token {t.kind}" for t in tokens}, len(tokens)


def covering_subset(device, cases) -> list:
    """Kernels that together exercise everything the whole suite does, cheapest first: greedily the
    kernel with the most features not yet covered per token, until none is left."""
    feats = {case.name: features(device, case) for case in cases}
    left, chosen = set().union(*(f for f, _ in feats.values())), []
    while left:
        best = max(cases, key=lambda c: (len(feats[c.name][0] & left) / feats[c.name][1], c.name))
        chosen.append(best)
        left -= feats[best.name][0]
    return chosen


def test_a_covering_subset_of_the_suite_exact_in_model_batched(device):
    """Kernels covering every op, terminator, atomic and token kind of the whole suite, exact with
    replay. The whole suite (83 kernels, 136,197 tokens, 6 minutes on 2 cores) is the documented
    heavy check: `qgpu suite --engine model --check replay` (docs/testing.md)."""
    cases = discover()
    subset = covering_subset(device, cases)
    assert 0 < len(subset) < len(cases)
    start = time.perf_counter()
    reports = run_batched(subset, device, MAX_BATCH)
    wall = time.perf_counter() - start
    failed = {r.name: r.reason for r in reports if not r.passed}
    assert not failed, failed
    assert all(r.tokens > r.passes > 0 for r in reports)
    print(f"\nsuite subset in the model, batched ({MAX_BATCH}): {len(reports)} of {len(cases)} kernels "
          f"({', '.join(r.name for r in reports)}), {sum(r.tokens for r in reports)} generated tokens, {wall:.0f} s")


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
