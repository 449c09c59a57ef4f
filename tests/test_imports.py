"""The package's modules import one another without cycles, and the machine and its fast path need
nothing of qwengpu.model but its checkpoint reader: the merge (qwengpu.model) builds on the machine, not
the other way round. Imports are read with ast, function-level ones included, so an import
that only runs when a function is called counts too."""
import ast
from pathlib import Path

import qwengpu

ROOT = Path(qwengpu.__file__).parent
# what the machine's runtime and the fast path may read from qwengpu.model: checkpoint files, and their error
CHECKPOINT_READER = {"qwengpu.model", "qwengpu.model.checkpoint"}
MACHINE = ("qwengpu.machine", "qwengpu.fast")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The qwengpu modules `name` imports anywhere in its source. `from qwengpu import isa`
    imports qwengpu.isa (its package's __init__ runs too, but every module does that)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + [base] if base else up)
            subs = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
            out |= subs if len(subs) == len(node.names) else subs | {base}
    return out & MODULES.keys()


GRAPH = {name: imports(name) for name in MODULES}


def cycle_from(start: str) -> list[str] | None:
    """An import path from `start` back to itself, if there is one."""
    seen, stack = set(), [(start, [start])]
    while stack:
        name, path = stack.pop()
        for nxt in GRAPH[name]:
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def test_the_reader_sees_function_level_imports():
    assert "qwengpu.machine.readout" in GRAPH["qwengpu.machine.runtime"]   # checkpoint_readout's import
    assert "qwengpu.machine.build" in GRAPH["qwengpu.model.circuits"]


def test_no_module_imports_itself_through_others():
    cycles = [" -> ".join(c) for c in map(cycle_from, sorted(GRAPH)) if c]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_machine_imports_nothing_from_the_model_but_the_checkpoint_reader():
    wrong = {name: sorted(m for m in deps if m.startswith("qwengpu.model") and m not in CHECKPOINT_READER)
             for name, deps in GRAPH.items() if name.startswith(MACHINE)}
    assert not {name: deps for name, deps in wrong.items() if deps}
    for reader in CHECKPOINT_READER:          # and the reader needs nothing of the machine's
        assert not {m for m in GRAPH[reader] if m.startswith(MACHINE)}


def test_circuit_weights_come_from_the_circuit_compiler():
    from qwengpu.circuit.weights import CircuitWeights
    from qwengpu.machine import build
    from qwengpu.model import circuits
    assert build.CircuitWeights is circuits.CircuitWeights is CircuitWeights
