"""The GPU tools in Qwen3.5's tool-call format (qwengpu/chat/tools.py): parsing well-formed,
malformed and several calls, and running them on the interpreter (one advanced-mode kernel and
one expression on the model engine); expected values are computed by hand."""
import pytest

from qwengpu import Device
from qwengpu.chat.tools import MODES, ToolCall, parse_args, parse_tool_calls, run_tool_call

DOT = r'''extern "C" __global__ void dot(const int *a, const int *b, int *out, int n) {
    __shared__ int prod[4];
    int t = threadIdx.x;
    prod[t] = t < n ? a[t] * b[t] : 0;
    __syncthreads();
    if (t == 0) *out = prod[0] + prod[1] + prod[2] + prod[3];
}'''


def call_text(name: str, **params: str) -> str:
    """A call as Qwen3.5's chat template writes one."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def dot_call(**overrides) -> str:
    params = {"source": DOT, "kernel": "dot", "grid": "1", "block": "4",
              "args": "i32:[1,2,3] i32:[4,5,6] i32:zeros(1) 3"} | overrides
    return call_text("gpu_cuda", **params)


@pytest.fixture(scope="module")
def interp():
    return Device("interp", print_output=False)


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------
def test_a_well_formed_call_is_parsed():
    text = "Let me compute it.\n" + call_text("gpu_eval", expression="6 * 7")
    assert parse_tool_calls(text) == [ToolCall("gpu_eval", {"expression": "6 * 7"})]


def test_a_value_keeps_its_own_lines_and_indentation():
    source = "int f() {\n    return 1;\n}\n"
    [call] = parse_tool_calls(call_text("gpu_cuda", source=source, grid="1"))
    assert call.arguments == {"source": source, "grid": "1"}


def test_several_calls_in_one_turn_in_order():
    text = (call_text("gpu_eval", expression="1 + 1") + "\nand\n" + call_text("gpu_eval", expression="2 * 3")
            + "\n" + dot_call())
    calls = parse_tool_calls(text)
    assert [(c.name, c.error) for c in calls] == [("gpu_eval", None), ("gpu_eval", None), ("gpu_cuda", None)]
    assert calls[1].arguments == {"expression": "2 * 3"}


def test_no_call_is_no_call():
    assert parse_tool_calls("The answer is 42.") == []


def test_a_forgotten_closing_parameter_tag_is_tolerated():
    text = "<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n1 + 2\n</function>\n</tool_call>"
    assert parse_tool_calls(text) == [ToolCall("gpu_eval", {"expression": "1 + 2"})]


@pytest.mark.parametrize("text, message", [
    ("<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n1\n</parameter>\n</function>\n",
     "no closing </tool_call>"),
    ("<tool_call>\n{\"name\": \"gpu_eval\", \"arguments\": {}}\n</tool_call>", "one <function=NAME> ... </function> block"),
    ("<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n1\n</parameter>\n</tool_call>",
     "one <function=NAME> ... </function> block"),
    ("<tool_call>\n<function=gpu_eval>\nhello\n<parameter=expression>\n1\n</parameter>\n</function>\n</tool_call>",
     "text outside a <parameter=...> block in the call of gpu_eval: 'hello'"),
    (call_text("gpu_eval", expression="1").replace("</function>", "<parameter=expression>\n2\n</parameter>\n</function>"),
     "parameter 'expression' is given twice in the call of gpu_eval"),
])
def test_a_malformed_call_becomes_an_error_for_the_model(interp, text, message):
    [call] = parse_tool_calls(text)
    assert message in call.error
    assert run_tool_call(interp, call).startswith("error: ") and message in run_tool_call(interp, call)


def test_a_malformed_call_does_not_hide_the_good_ones():
    calls = parse_tool_calls(call_text("gpu_eval", expression="1") + "<tool_call>\noops\n</tool_call>"
                             + call_text("gpu_eval", expression="2"))
    assert [c.error is None for c in calls] == [True, False, True]


# ---------------------------------------------------------------------------
# Running: normal mode
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("expression, response", [
    ("dot([1, 2, 3], [4, 5, 6]) * 2", "64"),
    ("-7 / 2", "-3"),
    ("10 / (5 - 5)", "error: division by zero at column 4"),
    ("(1 + 2", "error: expected ')' at column 7, found the end of the expression"),
])
def test_gpu_eval_responses(interp, expression, response):
    [call] = parse_tool_calls(call_text("gpu_eval", expression=expression))
    assert run_tool_call(interp, call) == response


@pytest.mark.parametrize("call, message", [
    (ToolCall("gpu_magic", {}), "error: unknown tool 'gpu_magic'; the tools are gpu_eval, gpu_cuda"),
    (ToolCall("gpu_eval", {}), "error: gpu_eval takes the parameters expression; missing: expression"),
    (ToolCall("gpu_eval", {"expression": "1", "x": "2"}), "error: gpu_eval takes the parameters expression; unknown: x"),
])
def test_bad_tool_names_and_parameters(interp, call, message):
    assert run_tool_call(interp, call) == message


def test_the_modes_offer_their_tools():
    assert [[t["function"]["name"] for t in tools] for tools in MODES.values()] == [["gpu_eval"], ["gpu_cuda"]]


# ---------------------------------------------------------------------------
# Running: advanced mode
# ---------------------------------------------------------------------------
def test_a_model_written_kernel_end_to_end_on_the_interpreter(interp):
    [call] = parse_tool_calls(dot_call())
    assert run_tool_call(interp, call) == "a = [1, 2, 3]\nb = [4, 5, 6]\nout = [32]"      # 1*4 + 2*5 + 3*6


def test_json_arguments_and_grid_and_an_omitted_kernel_name(interp):
    src = r'''__global__ void fill(int *o) { int i = blockIdx.x * blockDim.x + threadIdx.x; o[i] = i * i; }'''
    [call] = parse_tool_calls(call_text("gpu_cuda", source=src, grid="[2]", block="2", args="[[0, 0, 0, 0]]"))
    assert run_tool_call(interp, call) == "o = [0, 1, 4, 9]"


def test_printf_output_is_part_of_the_response(interp):
    src = r'''__global__ void hi(int *o, int n) { printf("n=%d\n", n); o[0] = n + 1; }'''
    [call] = parse_tool_calls(call_text("gpu_cuda", source=src, grid="1", block="1", args="i32:zeros(1) 41"))
    assert run_tool_call(interp, call) == "o = [42]\nprintf output:\nn=41"


@pytest.mark.parametrize("overrides, message", [
    ({"source": DOT.replace("int t =", "int t")}, "error: kernel.cu:3:9: error: no viable conversion"),
    ({"block": "2000"}, "error: a thread block of (2000, 1, 1) has 2000 threads; the limit is 1024 threads per block"),
    ({"args": "i32:zeros(16000) i32:zeros(400) i32:zeros(1) 3"}, "needs 16401 words of global memory"),
    ({"args": "i32:zeros(20000) i32:[4,5,6] i32:zeros(1) 3"},
     "error: --arg 'i32:zeros(20000)': 20000 elements do not fit in the machine's global memory"),
    ({"args": "[[1,2,3], [4,5,6], [], 3]"}, "error: --arg '[]': the array is empty"),
    ({"args": "i32:[1,2,3] 3"}, "error: kernel dot takes 4 arguments"),
    ({"args": "i32:[1,2,x]"}, "error: --arg 'i32:[1,2,x]': element 3 'x' is not a number"),
    ({"args": "{\"a\": 1}"}, "error: args '{\"a\": 1}': give a list of the arguments"),
    ({"kernel": "dott"}, "error: no kernel named dott in the PTX; available kernels: dot"),
    ({"args": "[[1,2,3], [4,5,6], [0], true]"}, "error: argument true: an argument is an integer"),
    ({"grid": "two"}, "error: --grid 'two': size 1 'two' is not a positive decimal integer; expected 1 to 3"),
])
def test_errors_go_back_to_the_model(interp, overrides, message):
    [call] = parse_tool_calls(dot_call(**overrides))
    response = run_tool_call(interp, call)
    assert response.startswith("error: ") and message in response, response


def test_several_kernels_need_a_name(interp):
    src = DOT + "\n__global__ void other(int *o) { o[0] = 1; }"
    [call] = parse_tool_calls(call_text("gpu_cuda", source=src, grid="1", block="1", args="i32:zeros(1)"))
    assert run_tool_call(interp, call) == ("error: the source has 2 kernels (dot, other); "
                                           "name one with the kernel parameter")


def test_parse_args_forms():
    a, b, n = parse_args('[[1, -2], "u32:range(3)", 7]')
    assert (a.dtype.name, a.tolist(), b.dtype.name, b.tolist(), n) == ("int32", [1, -2], "uint32", [0, 1, 2], 7)
    assert [x.tolist() if hasattr(x, "tolist") else x for x in parse_args("i32:[1, 2],i32:full(2, -1);\n5")] \
        == [[1, 2], [-1, -1], 5]
    assert [x.tolist() for x in parse_args("i32:[1 2 3] u32:range(2, 4)")] == [[1, 2, 3], [2, 3]]   # NumPy style


# ---------------------------------------------------------------------------
# The model engine (the stand-in merged model): exact results back from its weights
# ---------------------------------------------------------------------------
def test_both_tools_on_the_model():
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    model = Device("model", print_output=False)
    [cuda, expr] = parse_tool_calls(dot_call(args="[[2, 3, 5], [7, 11, 13], [0], 3]")
                                    + call_text("gpu_eval", expression="max([3, -9, 4]) * 5 % 7"))
    assert run_tool_call(model, cuda) == "a = [2, 3, 5]\nb = [7, 11, 13]\nout = [112]"    # 14 + 33 + 65
    assert run_tool_call(model, expr) == "6"                                               # 20 % 7


# ---------------------------------------------------------------------------
# Decimals and float32 in normal mode
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("expression, response", [
    ("23.50 * 15 / 100", "3.525"),                              # 15% of $23.50
    ("19.99 * 3 * 1.0825", "64.917525"),                        # 59.97 + 4.947525, exact at 6 places
    ("23.50 + 1.20", "24.70"),
    ("100 / 3.0", "33.333333 (rounded: the quotient at column 5 is rounded to 6 decimal places)"),
    ("1.5 / 0", "error: division by zero at column 5"),
    ("1.5 & 1", "error: '&' at column 5 takes integers; this expression is decimal (it has the decimal number 1.5 "
                "at column 1), and bitwise operators and shifts have no decimal meaning"),
    ("sqrt(2)", "1.4142135 (float32)"),
    ("7 / 2", "3"),                                             # integers keep C's division
])
def test_gpu_eval_decimal_responses(interp, expression, response):
    [call] = parse_tool_calls(call_text("gpu_eval", expression=expression))
    assert run_tool_call(interp, call) == response


def test_the_gpu_eval_schema_tells_the_model_about_decimals():
    description = MODES["normal"][0]["function"]["description"]
    assert "23.50 * 15 / 100" in description and "6 decimal places" in description and "float32" in description


def test_a_decimal_question_in_a_scripted_chat_turn_on_the_stand_in():
    """The done-when of issue 32's chat decimals: a normal-mode turn whose gpu_eval call the
    stand-in merged model computes exactly, in its own weights (engine=model)."""
    from qwengpu.chat.session import ChatSession
    from qwengpu.model.merge import default_merged_model
    chat = ChatSession(default_merged_model(), "normal", max_tokens=256)
    call = call_text("gpu_eval", expression="23.50 * 15 / 100")
    turn = chat.ask("What is 15% of $23.50?", script=[call, "15% of $23.50 is $3.525, about $3.53."])
    [gpu] = turn.calls
    assert (gpu.call.arguments, gpu.response, gpu.ok) == ({"expression": "23.50 * 15 / 100"}, "3.525", True)
    assert gpu.tokens > 0 and gpu.passes > 0 and turn.stopped == "end"
    assert turn.answer == "15% of $23.50 is $3.525, about $3.53."
    text = chat.tokenizer.decode(chat.ids, skip_special_tokens=False)
    assert "<|im_start|>user\n<tool_response>\n3.525\n</tool_response><|im_end|>" in text
    # a float32 function in the same chat, computed by the model too (sqrtf: FFMA and the micro-code)
    [gpu] = chat.ask("And the square root of 2?", script=[call_text("gpu_eval", expression="sqrt(2)"), "?"]).calls
    assert (gpu.response, gpu.ok) == ("1.4142135 (float32)", True) and gpu.tokens > 0
