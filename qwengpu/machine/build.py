"""The machine: its units (one module each, docs/machine.md "Layer map") assembled into one circuit.

The build runs the units in layer order: registers written by tokens (inputs.py, L0), ROM fetch
and decode (fetch.py, L1-L2), warp status and pending writeback (status.py, L2), operands from
the register file (operands.py, L3), the execute stage (execute.py: scheduler, ALU, warp unit,
terminator, L2-L11), the copy-out (copy_unit.py), the load/store unit (lsu.py, L10-L13), the
writeback queues (writeback.py), the atomic unit (atomic.py), then the next token
(next_token.py). A GDN part reads its layer's input; the layer's MLP sees what the GDN added.
Registers and queues whose value has several exclusive sources (a PUT or an ST writes memory)
sum them (circuit.memory.bits). Here too: the isa limits the circuit follows, the host side
(embeddings, fingerprint, readout) and the circuit handed to the merge.
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np

from qwengpu import isa
from qwengpu.errors import MachineLimitError
from qwengpu.circuit.host import HostSpec, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.weights import CircuitWeights
from qwengpu.machine.alu import ALU_OPS
from qwengpu.machine.atomic import build_atomic_unit
from qwengpu.machine.copy_unit import build_copy_unit
from qwengpu.machine.execute import build_execute
from qwengpu.machine.fetch import TERMS, build_fetch
from qwengpu.machine.inputs import build_inputs
from qwengpu.machine.lsu import ADDRESS_BITS, ROW_BITS, build_lsu
from qwengpu.machine.next_token import build_next_token
from qwengpu.machine.operands import REG_ROWS, SREG_ROWS, build_operands
from qwengpu.machine.plan import PLAN
from qwengpu.machine.readout import Readout
from qwengpu.machine.scheduler import build_warp_pcs
from qwengpu.machine.status import build_status
from qwengpu.machine.tokens import FEATURES, KINDS, PUT_TARGETS, SLOTS, Vocab
from qwengpu.machine.words import CTA_BITS, PC_BITS, ROM0, TERM, TID_BITS, WARP_BITS
from qwengpu.machine.writeback import build_writeback


BUILD_SLACK = 1024      # residual dims the build may use past C before Circuit.compact packs them


def check_limits() -> None:
    """MachineLimitError naming the first isa limit the circuit cannot follow, its value and what
    the machine supports. isa is read at call time; what words.py, tokens.py and this module
    derived from it (field widths, SLOTS, LATCH_BITS, lsu.GROUPS) was fixed when they were imported,
    so a limit changed later is judged against those. The vocabulary (tokens.all_tokens) follows
    MAX_GRID_BLOCKS and ROM_BLOCKS at build time: a smaller limit leaves tokens out."""
    for name, allowed, why in _supported_limits():
        value = getattr(isa, name)
        if value not in allowed:
            can = f"exactly {allowed.start}" if len(allowed) == 1 else f"{allowed.start}..{allowed.stop - 1}"
            raise MachineLimitError(f"isa.{name} = {value}, but the machine supports {can}: {why}")


def _supported_limits() -> list[tuple[str, range, str]]:
    """(isa constant, the values the circuit can follow, why)."""
    def exactly(n):
        return range(n, n + 1)

    def upto(*bounds):
        return range(1, min(bounds) + 1)

    regs, blocks = REG_ROWS >> WARP_BITS, SREG_ROWS >> WARP_BITS        # per warp
    reg_bits, target_bits = ROM0["dst"].width, TERM["target"].width
    return [
        ("LANES", exactly(4), "every per-lane unit, bank replica and lane mask is built for 4 lanes"),
        ("MAX_WARPS", exactly(4), "the scheduler, its round-robin turn and the warp fields are built for 4 warps"),
        ("MAX_BLOCK_THREADS", upto(4 * 4, 1 << TID_BITS),
         f"a thread block is at most 4 warps of 4 lanes, its thread indices {TID_BITS}-bit fields of SREG0..1"),
        ("NUM_REGS", upto(regs, 1 << reg_bits),
         f"the register file has rows for {regs} registers per warp, ROM words name them in {reg_bits} bits"),
        ("MAX_GRID_BLOCKS", upto(1 << CTA_BITS, blocks),
         f"thread block indices are {CTA_BITS}-bit fields, the special-register table has rows for {blocks}"),
        ("ROM_BLOCKS", upto(1 << PC_BITS, 1 << ROW_BITS, 1 << target_bits),
         f"pcs are {PC_BITS}-bit fields (the ROM has a row for each), branch targets {target_bits}-bit fields "
         f"of the TERM word, and a bank has at most {1 << ROW_BITS} rows"),
        ("BLOCK_SLOTS", exactly(SLOTS - 1),
         "the ROM's slots and the EXEC slot field were sized when qwengpu.machine.tokens was imported"),
    ] + [(f"{space.name}_WORDS", exactly(1 << bits),
          f"{space.value} memory's banks hold {1 << bits} words, its fault check bounds {bits}-bit word addresses")
         for space, bits in ADDRESS_BITS.items()]


class Machine:
    """The compiled machine for one host shape: circuit, vocabulary, and where state lives."""

    def __init__(self, host: HostSpec, width: int | None = None):
        check_limits()
        self.host = host
        self.vocab = Vocab()
        self.c = c = Circuit(host, width or circuit_width(host, 6000, limit=8192), slack=BUILD_SLACK if width else 0)
        self.f = {name: c.input(name, w) for name, w in FEATURES.items()}
        self.zero = [[c.input("zero", 1)[0]]]          # an always-0 dim: the row-0 address
        self.k = {name: self.f["kind"][i] for i, name in enumerate(KINDS)}
        self.put = {name: self.f["PT"][i] for i, name in enumerate(PUT_TARGETS)}
        self.plan = PLAN
        self.footprint: dict[str, set[int]] = {}     # unit -> the layers it added neurons or GDN heads to
        for name, build_unit in (("inputs", build_inputs), ("fetch", build_fetch), ("status", build_status),
                                 ("operands", build_operands), (None, build_execute), ("copy_unit", build_copy_unit),
                                 ("lsu", build_lsu), ("writeback", build_writeback), ("atomic", build_atomic_unit),
                                 ("warp_pcs", build_warp_pcs), ("next_token", build_next_token)):
            # the execute stage records the scheduler, warp unit, ALU and branch unit as units of their own
            with self.unit(name) if name else nullcontext():
                build_unit(self)
        c.compact()

    @contextmanager
    def unit(self, name: str):
        """Records in footprint[name] the layers whose MLP gets neurons or whose GDN gets heads
        while the block runs (the plan's check: tests/test_machine_plan.py)."""
        def census():
            return [(lay.neuron_count, lay.heads_used) for lay in self.c.layers]
        before = census()
        yield
        after = census()
        before += [(0, 0)] * (len(after) - len(before))
        touched = {i for i, (b, a) in enumerate(zip(before, after)) if a != b}
        self.footprint[name] = self.footprint.get(name, set()) | touched

    # ---- host side -----------------------------------------------------------------------------------------
    def embeddings(self) -> np.ndarray:
        """[len(vocab), C] circuit dims of every GPU token (anchor + features)."""
        lay = self.c.layout
        out = np.zeros((len(self.vocab), lay.width))
        out[:, [d - lay.n for d in lay.anchor.dims]] = lay.anchor_value
        dims = [d - lay.n for name in FEATURES for d in self.f[name].dims]
        out[:, dims] = self.vocab.matrix
        return out

    def fingerprint(self) -> str:
        """sha256 of the compiled circuit (every GDN matrix and neuron) and the vocabulary: a merged
        checkpoint built from another version of the machine has another fingerprint."""
        h = hashlib.sha256(f"C={self.c.layout.width};V={len(self.vocab)}".encode())
        h.update(self.embeddings().astype(np.float32).tobytes())
        for lay in self.c.layers:
            for name in ("qkv", "z", "b", "out"):
                h.update(lay.matrix(name).tobytes())
            h.update(repr(lay.neurons).encode())
        return h.hexdigest()

    @functools.cached_property
    def readout(self) -> Readout:
        """What the host reads the launches' results with (recorded in merged checkpoints)."""
        return Readout(self.vocab, self.global_banks)


def machine_for_host(host: HostSpec, width: int | None = None) -> Machine:
    """The machine for `host`; `width` None sizes the circuit with a probe build first (a wide
    one: seconds and gigabytes), a merged checkpoint's recorded circuit_width skips that."""
    check_limits()                                  # before the caches: isa may have changed since
    return _machine(host, _fitting_width(host) if width is None else width)


@functools.lru_cache(maxsize=4)
def _fitting_width(host: HostSpec) -> int:
    probe = Machine(host)                           # measure the residual it needs, then size C to fit
    return circuit_width(host, probe.c.layout.high_water(), limit=8192)


@functools.lru_cache(maxsize=4)
def _machine(host: HostSpec, width: int) -> Machine:
    return Machine(host, width)


def machine_for(text_config: dict, width: int | None = None) -> Machine:
    return machine_for_host(HostSpec.from_config(text_config), width)


def machine_source_digest() -> str:
    """sha256 of every qwengpu source file: a machine built from the same sources is the same
    machine (it is deterministic), so a merged checkpoint that records this digest needs no
    fingerprint check (which builds the machine)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")) + sorted(root.rglob("*.c")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


# ---- the circuit handed to the merge -------------------------------------------------------------------
MODEL_OPS = frozenset(ALU_OPS) | {"S2R", "LD", "ST", "ATOM", "SHFL", "VOTE"} | set(TERMS)     # what the model engine runs


class LazyLayer(Mapping):
    """One circuit layer's weights, computed when first read (one layer is kept at a time, so a
    merge streams the circuit instead of holding every layer's dense matrices)."""
    _last: tuple = (None, None)

    def __init__(self, layer, intermediate: int):
        self.layer, self.intermediate = layer, intermediate

    def _weights(self) -> dict:
        if LazyLayer._last[0] is not self:
            LazyLayer._last = (None, None)
            LazyLayer._last = (self, self.layer.weights(self.intermediate))
        return LazyLayer._last[1]

    def __getitem__(self, name):
        return self._weights()[name]

    def __iter__(self):
        return iter(self._weights())

    def __len__(self):
        return len(self._weights())


def circuit_weights(m: Machine) -> CircuitWeights:
    intermediate = max(lay.neuron_count for lay in m.c.layers)
    return CircuitWeights(
        width=m.c.layout.width, layers=[LazyLayer(lay, intermediate) for lay in m.c.layers],
        token_names=[m.vocab.name(t) for t in m.vocab.tokens], token_embeddings=m.embeddings(),
        info={"circuit": f"qwengpu machine v1 ({len(m.c.layers)} layers)", "readout": m.readout.to_json()})

