"""The machine's layer plan (qwengpu/machine/plan.py) against the circuit the build lays out, and
against docs/machine.md's "Layer plan" table.

The build records, for each unit, the layers whose MLP got neurons or whose GDN got heads while
that unit was built (Machine.footprint); each unit's span in PLAN must be exactly the first to
the last of those layers."""
import re
from pathlib import Path

from qwengpu.machine import build
from qwengpu.machine.plan import LAYERS, PLAN
from qwengpu.model.standin import standin_config

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "machine.md"


def machine():
    return build.machine_for(standin_config())      # the stand-in checkpoint's machine, cached


def test_every_unit_built_is_planned():
    assert set(machine().footprint) == set(PLAN)


def test_each_unit_lies_in_its_planned_layers():
    wrong = {}
    for name, span in PLAN.items():
        used = machine().footprint[name]
        if not used or min(used) != span.first or max(used) != span.last:
            wrong[name] = f"plan L{span.first}-L{span.last}, built in {sorted(used)}"
    assert not wrong, wrong


def test_the_plan_covers_the_circuit():
    m = machine()
    assert len(m.c.layers) == LAYERS
    used = set().union(*m.footprint.values())
    busy = {lay.index for lay in m.c.layers if lay.neuron_count or lay.heads_used}
    assert busy <= used, f"layers built outside every unit: {sorted(busy - used)}"


def doc_plan() -> dict[str, tuple[str, int, int]]:
    """docs/machine.md's "Layer plan" table: unit -> (file, first layer, last layer)."""
    text = DOC.read_text()
    section = text.split("\n## Layer plan\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("unit", "---"):
            continue
        layers = re.fullmatch(r"L(\d+)(?:-L(\d+))?", cells[2])
        assert layers, f"docs/machine.md, Layer plan: {cells[2]!r} is not L<a> or L<a>-L<b>"
        first = int(layers[1])
        rows[cells[0]] = (cells[1].strip("`"), first, int(layers[2] or first))
    return rows


def test_the_docs_name_the_planned_layers():
    doc = doc_plan()
    assert set(doc) == set(PLAN)
    wrong = {name: f"docs L{first}-L{last}, plan L{PLAN[name].first}-L{PLAN[name].last}"
             for name, (_, first, last) in doc.items() if (first, last) != (PLAN[name].first, PLAN[name].last)}
    assert not wrong, wrong


def test_the_docs_name_each_units_file():
    missing = [f for f, _, _ in doc_plan().values() if not (ROOT / "qwengpu" / "machine" / f).is_file()]
    assert not missing
