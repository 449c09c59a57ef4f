"""Suite kernels in the stand-in merged model (stock Qwen3_5ForCausalLM checkpoint, built on
first use into build/standin-merged): the fast path against the stock transformers forward
(identical tokens), and a corrupted token fed back changes the outcome. Every kernel's exact run
with replay is in tests/test_machine_suite.py."""
import copy
import gc

import pytest

from qwengpu.api import Device
from qwengpu.launch import Launch
from qwengpu.driver import protocol, runtime
from qwengpu.fast import FastModel
from qwengpu.machine.tokens import Token
from qwengpu.model.merge import default_merged_model
from qwengpu.suite import discover, load_spec, mismatches
from qwengpu.testing.stock import full_model


def launch(name, model, machine, check="replay", **kw):
    case = next(c for c in discover() if c.name == name)
    spec = load_spec(case)
    grid, block, args = spec.launch()
    expected = spec.reference(*copy.deepcopy(list(args)))
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    lau = Launch.build(fn.program, grid, block, args)
    run = runtime.launch_on_model(model, machine, lau, max_tokens=20_000, check=check, **kw)
    lau.copy_back()
    return run, mismatches(args, expected, fn.arg_names)


STOCK_TOKENS = 12      # the stock forward (torch fallbacks for the GDN kernels) takes seconds a token here


def decode(decoder, ids: list[int]) -> list[int]:
    out = [decoder.prefill(ids)]
    while len(out) < STOCK_TOKENS:
        out.append(decoder.step(out[-1]))
    return out


def test_fast_path_generates_the_stock_tokens():
    """The fast path as a Device loads it (FastModel.from_checkpoint) against the stock forward
    (the stock class with the stored tensors cast to fp32, as from_pretrained builds it without its
    18 GB peak: qwengpu.testing.stock); the stock model goes before the fast path loads, so the two
    never sit in memory together."""
    path = default_merged_model()
    model = full_model(path, "float32")
    machine = runtime.checkpoint_readout(runtime.host_config(model), path)
    runtime.bind_vocab(model, machine.vocab)
    case = next(c for c in discover() if c.name == "dot")
    spec = load_spec(case)
    grid, block, args = spec.launch()
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    ids = [machine.vocab.id(t) for t in protocol.prompt(Launch.build(fn.program, grid, block, args))]
    first, end = runtime.gpu_token_ids(model)
    stock = decode(runtime.StockDecoder(model, first, end), ids)
    del model
    gc.collect()
    fast = decode(runtime.FastDecoder(FastModel.from_checkpoint(path, "float32")), ids)
    assert [str(machine.vocab.token(i)) for i in fast] == [str(machine.vocab.token(i)) for i in stock]
    assert machine.vocab.token(stock[0]).kind == "EXEC"


class Tampered:
    """A FastModel whose input token number `at` (counting generated tokens fed back) is replaced."""

    def __init__(self, fast, vocab, at, change):
        self.fast, self.vocab, self.at, self.change, self.fed = fast, vocab, at, change, 0
        self.first, self.end = fast.first, fast.end

    def new_state(self):
        return self.fast.new_state()

    def prefill(self, state, ids):
        return self.fast.prefill(state, ids)

    def step(self, state, token_id):
        if self.fed == self.at:
            token_id = self.vocab.id(self.change(self.vocab.token(token_id)))
        self.fed += 1
        return self.fast.step(state, token_id)

    def cache(self, state):
        return self.fast.cache(state)


def test_a_corrupted_result_token_changes_the_result(standin_fast):
    fast, machine = standin_fast
    clean, _ = launch("dot", fast, machine, check=None)
    # the last VALU before the store carries the sum (32 = 0x20, lane 0 alone): feed back 0x21 instead
    # (the copy-out's tokens, from COPY on, only report the stored words: they come after it)
    first_copy = next(i for i, t in enumerate(clean.stream) if t.kind == "COPY")
    last_val = max(i for i, t in enumerate(clean.stream[:first_copy]) if t.kind == "VALU" and t.args[1] == 0x20)
    change = lambda t: Token("VALU", (t.args[0], t.args[1] ^ 1))
    tampered = Tampered(fast, machine.vocab, last_val, change)
    run, bad = launch("dot", tampered, machine, check=None)
    assert bad and "33" in bad[0], bad              # the model stored what it was fed: 33
    with pytest.raises(runtime.ReplayMismatch):
        launch("dot", Tampered(fast, machine.vocab, last_val, change), machine, check="replay")
