"""A chat over one merged checkpoint: the text model writes the assistant's turn, and every GPU
tool call it makes runs on the same checkpoint's machine (docs/chat.md, "Chat session").

    chat = ChatSession("build/standin-merged", mode="normal")
    turn = chat.ask("What is 17 * 23?")                  # generated greedily
    turn = chat.ask("...", script=["<tool_call>...</tool_call>", "It is 391."])   # forced text

The conversation's text runs through the stock transformers model without its circuit layers
(qwengpu/chat/textmodel.py: exact, they add 0 at every text position), at the checkpoint's
stored dtype, in one cache (`self.cache`), fed only what is new each time. A launch runs on a
qwengpu Device of the same checkpoint (the model engine's fast path: the circuit layers' exact
nonzero structure), which starts every
launch from the launch prompt in a state of its own: no GPU token ever enters the text cache,
so the text after a tool call is what the model computes from that text alone.
"""
from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from jinja2 import TemplateError
from transformers.cache_utils import DynamicCache

from qwengpu.api import DEFAULT_MAX_TOKENS, Device
from qwengpu.chat.textmodel import load_text_model, quiet_transformers, stored_dtype
from qwengpu.chat.tools import MODES, ToolCall, parse_tool_calls, run_tool_call
from qwengpu.dtypes import check_dtype
from qwengpu.errors import QwenGpuError
from qwengpu.driver import runtime
from qwengpu.machine.tokens import runs_pass

TURN = "<|im_start|>"              # what opens a turn in Qwen3.5's chat format (ChatML)
DEFAULT_TURN_TOKENS = 1024         # assistant tokens a turn may generate (text and calls together)
SYSTEM = {
    "normal": ("You are a helpful assistant with an exact calculator (integers and decimals) on the GPU "
               "inside you. "
               "For any arithmetic, call gpu_eval with the expression, then answer with its result."),
    "advanced": ("You are a helpful assistant and a CUDA programmer. You can run CUDA kernels on the GPU "
                 "inside you with gpu_cuda: write the kernel, run it, and answer from its results. If it "
                 "fails, read the error, fix the kernel and run it again."),
}


class ChatError(QwenGpuError):
    """A chat that cannot start or go on: a checkpoint without a chat template, a template that
    does not extend the conversation's text, a bad option."""


@dataclass
class GpuCall:
    """One tool call of a turn: the call, the tool response the model got, and what its
    launch cost (model tokens, EXEC passes, seconds from compile to result)."""
    call: ToolCall
    response: str = ""
    tokens: int = 0
    passes: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.response.startswith("error:")


@dataclass
class Turn:
    """One assistant turn: `text` everything it wrote (tool calls included), `answer` what it
    wrote after its last tool response, `tokens` assistant tokens, `stopped` "end" (the end
    token) or "max_tokens" (the turn's limit)."""
    question: str
    text: str = ""
    answer: str = ""
    calls: list[GpuCall] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0
    stopped: str = "end"

    def to_dict(self) -> dict:
        calls = [{"tool": c.call.name, "arguments": c.call.arguments, "ok": c.ok, "response": c.response,
                  "tokens": c.tokens, "passes": c.passes, "seconds": round(c.seconds, 3)} for c in self.calls]
        return {"question": self.question, "answer": self.answer, "text": self.text, "calls": calls,
                "tokens": self.tokens, "seconds": round(self.seconds, 3), "stopped": self.stopped}


class ChatEvents:
    """What a session reports as it goes (a terminal shows it live); every method may be left out."""

    def text(self, piece: str) -> None:
        """A piece of the assistant's text, as it is generated."""

    def call_start(self, call: ToolCall) -> None:
        """A complete tool call, about to run."""

    def launch_token(self, tokens: int, passes: int, seconds: float) -> None:
        """The running launch generated another GPU token."""

    def call_end(self, call: GpuCall) -> None:
        """The tool call's response."""

    def load_start(self, path: Path, dtype: str) -> None:
        """The tokenizer and the text model start loading (not when an earlier session loaded them)."""

    def load_end(self, seconds: float | None) -> None:
        """They are loaded (`seconds` None: the load failed; its error follows)."""


_TEXT_MODELS: dict = {}        # the last (tokenizer, text model) loaded, by (path, dtype, device): one kept at a time
_SYSTEM_TURNS: dict = {}       # its context after a system turn, by the turn's token ids


def text_side(path: Path, dtype: str, device: str, events: ChatEvents | None = None) -> tuple:
    """(the checkpoint's tokenizer, its text model: stock transformers without the circuit layers,
    qwengpu/chat/textmodel.py), kept loaded so sessions of one checkpoint share them (and the
    forward of a system turn they share). `events` sees the load start and end."""
    key = (Path(path).resolve(), dtype, device)
    if key not in _TEXT_MODELS:
        events = events or ChatEvents()
        events.load_start(Path(path), dtype)
        start = time.perf_counter()
        try:
            tokenizer = load_tokenizer(path)            # ChatError (no chat template) before anything goes
            _TEXT_MODELS.clear()
            _SYSTEM_TURNS.clear()
            _TEXT_MODELS[key] = tokenizer, load_text_model(path, dtype, device)
        except BaseException:
            events.load_end(None)
            raise
        events.load_end(time.perf_counter() - start)
    return _TEXT_MODELS[key]


def load_tokenizer(path: Path):
    """The checkpoint's tokenizer, which must have a chat template."""
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if not tokenizer.chat_template:
        raise ChatError(f"{path} has no chat template (tokenizer_config.json 'chat_template' or "
                        f"chat_template.jinja): rebuild it with qgpu build, which carries the base's "
                        f"template through or writes qwengpu's own")
    return tokenizer


def is_standin(config: dict) -> bool:
    """A merged checkpoint of the stand-in base (random weights: it cannot chat), told by the
    stand-in's base shape: no published Qwen3.5 has a 64-wide residual."""
    from qwengpu.model import standin
    block = config["qwengpu"]
    return (block["base_hidden_size"] == standin.HIDDEN
            and config["num_hidden_layers"] - block["circuit_layers"] == len(standin.LAYER_TYPES))


class ChatSession:
    """A conversation with the merged checkpoint `model` in `mode` (normal: gpu_eval; advanced:
    gpu_cuda). `max_tokens`: assistant tokens per turn; `launch_max_tokens`: GPU tokens per
    launch; `thinking`: let a model with a thinking mode think (False asks for none);
    `events`: a ChatEvents that sees the turn as it happens; `dtype`: float32 or bfloat16 (None:
    the checkpoint's stored dtype, bfloat16 for the stand-in)."""

    def __init__(self, model: str | Path, mode: str = "normal", *, system: str | None = None,
                 dtype: str | None = None, device: str = "cpu", max_tokens: int = DEFAULT_TURN_TOKENS,
                 launch_max_tokens: int = DEFAULT_MAX_TOKENS, thinking: bool = False,
                 events: ChatEvents | None = None):
        if mode not in MODES:
            raise ChatError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if max_tokens < 1 or launch_max_tokens < 1:
            raise ChatError("the token limits must be at least 1")
        self.path, self.mode, self.tools = Path(model), mode, MODES[mode]
        if dtype is not None:
            check_dtype(dtype, ChatError)
        self.config = runtime.load_config(self.path)         # CheckpointError: not a merged checkpoint
        self.dtype = dtype or stored_dtype(self.path, self.config)
        self.events = events or ChatEvents()
        self.tokenizer, self.model = text_side(self.path, self.dtype, device, self.events)
        self.text_end = self.config["qwengpu"]["gpu_token_ids"][0]     # text ids are [0, text_end)
        self.stop_ids = {self.tokenizer.eos_token_id, self.config.get("eos_token_id")} - {None}
        self.max_tokens, self.thinking = max_tokens, thinking
        self.gpu = Device("model", model=self.path, dtype=self.dtype, max_tokens=launch_max_tokens,
                          print_output=False, on_token=self._launch_token)
        self.system = SYSTEM[mode] if system is None else system
        self._launch, self._launch_start = None, 0.0
        self.reset()

    def reset(self) -> None:
        """Start the conversation again from the system turn (whose forward sessions share)."""
        self.messages = [{"role": "system", "content": self.system}]
        self._closing = None              # after an assistant stretch: the end token it still needs
        self.cache = DynamicCache(config=self.model.config)
        self.ids: list[int] = []          # every text token the model has seen, in order
        self.chunks: list[list[int]] = []   # ... as fed, one forward each (the exactness test replays them)
        self.logits: torch.Tensor | None = None     # fp32 logits of the next token
        system = self._system_turn()
        if not system:
            return                        # a template that needs the user turn: fed with it
        ids = tuple(self._encode(system))
        if ids not in _SYSTEM_TURNS:
            self._forward(list(ids))
            _SYSTEM_TURNS[ids] = self._snapshot()
        self.cache, self.ids, self.chunks, self.logits = self._snapshot(_SYSTEM_TURNS[ids])

    def _system_turn(self) -> str:
        """The template's text of the system turn alone, when a conversation's text starts with it."""
        try:
            system = self._render(self.messages)
            first = self._render(self.messages + [{"role": "user", "content": "?"}], True)
        except TemplateError:             # e.g. a template that wants a user message
            return ""
        return system if first.startswith(system) else ""

    def _snapshot(self, state=None) -> tuple:
        """A copy of the text context (of `state`, else the current one)."""
        cache, ids, chunks, logits = state or (self.cache, self.ids, self.chunks, self.logits)
        return copy.deepcopy(cache), list(ids), [list(c) for c in chunks], logits

    # ------------------------------------------------------------------ a turn
    def ask(self, question: str, script: list[str] | None = None) -> Turn:
        """One user turn and the assistant's answer, tool calls run as they come. `script`: the
        assistant's text, one string per stretch between tool responses, fed instead of
        generated (forced tokens; each stretch ends with the end token, as the model's would)."""
        turn, start = Turn(question), time.perf_counter()
        script = list(script) if script is not None else None
        self._append([{"role": "user", "content": question}])
        while True:
            forced = None if script is None else (script.pop(0) if script else "")
            text, ended = self._write(self.max_tokens - turn.tokens, forced, turn)
            turn.text += text
            self._close({"role": "assistant", "content": text}, ended)
            calls = parse_tool_calls(text)
            if not ended or not calls:
                turn.answer, turn.stopped = _after_calls(text), "end" if ended else "max_tokens"
                break
            results = [self._run(call) for call in calls]
            turn.calls += results
            self._append([{"role": "tool", "content": r.response} for r in results])
            turn.answer = ""
        turn.seconds = time.perf_counter() - start
        return turn

    def _write(self, limit: int, forced: str | None, turn: Turn) -> tuple[str, bool]:
        """The assistant's next stretch of text, up to `limit` tokens: generated greedily over the
        text vocabulary, or `forced`. (text without the end token, whether it ended)."""
        out, shown = [], ""
        if forced is not None:
            ids = (self._encode(forced) + [self.tokenizer.eos_token_id])[:max(limit, 0)]
            if ids:
                self._forward(ids)
            out = ids
        while forced is None and len(out) < limit:
            token = int(torch.argmax(self.logits[: self.text_end]))   # never a GPU token
            self._forward([token])
            out.append(token)
            if token in self.stop_ids:
                break
            shown = self._stream(out, shown)
        ended = bool(out) and out[-1] in self.stop_ids
        turn.tokens += len(out)
        text = self.tokenizer.decode(out[:-1] if ended else out, skip_special_tokens=False)
        if len(text) > len(shown):
            self.events.text(text[len(shown):])
        return text, ended

    def _stream(self, out: list[int], shown: str) -> str:
        text = self.tokenizer.decode(out, skip_special_tokens=False)
        if not text.endswith("\ufffd") and len(text) > len(shown):     # not in a multi-byte character
            self.events.text(text[len(shown):])
            return text
        return shown

    def _run(self, call: ToolCall) -> GpuCall:
        """Run one tool call on the GPU: a launch of its own, from the launch prompt."""
        self.events.call_start(call)
        self._launch, start = GpuCall(call), time.perf_counter()
        self._launch_start = start
        self._launch.response = run_tool_call(self.gpu, call)
        self._launch.seconds = time.perf_counter() - start
        done, self._launch = self._launch, None
        self.events.call_end(done)
        return done

    def _launch_token(self, token) -> None:
        run = self._launch
        if run is not None:
            run.tokens += 1
            run.passes += runs_pass(token)
            self.events.launch_token(run.tokens, run.passes, time.perf_counter() - self._launch_start)

    # ------------------------------------------------------------------ the text context
    def _render(self, messages: list[dict], generation_prompt: bool = False) -> str:
        return self.tokenizer.apply_chat_template(messages, tools=self.tools, tokenize=False,
                                                  add_generation_prompt=generation_prompt,
                                                  enable_thinking=self.thinking)

    def _close(self, message: dict, ended: bool) -> None:
        """Take the assistant's stretch into the conversation. The model has seen its text up to
        the end token; what the template writes after that token comes with the next message (a
        stretch cut at the limit gets the end token too)."""
        self.messages.append(message)
        self._closing = "" if ended else self.tokenizer.eos_token

    def _append(self, new: list[dict]) -> None:
        """Feed the `new` messages (one turn: a user message or a group of tool responses) and the
        assistant's prompt, as the template writes them: its rendering of the longer conversation
        from the new turn's TURN marker on. Only the new turn is taken from that rendering, so a
        template that writes earlier turns differently once more follow (Qwen's drops old
        reasoning) cannot change what the model has already seen."""
        after = self._render(self.messages + new, generation_prompt=True)
        self.messages += new
        if not self.ids:
            return self._forward(self._encode(after))
        starts = [m.start() for m in re.finditer(re.escape(TURN), after)]
        if len(starts) < 2:
            raise ChatError(f"the chat template does not write {TURN} turns (Qwen3.5's chat format)")
        cut, text = starts[-2], after[starts[-2]:]
        if self._closing is not None:     # after a stretch: what the template writes past its end token
            eos = self.tokenizer.eos_token
            text = self._closing + after[after.rindex(eos, 0, cut) + len(eos): cut] + text
        self._closing = None
        self._forward(self._encode(text))

    def _encode(self, text: str) -> list[int]:
        """Text ids only: the name of a GPU token in the text (`<|gpu:HALT|>` in a message or a
        kernel's printf output) is taken as the plain text it is, never as that token."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = []
        for i, (a, b) in zip(enc["input_ids"], enc["offset_mapping"]):
            ids += [i] if i < self.text_end else self.tokenizer(text[a:b], add_special_tokens=False,
                                                                split_special_tokens=True)["input_ids"]
        return ids

    @torch.no_grad()
    def _forward(self, ids: list[int]) -> None:
        x = torch.tensor([ids], dtype=torch.long, device=self.model.device)
        with quiet_transformers():
            out = self.model(input_ids=x, cache=self.cache, use_cache=True, logits_to_keep=1)
        self.logits = out.logits[0, -1].float()
        self.ids += ids
        self.chunks.append(list(ids))


def _after_last(text: str, marker: str) -> str:
    return text.rsplit(marker, 1)[1] if marker in text else ""


def _after_calls(text: str) -> str:
    """The answer of a stretch: its text after its last tool call."""
    return _after_last(text, "</tool_call>").strip() if "</tool_call>" in text else text.strip()
