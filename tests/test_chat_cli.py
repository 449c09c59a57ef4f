"""`qgpu chat` and `qgpu eval chat` on the stand-in merged model (random weights: a few
generated tokens, or scripted turns through the terminal view)."""
import json

import pytest
from typer.testing import CliRunner

from qwengpu.chat import evalset
from qwengpu.chat.session import ChatSession
from qwengpu.cli import ChatView, app
from qwengpu.model.merge import default_merged_model

runner = CliRunner()


def invoke(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


@pytest.fixture(scope="module")
def path():
    return default_merged_model()


def test_chat_once_as_json_is_one_turn(path):
    r = invoke("chat", "--model", path, "--once", "Hello", "--json", "--max-tokens", "2")
    assert r.exit_code == 0, r.output
    turn = json.loads(r.stdout)
    assert (turn["question"], turn["mode"], turn["tokens"], turn["stopped"]) == ("Hello", "normal", 2, "max_tokens")
    assert turn["calls"] == []


def test_chat_reads_questions_until_an_empty_line(path):
    r = invoke("chat", "--model", path, "--max-tokens", "1", input="Hi\n\n")
    assert r.exit_code == 0, r.output
    assert "normal mode" in r.stdout
    assert "1 token, 0 GPU calls" in r.stdout and "stopped at the token limit (--max-tokens)" in r.stdout


def test_the_view_shows_each_gpu_call_and_its_result(path, capsys):
    view = ChatView(live=False)
    session = ChatSession(path, "normal", events=view)
    call = "<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n6 * 7\n</parameter>\n</function>\n</tool_call>"
    view.finish(session.ask("6 * 7?", script=["Computing." + call, "It is 42."]))
    out = capsys.readouterr().out
    assert "<tool_call>" not in out
    assert out.startswith("Computing.\nGPU call gpu_eval: 6 * 7\n=> 42\n")
    assert "It is 42.\n" in out and "1 GPU call, " in out


@pytest.mark.parametrize("args, message", [
    (["--model", "/nonexistent"], "no such model directory"),
    (["--mode", "fancy"], "--mode 'fancy': choose one of normal, advanced"),
    (["--max-tokens", "0"], "--max-tokens must be at least 1"),
    (["--launch-max-tokens", "0"], "--launch-max-tokens must be at least 1"),
])
def test_chat_errors_are_one_line(path, args, message):
    r = invoke("chat", "--model", path, "--once", "hi", *args)      # a second --model wins
    assert r.exit_code == 1 and message in r.output


def test_eval_chat_runs_end_to_end_and_says_the_stand_in_scores_are_meaningless(path, monkeypatch):
    monkeypatch.setattr(evalset, "NORMAL", evalset.NORMAL[:2])
    monkeypatch.setattr(evalset, "ADVANCED", evalset.ADVANCED[:1])
    r = invoke("eval", "chat", "--model", path, "--json", "--max-tokens", "1")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["normal"] == {"n": 2, "used_gpu": 0, "correct": 0}
    assert report["advanced"] == {"n": 1, "first_try": 0, "within_3_tries": 0}
    assert report["standin"] is True and "meaningless" in report["note"]
    assert [item["tokens"] for item in report["items"]["normal"]] == [1, 1]
    r = invoke("eval", "chat", "--model", path, "--max-tokens", "1")
    assert r.exit_code == 0 and "scores are meaningless" in r.stdout and "0/2 used the GPU" in r.stdout
