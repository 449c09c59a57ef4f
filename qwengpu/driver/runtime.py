"""Run a launch on the merged model: prefill the launch prompt, then greedy-decode GPU
tokens until HALT, and read global memory back from the model's recurrent states.

The model chooses every token; the host only restricts the argmax to the GPU tokens and
feeds each token back (docs/protocol.md). `check="replay"` holds every generated token
against the reference interpreter's stream as it arrives. One token state machine,
LaunchRun, follows each launch whichever way its tokens come:

    launch_on_model   one launch on a decoder: the stock transformers forward (StockDecoder),
                      or qwengpu.fast.FastModel, which runs only the circuit layers' nonzero
                      structure with the stock formulas (exact: its docstring says why)
    launch_many       many launches on one FastModel, up to `max_batch` in lockstep
    launch_on_engine  many launches on an engine that returns only tokens (qwengpu.engines)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from qwengpu.dtypes import torch_dtype
from qwengpu.errors import ExecutionError, QwenGpuError, ReplayMismatch
from qwengpu.launch import Launch
from qwengpu.driver import DEFAULT_BATCH, copyout, protocol
from qwengpu.machine.tokens import Token, runs_pass

CHECKS = protocol.CHECKS


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
    dtype = torch_dtype(dtype)
    load_config(path)                           # a clear error before transformers reads anything
    model = AutoModelForCausalLM.from_pretrained(Path(path), dtype=dtype).to(device).eval()
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


def readout_of(path: str | Path):
    """The readout of the merged checkpoint folder `path`, from its config.json alone (checkpoint_readout)."""
    return checkpoint_readout(host_config(load_config(path)), path)


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


def check_choice(check: str | None) -> None:
    if check not in CHECKS:
        raise QwenGpuError(f"check {check!r}: choose one of {', '.join(str(c) for c in CHECKS)}")


class LaunchRun:
    """One launch's generation: the token state machine every route drives (one launch on a
    decoder, a batch in lockstep, an engine that returns only tokens). It holds the prompt's ids
    and the replay stream; `take` takes each generated token in order (the replay check, FAULT,
    the token limit); at HALT, `finish` reads the results back from the model's state, or
    `finish_from_copy_out` from the tokens alone."""

    def __init__(self, launch: Launch, vocab, *, max_tokens: int, check: str | None = None,
                 on_token: Callable[[Token], None] | None = None):
        self.launch, self.vocab, self.max_tokens, self.on_token = launch, vocab, max_tokens, on_token
        self.expected = protocol.expected_stream(launch) if check == "replay" else None
        self.prompt = [vocab.id(t) for t in protocol.prompt(launch)]
        self.stream: list[Token] = []
        self.start, self.prefill_seconds = time.perf_counter(), 0.0

    def take(self, token_id: int) -> bool:
        """The model's next token: True when it ends the launch (HALT); a QwenGpuError when it
        breaks the replay, signals FAULT or passes the token limit."""
        token = self.vocab.token(token_id)
        self.stream.append(token)
        self.last_id = token_id
        if self.on_token:
            self.on_token(token)
        if self.expected is not None:
            mismatch = protocol.check_token(self.expected, len(self.stream) - 1, token)
            if mismatch:
                raise ReplayMismatch(f"replay mismatch at {mismatch}", mismatch)
        if token.kind == "FAULT":
            raise self._fault()
        if token.kind == "HALT":
            return True
        if len(self.stream) >= self.max_tokens:
            raise token_limit_error(self.max_tokens)
        return False

    def finish(self, read_memory: Callable[[], np.ndarray]) -> ModelRun:
        """The launch halted: global memory from the model's state (read_memory()) into
        launch.memory, checked against the interpreter's (replay) and the copy-out's words."""
        seconds = time.perf_counter() - self.start          # the readback is not the model's
        memory = self.launch.memory
        before = memory.copy()
        memory[:] = read_memory()
        self._check_memory()
        copy_out = self.launch.copy_out
        copied = None if copy_out is None else check_copy_out(self.stream, copy_out, before, memory)
        return self._result(seconds, copied)

    def finish_from_copy_out(self, seconds: float) -> ModelRun:
        """The launch halted on an engine that returns only tokens: the copy-out's words into
        launch.memory (its other words stay as they were)."""
        copied = copyout.decode(self.stream, self.launch.copy_out or ())
        for word, value in copied.items():
            self.launch.memory[word] = value
        self._check_memory()
        return self._result(seconds, copied)

    def _check_memory(self) -> None:
        if self.expected is None:
            return
        want, got = self.expected.memory, self.launch.memory
        bad = np.flatnonzero(want != got)
        if bad.size:
            w = int(bad[0])
            raise ReplayMismatch(f"replay mismatch in global memory after HALT: word {w} is {int(got[w]):#x}, "
                                 f"the interpreter has {int(want[w]):#x} ({bad.size} words differ)")

    def _fault(self) -> ExecutionError:
        """FAULT: a bad memory access or a deadlock. With replay the interpreter's error says which;
        without, qwengpu.driver.faults reads the cause from the generated tokens and the launch: a
        MemoryFault or DeadlockError accordingly (docs/protocol.md)."""
        from qwengpu.driver.faults import fault_error, fault_where
        if self.expected is not None and self.expected.fault is not None:
            return type(self.expected.fault)(f"{fault_where(self.stream)}; the interpreter: {self.expected.fault}")
        return fault_error(self.stream, self.launch)

    def _result(self, seconds: float, copied: dict[int, int] | None) -> ModelRun:
        instructions, blocks = protocol.pass_counts(self.launch.code, self.stream)
        return ModelRun(len(self.stream), sum(map(runs_pass, self.stream)), instructions, seconds, self.stream,
                        self.prefill_seconds, copied or {}, blocks)


def token_limit_error(max_tokens: int) -> ExecutionError:
    return ExecutionError(f"the launch did not finish within {max_tokens} tokens; raise the limit "
                          f"with --max-tokens N (API: max_tokens=N)")


def launch_on_model(model, machine, launch: Launch, *, max_tokens: int, check: str | None = None,
                    on_token: Callable[[Token], None] | None = None) -> ModelRun:
    """Run one launch on `model`, a stock merged model or a FastModel of one; launch.memory is
    updated from the model's state. With launch.copy_out (a list of global words, maybe empty)
    the model also writes those words as tokens at the end, and they must agree with its state
    (check_copy_out)."""
    check_choice(check)
    bind_vocab(model, machine.vocab)
    run = LaunchRun(launch, machine.vocab, max_tokens=max_tokens, check=check, on_token=on_token)
    decoder = (FastDecoder(model) if hasattr(model, "new_state")
               else StockDecoder(model, machine.vocab.first_id, machine.vocab.first_id + len(machine.vocab)))
    token_id = decoder.prefill(run.prompt)
    run.prefill_seconds = time.perf_counter() - run.start
    while not run.take(token_id):
        token_id = decoder.step(token_id)
    return run.finish(lambda: machine.read_global(decoder.cache, layer_offset=0))


def launch_many(model, machine, launches: list[Launch], *, max_tokens: int, check: str | None = None,
                max_batch: int = DEFAULT_BATCH, on_done: Callable[[int, object], None] | None = None,
                on_token: Callable[[int, Token], None] | None = None) -> list:
    """Run many launches on `model`; a FastModel steps up to `max_batch` of them in lockstep, one
    token each per step (prompts and generation alike), longest expected stream first when
    replaying. The result per launch, in order: a ModelRun (seconds: from joining the batch to
    HALT, shared with the launches beside it) or the QwenGpuError that ended that launch alone.
    `on_done(index, result)` as each finishes, `on_token(index, token)` for each generated token.
    One launch, max_batch 1 or another model: one by one, each prefilled at once (launch_on_model)."""
    check_choice(check)
    if max_batch < 1:
        raise QwenGpuError(f"max_batch must be >= 1, not {max_batch}")
    results: list = [None] * len(launches)

    def done(index: int, result) -> None:
        results[index] = result
        if on_done:
            on_done(index, result)

    def token_hook(i):
        return (lambda t: on_token(i, t)) if on_token else None

    if max_batch == 1 or len(launches) == 1 or not hasattr(model, "step_batch"):     # each from its whole prompt
        for i, launch in enumerate(launches):
            try:
                done(i, launch_on_model(model, machine, launch, max_tokens=max_tokens, check=check,
                                        on_token=token_hook(i)))
            except QwenGpuError as e:
                done(i, e)
        return results
    bind_vocab(model, machine.vocab)
    waiting = []
    for i, launch in enumerate(launches):
        try:
            run = LaunchRun(launch, machine.vocab, max_tokens=max_tokens, check=check, on_token=token_hook(i))
            if any(not model.first <= t < model.end for t in run.prompt):
                raise QwenGpuError("the launch prompt has a token outside the GPU tokens")
            waiting.append(_Row(i, run))
        except QwenGpuError as e:
            done(i, e)
    if check == "replay":
        waiting.sort(key=lambda r: len(r.run.prompt) + len(r.run.expected.tokens), reverse=True)
    _run_batch(model, machine, waiting[::-1], max_batch, done)
    return results


@dataclass
class _Row:
    """A launch in the batch, and how much of its prompt was fed."""
    index: int
    run: LaunchRun
    fed: int = 0

    def next_input(self) -> tuple[int, bool]:
        """(the token to feed, whether the model's next token counts)."""
        prompt = self.run.prompt
        if self.fed < len(prompt):
            self.fed += 1
            return prompt[self.fed - 1], self.fed == len(prompt)
        return self.run.last_id, True


def _run_batch(fast, machine, waiting: list[_Row], max_batch: int, done) -> None:
    """Step the launches in lockstep; a finished launch's row takes the next waiting launch (its
    states zeroed), else the batch shrinks. `waiting` is popped from its end."""
    rows = [waiting.pop() for _ in range(min(max_batch, len(waiting)))]
    if not rows:
        return
    state = fast.new_state(len(rows))
    for r in rows:
        r.run.start = time.perf_counter()
    while rows:
        inputs, decide = zip(*(r.next_input() for r in rows))
        outputs = fast.step_batch(state, inputs, decide)
        leaving = []
        for b, (r, out) in enumerate(zip(rows, outputs)):
            result = None if out is None else _advance(fast, machine, state, b, r.run, out)
            if result is None:
                continue
            done(r.index, result)
            if waiting:
                fast.reset(state, b)
                rows[b] = waiting.pop()
                rows[b].run.start = time.perf_counter()
            else:
                leaving.append(b)
        if leaving:
            keep = [b for b in range(len(rows)) if b not in leaving]
            rows = [rows[b] for b in keep]
            if rows:
                fast.keep(state, keep)


def _advance(fast, machine, state, row: int, run: LaunchRun, out):
    """Launch `run` takes its next token: None while it runs on, else its ModelRun or error."""
    try:
        if isinstance(out, Exception):
            raise out
        if not run.take(out):
            return None
        return run.finish(lambda: machine.read_global(fast.cache(state, row), layer_offset=0))
    except QwenGpuError as e:
        return e


def launch_on_engine(engine, vocab, launches: list[Launch], *, max_tokens: int, check: str | None = None) -> list:
    """Run launches on an engine that returns only tokens (qwengpu.engines: vLLM, llama.cpp, an
    OpenAI-compatible server) whose GPU token ids start at vocab.first_id. Every prompt goes to
    the engine in one generate() call, so it batches them; each launch's results come from its
    copy-out alone (launch.copy_out, written into launch.memory), so a launch that may write a
    word the copy-out does not cover is refused (copyout.check_tokens_only). The result per
    launch, in order: a ModelRun (seconds: the whole batch's) or the QwenGpuError that ended
    that launch."""
    check_choice(check)
    results: list = [None] * len(launches)
    ready = []
    for i, launch in enumerate(launches):
        try:
            copyout.check_tokens_only(launch.copy_out or ())
            ready.append((i, LaunchRun(launch, vocab, max_tokens=max_tokens, check=check)))
        except QwenGpuError as e:
            results[i] = e
    stops = [vocab.id(Token(kind)) for kind in ("HALT", "FAULT")]
    start = time.perf_counter()
    outs = engine.generate([run.prompt for _, run in ready], allowed=(vocab.first_id, vocab.first_id + len(vocab)),
                           stop_ids=stops, max_tokens=max_tokens) if ready else []
    seconds = time.perf_counter() - start
    for (i, run), ids in zip(ready, outs):
        try:
            results[i] = _engine_result(run, ids, seconds)
        except QwenGpuError as e:
            results[i] = e
    return results


def _engine_result(run: LaunchRun, ids: list[int], seconds: float) -> ModelRun:
    for token_id in ids:
        try:
            halted = run.take(token_id)
        except ValueError as e:                 # an engine that did not keep to the GPU ids
            raise ExecutionError(f"the engine generated {e}") from None
        if halted:
            return run.finish_from_copy_out(seconds)
    raise token_limit_error(run.max_tokens)


def check_copy_out(stream: list[Token], copy_out: Sequence[int], before: np.ndarray,
                   after: np.ndarray) -> dict[int, int]:
    """The copy-out decoded from the tokens, checked against global memory as the model's state
    holds it before (`before`) and after (`after`) the launch: every copied word must agree, and
    every word that changed must be one of `copy_out` (else an engine that returns only tokens
    would lose it, or refuse the launch when it may write words the copy-out does not cover).
    An ExecutionError names the first word that breaks either."""
    copied = copyout.decode(stream, copy_out)
    for word, value in copied.items():
        if int(after[word]) != value:
            raise ExecutionError(f"the model's copy-out says global word {word} is {value:#x}, but its state "
                                 f"holds {int(after[word]):#x}")
    named = set(copy_out)
    lost = [int(w) for w in np.flatnonzero(before != after) if int(w) not in named]
    if lost:
        raise ExecutionError(f"the launch changed global word {lost[0]} ({len(lost)} words in all), which the "
                             f"copy-out does not carry: the may-write analysis (qwengpu/toolchain/writes.py) "
                             f"missed a write")
    return copied
