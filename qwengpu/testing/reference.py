"""A launch's token ids, for running it on another inference engine and comparing.

    from qwengpu.testing.reference import launch_ids
    ref = launch_ids("dot", "build/standin-merged")          # a suite kernel, by name
    prompt, stream, allowed, halt, fault = ref                # it unpacks as a 5-tuple
    got = engine.generate([prompt], allowed=allowed, stop_ids=[halt, fault],
                          max_tokens=len(stream) + 16)[0]
    assert got == stream

`launch_ids` compiles and lays out the launch as the model engine does (Device("model") ->
Function.launch -> protocol.prompt), runs it on qwengpu's exact fast path of the same checkpoint
(Device.run_batch), and returns the prompt's ids, the generated ids (HALT
or FAULT included), the GPU token id range [first, end) that the argmax is restricted to, and the
ids of HALT and FAULT (the stop tokens). An engine that computes the same model must generate
exactly `stream` from `prompt` (the circuit's logit margins are >= 1: docs/machine.md).
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from qwengpu.machine.tokens import Token


@dataclass
class LaunchIds:
    """One launch as token ids (iterates as (prompt_ids, stream_ids, allowed, halt_id, fault_id)).
    name: the kernel; seconds: the fast path's launch (prefill, decode and memory read-back)."""
    name: str
    prompt_ids: list[int]
    stream_ids: list[int]
    allowed: tuple[int, int]
    halt_id: int
    fault_id: int
    seconds: float = 0.0

    def __iter__(self):
        return iter((self.prompt_ids, self.stream_ids, self.allowed, self.halt_id, self.fault_id))

    @property
    def stop_ids(self) -> list[int]:
        return [self.halt_id, self.fault_id]


def suite_case(name: str, directory=None):
    """The suite kernel `name` (kernels/NAME.cu + NAME.py) as a qwengpu.suite.KernelCase."""
    from qwengpu import suite
    cases = [c for c in suite.discover(directory or suite.DEFAULT_DIR) if c.name == name]
    if not cases:
        raise ValueError(f"no suite kernel named {name!r} in {directory or suite.DEFAULT_DIR}")
    return cases[0]


def model_device(model_dir, dtype: str = "bfloat16", frontend: str = "clang", max_tokens: int | None = None):
    """The model-engine Device of checkpoint `model_dir` on the fast path (loaded on first use,
    shared by every Device of the same configuration: qwengpu.api._load_model)."""
    from qwengpu.api import Device
    from qwengpu.suite import SUITE_MAX_TOKENS
    return Device("model", frontend, model=Path(model_dir), dtype=dtype, fast=True,
                  max_tokens=max_tokens or SUITE_MAX_TOKENS, print_output=False)


def build_launch(case_or_program, device, *, grid=None, block=None, args: Sequence | None = None,
                 kernel: str | None = None):
    """(name, Function, Launch) of one launch on model Device `device`: compiled, lowered for the
    model and laid out (Function.launch). The arguments are launch_ids's."""
    from qwengpu import isa
    from qwengpu.api import Function, Module
    from qwengpu.suite import KernelCase, load_spec

    target = case_or_program
    if isinstance(target, str) and not target.endswith(".cu") and "__global__" not in target:
        target = suite_case(target)
    if isinstance(target, KernelCase):
        spec = load_spec(target)
        g, b, a = spec.launch()
        grid, block, args = grid or g, block or b, list(args if args is not None else a)
        fn = device.compile(target.source.read_text(), filename=target.source.name).get_function(spec.KERNEL)
        name = target.name
    elif isinstance(target, (str, Path)):
        if kernel is None:
            raise ValueError("a CUDA source or .cu path needs kernel=NAME")
        path = Path(target) if str(target).endswith(".cu") else None
        src = path.read_text() if path else str(target)
        fn = device.compile(src, filename=path.name if path else "<source>").get_function(kernel)
        name = kernel
    elif isinstance(target, Function):
        fn, name = target, target.name
    elif isinstance(target, isa.Program):
        fn, name = Function(Module(device, "", "", "<program>"), target.name, target), target.name
    else:
        raise TypeError(f"launch_ids: cannot launch a {type(target).__name__}")
    if grid is None or block is None or args is None:
        raise ValueError(f"{name}: grid, block and args are needed")
    return name, fn, fn.launch(grid, block, copy.deepcopy(list(args)))


def launch_ids(case_or_program, model_dir, *, grid=None, block=None, args: Sequence | None = None,
               kernel: str | None = None, dtype: str = "bfloat16", frontend: str = "clang",
               max_tokens: int | None = None, device=None) -> LaunchIds:
    """The prompt ids and the fast path's generated ids of one launch on checkpoint `model_dir`.

    case_or_program: a suite kernel's name ("dot"), a qwengpu.suite.KernelCase (its spec's
    launch() gives grid, block and args), a .cu path or CUDA source string with `kernel`, or a
    qwengpu.api.Function or qwengpu.isa.Program (these three need grid, block and args).
    dtype: the fast path's (bfloat16 is what vLLM's CPU build runs; the token stream is the
    same in float32). `device`: a model Device to reuse instead of model_device(...)."""
    from qwengpu.driver import protocol, runtime

    dev = device or model_device(model_dir, dtype, frontend, max_tokens)
    name, fn, launch = build_launch(case_or_program, dev, grid=grid, block=block, args=args, kernel=kernel)
    model, machine = dev.model_and_machine()
    runtime.bind_vocab(model, machine.vocab)
    vocab = machine.vocab
    first, end = runtime.gpu_token_ids(model)
    prompt_ids = [vocab.id(t) for t in protocol.prompt(launch)]     # its copy-out ends the stream
    start = time.perf_counter()
    stream: list[Token] = []
    [result] = dev.run_batch([(fn, launch)], on_token=lambda index, token: stream.append(token))
    if isinstance(result, Exception) and (not stream or stream[-1].kind != "FAULT"):
        raise result                                       # a FAULT stream is a valid stream
    return LaunchIds(name, prompt_ids, [vocab.id(t) for t in stream], (first, end),
                     vocab.id(Token("HALT")), vocab.id(Token("FAULT")), time.perf_counter() - start)


def token_names(model_dir, ids: Sequence[int], dtype: str = "bfloat16") -> list[str]:
    """The GPU tokens of `ids` as text (for a mismatch message)."""
    dev = model_device(model_dir, dtype)
    model, machine = dev.model_and_machine()
    runtime_first = machine.vocab.first_id
    out = []
    for i in ids:
        try:
            out.append(str(machine.vocab.token(i)))
        except ValueError:
            out.append(f"<id {i}: not a GPU token (first {runtime_first})>")
    return out


def first_difference(want: Sequence[int], got: Sequence[int]) -> int | None:
    """The first index where two streams differ (a length difference counts), None if equal."""
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            return i
    return None if len(want) == len(got) else min(len(want), len(got))
