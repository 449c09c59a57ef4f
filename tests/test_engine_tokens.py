"""Launches on an engine that returns only tokens (runtime.launch_on_engine), with the exact fast
path of the stand-in merged model behind the engine interface: the results come from the
copy-out alone, against the kernels' NumPy references; faults and replay as on the model engine."""
import copy

import numpy as np
import pytest

from qwengpu.api import Device
from qwengpu.errors import MemoryFault, ReplayMismatch
from qwengpu.launch import Launch
from qwengpu.driver import protocol, runtime
from qwengpu.machine.tokens import Token, Vocab
from qwengpu.suite import discover, load_spec, mismatches


class TokensOnly:
    """The fast path as an engine: prompts in, generated ids out, nothing else."""

    def __init__(self, fast, corrupt: tuple[int, int] | None = None):
        self.fast, self.corrupt = fast, corrupt        # (i, id): feed id in place of generated token i

    def generate(self, prompts, *, allowed, stop_ids, max_tokens):
        assert allowed == (self.fast.first, self.fast.end)
        outs = []
        for prompt in prompts:
            state = self.fast.new_state()
            out = [self.fast.prefill(state, prompt)]
            while out[-1] not in stop_ids and len(out) < max_tokens:
                fed = self.corrupt[1] if self.corrupt and len(out) == self.corrupt[0] + 1 else out[-1]
                out.append(self.fast.step(state, fed))
            outs.append(out)
        return outs


@pytest.fixture(scope="module")
def engine():
    from qwengpu.fast import FastModel
    from qwengpu.model.merge import default_merged_model
    fast = FastModel.from_checkpoint(default_merged_model(), "float32")
    return fast, Vocab(fast.first)


def launch_of(name):
    case = next(c for c in discover() if c.name == name)
    spec = load_spec(case)
    grid, block, args = spec.launch()
    args = list(args)
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    launch = Launch.build(fn.program, grid, block, args)
    return launch, args, spec.reference(*copy.deepcopy(args)), fn.arg_names


def test_results_come_from_the_tokens(engine):
    fast, vocab = engine
    names = ["dot", "histogram_shared", "matvec_warp"]
    cases = [launch_of(n) for n in names]
    results = runtime.launch_on_engine(TokensOnly(fast), vocab, [c[0] for c in cases], max_tokens=20_000,
                                       check="replay")
    for (launch, args, expected, arg_names), run in zip(cases, results):
        assert isinstance(run, runtime.ModelRun), run
        assert run.copied and run.stream[-1].kind == "HALT"
        launch.copy_back()
        assert not mismatches(args, expected, arg_names)


def test_a_fault_and_a_corrupted_stream(engine):
    fast, vocab = engine
    src = "__global__ void k(int *a) { a[threadIdx.x + 20000] = 1; }"      # past the 16384 words
    fn = Device("model").compile(src).get_function("k")
    launch = Launch.build(fn.program, 1, 4, [np.zeros(4, dtype=np.int32)])
    [faulted] = runtime.launch_on_engine(TokensOnly(fast), vocab, [launch], max_tokens=20_000)
    assert isinstance(faulted, MemoryFault) and "past the end" in str(faulted)
    # dot's first VAL fed back with its data's low bit flipped: a wrong register value, which replay catches
    dot = launch_of("dot")[0]
    stream = protocol.expected_stream(dot).tokens
    i = next(i for i, t in enumerate(stream) if t.kind == "VAL")
    lane, k, d = stream[i].args
    flipped = vocab.id(Token("VAL", (lane, k, d ^ 1)))
    [corrupted] = runtime.launch_on_engine(TokensOnly(fast, corrupt=(i, flipped)), vocab, [dot],
                                           max_tokens=20_000, check="replay")
    assert isinstance(corrupted, ReplayMismatch)
