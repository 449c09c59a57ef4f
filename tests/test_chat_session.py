"""The chat session on the stand-in merged model (qwengpu/chat/session.py): the chat template's
text, scripted turns (forced assistant text) whose tool calls run in the merged model, errors
and limits, and the exactness of the text context. Expected values are written by hand."""
import json

import pytest
import torch
from transformers.cache_utils import DynamicCache

from qwengpu.chat.session import ChatError, ChatSession, is_standin
from qwengpu.chat.tools import GPU_EVAL
from qwengpu.model import CheckpointError
from qwengpu.model.merge import default_merged_model

SQUARES = r'''extern "C" __global__ void squares(const int *x, int *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}'''


def call_text(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


@pytest.fixture(scope="module")
def path():
    return default_merged_model()


@pytest.fixture(scope="module")
def normal(path):
    return ChatSession(path, "normal", max_tokens=256)


@pytest.fixture(scope="module")
def advanced(path):
    return ChatSession(path, "advanced", max_tokens=512)


@pytest.fixture
def chat(normal):
    normal.reset()
    normal.max_tokens, normal.gpu.max_tokens = 256, None
    return normal


def conversation(session) -> str:
    return session.tokenizer.decode(session.ids, skip_special_tokens=False)


# ---------------------------------------------------------------------------
# The chat template (the tokenizer alone)
# ---------------------------------------------------------------------------
def render(tokenizer, messages, **options):
    return tokenizer.apply_chat_template(messages, tokenize=False, **options)


@pytest.fixture(scope="module")
def tokenizer(normal):
    return normal.tokenizer          # the session's (text_side's): a second load takes 12 s


def test_the_template_lists_the_tools_in_the_system_turn(tokenizer):
    text = render(tokenizer, [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "hi"}],
                  tools=[GPU_EVAL])
    head, tools, tail = text.partition("<tools>\n")[0], *text.partition("<tools>\n")[2].split("\n</tools>", 1)
    assert head == "<|im_start|>system\nBe exact.\n\n# Tools\n\nThese functions are available, each described by a JSON schema:\n\n"
    assert json.loads(tools) == GPU_EVAL
    assert "<tool_call>\n<function=NAME>\n<parameter=PARAMETER>\nVALUE\n</parameter>\n</function>\n</tool_call>" in tail
    assert tail.endswith("<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n")


def test_the_template_writes_turns_tool_calls_responses_and_the_prompt(tokenizer):
    calls = [{"type": "function", "function": {"name": "gpu_eval", "arguments": {"expression": "6 * 7"}}},
             {"type": "function", "function": {"name": "gpu_cuda", "arguments": {"grid": 1, "args": [[1, 2], 3]}}}]
    messages = [{"role": "user", "content": "Compute."}, {"role": "assistant", "content": "Sure.", "tool_calls": calls},
                {"role": "tool", "content": "42"}, {"role": "tool", "content": "y = [1]"},
                {"role": "assistant", "content": "It is 42."}, {"role": "user", "content": "Thanks"}]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        "<|im_start|>user\nCompute.<|im_end|>\n"
        "<|im_start|>assistant\nSure.\n\n"
        "<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n6 * 7\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=gpu_cuda>\n<parameter=grid>\n1\n</parameter>\n<parameter=args>\n[[1, 2], 3]\n"
        "</parameter>\n</function>\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n42\n</tool_response>\n<tool_response>\ny = [1]\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\nIt is 42.<|im_end|>\n"
        "<|im_start|>user\nThanks<|im_end|>\n"
        "<|im_start|>assistant\n")
    assert render(tokenizer, messages[:1], add_generation_prompt=True, enable_thinking=False).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_the_chat_markers_are_single_special_tokens(tokenizer):
    for marker in ("<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"):
        assert len(tokenizer.encode(marker, add_special_tokens=False)) == 1, marker


def test_a_checkpoint_without_a_chat_template_is_refused_when_a_chat_starts(path, tmp_path):
    for f in path.iterdir():
        if f.suffix in (".safetensors", ".json") and f.name != "tokenizer_config.json":
            (tmp_path / f.name).symlink_to(f)
    config = json.loads((path / "tokenizer_config.json").read_text())
    del config["chat_template"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ChatError, match="has no chat template"):
        ChatSession(tmp_path)


def test_a_directory_that_is_not_a_merged_checkpoint_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="not a model checkpoint"):
        ChatSession(tmp_path)


def test_the_stand_in_is_recognised(path):
    assert is_standin(json.loads((path / "config.json").read_text()))


# ---------------------------------------------------------------------------
# Scripted turns: the tool calls run in the merged model
# ---------------------------------------------------------------------------
def test_a_normal_mode_turn_runs_expressions_in_the_model(chat):
    first = ("Let me compute both.\n\n" + call_text("gpu_eval", expression="17 * 23") + "\n"
             + "<tool_call>\n<parameter=expression>\n1\n</parameter>\n</tool_call>\n"     # no <function=...>
             + call_text("gpu_eval", expression="-7 / 2"))
    turn = chat.ask("What are 17 * 23 and -7 / 2 in C?", script=[first, "391 and -3."])
    assert [c.response for c in turn.calls] == [
        "391", "error: a tool call holds one <function=NAME> ... </function> block, with one "
               "<parameter=NAME> ... </parameter> block per parameter", "-3"]
    assert turn.calls[0].tokens > 0 and turn.calls[0].passes > 0 and turn.calls[1].tokens == 0
    assert turn.answer == "391 and -3." and turn.stopped == "end"
    text = conversation(chat)
    assert text.endswith(
        "<|im_start|>user\nWhat are 17 * 23 and -7 / 2 in C?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        + first + "<|im_end|>\n<|im_start|>user\n<tool_response>\n391\n</tool_response>\n<tool_response>\n"
        + turn.calls[1].response + "\n</tool_response>\n<tool_response>\n-3\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n391 and -3.<|im_end|>")


def test_an_advanced_mode_turn_runs_the_model_written_kernel_in_the_model(advanced):
    advanced.reset()
    call = call_text("gpu_cuda", source=SQUARES, grid="2", block="4", args="i32:[3,-1,4,1,5,9,-2,6] i32:zeros(8) 8")
    turn = advanced.ask("Square 3, -1, 4, 1, 5, 9, -2, 6 on the GPU.", script=[call, "9 1 16 1 25 81 4 36"])
    [gpu] = turn.calls
    assert gpu.response == "x = [3, -1, 4, 1, 5, 9, -2, 6]\ny = [9, 1, 16, 1, 25, 81, 4, 36]"
    assert gpu.tokens > 0
    assert ("<tool_response>\nx = [3, -1, 4, 1, 5, 9, -2, 6]\ny = [9, 1, 16, 1, 25, 81, 4, 36]\n</tool_response>"
            in conversation(advanced))


def test_a_compile_error_goes_back_to_the_model(advanced):
    advanced.reset()
    call = call_text("gpu_cuda", source="__global__ void k(int *y) { y[0] = z; }", grid="1", block="1",
                     args="i32:zeros(1)")
    [gpu] = advanced.ask("Run it.", script=[call, "It failed."]).calls
    assert gpu.response.startswith("error: ") and "use of undeclared identifier 'z'" in gpu.response
    assert gpu.tokens == 0


def test_the_turn_and_launch_token_limits(chat):
    chat.max_tokens = 5
    turn = chat.ask("Count.", script=["one two three four five six seven eight"])
    assert (turn.tokens, turn.stopped, turn.calls) == (5, "max_tokens", [])
    chat.max_tokens, chat.gpu.max_tokens = 256, 3      # no launch ends in 3: EXEC, COPY, its word, HALT at least
    [gpu] = chat.ask("Again.", script=[call_text("gpu_eval", expression="1 + 2"), "?"]).calls
    assert gpu.response == ("error: the launch did not finish within 3 tokens; raise the limit with "
                            "--max-tokens N (API: max_tokens=N)")
    assert gpu.tokens == 3
    # the cut turn was closed with the end token before the next user turn
    assert "one two three four five<|im_end|>\n<|im_start|>user\nAgain.<|im_end|>" in conversation(chat)


def test_generation_is_greedy_over_the_text_vocabulary(chat):
    chat.max_tokens = 2
    turn = chat.ask("Hello")
    generated = chat.ids[len(chat.ids) - turn.tokens:]
    assert turn.tokens == 2 and chat.chunks[-2:] == [[generated[0]], [generated[1]]]
    assert all(t < chat.text_end for t in generated)
    # each generated token is the argmax of the text logits its context gives (replayed afresh)
    replay = DynamicCache(config=chat.model.config)
    with torch.no_grad():
        for ids in chat.chunks[:-1]:
            out = chat.model(input_ids=torch.tensor([ids]), cache=replay, use_cache=True, logits_to_keep=1)
            best = int(torch.argmax(out.logits[0, -1, :chat.text_end]))
    assert best == generated[1]


def test_a_template_that_rewrites_earlier_turns_cannot_change_what_the_model_saw(chat):
    # like Qwen's, which drops the reasoning of turns before the last user message
    template = chat.tokenizer.chat_template
    chat.tokenizer.chat_template = template.replace(
        "(m.content or '')", "(m.content if loop.last else 'OLD')")
    try:
        chat.ask("A", script=["x"])
        chat.ask("B", script=["y"])
    finally:
        chat.tokenizer.chat_template = template
    assert "OLD" not in conversation(chat)
    assert conversation(chat).endswith(
        "<|im_start|>user\nA<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nx<|im_end|>\n"
        "<|im_start|>user\nB<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\ny<|im_end|>")


# ---------------------------------------------------------------------------
# Exactness: a launch leaves the text context as it was
# ---------------------------------------------------------------------------
def test_logits_after_a_launch_equal_logits_of_the_same_text_without_it(chat):
    turn = chat.ask("What is 6 * 7?", script=[call_text("gpu_eval", expression="6 * 7"), "42"])
    assert turn.calls[0].response == "42" and turn.calls[0].tokens > 0
    after_launch = chat.logits
    # the same text, fed in the same forwards to a fresh cache, with no launch anywhere
    fresh = DynamicCache(config=chat.model.config)
    with torch.no_grad():
        for ids in chat.chunks:
            out = chat.model(input_ids=torch.tensor([ids]), cache=fresh, use_cache=True, logits_to_keep=1)
    without = out.logits[0, -1]
    assert without.dtype == chat.model.dtype == torch.bfloat16      # the stand-in's stored dtype
    assert after_launch.dtype == torch.float32 and torch.equal(after_launch, without.float())
    assert sum(map(len, chat.chunks)) == len(chat.ids)
