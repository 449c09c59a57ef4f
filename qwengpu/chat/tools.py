"""The model's GPU tools in Qwen3.5's native tool-call format (docs/chat.md):

    <tool_call>
    <function=gpu_eval>
    <parameter=expression>
    sum([1, 2, 3]) * 7
    </parameter>
    </function>
    </tool_call>

`parse_tool_calls(text)` finds every call of an assistant turn (a malformed one becomes a
ToolCall with `error` set, never an exception); `run_tool_call(device, call)` runs one on a
qwengpu Device and returns the tool response text: the result, or the error message the model
needs to fix its call.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np

from qwengpu.chat.expr import evaluate_on
from qwengpu.args import parse_arg, parse_dims
from qwengpu.errors import QwenGpuError

GPU_EVAL = {"type": "function", "function": {
    "name": "gpu_eval",
    "description": ("Compute an expression exactly on the GPU. Integers: 32-bit signed ints with C semantics "
                    "(wrapping; / truncates toward zero; % takes the dividend's sign). Decimals: an expression "
                    "with a number like 23.50 in it is computed exactly in decimal (/ is true division; a quotient "
                    "keeps 6 decimal places and says when it was rounded; at most 18 digits), e.g. 15% of $23.50 "
                    "is 23.50 * 15 / 100. sqrt, exp, log, log2, log10 compute in float32 where the GPU has float "
                    "units. Operators: + - * / % << >> & | ^ ~ ! && || < <= > >= == != and c ? a : b; functions "
                    "min, max, abs, pow(a, b), and sum, product, min, max over a list [1, 2.5, 3], dot([..], [..]). "
                    "^ is xor: use pow."),
    "parameters": {"type": "object", "properties": {
        "expression": {"type": "string", "description": "the expression, e.g. dot([1, 2, 3], [4, 5, 6]) / 2 "
                                                         "or 19.99 * 3 * 1.0825"}},
        "required": ["expression"]}}}

GPU_CUDA = {"type": "function", "function": {
    "name": "gpu_cuda",
    "description": ("Run a CUDA kernel on the GPU and return the final contents of its array arguments. The "
                    "GPU has 4-lane warps (warpSize 4), at most 16 threads per block and 256 blocks, 16384 words "
                    "of global memory, 256 words of shared memory per block, 32-bit integers and fp32 floats."),
    "parameters": {"type": "object", "properties": {
        "source": {"type": "string", "description": "a complete CUDA source with the __global__ kernel (no includes needed)"},
        "kernel": {"type": "string", "description": "the kernel's name (optional when the source has one kernel)"},
        "grid": {"type": "string", "description": "blocks per grid: 1 to 3 sizes, e.g. 2 or 2,2"},
        "block": {"type": "string", "description": "threads per block: 1 to 3 sizes, e.g. 4 or 4,2"},
        "args": {"type": "string", "description": (
            "one argument per kernel parameter, in order, separated by spaces: a scalar (5, -3, 0x1f) or "
            "an array (i32:[1,2,3], u32:[...], i32:zeros(8), i32:range(8), i32:full(8,-1)); or a JSON list "
            "of the arguments, an array being a list of ints: [[1,2,3], [4,5,6], [0], 3]")}},
        "required": ["source", "grid", "block", "args"]}}}

TOOLS = {spec["function"]["name"]: spec for spec in (GPU_EVAL, GPU_CUDA)}
MODES = {"normal": [GPU_EVAL], "advanced": [GPU_CUDA]}       # the tools each chat mode offers


class ToolCallError(QwenGpuError):
    """A tool call whose arguments cannot be used (the message goes back to the model)."""


@dataclass
class ToolCall:
    """One <tool_call> block: the function's name and its parameters as text, or `error` when
    the block is malformed."""
    name: str | None
    arguments: dict[str, str] = field(default_factory=dict)
    error: str | None = None


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------
_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_FUNCTION = re.compile(r"\s*<function=([^>\n]*)>(.*?)</function>\s*", re.S)
# a parameter ends at </parameter>, or (a model that forgot it) where the next one or the call ends
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.S)


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Every <tool_call> block of `text`, in order."""
    return [_parse_call(m[1], closed=m[0].endswith("</tool_call>")) for m in _CALL.finditer(text)]


def _parse_call(body: str, closed: bool) -> ToolCall:
    if not closed:
        return ToolCall(None, error="the <tool_call> block has no closing </tool_call>")
    fn = _FUNCTION.fullmatch(body)
    if fn is None:
        return ToolCall(None, error="a tool call holds one <function=NAME> ... </function> block, "
                                    "with one <parameter=NAME> ... </parameter> block per parameter")
    name, arguments, at = fn[1].strip(), {}, 0
    for p in _PARAMETER.finditer(fn[2]):
        stray = fn[2][at:p.start()].strip()
        if stray:
            return ToolCall(name, error=f"text outside a <parameter=...> block in the call of {name}: {stray[:40]!r}")
        key = p[1].strip()
        if key in arguments:
            return ToolCall(name, error=f"parameter {key!r} is given twice in the call of {name}")
        arguments[key] = _value(p[2])
        at = p.end()
    stray = fn[2][at:].strip()
    if stray:
        return ToolCall(name, error=f"text outside a <parameter=...> block in the call of {name}: {stray[:40]!r}")
    return ToolCall(name, arguments)


def _value(raw: str) -> str:
    """The chat template writes a value between newlines: drop those two, keep the rest as it is."""
    raw = raw[1:] if raw.startswith("\n") else raw
    return raw[:-1] if raw.endswith("\n") else raw


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------
def run_tool_call(device, call: ToolCall) -> str:
    """The tool response for `call` run on `device`: the result or an error message (the errors
    of a bad call, a compile error, a machine limit, a failed launch), never an exception."""
    if call.error:
        return f"error: {call.error}"
    try:
        spec = _check_arguments(call)
        return RUNNERS[spec["name"]](device, call.arguments)
    except QwenGpuError as e:
        return f"error: {e}"


def _check_arguments(call: ToolCall) -> dict:
    if call.name not in TOOLS:
        raise ToolCallError(f"unknown tool {call.name!r}; the tools are {', '.join(TOOLS)}")
    spec = TOOLS[call.name]["function"]
    params = spec["parameters"]
    unknown = sorted(set(call.arguments) - set(params["properties"]))
    missing = [p for p in params["required"] if p not in call.arguments]
    if unknown or missing:
        raise ToolCallError(f"{call.name} takes the parameters {', '.join(params['properties'])}"
                            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                            + (f"; missing: {', '.join(missing)}" if missing else ""))
    return spec


def _run_eval(device, arguments: dict[str, str]) -> str:
    result = evaluate_on(device, arguments["expression"].strip())
    return f"error: {result.error}" if result.error else result.shown()


def _run_cuda(device, arguments: dict[str, str]) -> str:
    module = device.compile(arguments["source"], filename="kernel.cu")
    kernel = module.kernel(arguments.get("kernel", "").strip(), source="the source",
                           choose="name one with the kernel parameter")
    fn = module.get_function(kernel)
    args = parse_args(arguments["args"])
    result = fn(grid=_dims("grid", arguments["grid"]), block=_dims("block", arguments["block"]), args=args)
    lines = [f"{name} = {a.tolist()}" for name, a in zip(fn.arg_names, args) if isinstance(a, np.ndarray)]
    if result.output:
        lines.append("printf output:\n" + "".join(result.output).rstrip("\n"))
    return "\n".join(lines) or "the kernel ran (it has no array arguments)"


RUNNERS = {"gpu_eval": _run_eval, "gpu_cuda": _run_cuda}


def _dims(name: str, text: str) -> tuple[int, ...]:
    """'4', '4,2', '[4, 2]' (a JSON list, as the chat template writes one)."""
    return parse_dims(name, text.strip().removeprefix("[").removesuffix("]"))


def parse_args(text: str) -> list:
    """The kernel arguments: a JSON list (ints are scalars, lists of ints int32 arrays, strings in
    the --arg syntax), or the --arg syntax separated by spaces, commas or newlines."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        return [parse_arg(item) for item in _split(text)]
    if not isinstance(items, list):
        raise ToolCallError(f"args {text.strip()!r}: give a list of the arguments, e.g. [[1,2,3], [0], 3] "
                            f"or i32:[1,2,3] i32:zeros(1) 3")
    return [_json_arg(item) for item in items]


def _json_arg(item):
    if isinstance(item, str):
        return parse_arg(item)
    if isinstance(item, int) and not isinstance(item, bool):
        return item
    if isinstance(item, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in item):
        return parse_arg(json.dumps(item))          # range-checked as int32, like --arg [1,2,3]
    raise ToolCallError(f"argument {json.dumps(item)}: an argument is an integer, a list of integers "
                        f"or a string in the --arg syntax (e.g. \"u32:zeros(4)\")")


def _split(text: str) -> list[str]:
    """Split at spaces, commas, semicolons and newlines outside brackets and parentheses."""
    items, depth, current = [], 0, ""
    for ch in text + " ":
        depth += (ch in "[(") - (ch in "])")
        if depth <= 0 and ch in " \t\n,;":
            if current:
                items.append(current)
            current = ""
        else:
            current += ch
    return items
