"""Run a launch on the merged model: prefill the launch prompt, then greedy-decode GPU
tokens until HALT, and read global memory back from the model's recurrent states.

The model chooses every token; this loop only restricts the argmax to the GPU tokens and
feeds each token back (docs/protocol.md). `check="replay"` holds every generated token
against the reference interpreter's stream as it arrives.

Two decoders run the same model: the stock transformers forward (StockDecoder), and
qwengpu.fast.FastModel, which runs only the circuit layers' nonzero structure
with the stock formulas (exact; its docstring says why the token stream is the same).
`launch_many` runs many launches on one FastModel, up to `max_batch` in lockstep.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from qwengpu import isa
from qwengpu.errors import ExecutionError, QwenGpuError, ReplayMismatch  # noqa: F401 (re-exported)
from qwengpu.launch import check_grid_block
from qwengpu.driver import DEFAULT_BATCH, copyout, protocol
from qwengpu.machine.tokens import Token, runs_pass

CHECKS = protocol.CHECKS
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@dataclass
class ModelRun:
    """tokens: generated tokens (HALT included); passes: EXEC tokens; instructions: the
    instructions they run (a pair's pass two, a terminator pass of its own none); blocks: EXEC
    tokens that run a terminator (protocol.pass_counts, encoding.py); stream: the generated tokens themselves; seconds: prefill
    and decode (and memory read-back); prefill_seconds: the prefill alone (launch_on_model);
    copied: the words of the copy-out, decoded from the stream (word -> value)."""
    tokens: int
    passes: int
    instructions: int
    seconds: float
    stream: list[Token] = field(default_factory=list)
    prefill_seconds: float = 0.0
    copied: dict[int, int] = field(default_factory=dict)
    blocks: int = 0


def load_model(path: str | Path, dtype: str = "float32", device: str = "cpu"):
    """A merged checkpoint through stock transformers: (model, its config's qwengpu block).
    The whole model, in `dtype`: what the stock path (fast=False) runs; the fast path reads only
    what it needs (FastModel.from_checkpoint)."""
    from transformers import AutoModelForCausalLM
    if dtype not in DTYPES:
        raise QwenGpuError(f"dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    load_config(path)                           # a clear error before transformers reads anything
    model = AutoModelForCausalLM.from_pretrained(Path(path), dtype=DTYPES[dtype]).to(device).eval()
    return model, model.config.qwengpu


def load_config(path: str | Path) -> dict:
    """config.json of a merged checkpoint (a dict with its qwengpu block), or a CheckpointError (a
    QwenGpuError) naming what is wrong: qwengpu.model.checkpoint.check_merged_checkpoint."""
    from qwengpu.model.checkpoint import check_merged_checkpoint
    return check_merged_checkpoint(path)


def host_config(model) -> dict:
    """The base (host) text config of a merged model (a model, or its config as a dict): what
    machine_for() is keyed on."""
    cfg = model if isinstance(model, dict) else model.config.to_dict()
    q = cfg["qwengpu"]
    return {**cfg, "hidden_size": q["base_hidden_size"], "rms_norm_eps": q["base_rms_norm_eps"],
            "vocab_size": q["base_vocab_size"]}


def checkpoint_readout(host: dict, where):
    """What the host reads a merged checkpoint's launches with (machine/readout.py), from its host
    config (host_config): the readout it records, or, for one built before it was recorded (or a
    bare test model), from a machine build, tens of seconds."""
    import warnings
    from qwengpu.machine.readout import Readout, ReadoutWarning
    block = host.get("qwengpu", {})
    if "readout" in block:
        from qwengpu.machine.build import machine_source_digest
        same = block.get("machine_source") == machine_source_digest()
        return Readout.from_json(block["readout"], where, same_sources=same)
    from qwengpu.machine.build import machine_for
    if block:
        warnings.warn(f"{where} records no readout (it was built by an older qwengpu): building the machine to "
                      "find its global memory, 15-40 s at every load; rebuild it with qgpu build to skip this",
                      ReadoutWarning, stacklevel=2)
    return machine_for(host, block.get("circuit_width")).readout


def gpu_token_ids(model) -> tuple[int, int] | None:
    """[first, end) of the GPU tokens: a FastModel's, or a merged config's (None: a bare model)."""
    if hasattr(model, "new_state"):
        return model.first, model.end
    block = getattr(model.config, "qwengpu", None)
    return tuple(block["gpu_token_ids"]) if block else None


def bind_vocab(model, vocab) -> None:
    """Point the machine's vocabulary at the model's GPU token ids."""
    ids = gpu_token_ids(model)
    if ids is None:
        return                                   # a bare test model: ids as the vocabulary has them
    first, end = ids
    if end - first != len(vocab):
        raise QwenGpuError(f"this checkpoint has {end - first} GPU tokens; the machine's vocabulary has "
                           f"{len(vocab)} (a checkpoint built with another circuit?)")
    vocab.first_id = first


class StockDecoder:
    """The stock transformers forward with a DynamicCache; the argmax over the GPU ids."""

    def __init__(self, model, first: int, end: int):
        self.model, self.first, self.end = model, first, end
        self.cache = _new_cache(model)

    @torch.no_grad()
    def _next(self, ids: list[int]) -> int:
        x = torch.tensor([ids], dtype=torch.long, device=self.model.device)
        out = self.model(input_ids=x, cache=self.cache, use_cache=True, logits_to_keep=1)
        return self.first + int(torch.argmax(out.logits[0, -1, self.first:self.end]))   # GPU tokens only

    def prefill(self, ids: list[int]) -> int:
        return self._next(ids)                   # one forward over the whole prompt

    def step(self, token_id: int) -> int:
        return self._next([token_id])


class FastDecoder:
    """qwengpu.fast.FastModel: the circuit layers alone, exact (its docstring says why)."""

    def __init__(self, fast):
        self.fast, self.state = fast, fast.new_state()

    def prefill(self, ids: list[int]) -> int:
        return self.fast.prefill(self.state, ids)

    def step(self, token_id: int) -> int:
        return self.fast.step(self.state, token_id)

    @property
    def cache(self):
        return self.fast.cache(self.state)


def _new_cache(model):
    from transformers.cache_utils import DynamicCache
    return DynamicCache(config=model.config)


def launch_on_model(model, machine, program: isa.Program, grid, block, params: list[int], memory: np.ndarray,
                    *, max_tokens: int, check: str | None = None, copy_out: Sequence[int] | None = None,
                    on_token: Callable[[Token], None] | None = None) -> ModelRun:
    """Run one launch on `model`, a stock merged model or a FastModel of one (global memory
    `memory` is updated in place from the model's state). With `copy_out` (a list of global
    words, maybe empty) the model also writes those words as tokens at the end, and they must
    agree with its state (check_copy_out); None: no copy-out."""
    if check not in CHECKS:
        raise QwenGpuError(f"check {check!r}: choose one of {', '.join(str(c) for c in CHECKS)}")
    grid, block = check_grid_block(grid, block)
    vocab = machine.vocab
    bind_vocab(model, vocab)
    args = (program, grid, block, params, memory, copy_out or ())
    expected = protocol.expected_stream(*args) if check == "replay" else None
    ids = [vocab.id(t) for t in protocol.prompt(*args)]
    start = time.perf_counter()
    decoder = (FastDecoder(model) if hasattr(model, "new_state")
               else StockDecoder(model, vocab.first_id, vocab.first_id + len(vocab)))
    token = vocab.token(decoder.prefill(ids))
    prefill_seconds = time.perf_counter() - start
    stream: list[Token] = []
    while True:
        stream.append(token)
        if on_token:
            on_token(token)
        if expected is not None:
            _check(expected, len(stream) - 1, token)
        if token.kind == "HALT":
            break
        if token.kind == "FAULT":
            _fault(stream, expected, program, block, grid, params)
        if len(stream) >= max_tokens:
            raise token_limit_error(max_tokens)
        token = vocab.token(decoder.step(vocab.id(token)))
    seconds = time.perf_counter() - start          # prefill and decode: the readback is not the model's
    before = memory.copy()
    memory[:] = machine.read_global(decoder.cache, layer_offset=0)
    if expected is not None:
        _check_memory(expected.memory, memory)
    copied = None if copy_out is None else check_copy_out(stream, copy_out, before, memory)
    run = _model_run(program, stream, seconds, copied)
    run.prefill_seconds = prefill_seconds
    return run


def _fault(stream: list[Token], expected: protocol.Stream | None, program: isa.Program | None = None,
           block=None, grid=None, params: list[int] | None = None) -> None:
    """FAULT: a bad memory access or a deadlock. With replay the interpreter's error says which;
    without, qwengpu.driver.faults reads the cause from the generated tokens alone (and, for a
    memory fault, the operation from `program`'s ROM and the lane and address from the model's
    VAL, VALU and CT1 tokens): a MemoryFault or DeadlockError accordingly (docs/protocol.md)."""
    from qwengpu.driver.faults import fault_error, fault_where
    if expected is not None and expected.fault is not None:
        raise type(expected.fault)(f"{fault_where(stream)}; the interpreter: {expected.fault}")
    raise fault_error(stream, program, block, grid, params)


def token_limit_error(max_tokens: int) -> ExecutionError:
    return ExecutionError(f"the launch did not finish within {max_tokens} tokens; raise the limit "
                          f"with --max-tokens N (API: max_tokens=N)")


def _check(expected: protocol.Stream, index: int, token: Token) -> None:
    mismatch = protocol.check_token(expected, index, token)
    if mismatch:
        raise ReplayMismatch(f"replay mismatch at {mismatch}", mismatch)


def _check_memory(want: np.ndarray, got: np.ndarray) -> None:
    bad = np.flatnonzero(want != got)
    if bad.size:
        w = int(bad[0])
        raise ReplayMismatch(f"replay mismatch in global memory after HALT: word {w} is {int(got[w]):#x}, "
                             f"the interpreter has {int(want[w]):#x} ({bad.size} words differ)")


@dataclass
class LaunchJob:
    """One launch for `launch_many`: global memory `memory` is updated in place."""
    program: isa.Program
    grid: object
    block: object
    params: list[int]
    memory: np.ndarray
    copy_out: Sequence[int] | None = None


@dataclass
class _Running:
    """A launch in the batch: its prompt, what it generated, and its replay stream."""
    index: int
    job: LaunchJob
    prompt: list[int]
    expected: protocol.Stream | None
    fed: int = 0
    start: float = 0.0
    stream: list[Token] = field(default_factory=list)

    def next_input(self, vocab) -> tuple[int, bool]:
        """(the token to feed, whether the model's next token counts)."""
        if self.fed < len(self.prompt):
            self.fed += 1
            return self.prompt[self.fed - 1], self.fed == len(self.prompt)
        return vocab.id(self.stream[-1]), True


def launch_many(model, machine, jobs: list[LaunchJob], *, max_tokens: int, check: str | None = None,
                max_batch: int = DEFAULT_BATCH, on_done: Callable[[int, object], None] | None = None,
                on_token: Callable[[int, Token], None] | None = None) -> list:
    """Run many launches on `model`; a FastModel steps up to `max_batch` of them in lockstep, one
    token each per step (prompts and generation alike), longest expected stream first when
    replaying. The result per job, in order: a ModelRun (seconds: from joining the batch to HALT,
    shared with the launches beside it) or the QwenGpuError that ended that launch alone.
    `on_done(index, result)` as each finishes, `on_token(index, token)` for each generated token.
    Another model runs them one by one."""
    if check not in CHECKS:
        raise QwenGpuError(f"check {check!r}: choose one of {', '.join(str(c) for c in CHECKS)}")
    if max_batch < 1:
        raise QwenGpuError(f"max_batch must be >= 1, not {max_batch}")
    results: list = [None] * len(jobs)

    def done(index: int, result) -> None:
        results[index] = result
        if on_done:
            on_done(index, result)

    if not hasattr(model, "step_batch"):
        for i, job in enumerate(jobs):
            try:
                done(i, launch_on_model(model, machine, job.program, job.grid, job.block, job.params, job.memory,
                                        max_tokens=max_tokens, check=check, copy_out=job.copy_out,
                                        on_token=(lambda t, i=i: on_token(i, t)) if on_token else None))
            except QwenGpuError as e:
                done(i, e)
        return results
    bind_vocab(model, machine.vocab)
    waiting = []
    for i, job in enumerate(jobs):
        try:
            waiting.append(_prepare(model, machine.vocab, i, job, check))
        except QwenGpuError as e:
            done(i, e)
    if check == "replay":
        waiting.sort(key=lambda r: len(r.prompt) + len(r.expected.tokens), reverse=True)
    _run_batch(model, machine, waiting[::-1], max_tokens, max_batch, done, on_token)
    return results


def launch_on_engine(engine, vocab, jobs: list[LaunchJob], *, max_tokens: int, check: str | None = None) -> list:
    """Run launches on an engine that returns only tokens (qwengpu.engines: vLLM, llama.cpp, an
    OpenAI-compatible server) whose GPU token ids start at vocab.first_id. Every prompt goes to
    the engine in one generate() call, so it batches them; each launch's results come from its
    copy-out alone (job.copy_out, written into job.memory; its other words stay as they were).
    The result per job, in order: a ModelRun (seconds: the whole batch's) or the QwenGpuError
    that ended that launch."""
    if check not in CHECKS:
        raise QwenGpuError(f"check {check!r}: choose one of {', '.join(str(c) for c in CHECKS)}")
    results: list = [None] * len(jobs)
    ready = []
    for i, job in enumerate(jobs):
        try:
            ready.append((i, job, *_prompt_and_replay(vocab, job, check)))
        except QwenGpuError as e:
            results[i] = e
    stops = [vocab.id(Token(kind)) for kind in ("HALT", "FAULT")]
    start = time.perf_counter()
    outs = engine.generate([prompt for _, _, prompt, _ in ready], allowed=(vocab.first_id, vocab.first_id + len(vocab)),
                           stop_ids=stops, max_tokens=max_tokens) if ready else []
    seconds = time.perf_counter() - start
    for (i, job, _, expected), ids in zip(ready, outs):
        try:
            results[i] = _engine_result(vocab, job, ids, expected, max_tokens, seconds)
        except QwenGpuError as e:
            results[i] = e
    return results


def _engine_result(vocab, job: LaunchJob, ids: list[int], expected, max_tokens: int, seconds: float) -> ModelRun:
    try:
        stream = [vocab.token(i) for i in ids]
    except ValueError as e:                     # an engine that did not keep to the GPU ids
        raise ExecutionError(f"the engine generated {e}") from None
    if expected is not None:
        for index, token in enumerate(stream):
            _check(expected, index, token)
    if stream and stream[-1].kind == "FAULT":
        _fault(stream, expected, job.program, job.block, job.grid, job.params)
    if not stream or stream[-1].kind != "HALT":
        raise token_limit_error(max_tokens)
    copied = copyout.decode(stream, job.copy_out or ())
    for word, value in copied.items():
        job.memory[word] = value
    if expected is not None:
        _check_memory(expected.memory, job.memory)
    return _model_run(job.program, stream, seconds, copied)


def _prompt_and_replay(vocab, job: LaunchJob, check: str | None) -> tuple[list[int], protocol.Stream | None]:
    """A job's prompt ids, and its replay stream when `check` asks for one."""
    job.grid, job.block = check_grid_block(job.grid, job.block)
    args = (job.program, job.grid, job.block, job.params, job.memory, job.copy_out or ())
    expected = protocol.expected_stream(*args) if check == "replay" else None
    return [vocab.id(t) for t in protocol.prompt(*args)], expected


def _prepare(fast, vocab, index: int, job: LaunchJob, check: str | None) -> _Running:
    prompt, expected = _prompt_and_replay(vocab, job, check)
    if any(not fast.first <= t < fast.end for t in prompt):
        raise QwenGpuError("the launch prompt has a token outside the GPU tokens")
    return _Running(index, job, prompt, expected)


def _run_batch(fast, machine, waiting: list[_Running], max_tokens: int, max_batch: int, done,
               on_token=None) -> None:
    """Step the launches in lockstep; a finished launch's row takes the next waiting launch (its
    states zeroed), else the batch shrinks. `waiting` is popped from its end."""
    vocab = machine.vocab
    rows = [waiting.pop() for _ in range(min(max_batch, len(waiting)))]
    if not rows:
        return
    state = fast.new_state(len(rows))
    for r in rows:
        r.start = time.perf_counter()
    while rows:
        inputs, decide = zip(*(r.next_input(vocab) for r in rows))
        outputs = fast.step_batch(state, inputs, decide)
        leaving = []
        for b, (r, out) in enumerate(zip(rows, outputs)):
            result = None if out is None else _advance(fast, machine, state, b, r, out, max_tokens, on_token)
            if result is None:
                continue
            done(r.index, result)
            if waiting:
                fast.reset(state, b)
                rows[b] = waiting.pop()
                rows[b].start = time.perf_counter()
            else:
                leaving.append(b)
        if leaving:
            keep = [b for b in range(len(rows)) if b not in leaving]
            rows = [rows[b] for b in keep]
            if rows:
                fast.keep(state, keep)


def _advance(fast, machine, state, row: int, r: _Running, out, max_tokens: int, on_token=None):
    """Take launch r's next token: None while it runs on, else its ModelRun or error."""
    try:
        if isinstance(out, Exception):
            raise out
        token = machine.vocab.token(out)
        r.stream.append(token)
        if on_token:
            on_token(r.index, token)
        if r.expected is not None:
            _check(r.expected, len(r.stream) - 1, token)
        if token.kind == "FAULT":
            _fault(r.stream, r.expected, r.job.program, r.job.block, r.job.grid, r.job.params)
        if token.kind != "HALT":
            if len(r.stream) >= max_tokens:
                raise token_limit_error(max_tokens)
            return None
        before = r.job.memory.copy()
        r.job.memory[:] = machine.read_global(fast.cache(state, row), layer_offset=0)
        if r.expected is not None:
            _check_memory(r.expected.memory, r.job.memory)
        copied = None if r.job.copy_out is None else check_copy_out(r.stream, r.job.copy_out, before, r.job.memory)
        return _model_run(r.job.program, r.stream, time.perf_counter() - r.start, copied)
    except QwenGpuError as e:
        return e


def _model_run(program: isa.Program, stream: list[Token], seconds: float,
               copied: dict[int, int] | None = None) -> ModelRun:
    instructions, blocks = protocol.pass_counts(program, stream)
    passes = sum(map(runs_pass, stream))
    return ModelRun(len(stream), passes, instructions, seconds, stream, copied=copied or {}, blocks=blocks)


def check_copy_out(stream: list[Token], copy_out: Sequence[int], before: np.ndarray,
                   after: np.ndarray) -> dict[int, int]:
    """The copy-out decoded from the tokens, checked against global memory as the model's state
    holds it before (`before`) and after (`after`) the launch: every copied word must agree, and
    every word that changed must be copied (else an engine that returns only tokens would lose
    it). An ExecutionError names the first word that breaks either."""
    copied = copyout.decode(stream, copy_out)
    for word, value in copied.items():
        if int(after[word]) != value:
            raise ExecutionError(f"the model's copy-out says global word {word} is {value:#x}, but its state "
                                 f"holds {int(after[word]):#x}")
    lost = [int(w) for w in np.flatnonzero(before != after) if int(w) not in copied]
    if lost:
        raise ExecutionError(f"the launch changed global word {lost[0]} ({len(lost)} words in all), which the "
                             f"copy-out does not carry: the may-write analysis (qwengpu/toolchain/writes.py) "
                             f"missed a write")
    return copied
