"""default_merged_model skips building the machine when the merged checkpoint records the
same source digest, and a checkpoint's recorded circuit width builds the same machine."""
import json

import pytest

from qwengpu.machine import build as B
from qwengpu.model import merge


def fake_merged(tmp_path, **block):
    out = tmp_path / "merged"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"model_type": "qwen3_5_text", "qwengpu": block}))
    return out


def test_same_sources_return_without_building_the_machine(tmp_path, monkeypatch):
    out = fake_merged(tmp_path, machine="f" * 64, machine_source=B.machine_source_digest())
    monkeypatch.setattr(B, "machine_for", lambda *a, **k: pytest.fail("the machine was built"))
    assert merge.default_merged_model(out) == out


def test_other_sources_same_machine_records_the_digest_without_rebuilding(tmp_path, monkeypatch):
    class FakeMachine:
        def fingerprint(self):
            return "a" * 64
    out = fake_merged(tmp_path, machine="a" * 64, machine_source="old")
    monkeypatch.setattr(B, "machine_for", lambda *a, **k: FakeMachine())
    monkeypatch.setattr(B, "circuit_weights", lambda m: pytest.fail("rebuilt"))
    assert merge.default_merged_model(out) == out
    assert json.loads((out / "config.json").read_text())["qwengpu"]["machine_source"] == B.machine_source_digest()


def test_digest_changes_with_any_source_file(tmp_path, monkeypatch):
    before = B.machine_source_digest()
    src = B.Path(B.__file__)
    monkeypatch.setattr(B.Path, "read_bytes", lambda self: b"x" if self == src else open(self, "rb").read())
    assert B.machine_source_digest() != before


def test_the_standin_checkpoint_records_the_width_the_probe_finds():
    from qwengpu.circuit.host import HostSpec
    from qwengpu.model.standin import standin_config
    path = merge.default_merged_model()
    block = json.loads((path / "config.json").read_text())["qwengpu"]
    assert block["circuit_width"] == B._fitting_width(HostSpec.from_config(standin_config()))
    assert block["machine_source"] == B.machine_source_digest()
