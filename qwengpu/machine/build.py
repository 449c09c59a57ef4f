"""The machine: its units (one module each, docs/machine.md "Layer plan") assembled into one circuit.

`Machine.__init__` is the wiring: it builds the units in layer order (plan.py has each one's
layers), each from the port bundles it reads, and passes on the bundle it returns: the token's
features (inputs.TokenInputs) -> the registers tokens write (Registers) -> ROM fetch and decode
(Decoded) -> warp status and pending writeback (WarpStatus) -> the pre-ALU's operands -> the
execute stage (execute.py: the scheduler's Schedule, the pre-ALU, the ALU's operands, the warp
unit and the ALU's LaneResults, the branch unit's StatusUpdate, the FPU, which adds its result
into the ALU's) -> the copy-out (CopyOut) -> the load/store unit (Memory) -> the writeback
queues (Queues) -> the atomic unit (AtomicResult) -> each warp's next pc (NextPc) -> the next
token. A GDN part reads its layer's input; the layer's
MLP sees what the GDN added. Registers and queues whose value has several exclusive sources (a
PUT or an ST writes memory) sum them (circuit.memory.bits). Here too: the isa limits the circuit
follows, the host side (embeddings, fingerprint, readout) and the circuit handed to the merge.
"""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from qwengpu import isa
from qwengpu.errors import MachineLimitError
from qwengpu.circuit import ResidualFullError
from qwengpu.circuit.host import HostSpec, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.weights import CircuitWeights
from qwengpu.machine.alu import ALU_OPS
from qwengpu.machine.atomic import ATOM_OPS, build_atomic_unit
from qwengpu.machine.copy_unit import build_copy_unit
from qwengpu.machine.execute import (build_alu_unit, build_branch_unit, build_fpu_unit, build_pre_alu,
                                     build_schedule, build_warp_unit, check_execute_end)
from qwengpu.machine.fetch import TERMS, build_fetch
from qwengpu.machine.fpu import FPU_OPCODES
from qwengpu.machine.inputs import build_inputs, token_inputs
from qwengpu.machine.lsu import ADDRESS_BITS, LANE_BITS, ROW_BITS, build_lsu
from qwengpu.machine.next_token import build_next_token
from qwengpu.machine.operands import BLOCK_BANKS, BLOCK_ROWS, REG_ROWS, build_alu_operands, build_pre_operands
from qwengpu.machine.plan import PLAN
from qwengpu.machine.readout import Readout
from qwengpu.machine.scheduler import build_warp_pcs
from qwengpu.machine.status import build_status
from qwengpu.machine.tokens import FEATURES, SLOTS, Vocab
from qwengpu.machine.words import CTA_BITS, PC_BITS, ROM0, TERM, TID_BITS, WARP_BITS
from qwengpu.machine.writeback import build_writeback


BUILD_SLACK = 1024      # residual dims the build may use past C before Circuit.compact packs them
MAX_WIDTH = 8192        # the widest circuit (C) a host is given


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

    regs, blocks = REG_ROWS >> WARP_BITS, BLOCK_ROWS * BLOCK_BANKS       # registers per warp, thread blocks
    reg_bits, target_bits = ROM0["dst"].width, TERM["target"].width
    return [
        ("LANES", exactly(4), "every per-lane unit, bank replica and lane mask is built for 4 lanes"),
        ("MAX_WARPS", exactly(4), "the scheduler, its round-robin turn and the warp fields are built for 4 warps"),
        ("MACHINE_BLOCK_THREADS", upto(4 * 4, 1 << TID_BITS),
         f"the machine runs a block of at most 4 warps of 4 lanes, its thread indices {TID_BITS}-bit fields of SREG0..1"),
        ("NUM_REGS", upto(regs, 1 << reg_bits),
         f"the register file has rows for {regs} registers per warp, ROM words name them in {reg_bits} bits"),
        ("MAX_GRID_BLOCKS", upto(1 << CTA_BITS, blocks),
         f"thread block indices are {CTA_BITS}-bit fields, the special-register table has rows for {blocks}"),
        ("ROM_BLOCKS", upto(1 << PC_BITS, 1 << ROW_BITS, 1 << target_bits),
         f"pcs are {PC_BITS}-bit fields (the ROM has a row for each), branch targets {target_bits}-bit fields "
         f"of the TERM word, and a bank has at most {1 << ROW_BITS} rows"),
        ("BLOCK_SLOTS", exactly(SLOTS - 1),
         "the ROM's slots and the EXEC slot field were sized when qwengpu.machine.tokens was imported"),
    ] + [(f"LANE_{space.name}_WORDS", exactly(1 << bits), f"the {space.value} banks every lane reads in one pass "
          f"hold {1 << bits} words")
         for space, bits in LANE_BITS.items()] + [(f"{space.name}_WORDS", exactly(1 << bits),
          f"{space.value} memory's banks hold {1 << bits} words, its fault check bounds {bits}-bit word addresses")
         for space, bits in ADDRESS_BITS.items()]


class Machine:
    """The compiled machine for one host shape: its circuit and vocabulary, the token features the
    host embeds, global memory's banks (readout), and the layers each unit was built in."""

    def __init__(self, host: HostSpec, width: int):
        """ResidualFullError when the machine does not fit in `width` circuit dims."""
        check_limits()
        self.host = host
        self.vocab = Vocab()
        self.c = c = Circuit(host, width, slack=BUILD_SLACK)
        self.tokens = tokens = token_inputs(c)
        self.plan = PLAN
        self.footprint: dict[str, set[int]] = {}     # unit -> the layers it added neurons or GDN heads to
        unit = self._unit
        registers = unit("inputs", build_inputs, c, tokens)
        decoded = unit("fetch", build_fetch, c, tokens, registers)
        status = unit("status", build_status, c, tokens, registers, decoded)
        pre_operands = unit("operands", build_pre_operands, c, tokens, registers, decoded, status)
        schedule = unit("scheduler", build_schedule, c, tokens, registers, decoded, status)
        pre_result = unit("pre_alu", build_pre_alu, c, decoded, pre_operands)
        operands = unit("operands", build_alu_operands, c, tokens, registers, decoded, status, pre_operands,
                        pre_result)
        warp_result = unit("warp", build_warp_unit, c, decoded, operands, status)
        results = unit("alu", build_alu_unit, c, decoded, operands, warp_result)
        update = unit("branch", build_branch_unit, c, tokens, decoded, operands, status)
        check_execute_end(schedule, warp_result, results, update)
        unit("fpu", build_fpu_unit, c, decoded, operands, results)     # into results.r, read at L_WB
        copy = unit("copy_unit", build_copy_unit, c, tokens, registers, status, results)
        memory = unit("lsu", build_lsu, c, tokens, registers, decoded, status, operands, results)
        queues = unit("writeback", build_writeback, c, tokens, decoded, status, results, update, copy)
        atomic = unit("atomic", build_atomic_unit, c, tokens, status, results, memory)
        next_pc = unit("warp_pcs", build_warp_pcs, c, tokens, decoded, update, schedule)
        unit("next_token", build_next_token, c, tokens, registers, decoded, status, results, update, copy, memory,
             queues, atomic, schedule, next_pc)
        self.global_banks = memory.global_banks      # where the host reads global memory (readout)
        c.compact()
        moved = c.fit_mlps(host.intermediate)        # a host with narrower MLPs gets more layers
        for bank in self.global_banks:
            bank.layer = moved[bank.layer]

    def _unit(self, name: str, build_unit, *ports):
        """build_unit(*ports), recording in footprint[name] the layers whose MLP gets neurons or
        whose GDN gets heads meanwhile (the plan's check: tests/test_machine_plan.py)."""
        def census():
            return [(lay.neuron_count, lay.heads_used) for lay in self.c.layers]
        before = census()
        out = build_unit(*ports)
        after = census()
        before += [(0, 0)] * (len(after) - len(before))
        touched = {i for i, (b, a) in enumerate(zip(before, after)) if a != b}
        self.footprint[name] = self.footprint.get(name, set()) | touched
        return out

    # ---- host side -----------------------------------------------------------------------------------------
    def embeddings(self) -> np.ndarray:
        """[len(vocab), C] circuit dims of every GPU token: the anchor, a power of two, on its dims
        and the token's features (0 or 1) on theirs. float32 holds them exactly in half the
        memory of float64 (a 2B host's matrix is 2 GB)."""
        anchor, features = self._embedding_dims()
        out = np.zeros((len(self.vocab), self.c.layout.width), np.float32)
        out[:, anchor] = self.c.layout.anchor_value
        out[:, features] = self.vocab.matrix
        return out

    def _embedding_dims(self) -> tuple[list[int], list[int]]:
        """The circuit dims (0-based) of the anchor and of the vocabulary's feature columns."""
        lay = self.c.layout
        return ([d - lay.n for d in lay.anchor.dims],
                [d - lay.n for name in FEATURES for d in self.tokens.features[name].dims])

    def fingerprint(self) -> str:
        """sha256 of the compiled circuit (every GDN matrix and neuron), the vocabulary and the readout
        (where the host finds global memory's words: it may change with no weight changing): a merged
        checkpoint built from another version of the machine has another fingerprint. The token
        embeddings enter as what determines them (embeddings()), not as the dense matrix."""
        h = hashlib.sha256(f"C={self.c.layout.width};V={len(self.vocab)}".encode())
        h.update(json.dumps(self.readout.to_json(), sort_keys=True).encode())
        h.update(repr((self._embedding_dims(), self.c.layout.anchor_value)).encode())
        h.update(self.vocab.matrix.astype(np.float32).tobytes())
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
    """The machine for `host` in `width` circuit dims; None: the smallest width it fits in (a
    merged checkpoint's recorded circuit_width skips that search)."""
    check_limits()                                  # before the caches: isa may have changed since
    if width is not None and width > MAX_WIDTH:
        raise MachineLimitError(f"a circuit of {width} residual dims; the machine is built for at most {MAX_WIDTH}")
    return _machine(host, _fitting_width(host) if width is None else width)


HIGH_WATER_HINT = 1974       # the residual dims the machine last needed: where the width search starts


@functools.lru_cache(maxsize=4)
def _fitting_width(host: HostSpec) -> int:
    """The smallest valid C (circuit_width) the machine fits in. A build packs its fields into
    its width or raises ResidualFullError, and its high water names the smallest width worth
    trying next; from HIGH_WATER_HINT one build settles it (a stale hint costs builds, never
    the width). The builds are _machine's, so the one that fits is cached."""
    def fits(width: int) -> bool:
        try:
            _machine(host, width)
            return True
        except ResidualFullError:
            return False

    width = circuit_width(host, HIGH_WATER_HINT, limit=MAX_WIDTH)
    while not fits(width):
        width = circuit_width(host, width + 1, limit=MAX_WIDTH)
    while (smaller := circuit_width(host, _machine(host, width).c.layout.high_water(), limit=MAX_WIDTH)) < width \
            and fits(smaller):
        width = smaller
    return width


@functools.lru_cache(maxsize=4)
def _machine(host: HostSpec, width: int) -> Machine:
    return Machine(host, width)


def machine_for(text_config: dict, width: int | None = None) -> Machine:
    return machine_for_host(HostSpec.from_config(text_config), width)


def _source_digest() -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")) + sorted(root.rglob("*.c")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


_SOURCE_DIGEST = _source_digest()       # the sources as imported: files edited later are not this process's machine


def machine_source_digest() -> str:
    """sha256 of every qwengpu source file when this module was imported: a machine built from the
    same sources is the same machine (it is deterministic), so a merged checkpoint that records
    this digest needs no fingerprint check (which builds the machine)."""
    return _SOURCE_DIGEST


# ---- the circuit handed to the merge -------------------------------------------------------------------
# what the model engine runs: opcodes, terminators, and each atomic operation as ATOM.<AtomOp>
MODEL_OPS = (frozenset(ALU_OPS) | {"S2R", "LD", "ST", "ATOM", "SHFL", "VOTE"} | set(FPU_OPCODES) | set(TERMS)
             | {f"ATOM.{a}" for a in ATOM_OPS})


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

