"""The qgpu command through typer's CliRunner, and the suite runner behind it."""
import json
import re
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from qwengpu.cli import ArgSyntaxError, app, parse_arg, parse_dims
from qwengpu.suite import DEFAULT_DIR

runner = CliRunner()

DOT_CU = (DEFAULT_DIR / "dot.cu").read_text()   # the suite's demo kernel
SYNC_LINE = next(i for i, line in enumerate(DOT_CU.splitlines(), 1) if "__syncthreads" in line)
DOT_PY = """\
import numpy as np
KERNEL = "dot"
FEATURES = ["demo"]
def launch():
    return (1,), (4,), [np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), np.zeros(1, np.int32), 3]
def reference(a, b, out, n):
    return [None, None, np.array([OFFSET + int(a @ b)]), None]
"""


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


# --- argument syntax (no toolchain needed) ---------------------------------
@pytest.mark.parametrize("text, want, dtype", [
    ("i32:[1,2,-3]", [1, 2, -3], np.int32), ("u32:[1, 0xffffffff]", [1, 2**32 - 1], np.uint32),
    ("[4,5]", [4, 5], np.int32), ("u32:zeros(3)", [0, 0, 0], np.uint32), ("i32:range(4)", [0, 1, 2, 3], np.int32),
    ("i32:full(2,-1)", [-1, -1], np.int32), ("i32:[1 2 3]", [1, 2, 3], np.int32),
])
def test_array_arguments(text, want, dtype):
    got = parse_arg(text)
    assert isinstance(got, np.ndarray) and got.dtype == dtype and got.tolist() == want


@pytest.mark.parametrize("text, want", [("5", 5), ("-3", -3), ("0x1f", 31), ("u32:7", 7), ("i32:-7", -7)])
def test_scalar_arguments(text, want):
    assert parse_arg(text) == want


@pytest.mark.parametrize("text, message", [("f64:[1]", "unknown type 'f64'"), ("i32:[1,2", "must end with ']'"),
                                           ("abc", "'abc' is not a number"),
                                           ("i32:[2147483648]", "does not fit in int32"),
                                           ("u32:-1", "does not fit in uint32"),
                                           ("i32:ones(3)", "unknown function 'ones'"),
                                           ("i32:[]", "the array is empty")])   # more in tests/test_args.py
def test_bad_arguments(text, message):
    with pytest.raises(ArgSyntaxError, match=message):
        parse_arg(text)


def test_dims():
    assert parse_dims("grid", "2") == (2,) and parse_dims("block", "4,2") == (4, 2)
    assert parse_dims("block", "2x2x2") == (2, 2, 2)
    with pytest.raises(ArgSyntaxError, match="--block"):
        parse_dims("block", "4,a")


# --- errors: one red line, exit code 1, no traceback -----------------------
def test_missing_file(tmp_path):
    result = invoke("run", tmp_path / "nope.cu", "--kernel", "k")
    assert result.exit_code == 1 and "no such file" in result.output and "Traceback" not in result.output


def test_compile_error_shows_file_and_line(tmp_path):
    (tmp_path / "bad.cu").write_text("__global__ void k(int *p) {\n    p[0] = oops;\n}\n")
    result = invoke("run", tmp_path / "bad.cu", "--kernel", "k", "--arg", "i32:zeros(1)")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "error:" in result.output and "bad.cu:2:" in result.output


def test_bad_arg_syntax_is_an_error(tmp_path):
    (tmp_path / "k.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "k.cu", "--kernel", "dot", "--arg", "f64:[1]")
    assert result.exit_code == 1 and "unknown type 'f64'" in result.output


def test_unknown_engine_is_an_error(tmp_path):
    (tmp_path / "k.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "k.cu", "--kernel", "dot", "--engine", "tpu")
    assert result.exit_code == 1 and "--engine 'tpu'" in result.output


# --- with the toolchain -----------------------------------------------------
def test_run_prints_final_arrays(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", "--kernel", "dot", "--grid", "1", "--block", "4",
                    "--arg", "i32:[1,2,3]", "--arg", "i32:[4,5,6]", "--arg", "i32:zeros(1)", "--arg", "3",
                    "--show-isa", "--show-ptx")
    assert result.exit_code == 0, result.output
    assert "out = [32]" in result.output and "a = [1, 2, 3]" in result.output
    assert ".entry dot" in result.output and "B0:" in result.output
    assert f"engine interp, {dot_counts()}, wall" in result.output


def test_run_launch_error_exit_code(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", "--kernel", "dot", "--block", "2048",
                    "--arg", "i32:[1]", "--arg", "i32:[1]", "--arg", "i32:[0]", "--arg", "1")
    assert result.exit_code == 1 and "limit is 1024" in result.output and "Traceback" not in result.output


def test_run_wrong_argument_count(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", "--kernel", "dot", "--arg", "1")
    assert result.exit_code == 1 and "takes 4 arguments" in result.output


def test_demo_runs_in_the_model():
    result = invoke("demo")                  # the stand-in merged model (built on first use)
    assert result.exit_code == 0, result.output
    assert "= 32" in result.output and "engine model" in result.output
    stream = result.output.split("dot(")[0]                          # after any build progress
    # B0 first, as the model wrote it: t >= n for t = 0..3 and n = 3 (both fixed operands), then t << 2
    assert "EXEC w0 B0.0  VALQ 0,0,0,1 +  VALA s4 0x00" in stream and stream.rstrip().endswith("HALT")


def test_demo_on_the_interpreter():
    result = invoke("demo", "--engine", "interp")
    assert result.exit_code == 0 and "= 32" in result.output and "engine interp" in result.output


def test_float_demo_in_the_model():
    """1.5*4 + 2*5 + 3*6.25 = 34.75, written by the model in 49 tokens (replay checked)."""
    result = invoke("demo", "--float")
    assert result.exit_code == 0, result.output
    assert "dot([1.5,2,3], [4,5,6.25]) = 34.75" in result.output and "engine model, 49 tokens" in result.output
    assert "VAL l0 p0 0x3fc00000" in result.output          # 1.5 staged in one whole-word token


def test_the_digit_classifier_demo_on_the_interpreter():
    """Seven test images in two launches; the count of right answers is NumPy's (the demo itself
    refuses logits that differ from digits.reference_logits)."""
    from qwengpu import digits
    train, test = digits.load()
    right = (digits.reference_logits(digits.train(train), test.images[:7]).argmax(1) == test.labels[:7]).sum()
    result = invoke("demo", "mlp", "--engine", "interp", "--images", 7)
    assert result.exit_code == 0, result.output
    assert f"{right} of 7 right" in result.output and "logits identical to NumPy's" in result.output
    assert result.output.count("engine interp") == 2 and "@@" in result.output       # two launches, drawn


@pytest.mark.parametrize("args, message", [(("demo", "mlp", "--images", 0), "--images 0: choose 1 to 500"),
                                           (("demo", "mlp", "--float"), "--float applies to the dot demo only"),
                                           (("demo", "lenet"), "lenet")])
def test_demo_refusals(args, message):
    one_error_line(invoke(*args), message)


def make_suite(tmp_path):
    (tmp_path / "good.cu").write_text(DOT_CU)
    (tmp_path / "good.py").write_text(DOT_PY.replace("OFFSET", "0"))
    (tmp_path / "wrong.cu").write_text(DOT_CU)
    (tmp_path / "wrong.py").write_text(DOT_PY.replace("OFFSET", "1"))
    (tmp_path / "broken.cu").write_text(DOT_CU.replace("__syncthreads();", "__syncthreads()"))
    (tmp_path / "broken.py").write_text(DOT_PY.replace("OFFSET", "0"))
    (tmp_path / "orphan.cu").write_text(DOT_CU)   # no .py: not a suite kernel
    return tmp_path


def test_suite_json_reports_each_kernel(tmp_path):
    result = invoke("suite", "--dir", make_suite(tmp_path), "--json")
    assert result.exit_code == 1                       # two kernels fail
    summary = json.loads(result.output)
    assert summary["passed"] == 1 and summary["failed"] == 2
    by_name = {k["name"]: k for k in summary["kernels"]}
    assert sorted(by_name) == ["broken", "good", "wrong"]
    good, wrong, broken = by_name["good"], by_name["wrong"], by_name["broken"]
    assert good["status"] == "passed" and good["passes"] > 0 and good["instructions"] > 0 and good["seconds"] > 0
    assert wrong["status"] == "failed" and "out: 1 of 1 differ: [0] 32 != 33" in wrong["reason"]
    assert broken["status"] == "failed" and "CompileError" in broken["reason"] and f"broken.cu:{SYNC_LINE}:" in broken["reason"]


def test_suite_k_selects_and_table_prints(tmp_path):
    result = invoke("suite", "--dir", make_suite(tmp_path), "-k", "good")
    assert result.exit_code == 0, result.output
    assert "good" in result.output and "wrong" not in result.output and "1 passed, 0 failed" in result.output


def test_suite_with_no_matching_kernel_fails(tmp_path):
    for extra in ((), ("--json",)):
        result = invoke("suite", "--dir", make_suite(tmp_path), "-k", "nothing-matches", *extra)
        assert result.exit_code == 1 and "no kernel matches 'nothing-matches'" in result.output
        assert len(result.output.strip().splitlines()) == 1


def test_real_suite_subset(kernels_dir):
    result = invoke("suite", "--dir", kernels_dir, "-k", "dot", "--json")
    summary = json.loads(result.output)
    assert summary["kernels"] and all(k["status"] == "passed" for k in summary["kernels"]), summary


def test_run_without_kernel_uses_the_only_one_and_traces(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", "--arg", "i32:[1,2,3]", "--arg", "i32:[4,5,6]",
                    "--arg", "i32:zeros(1)", "--arg", "3", "--trace")
    assert result.exit_code == 0, result.output
    assert "out = [32]" in result.output
    assert "pass 0: block 0 warp 0 B0 mask 0b1111" in result.output
    assert "shared[0]=0x4" in result.output           # prod[0] = 1 * 4 stored to shared memory


def test_run_without_kernel_needs_one_kernel(tmp_path):
    (tmp_path / "two.cu").write_text('extern "C" __global__ void b(int *p) { *p = 1; }\n'
                                     "__global__ void a(int *p) { *p = 2; }\n")
    result = invoke("run", tmp_path / "two.cu", "--arg", "i32:[0]")
    assert result.exit_code == 1 and "two.cu has 2 kernels (a, b); choose one with --kernel" in result.output
    result = invoke("run", tmp_path / "two.cu", "--kernel", "a", "--arg", "i32:[0]")
    assert result.exit_code == 0 and "p = [2]" in result.output


# --- check-circuit wiring (the checks themselves: tests/test_circuit_*.py) -------------
@pytest.mark.parametrize("mismatches, silent, code", [(0, True, 0), (1, True, 1), (0, False, 1)])
def test_check_circuit_exit_code_and_json(monkeypatch, mismatches, silent, code):
    report = {"gadgets": {"ADD": {"cases": 4, "mismatches": mismatches, "layers": 2, "neurons": 448}},
              "silent_on_text": silent}
    monkeypatch.setattr("qwengpu.circuit.check.check_circuit", lambda cases, progress=None: report)
    result = invoke("check-circuit", "--cases", 4, "--json")
    assert result.exit_code == code
    assert json.loads(result.stdout) == report


# --- build / eval kl wiring (the build itself: tests/test_model_*.py) -----------------
def test_build_refuses_a_missing_base_and_an_existing_output(tmp_path):
    missing = invoke("build", "--base", tmp_path / "nope", "--out", tmp_path / "out")
    assert missing.exit_code == 1 and "nope" in missing.output
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    busy = invoke("build", "--base", "standin", "--out", tmp_path / "out")
    assert busy.exit_code == 1 and "--force" in busy.output
    assert (tmp_path / "out" / "keep.txt").read_text() == "x"


def test_eval_kl_prints_the_report_as_json(monkeypatch):
    report = {"kl_fp32": 0.0, "kl_bf16": 1e-3, "kl_full_vocab_fp32": 0.0, "circuit_max_abs_on_text": 0.0,
              "positions": 7}
    calls = []
    monkeypatch.setattr("qwengpu.model.kl.eval_kl",
                        lambda base, merged=None, exact_bf16=False: calls.append(exact_bf16) or report)
    result = invoke("eval", "kl", "--base", "standin", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == report
    assert invoke("eval", "kl", "--base", "standin", "--exact-bf16", "--json").exit_code == 0
    assert calls == [False, True]


def test_eval_kl_refuses_exact_bf16_with_a_given_merged_model(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    result = invoke("eval", "kl", "--base", "standin", "--merged", tmp_path, "--exact-bf16")
    assert result.exit_code == 1 and "qgpu build --exact-bf16" in result.output


# --- the model engine, with a stub machine whose model replays the interpreter's stream ---
class OracleModel:
    """Picks script[i] on the i-th call after the prefill (script set per launch below)."""

    def __init__(self, vocab):
        import torch
        self.vocab, self.script, self.calls, self.torch = vocab, [], 0, torch
        self.device = torch.device("cpu")
        self.config = SimpleNamespace(qwengpu={"gpu_token_ids": [10, 10 + len(vocab)]}, to_dict=lambda: {})

    def __call__(self, input_ids, cache, use_cache, logits_to_keep):
        logits = self.torch.zeros(1, 1, 10 + len(self.vocab))
        logits[0, 0, self.vocab.id(self.script[min(self.calls, len(self.script) - 1)])] = 1.0
        self.calls += 1
        return SimpleNamespace(logits=logits)


@pytest.fixture
def stub_model_engine(monkeypatch):
    """qwengpu.machine.build replaced by a stub: the model plays the interpreter's stream
    (edited by `corrupt`, a function of the token list) and memory reads its final state."""
    from qwengpu import isa
    from qwengpu.driver import runtime
    from qwengpu.driver.protocol import expected_stream
    from qwengpu.machine.tokens import Vocab
    machine = SimpleNamespace(vocab=Vocab(), final=None)
    machine.read_global = lambda cache, layer_offset=0: machine.final
    state = SimpleNamespace(corrupt=lambda tokens: tokens, ops={op.name for op in isa.Op} | {t.name for t in isa.Term}
                            | {f"ATOM.{a.name}" for a in isa.AtomOp})
    monkeypatch.setitem(sys.modules, "qwengpu.machine.build", SimpleNamespace(
        MODEL_OPS=state.ops, machine_for=lambda cfg, width=None: SimpleNamespace(readout=machine)))
    from qwengpu.model import merge
    monkeypatch.setattr(merge, "default_merged_model", lambda: "standin")
    fast = SimpleNamespace(FastModel=lambda model: model)
    fast.FastModel.from_checkpoint = lambda path, dtype: OracleModel(machine.vocab)    # fast path loading
    monkeypatch.setitem(sys.modules, "qwengpu.fast", fast)
    monkeypatch.setattr(runtime, "load_model", lambda path, dtype, device: (OracleModel(machine.vocab), {}))
    monkeypatch.setattr(runtime, "load_config", lambda path: {}, raising=False)
    monkeypatch.setattr(runtime, "host_config", lambda model: {})
    monkeypatch.setattr(runtime, "_new_cache", lambda model: None)
    real = runtime.launch_on_model

    def launch(model, mach, lau, **kw):
        stream = expected_stream(lau)
        model.script, model.calls, machine.final = state.corrupt(list(stream.tokens)), 0, stream.memory
        return real(model, mach, lau, **kw)
    monkeypatch.setattr(runtime, "launch_on_model", launch)
    return state


DOT_ARGS = ("--arg", "i32:[1,2,3]", "--arg", "i32:[4,5,6]", "--arg", "i32:zeros(1)", "--arg", "3")


def dot_tokens() -> int:
    """How many tokens the stub model plays for DOT_ARGS: the interpreter's reference stream."""
    from qwengpu.api import Device
    from qwengpu.launch import Launch
    from qwengpu.driver.protocol import expected_stream
    fn = Device("interp").compile(DOT_CU, "dot.cu").get_function("dot")
    lau = Launch.build(fn.program, 1, 4, [np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32),
                                          np.zeros(1, np.int32), 3])
    return len(expected_stream(lau).tokens)


def dot_counts() -> str:
    """'N blocks, M instructions' of DOT_ARGS on the interpreter, from the API's LaunchResult
    (the lowering decides the counts; the CLI must print the same)."""
    from qwengpu.api import Device
    fn = Device("interp").compile(DOT_CU, "dot.cu").get_function("dot")
    r = fn(1, 4, [np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), np.zeros(1, np.int32), 3])
    return f"{r.blocks} blocks, {r.instructions} instructions"


def test_run_on_the_model_shows_tokens_and_checks_replay(tmp_path, stub_model_engine):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", "--check", "replay", "--show-tokens",
                    "--stock")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "EXEC w0 B0.0" and "HALT" in lines
    halt = lines.index("HALT")
    assert all(line.split()[0] in ("EXEC", "VAL", "VALU", "VALA", "VALQ", "VALP", "ST", "CT1", "CT2", "CTA") for line in lines[:halt - 2])
    assert lines[halt - 2: halt] == ["COPY g1", "VALU p0 0x20"]        # out = [32], word 6: the copy-out
    assert lines[halt + 3] == "out = [32]" and f"{halt + 1} tokens" in lines[-1] and "engine model" in lines[-1]


def test_run_on_the_model_reports_a_replay_mismatch(tmp_path, stub_model_engine):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    stub_model_engine.corrupt = lambda tokens: tokens[:3] + [tokens[0]] + tokens[4:]
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", "--check", "replay")
    assert result.exit_code == 1 and "replay mismatch at token 3: expected" in result.output
    assert "got EXEC w0 B0.0" in result.output and "Traceback" not in result.output


def test_run_on_the_model_token_limit_and_bad_options(tmp_path, stub_model_engine):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", "--max-tokens", 5)
    assert result.exit_code == 1 and "did not finish within 5 tokens" in result.output
    for option, value, message in [("--check", "full", "--check 'full'"), ("--dtype", "fp16", "--dtype 'fp16'")]:
        result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", option, value)
        assert result.exit_code == 1 and message in result.output


def test_run_on_the_model_refuses_unsupported_ops(tmp_path, stub_model_engine):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    stub_model_engine.ops.discard("BAR")
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model")
    assert result.exit_code == 1 and "uses BAR, which the model engine does not support yet" in result.output


def test_suite_on_the_model_with_replay(kernels_dir, stub_model_engine):
    result = invoke("suite", "--dir", kernels_dir, "-k", "dot", "--engine", "model", "--check", "replay", "--json")
    summary = json.loads(result.output)
    assert result.exit_code == 0 and summary["engine"] == "model" and summary["kernels"], summary["kernels"]
    # a pass runs one instruction, a pair of them, or only a terminator (docs/machine.md, "Passes")
    assert all(k["status"] == "passed" and 0 < k["instructions"] <= 2 * k["passes"] <= 2 * (k["instructions"] + k["blocks"])
               for k in summary["kernels"]), summary
    stub_model_engine.corrupt = lambda tokens: tokens[:-1] + [tokens[0]]
    result = invoke("suite", "--dir", kernels_dir, "-k", "dot", "--engine", "model", "--check", "replay", "--json")
    summary = json.loads(result.output)
    assert result.exit_code == 1 and all("ReplayMismatch" in k["reason"] for k in summary["kernels"]), summary


def test_bad_batch_and_device_are_errors(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("suite", "--engine", "model", "--batch", 0)
    assert result.exit_code == 1 and "--batch must be at least 1, got 0" in result.output
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", "--device", "tpu")
    assert result.exit_code == 1 and "unknown device 'tpu'" in result.output


# --- issue 14: limits, honest options, one-line errors ---------------------------------
SPIN_CU = """__global__ void spin(volatile int *p, int n) {
    int a = threadIdx.x;
    while (p[4] == 0) { a = a * 3 + n; p[threadIdx.x] = a; }
}
"""
SPIN_ARGS = ("--arg", "i32:zeros(5)", "--arg", "1")


def one_error_line(result, message):
    """Exit code 1, one line naming the problem, no traceback."""
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1, result.output
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], result.output


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.output.startswith("qgpu (qwengpu) ")


def test_an_infinite_loop_stops_at_the_pass_limit_in_seconds(tmp_path):
    import time
    (tmp_path / "spin.cu").write_text(SPIN_CU)
    start = time.perf_counter()
    result = invoke("run", tmp_path / "spin.cu", *SPIN_ARGS)
    seconds = time.perf_counter() - start
    one_error_line(result, "did not finish within max_passes=200000 machine blocks")
    assert "--max-passes N" in result.output and seconds < 15, seconds
    result = invoke("run", tmp_path / "spin.cu", *SPIN_ARGS, "--max-passes", 50)
    one_error_line(result, "max_passes=50 machine blocks")


def test_max_passes_applies_to_the_suite(kernels_dir):
    result = invoke("suite", "--dir", kernels_dir, "-k", "dot", "--max-passes", 3, "--json")
    summary = json.loads(result.stdout)
    assert result.exit_code == 1 and all("max_passes=3" in k["reason"] for k in summary["kernels"]), summary


def test_model_engine_default_token_limit_is_a_constant(tmp_path, stub_model_engine):
    from qwengpu.api import DEFAULT_MAX_TOKENS
    (tmp_path / "dot.cu").write_text(DOT_CU)
    stub_model_engine.corrupt = lambda tokens: tokens[:-1]          # the model never writes HALT
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model")
    one_error_line(result, f"did not finish within {DEFAULT_MAX_TOKENS} tokens; raise the limit with "
                           f"--max-tokens N")
    # about 20 s at the fast path's ~1,000 tokens/s; the host never runs the kernel to size it
    assert DEFAULT_MAX_TOKENS == 20_000
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", "--max-tokens", 100)
    one_error_line(result, "did not finish within 100 tokens")


def test_model_run_reports_blocks_like_the_interpreter_and_the_time_split(tmp_path, stub_model_engine):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", "--stock")
    assert result.exit_code == 0, result.output
    last = result.output.splitlines()[-1]
    assert f"{dot_tokens()} tokens (forward passes)" in last and dot_counts() in last, last
    assert re.search(r"wall [\d.]+ s = load [\d.]+ \+ prefill [\d.]+ \+ decode [\d.]+ \+ other [\d.]+", last), last
    interp = invoke("run", tmp_path / "dot.cu", *DOT_ARGS)
    assert dot_counts() in interp.output.splitlines()[-1]


def test_run_json(tmp_path):
    (tmp_path / "p.cu").write_text('#include <cstdio>\n__global__ void k(int *p, int n) {\n'
                                   '    p[threadIdx.x] = n + threadIdx.x;\n'
                                   '    if (threadIdx.x == 0) printf("n=%d\\n", n);\n}\n')
    result = invoke("run", tmp_path / "p.cu", "--arg", "i32:zeros(4)", "--arg", 7, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)                   # printf output in the JSON, not on stdout
    assert doc["arrays"] == {"p": [7, 8, 9, 10]} and doc["scalars"] == {"n": 7} and doc["output"] == ["n=7\n"]
    assert doc["engine"] == "interp" and doc["kernel"] == "k" and doc["grid"] == [1] and doc["block"] == [4]
    assert doc["blocks"] > 0 and doc["instructions"] > 0 and doc["tokens"] is None and doc["wall_seconds"] > 0
    assert "blocks" in result.stderr                 # the closing line goes to stderr
    one_error_line(invoke("run", tmp_path / "p.cu", "--arg", "i32:zeros(4)", "--arg", 7, "--json", "--trace"),
                   "--json prints JSON alone")


@pytest.mark.parametrize("option", [("--check", "replay"), ("--show-tokens",), ("--device", "cpu"), ("--stock",),
                                    ("--dtype", "float32"), ("--model", "m"), ("--max-tokens", "9")])
def test_model_options_are_refused_on_the_interpreter(tmp_path, option):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    one_error_line(invoke("run", tmp_path / "dot.cu", *DOT_ARGS, *option),
                   f"{option[0]} applies to the model engine only (this is --engine interp)")


@pytest.mark.parametrize("command", [("suite", "--batch", "2"), ("suite", "--check", "replay"),
                                     ("demo", "--engine", "interp", "--stock")])
def test_model_options_are_refused_elsewhere(command):
    one_error_line(invoke(*command), "applies to the model engine only")


def test_opt_levels(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    one_error_line(invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "-O", 4), "-O 4: choose 0, 1, 2 or 3")
    one_error_line(invoke("suite", "-O", 4), "-O 4: choose 0, 1, 2 or 3")


def test_opt_0_1_and_3_run(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    for level in (0, 1, 3):
        result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "-O", level)
        assert result.exit_code == 0 and "out = [32]" in result.output, result.output


def test_suite_table_shows_blocks(tmp_path):
    result = invoke("suite", "--dir", make_suite(tmp_path), "-k", "good")
    assert "blocks" in result.output and "passes" not in result.output
    summary = json.loads(invoke("suite", "--dir", tmp_path, "-k", "good", "--json").stdout)
    # dot's blocks as `qgpu run --show-isa` lists them: the entry (t >= n diverges), the loads for
    # t < n, the store and barrier, the branch that exits threads 1-3, thread 0's two blocks
    assert summary["kernels"][0]["blocks"] == summary["kernels"][0]["passes"] == 6


@pytest.mark.parametrize("args, message", [
    (("run",), "Missing argument"),
    (("run", "FILE", "--grid"), "Option '--grid' requires an argument"),
    (("run", "FILE", "-O", "x"), "Invalid value for '-O'"),
    (("run", "FILE", "--bogus"), "No such option: --bogus"),
    (("frobnicate",), "No such command 'frobnicate'"),
    (("run", "FILE", *DOT_ARGS, "--grid", "0"), "--grid '0': size 1 is 0"),
    (("run", "FILE", *DOT_ARGS, "--grid", "2,a"), "--grid '2,a'"),
    (("run", "FILE", *DOT_ARGS, "--block", "1,1,1,1"), "--block '1,1,1,1'"),
    (("run", "FILE", *DOT_ARGS, "--kernel", "nope"), "no kernel named nope"),
    (("run", "FILE", "--arg", "i32:[1,"), "--arg 'i32:[1,': an array must end with ']'"),
    (("run", "FILE", "--arg", "1"), "takes 4 arguments"),
    (("run", "FILE", *DOT_ARGS, "--frontend", "gcc"), "--frontend 'gcc'"),
    (("run", "FILE", *DOT_ARGS, "--max-passes", "0"), "--max-passes must be at least 1"),
    (("run", "FILE", *DOT_ARGS, "--engine", "model", "--max-tokens", "0"), "--max-tokens must be at least 1"),
    (("run", "DIR", *DOT_ARGS), "not a file"),
    (("run", "BINARY", *DOT_ARGS), "not a text file"),
    (("run", "MISSING", *DOT_ARGS), "no such file"),
    (("suite", "--dir", "MISSING"), "does not exist"),
    (("suite", "-k", "no-kernel-has-this-name"), "no kernel matches 'no-kernel-has-this-name'"),
    (("build", "--base", "MISSING", "--out", "OUT"), "not a checkpoint directory"),
    (("build", "--base", "standin", "--out", "OUT", "--dtype", "f16"), "--dtype 'f16'"),
    (("build", "--base", "standin", "--out", "OUT", "--rescale", "x"), "--rescale 'x'"),
    (("eval", "kl", "--base", "MISSING"), "not a checkpoint directory"),
    (("eval", "kl", "--base", "standin", "--merged", "MISSING"), "not a model checkpoint"),
])
def test_user_mistakes_are_one_line(tmp_path, args, message):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    (tmp_path / "binary.cu").write_bytes(b"\xff\xfe\x00")
    names = {"FILE": tmp_path / "dot.cu", "DIR": tmp_path, "BINARY": tmp_path / "binary.cu",
             "MISSING": tmp_path / "missing", "OUT": tmp_path / "out"}
    one_error_line(invoke(*(names.get(a, a) for a in args)), message)


@pytest.mark.parametrize("args", [("build", "--base", "standin", "--out", "/tmp/x", "--dtype", "f16"),
                                  ("eval", "kl", "--base", "/nonexistent")])
def test_build_and_eval_reject_bad_arguments_before_importing_torch(args):
    import subprocess
    code = ("import sys; from typer.testing import CliRunner; from qwengpu.cli import app; "
            f"r = CliRunner().invoke(app, {list(args)!r}); print(r.exit_code, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "False"], out


@pytest.mark.parametrize("args, message", [
    (("run", "FILE", *DOT_ARGS, "--frontend", "nvrtc", "-O", "1"), "-O applies to the clang front end only"),
    (("run", "FILE", *DOT_ARGS, "--engine", "cuda", "--trace"), "--trace does not apply to --engine cuda"),
    (("run", "FILE", *DOT_ARGS, "--engine", "cuda", "--max-passes", "9"), "--max-passes does not apply"),
    (("suite", "--engine", "cuda", "--max-passes", "9"), "--max-passes does not apply to --engine cuda"),
    (("suite", "--engine", "cuda", "--max-tokens", "9"), "--max-tokens applies to the model engine only"),
    (("run", "FILE", *DOT_ARGS, "--engine", "model", "--max-passes", "9"),
     "--max-passes does not apply to --engine model (only to --engine interp)"),
    (("suite", "--engine", "model", "--max-passes", "9"), "--max-passes does not apply to --engine model"),
    (("demo", "--max-passes", "9"), "--max-passes does not apply to --engine model"),
])
def test_options_that_do_not_apply_are_refused(tmp_path, args, message):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    one_error_line(invoke(*(tmp_path / "dot.cu" if a == "FILE" else a for a in args)), message)


def test_device_phases_in_order(stub_model_engine):
    from qwengpu.api import Device
    phases = []
    dev = Device("model", fast=False, on_phase=phases.append)
    fn = dev.compile(DOT_CU, "dot.cu").get_function("dot")
    out = np.zeros(1, np.int32)
    result = fn(grid=1, block=4, args=[np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), out, 3])
    assert phases == ["load", "prefill", "decode"] and out[0] == 32
    on_interp = Device("interp").compile(DOT_CU, "dot.cu").get_function("dot")(
        grid=1, block=4, args=[np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), np.zeros(1, np.int32), 3])
    assert result.blocks == on_interp.blocks and result.tokens == dot_tokens() and result.load_seconds >= 0
    assert result.prefill_seconds + result.decode_seconds == pytest.approx(result.seconds)
    fn(grid=1, block=4, args=[np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), out, 3])
    assert phases[3:] == ["prefill", "decode"]                          # loaded once
    assert Device("model", fast=False, max_tokens=500, on_phase=phases.append).max_tokens == 500


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path, stub_model_engine):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--engine", "model", "--stock")
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    result = invoke("suite", "--dir", make_suite(tmp_path), "-k", "good")
    assert result.exit_code == 0 and result.stderr == "", result.stderr


def test_progress_texts():
    from qwengpu import cli
    from qwengpu.machine.tokens import Token
    texts = []
    progress = cli.LaunchProgress(False)
    progress.bar = SimpleNamespace(update=lambda task, description: texts.append(description))
    progress.phase("load")
    progress.phase("prefill")
    progress.phase("decode")
    for token in (Token("EXEC", ()), Token("VAL", (), cont=True), Token("VAL", ()), Token("EXEC", ())):
        progress.token(token)
    assert texts[:3] == ["loading the model", "prefill (the launch prompt)", "generating"]
    assert re.match(r"generating: 1 token, 1 pass($|,)", texts[3]) and progress.tokens == 4 and progress.passes == 3
    suite = cli.SuiteProgress(False)
    suite.bar = SimpleNamespace(update=lambda task, **kw: texts.append(kw), console=SimpleNamespace(
        print=lambda line: texts.append(line)))
    suite.start([1, 2])
    suite.token("dot", Token("EXEC", ()))
    suite.report(SimpleNamespace(name="dot", passed=False, tokens=130, seconds=1.5))
    assert texts[-2] == "  dot [red]failed[/], 130 tokens, 1.5 s"
    assert texts[-1]["completed"] == 1 and texts[-1]["total"] == 2 and "1 failed" in texts[-1]["description"]


def test_token_engine_options_are_checked(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    cases = {("--engine", "llama.cpp"): "needs a GGUF file: model=FILE.gguf (qgpu: --model FILE.gguf)",
             ("--engine", "vllm", "--dtype", "bfloat16"): "--dtype applies to the model engine only",
             ("--url", "http://127.0.0.1:9"): "--url names a vLLM server: it applies to --engine vllm only",
             ("--engine", "llama.cpp", "--model", str(tmp_path / "none.gguf")): "none.gguf does not exist"}
    for options, message in cases.items():
        result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, *options)
        assert result.exit_code == 1 and message in result.output, (options, result.output)
        assert "Traceback" not in result.output


# --- messages: what is wrong, where, what to do --------------------------------
def test_a_file_without_a_kernel_says_it_defines_no_global_function(tmp_path):
    (tmp_path / "noglobal.cu").write_text("__device__ int twice(int x) { return 2 * x; }\n")
    result = invoke("run", tmp_path / "noglobal.cu")
    one_error_line(result, "noglobal.cu defines no __global__ kernel")
    assert "0 kernels" not in result.output and "--kernel" not in result.output


def test_version_after_a_command_says_where_it_goes():
    result = invoke("run", "--version")
    one_error_line(result, "has no --version option")
    assert "qgpu --version" in result.output and "Possible options" not in result.output
    assert invoke("--version").output.startswith("qgpu (qwengpu) ")


def test_a_compile_error_says_error_once(tmp_path):
    (tmp_path / "atom64.cu").write_text('extern "C" __global__ void k(unsigned long long *p) {\n'
                                        '    atomicAdd(p, 1ull);\n}\n')
    result = invoke("run", tmp_path / "atom64.cu", "--arg", "u32:[0,0]")
    assert result.exit_code == 1, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("atom64.cu:2:5: error: ") and first.count("error:") == 1, result.output


def test_help_shows_readable_metavars():
    for command in (("run",), ("suite",), ("eval", "kl"), ()):
        text = invoke(*command, "--help").output
        for typer_style in ("{file}", "<bool>", "<str>", "<int>", "<path>", "<list[str]>"):
            assert typer_style not in text, (command, typer_style, text)
    text = invoke("run", "--help").output
    assert " run [OPTIONS] FILE" in text and re.search(r"--max-tokens\s+N\b", text), text


def test_counts_of_one_are_singular(tmp_path):
    (tmp_path / "one.cu").write_text('extern "C" __global__ void one(int *p) { *p = 7; }\n')
    result = invoke("run", tmp_path / "one.cu", "--block", "1", "--arg", "i32:[0]", "--show-isa")
    assert result.exit_code == 0 and "p = [7]" in result.output, result.output
    assert "engine interp, 1 block, " in result.output and "1 blocks" not in result.output
    assert "// kernel one: 1 block, " in result.output
    result = invoke("run", tmp_path / "one.cu", "--arg", "i32:[0]", "--arg", "1")
    one_error_line(result, "kernel one takes 1 argument (p); 2 were given")


def test_suite_names_a_spec_without_its_source_and_a_reference_error(tmp_path):
    make_suite(tmp_path)
    (tmp_path / "lonely.py").write_text(DOT_PY.replace("OFFSET", "0"))          # no lonely.cu
    (tmp_path / "raises.cu").write_text(DOT_CU)
    (tmp_path / "raises.py").write_text(DOT_PY.replace("OFFSET + int(a @ b)", "{}['x']"))
    result = invoke("suite", "--dir", tmp_path, "-k", "l")
    assert f"warning: {tmp_path / 'lonely.py'}: skipped: no lonely.cu beside it" in result.output, result.output
    assert "orphan" not in result.output         # a .cu alone is a plain CUDA file
    summary = json.loads(invoke("suite", "--dir", tmp_path, "-k", "raises", "--json").stdout)
    assert summary["kernels"][0]["reason"] == ("error in raises.py (the kernel's Python file, line 7, in "
                                               "reference()): KeyError: 'x'")


def test_suite_prints_device_printf_under_the_kernels_name(tmp_path):
    (tmp_path / "hello.cu").write_text('extern "C" __global__ void hello(int *o) {\n'
                                       '    printf("lane %d\\n", threadIdx.x);\n    o[threadIdx.x] = 1;\n}\n')
    (tmp_path / "hello.py").write_text('import numpy as np\nKERNEL = "hello"\n'
                                       'def launch():\n    return 1, 2, [np.zeros(2, np.int32)]\n'
                                       'def reference(o):\n    return [np.ones(2)]\n')
    result = invoke("suite", "--dir", tmp_path)
    assert result.exit_code == 0, result.output
    assert "hello: lane 0\nhello: lane 1\n" in result.output and "\nlane 0" not in result.output
    summary = json.loads(invoke("suite", "--dir", tmp_path, "--json").stdout)
    assert summary["kernels"][0]["output"] == ["lane 0\n", "lane 1\n"]


RED_CU = """extern "C" __global__ void red(int *o) {
    int v = o[threadIdx.x];
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
    if (threadIdx.x == 0) o[0] = v;
}
"""


def test_run_prints_compile_warnings_with_the_source_line(tmp_path):
    (tmp_path / "red.cu").write_text(RED_CU)
    result = invoke("run", tmp_path / "red.cu", "--arg", "i32:[1,2,3,4]")
    assert result.exit_code == 0 and "o = [80, 2, 3, 4]" in result.output, result.output   # 8 x 10, as warned
    assert "red.cu:3: warning: __shfl_down_sync with offsets 16, 8 and 4: a warp here has 4 lanes" in result.output
    assert "QwenGpuWarning" not in result.output


def test_the_closing_lines_rate_is_the_decode_steps_per_decode_second():
    from qwengpu.cli import _stats
    result = SimpleNamespace(engine="model", tokens=31, blocks=None, instructions=None, seconds=0.6,
                             load_seconds=2.0, prefill_seconds=0.1, decode_seconds=0.5)
    line = _stats(result, wall=3.0)
    assert "31 tokens (forward passes) at 60 tokens/s" in line      # 30 steps after the prefill's token
    assert "load 2.00 + prefill 0.10 + decode 0.50 + other 0.40" in line


# --- float32 arguments and results (issue 32) ---------------------------------------------------------------
# Float kernels can't run until the translator takes f32: an INTEGER kernel moves the float32 words, so
# the bits shown must be the bits given. Expected text written by hand.
F32_COPY = r"""extern "C" __global__ void k(const unsigned *a, unsigned *o, int n) {
    int i = threadIdx.x;
    if (i < n) { o[i] = a[i]; o[n + i] = a[i] ^ 0x80000000u; }
}"""
F32_IN = "f32:[1.5, -0.0, inf, -inf, nan, 0f7FFFFFFF, 1e-45, 0.1]"
F32_SHOWN = "1.5, -0.0, inf, -inf, nan(0x7fc00000), nan(0x7fffffff), 1e-45, 0.1"
F32_NEGATED = "-1.5, 0.0, -inf, inf, nan(0xffc00000), nan(0xffffffff), -1e-45, -0.1"
F32_BITS = ["0x3fc00000", "0x80000000", "0x7f800000", "0xff800000", "0x7fc00000", "0x7fffffff", "0x00000001",
            "0x3dcccccd"]


def run_f32_copy(tmp_path, *extra):
    (tmp_path / "copy.cu").write_text(F32_COPY)
    return invoke("run", tmp_path / "copy.cu", "--block", 8, "--arg", F32_IN, "--arg", "f32:zeros(16)", "--arg", 8,
                  *extra)


def test_run_prints_float32_arrays_as_floats(tmp_path):
    result = run_f32_copy(tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"a = [{F32_SHOWN}]" in lines
    assert f"o = [{F32_SHOWN}, {F32_NEGATED}]" in lines


def test_run_json_carries_float_values_and_their_bits(tmp_path):
    result = run_f32_copy(tmp_path, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["arrays"]["a"] == [1.5, -0.0, "inf", "-inf", "nan", "nan", 1e-45, 0.1]
    assert doc["arrays"]["o"][8:] == [-1.5, 0.0, "-inf", "inf", "nan", "nan", -1e-45, -0.1]
    assert doc["bits"] == {"a": F32_BITS, "o": F32_BITS + [f"0x{int(b, 16) ^ 0x80000000:08x}" for b in F32_BITS]}
    assert doc["scalars"] == {"n": 8}
    for value, bits in zip(doc["arrays"]["o"], doc["bits"]["o"]):       # each number reads back as its float32
        if not isinstance(value, str):
            assert f"0x{int(np.array(value, np.float32).view(np.uint32)):08x}" == bits
    assert '"a": [\n      1.5,\n      -0.0,\n      "inf"' in result.stdout     # plain JSON: no NaN/Infinity tokens
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout


def test_run_json_without_floats_has_no_bits(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", *DOT_ARGS, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert "bits" not in doc and doc["arrays"]["out"] == [32] and doc["scalars"] == {"n": 3}


F32_PARAM = r"""extern "C" __global__ void k(int *o, float x, int n) { o[0] = n; }"""     # x unused: f32 can't run yet


@pytest.mark.parametrize("x, shown, bits", [("1.5", 1.5, "0x3fc00000"), ("-2.5e-3f", -0.0025, "0xbb23d70a"),
                                            ("nan", "nan", "0x7fc00000"), ("0fFF800000", "-inf", "0xff800000"),
                                            ("f32:3", 3.0, "0x40400000"), ("3", 3, None)])
def test_run_json_float_scalars(tmp_path, x, shown, bits):
    (tmp_path / "p.cu").write_text(F32_PARAM)
    result = invoke("run", tmp_path / "p.cu", "--block", 1, "--arg", "i32:zeros(1)", "--arg", x, "--arg", 5, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["scalars"] == {"x": shown, "n": 5} and doc["arrays"] == {"o": [5]}
    assert doc.get("bits") == ({"x": bits} if bits else None)


@pytest.mark.parametrize("args, message", [
    (("i32:zeros(1)", "16777217", "5"), "argument 1 (x) is a float parameter and got the integer 16777217, which "
                                        "float32 cannot hold exactly"),
    (("i32:zeros(1)", "1.5", "5.0"), "argument 2 (n) is an integer parameter and got the float 5.0: pass an integer"),
    (("i32:zeros(1)", "1.5", "i32:5.5"), "--arg 'i32:5.5': the value '5.5' is a float"),
    (("f32:zeros(1)", "f32:[1.5]", "5"), "argument 1 (x) is a float parameter: pass a float (got an array of 1 "
                                         "float32)"),
    (("i32:zeros(1)", "1f", "5"), "--arg '1f': the value '1f' is not a number: a float needs a '.' or an exponent"),
])
def test_run_refuses_mistyped_float_arguments(tmp_path, args, message):
    (tmp_path / "p.cu").write_text(F32_PARAM)
    result = invoke("run", tmp_path / "p.cu", "--block", 1, *[x for a in args for x in ("--arg", a)])
    one_error_line(result, message)


def test_a_float_for_dots_integer_parameter_is_refused(tmp_path):
    (tmp_path / "dot.cu").write_text(DOT_CU)
    result = invoke("run", tmp_path / "dot.cu", "--grid", 1, "--block", 4, "--arg", "[1.5 2 3]", "--arg",
                    "i32:[4,5,6]", "--arg", "i32:zeros(1)", "--arg", "3.0")
    one_error_line(result, "argument 3 (n) is an integer parameter and got the float 3.0")


@pytest.mark.parametrize("bits, text", [
    (0x3FC00000, "1.5"), (0x40000000, "2.0"), (0x00000000, "0.0"), (0x80000000, "-0.0"), (0x3DCCCCCD, "0.1"),
    (0x00000001, "1e-45"), (0x80000001, "-1e-45"), (0x007FFFFF, "1.1754942e-38"), (0x00800000, "1.1754944e-38"),
    (0x7F7FFFFF, "3.4028235e+38"), (0x4B800000, "16777216.0"), (0x4B800001, "16777218.0"),
    (0x5A0E1BCA, "1e+16"), (0x5A0E1BC9, "9999999000000000.0"), (0x38D1B717, "0.0001"), (0x38CF9E38, "9.9e-05"),
    (0x3F800001, "1.0000001"), (0xC0490FDB, "-3.1415927"),
    (0x7F800000, "inf"), (0xFF800000, "-inf"), (0x7FC00000, "nan(0x7fc00000)"), (0xFFFFFFFF, "nan(0xffffffff)"),
    (0x7F800001, "nan(0x7f800001)"),
])
def test_format_f32(bits, text):
    from qwengpu.cli import format_f32
    assert format_f32(np.array([bits], np.uint32).view(np.float32)[0]) == text


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_shown_floats_read_back_as_the_same_bits(bits):
    """What `qgpu run` prints for a finite float32 is an --arg value with the same bits, and its JSON number
    (through a float64, as JSON readers hold it) converts back to the same float32."""
    from qwengpu.cli import _json_f32, format_f32
    x = np.array([bits], np.uint32).view(np.float32)[0]
    if not np.isfinite(x):
        return
    assert parse_arg(format_f32(x)).view(np.uint32) == bits
    number = json.loads(json.dumps(_json_f32(x)))
    assert np.array(number, np.float64).astype(np.float32).view(np.uint32) == bits
