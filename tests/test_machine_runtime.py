"""The decode loop of the model runtime, driven by a stub model that plays a scripted
token stream (the real machine: qwengpu/machine/build.py and its tests)."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from qwengpu import isa
from qwengpu.errors import ExecutionError, MemoryFault, QwenGpuError
from qwengpu.isa import Imm, Instr, MachineBlock, Op, Program, Reg, SReg, Space, Term, Terminator
from qwengpu.launch import Launch
from qwengpu.driver import runtime
from qwengpu.driver.protocol import expected_stream, prompt
from qwengpu.driver.runtime import ReplayMismatch, launch_on_model
from qwengpu.machine.tokens import Token, Vocab

def T(kind, *args):
    return Token(kind, tuple(args))


FIRST = 1000                      # the stub's first GPU token id
TEXT_TRAP = 7                     # a text token with a higher logit than any GPU token
CACHE = object()                  # the cache the runtime makes (checked by read_global)


def store_program() -> Program:
    """out[tid] = tid + 0x100 for 2 threads in each of 2 thread blocks."""
    r = Reg
    block0 = [Instr(Op.S2R, r(1), (Imm(SReg.TID_X),)), Instr(Op.ADD, r(2), (r(1), Imm(0x100))),
              Instr(Op.SHL, r(3), (r(1), Imm(2))), Instr(Op.ST, r(0), (r(3), Imm(0), r(2)), Space.GLOBAL)]
    return Program("k", [MachineBlock(block0, Terminator(Term.EXIT))], [])


class StubModel:
    """Returns logits that pick `script[i]` on call i + 1 (call 0 is the prefill) and records
    what it was fed. Text id TEXT_TRAP always has the highest logit overall."""

    def __init__(self, vocab: Vocab, script: list[Token]):
        self.vocab, self.script, self.fed = vocab, script, []
        self.device = torch.device("cpu")
        self.config = SimpleNamespace(qwengpu={"gpu_token_ids": [FIRST, FIRST + len(vocab)]})

    def __call__(self, input_ids, cache, use_cache, logits_to_keep):
        assert cache is CACHE and use_cache and logits_to_keep == 1
        self.fed.append(input_ids[0].tolist())
        logits = torch.zeros(1, 1, FIRST + len(self.vocab) + 5)
        logits[0, 0, TEXT_TRAP] = 1e6
        logits[0, 0, -1] = 1e6                       # past the GPU range too
        step = len(self.fed) - 1
        if step < len(self.script):
            logits[0, 0, self.vocab.id(self.script[step])] = 10.0
        return SimpleNamespace(logits=logits)


class StubFast:
    """A FastModel's interface: prefill/step return the next GPU id; cache(state) for read_global."""

    def __init__(self, vocab: Vocab, script: list[Token]):
        self.vocab, self.script, self.fed = vocab, script, []
        self.first, self.end = FIRST, FIRST + len(vocab)

    def new_state(self):
        return SimpleNamespace(steps=0)

    def prefill(self, state, ids):
        self.fed.append(list(ids))
        return self._next(state)

    def step(self, state, token_id):
        self.fed.append([token_id])
        return self._next(state)

    def _next(self, state):
        state.steps += 1
        return self.vocab.id(self.script[state.steps - 1])

    def cache(self, state):
        return CACHE


class StubMachine:
    def __init__(self, final_memory):
        self.vocab, self.final_memory = Vocab(), final_memory

    def read_global(self, cache, layer_offset=0):
        assert cache is CACHE and layer_offset == 0
        return self.final_memory


@pytest.fixture(autouse=True)
def stub_cache(monkeypatch):
    monkeypatch.setattr(runtime, "_new_cache", lambda model: CACHE)


def setup(script=None, final=None):
    program, memory = store_program(), np.zeros(isa.GLOBAL_WORDS, np.uint32)
    stream = expected_stream(Launch.from_words(program, 2, 2, [], memory))
    machine = StubMachine(stream.memory if final is None else final)
    model = StubModel(machine.vocab, stream.tokens if script is None else script)
    return program, memory, stream, machine, model


def test_replay_run_feeds_back_each_token_and_reads_memory():
    program, memory, stream, machine, model = setup()
    seen = []
    run = launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000, check="replay",
                          on_token=seen.append)
    assert machine.vocab.first_id == FIRST                     # bound to the model's GPU ids
    assert run.stream == stream.tokens == seen and run.stream[-1] == T("HALT")
    ids = [machine.vocab.id(t) for t in prompt(Launch.from_words(program, 2, 2))]
    assert model.fed[0] == ids                                 # one prefill of the whole prompt
    assert model.fed[1:] == [[machine.vocab.id(t)] for t in stream.tokens[:-1]]   # HALT is not fed
    # per thread block: 3 passes (S2R, ADD, then the SHL of the address paired into the ST's pass,
    # which runs the EXIT too), 4 instructions
    assert (run.tokens, run.passes, run.instructions, run.blocks) == (len(stream.tokens), 6, 8, 2)
    assert memory[:2].tolist() == [0x100, 0x101] and not memory[2:].any()


def test_fast_model_runs_the_same_loop():
    program, memory, stream, machine, _ = setup()
    fast = StubFast(machine.vocab, stream.tokens + [T("HALT")])
    run = launch_on_model(fast, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000, check="replay")
    assert machine.vocab.first_id == FIRST and run.stream == stream.tokens
    ids = [machine.vocab.id(t) for t in prompt(Launch.from_words(program, 2, 2))]
    assert fast.fed == [ids] + [[machine.vocab.id(t)] for t in stream.tokens[:-1]]
    assert memory[:2].tolist() == [0x100, 0x101]


def test_stops_at_halt_even_if_the_model_would_go_on():
    program, memory, stream, machine, model = setup()
    model.script = stream.tokens + [T("CTA", 3)] * 5
    run = launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000, check=None)
    assert run.stream == stream.tokens and len(model.fed) == len(stream.tokens)


def test_token_limit():
    program, memory, stream, machine, model = setup()
    short = len(stream.tokens) - 1                             # one token short of HALT
    with pytest.raises(ExecutionError, match=f"the launch did not finish within {short} tokens"):
        launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=short)
    assert len(model.fed) == short and not memory.any()        # nothing read back


def test_replay_mismatch_names_index_tokens_and_field():
    program, memory, stream, machine, model = setup()
    script = list(stream.tokens)
    i = script.index(Token("VALA", (1, 0x100), cont=True))     # tid + 0x100 on lanes 0, 1: a progression
    script[i] = Token("VALA", (1, 0x101), cont=True)
    model.script = script
    with pytest.raises(ReplayMismatch, match=rf"token {i}: expected VALA s1 0x100 \+, got VALA s1 0x101 \+ \(data differs\)") as e:
        launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000, check="replay")
    assert e.value.mismatch.index == i and len(model.fed) == i + 1   # stopped at once


def test_replay_ignores_dont_care_fields():
    program, memory, stream, machine, model = setup()
    model.script = [T("CT1", 5, 3, 6) if t.kind == "CT1" else t
                    for t in stream.tokens]            # exited warps: CT1's pc, mask and sp are don't-cares
    launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000, check="replay")


def test_replay_checks_global_memory_after_halt():
    wrong = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    wrong[:2] = [0x100, 0x102]
    program, memory, stream, machine, model = setup(final=wrong)
    with pytest.raises(ReplayMismatch, match=r"global memory after HALT: word 1 is 0x102, the interpreter has 0x101"):
        launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000, check="replay")


def test_fault_token_is_an_execution_error():
    program, memory, stream, machine, model = setup()
    model.script = stream.tokens[:3] + [T("FAULT")]
    # EXEC B0.0, then two VALAs that each run the block's next pass
    with pytest.raises(ExecutionError, match=r"FAULT at generated token 3 \(last pass: EXEC w0 B0.2\)"):
        launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000)


def test_replayed_fault_raises_the_interpreters_error():
    program = store_program()
    program.blocks[0].instrs[3] = Instr(Op.ST, Reg(0), (Reg(3), Imm(2), Reg(2)), Space.GLOBAL)   # misaligned
    memory = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    stream = expected_stream(Launch.from_words(program, 1, 2, [], memory))
    assert stream.tokens[-2:] == [Token("VALA", (1, 0x100), cont=True), T("FAULT")]
    machine = StubMachine(None)
    model = StubModel(machine.vocab, stream.tokens)
    # EXEC B0.0, its VALA (0..1) running B0.1, whose VALA (0x100..0x101) runs the store's pass (the
    # SHL of its address paired into it)
    with pytest.raises(MemoryFault, match=r"FAULT at generated token 3 \(last pass: EXEC w0 B0.2\); "
                                          r"the interpreter: store at global byte address 0x2 is not 4-byte aligned"):
        launch_on_model(model, machine, Launch.from_words(program, 1, 2, [], memory), max_tokens=100, check="replay")


def test_vocabulary_size_must_match_the_checkpoint():
    program, memory, stream, machine, model = setup()
    model.config.qwengpu["gpu_token_ids"] = [FIRST, FIRST + 10]
    with pytest.raises(QwenGpuError, match=f"this checkpoint has 10 GPU tokens; the machine's vocabulary has {len(machine.vocab)}"):
        launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=1000)


def test_unknown_check_is_refused():
    program, memory, stream, machine, model = setup()
    with pytest.raises(QwenGpuError, match="check 'exact'"):
        launch_on_model(model, machine, Launch.from_words(program, 2, 2, [], memory), max_tokens=10, check="exact")


def test_load_model_refuses_a_directory_without_a_checkpoint(tmp_path):
    with pytest.raises(QwenGpuError, match="not a model checkpoint"):
        runtime.load_model(tmp_path)
    with pytest.raises(QwenGpuError, match="dtype 'fp8'"):
        runtime.load_model(tmp_path, dtype="fp8")
