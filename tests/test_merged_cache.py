"""default_merged_model skips building the machine when the merged checkpoint records the
same source digest (or OUT.source notes that these sources build the same machine), and a
checkpoint's recorded circuit width and readout are those of the machine built for it."""
import json

import pytest

from qwengpu.machine import build as B
from qwengpu.model import merge


def fake_merged(tmp_path, **block):
    out = tmp_path / "merged"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"model_type": "qwen3_5_text",
                                                 "qwengpu": {"readout": {}, **block}}))
    return out


class Rebuilt(Exception):
    pass


def fake_machine(monkeypatch, fingerprint: str) -> list:
    """machine_for gives a machine of this fingerprint (its calls are counted); a rebuild raises Rebuilt."""
    built = []

    class FakeMachine:
        def fingerprint(self):
            return fingerprint
    monkeypatch.setattr(B, "machine_for", lambda *a, **k: built.append(a) or FakeMachine())
    monkeypatch.setattr(B, "circuit_weights", lambda m: (_ for _ in ()).throw(Rebuilt()))
    return built


def test_same_sources_return_without_building_the_machine(tmp_path, monkeypatch):
    out = fake_merged(tmp_path, machine="f" * 64, machine_source=B.machine_source_digest())
    monkeypatch.setattr(B, "machine_for", lambda *a, **k: pytest.fail("the machine was built"))
    assert merge.default_merged_model(out) == out


def test_other_sources_same_machine_are_noted_beside_the_checkpoint_without_rewriting_it(tmp_path, monkeypatch):
    out = fake_merged(tmp_path, machine="a" * 64, machine_source="old", circuit_width=123)
    config = (out / "config.json").read_bytes()
    built = fake_machine(monkeypatch, "a" * 64)
    assert merge.default_merged_model(out) == out
    assert len(built) == 1 and built[0][1] == 123           # built at the recorded width: no width search
    assert (out / "config.json").read_bytes() == config      # the fast path's cache key stays
    assert merge.default_merged_model(out) == out and len(built) == 1      # noted: not built again


def test_a_note_for_another_machine_does_not_count(tmp_path, monkeypatch):
    out = fake_merged(tmp_path, machine="a" * 64, machine_source="old")
    (tmp_path / "merged.source").write_text(f"{'b' * 64} {B.machine_source_digest()}")
    fake_machine(monkeypatch, "c" * 64)
    with pytest.raises(Rebuilt):
        merge.default_merged_model(out)


def test_a_checkpoint_without_a_readout_is_rebuilt(tmp_path, monkeypatch):
    out = fake_merged(tmp_path, machine="a" * 64, machine_source=B.machine_source_digest())
    config = json.loads((out / "config.json").read_text())
    del config["qwengpu"]["readout"]
    (out / "config.json").write_text(json.dumps(config))
    fake_machine(monkeypatch, "a" * 64)
    with pytest.raises(Rebuilt):
        merge.default_merged_model(out)


def test_digest_changes_with_any_source_file(tmp_path, monkeypatch):
    """... but a source edited while a process runs is not that process's machine: it keeps the
    digest of the sources it imported (else it would record new sources beside an old machine)."""
    before = B._source_digest()
    src = B.Path(B.__file__)
    monkeypatch.setattr(B.Path, "read_bytes", lambda self: b"x" if self == src else open(self, "rb").read())
    assert B._source_digest() != before
    assert B.machine_source_digest() == before


def test_the_standin_checkpoint_records_the_width_the_search_finds():
    from qwengpu.circuit.host import HostSpec
    from qwengpu.model.standin import standin_config
    path = merge.default_merged_model()
    block = json.loads((path / "config.json").read_text())["qwengpu"]
    assert block["circuit_width"] == B._fitting_width(HostSpec.from_config(standin_config()))
    machine = B.machine_for(standin_config(), block["circuit_width"])
    assert block["readout"] == machine.readout.to_json()
    assert machine.fingerprint() == block["machine"]
