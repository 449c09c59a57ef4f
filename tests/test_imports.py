"""The package's modules import one another without cycles and only from their own floor or
below (FLOORS, the layering docs/architecture.md draws), the fast path needs nothing of
qwengpu.model but its checkpoint reader, and nothing in the product imports the test oracles
(qwengpu.testing). Imports are read with ast, function-level ones included, so an import that
only runs when a function is called counts too."""
import ast
from pathlib import Path

import qwengpu

ROOT = Path(qwengpu.__file__).parent
# what the fast path may read from qwengpu.model: checkpoint files, and their error
CHECKPOINT_READER = {"qwengpu.model", "qwengpu.model.checkpoint"}
# lowest first; a module belongs to the first entry that names it or a package above it
CONTRACT = ["qwengpu.machine.words", "qwengpu.machine.tokens", "qwengpu.machine.encoding"]
FLOORS = [
    ["qwengpu.errors", "qwengpu.fp32", "qwengpu.isa", "qwengpu.liveness", "qwengpu.dtypes"],  # machine definition; liveness; dtypes
    ["qwengpu.interp", "qwengpu.launch", "qwengpu.printf", "qwengpu.args"] + CONTRACT,   # semantics, contract
    ["qwengpu.toolchain", "qwengpu.circuit"],                            # CUDA -> program; weight compiler
    ["qwengpu.machine"],                                                 # the circuit's units and assembly
    ["qwengpu.model", "qwengpu.fast"],                                   # merged checkpoints; the exact fast path
    ["qwengpu.driver"],                                                  # a launch on the model: the host side
    ["qwengpu.engines"],                                                 # other inference engines
    ["qwengpu.api"],                                                     # Device, Module, Function
    ["qwengpu.suite", "qwengpu.chat", "qwengpu.digits"],                 # workloads: the suite, the chat, the digit classifier
    ["qwengpu.bench"],
    ["qwengpu.cli", "qwengpu"],                                          # the command; the package's facade
    ["qwengpu.testing"],                                                 # test oracles: nothing above
]


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
    assert "qwengpu.machine.readout" in GRAPH["qwengpu.driver.runtime"]   # checkpoint_readout's import
    assert "qwengpu.machine.build" in GRAPH["qwengpu.model.circuits"]


def test_no_module_imports_itself_through_others():
    cycles = [" -> ".join(c) for c in map(cycle_from, sorted(GRAPH)) if c]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def floor(name: str) -> int:
    for level, members in enumerate(FLOORS):
        if any(name == m or name.startswith(m + ".") for m in members if m != "qwengpu") or name in members:
            return level
    raise AssertionError(f"{name} is on no floor: add it to FLOORS")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{name} (floor {floor(name)}) imports {dep} (floor {floor(dep)})"
                  for name, deps in graph.items() for dep in deps if floor(dep) > floor(name))


def test_every_module_imports_only_from_its_floor_or_below():
    assert not upward_imports(GRAPH), "\n".join(upward_imports(GRAPH))


def test_the_floor_check_refuses_the_imports_that_once_ran_back_up():
    # the runtime inside the machine read checkpoints; an engines module imported the API
    assert upward_imports({"qwengpu.machine.runtime": {"qwengpu.model.checkpoint"}})
    assert upward_imports({"qwengpu.engines.reference": {"qwengpu.api", "qwengpu.suite"}})
    assert not upward_imports({"qwengpu.driver.runtime": {"qwengpu.model.checkpoint"}})


def test_the_fast_path_imports_nothing_from_the_model_but_the_checkpoint_reader():
    wrong = {name: sorted(m for m in deps if m.startswith("qwengpu.model") and m not in CHECKPOINT_READER)
             for name, deps in GRAPH.items() if name.startswith("qwengpu.fast")}
    assert not {name: deps for name, deps in wrong.items() if deps}
    for reader in CHECKPOINT_READER:          # and the reader needs nothing of the fast path's
        assert not {m for m in GRAPH[reader] if m.startswith("qwengpu.fast")}


def test_circuit_weights_come_from_the_circuit_compiler():
    from qwengpu.circuit.weights import CircuitWeights
    from qwengpu.machine import build
    from qwengpu.model import circuits
    assert build.CircuitWeights is circuits.CircuitWeights is CircuitWeights
