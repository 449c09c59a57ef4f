"""`qgpu bench --json` on the smallest suite kernel: the JSON's shape, token counts from the
interpreter's own stream, and ratios recomputed from the rows. One model load, about a minute
(the stock path's prefill dominates)."""
import json
import statistics

import pytest
from typer.testing import CliRunner

from qwengpu import interp
from qwengpu.cli import app
from qwengpu.driver import protocol
from qwengpu.machine.encoding import encode
from qwengpu.machine.tokens import with_exec

runner = CliRunner()
KERNELS = ["dot"]
DTYPE = ["--dtype", "bfloat16"]      # the stock model in bf16: from_pretrained in fp32 peaks at 18 GB (CI has 24)
TOP_KEYS = {"fast_tok_s", "fast_launch_tok_s", "stock_tok_s", "speedup_vs_stock", "speedup_basis",
            "identical_tokens", "replay_exact", "interp_seconds", "model", "dtype", "stock_tokens", "fast_step", "kernels"}


@pytest.fixture(scope="module")
def report():
    result = runner.invoke(app, ["bench", "--json", "--kernels", ",".join(KERNELS), "--stock-tokens", "2", *DTYPE])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def interp_reference():
    """Per kernel: (expected stream, interpreter execution), computed here, not by the bench."""
    from qwengpu.bench import kernel_launch
    out = {}
    for name in KERNELS:
        L = kernel_launch(name).launch
        stream = protocol.expected_stream(L)             # L.copy_out: output_words(), as the bench runs it
        out[name] = stream, interp.run(L.program, L.grid, L.block, L.params, L.memory.copy())
    return out


def test_summary_shape(report):
    assert TOP_KEYS <= set(report)
    assert report["dtype"] == "bfloat16" and report["stock_tokens"] == 2
    assert report["model"].endswith("standin-merged")
    assert [r["kernel"] for r in report["kernels"]] == KERNELS
    assert report["identical_tokens"] is True and report["replay_exact"] is True


def test_rows_match_the_interpreter(report, interp_reference):
    from qwengpu.bench import kernel_launch
    for row in report["kernels"]:
        stream, ex = interp_reference[row["kernel"]]
        assert row["tokens"] == row["expected_tokens"] == len(stream.tokens)
        execs = [t for t in with_exec(stream.tokens) if t.kind == "EXEC"]   # a continuing token runs one too
        assert row["passes"] == len(execs) == sum(t.kind == "EXEC" or t.cont for t in stream.tokens)
        assert row["instructions"] == ex.instructions
        # one pass per instruction, less one per pair (two instructions in a pass) and one per
        # instruction in no pass (fixed operands), plus one per terminator pass that runs no
        # instruction (encoding.py)
        codes = encode(kernel_launch(row["kernel"]).launch.program)
        passes = [codes[t.args[1]].pass_at(t.args[2]) for t in execs]
        pairs = sum(p.main is not None and p.pre is not None for p in passes)
        alone = sum(p.main is None and p.pre is None for p in passes)
        unrun = sum(len(codes[t.args[1]].unrun) for t in execs if t.args[2] == 0)
        assert row["passes"] == ex.instructions - pairs - unrun + alone
        assert row["stock_tokens"] == 2 and row["identical_tokens"] and row["replay_exact"] and not row["error"]


def test_ratios_follow_from_the_rows(report):
    rows = report["kernels"]
    for r in rows:
        assert r["fast_tok_s"] == pytest.approx((r["tokens"] - 1) / (r["fast_s"] - r["fast_prefill_s"]))
        assert r["fast_launch_tok_s"] == pytest.approx(r["tokens"] / r["fast_s"])
        assert r["stock_tok_s"] == pytest.approx((r["stock_tokens"] - 1) / r["stock_decode_s"])
        assert r["speedup"] == pytest.approx(r["fast_tok_s"] / r["stock_tok_s"])
        assert 0 < r["fast_prefill_s"] < r["fast_s"]
    fast = statistics.median(r["fast_tok_s"] for r in rows)
    stock = statistics.median(r["stock_tok_s"] for r in rows)
    assert report["fast_tok_s"] == pytest.approx(fast) and report["stock_tok_s"] == pytest.approx(stock)
    assert report["speedup_vs_stock"] == pytest.approx(fast / stock)
    assert report["interp_seconds"] == pytest.approx(sum(r["interp_s"] for r in rows))


@pytest.mark.parametrize("args, message", [
    (["--stock-tokens", "1"], "at least 2"),
    (["--kernels", "dot,no_such_kernel"], "no_such_kernel"),
    (["--dtype", "float16"], "float16"),
    (["--fast-step", "cuda"], "choose one of c, torch"),
    (["--max-tokens", "0"], "--max-tokens must be at least 1"),
    (["--max-passes", "0"], "--max-passes must be at least 1"),
])
def test_bad_options_fail_before_loading(args, message):
    result = runner.invoke(app, ["bench", *args])
    assert result.exit_code == 1 and message in result.output


def test_summary_medians_by_hand():
    """summarize() on made-up rows: medians and the speedup worked out by hand."""
    from qwengpu.bench import Row, summarize

    def row(name, fast_tok_s, stock_tok_s, same=True):
        return Row(name, 10, 100, 100, 20, 10, 100 / fast_tok_s, 1.0, fast_tok_s, 50.0, True, 8, 5.0, 7.0,
                   stock_tok_s, same, fast_tok_s / stock_tok_s, 0.002, 1.0)
    rows = [row("a", 30.0, 0.5), row("b", 90.0, 0.1), row("c", 60.0, 0.2, same=False)]
    s = summarize(rows, "m", "float32", 8)
    assert (s["fast_tok_s"], s["stock_tok_s"]) == (60.0, 0.2)
    assert s["speedup_vs_stock"] == pytest.approx(300.0)
    assert s["identical_tokens"] is False and s["replay_exact"] is True
    assert s["interp_seconds"] == pytest.approx(0.006)


def test_table_shows_every_kernel_and_the_medians():
    from rich.console import Console
    from qwengpu.bench import Row, summarize
    from qwengpu.cli import _bench_table
    rows = [Row("dot", 217, 130, 130, 39, 23, 2.0, 1.0, 65.0, 129.0, True, 8, 20.0, 9.0, 7 / 9.0, True,
                65.0 / (7 / 9.0), 0.001, 2000.0)]
    out = Console(width=160, record=True, file=open("/dev/null", "w"))
    out.print(_bench_table(summarize(rows, "m", "float32", 8)))
    text = out.export_text()
    assert "dot" in text and "median" in text and "84x" in text and "65.00" in text


def test_the_limits_reach_the_launches():
    """A fast launch past --max-tokens is that kernel's error, not a hang (dot needs more than 20 tokens);
    with no fast tokens to compare, the stock path does not run (nor load: load_stock would raise)."""
    from qwengpu import bench
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench, "load_stock", lambda *a: pytest.fail("the stock model loaded for a failed launch"))
        result = runner.invoke(app, ["bench", "--json", "--kernels", "dot", "--stock-tokens", "2",
                                     "--max-tokens", "20", *DTYPE])
    summary = json.loads(result.stdout)
    row = summary["kernels"][0]
    assert result.exit_code == 1 and "20 tokens" in row["error"]
    assert row["stock_tokens"] == 0 and row["stock_tok_s"] is None and not row["identical_tokens"]
