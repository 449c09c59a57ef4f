"""Warp status and pending writeback (plan.L_STATUS; the CTA pass's initial masks at L_ROM): each
warp's status in three registers (CT1's half, CT2's, and its wait bit, which CT2 sets at a barrier
and the warp's next EXEC clears), the running warp's status (its mask ANDed with alive: lanes that
exit leave the mask with CT2 alone), the pending instruction that VAL/ST/AT passes write back, and
the lanes a VALU pass writes.

Interface: `build_status(c, tokens, registers, decoded)` reads the token (its status payloads,
warp, pc, slot), the CT1/CT2 warp flags and the continuing token's row (Registers), the config's
initial masks and the instruction's destination (Decoded); returns `WarpStatus`. Layers L_ROM and
L_STATUS.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.fetch import Decoded
from qwengpu.machine.inputs import Registers, TokenInputs
from qwengpu.machine.plan import L_ROM, L_STATUS
from qwengpu.machine.wiring import flag_if, match, part, view
from qwengpu.machine.words import CONFIG, REG_BITS, STATUS, WARP_BITS


@dataclass(frozen=True)
class Status:
    """One warp's status fields (bits): CT1's half (pc, mask, sp), then CT2's."""
    pc: Field      # 7   top-of-stack pc
    mask: Field    # 4   top-of-stack mask as its last CT1 wrote it: read ANDed with alive
    sp: Field      # 3   depth of the top entry
    alive: Field   # 4   lanes that have not exited
    phase: Field   # 2   barriers passed, mod 4
    wait: Field    # 1   arrived at a barrier, not yet run since

    @classmethod
    def of(cls, field: Field) -> "Status":
        return cls(**{name: part(field, STATUS, name) for name in STATUS.fields})


@dataclass(frozen=True)
class WarpStatus:
    """The warps' statuses and what the pending writeback needs of the EXEC pass before it."""
    warps: list[Status]        # each warp's status registers
    running: Status            # the running warp's (EXEC passes), its mask ANDed with alive
    pdst: Field                # the pending instruction's destination register
    patom: Field               # the pending instruction is an ATOM, its dst != r0, its op (4 bits)
    has_wb: Field              # the instruction has a result to write back (dst != r0)
    valu_lane: Field           # lanes a VALU, VALA or VALQ pass writes


def build_status(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded) -> WarpStatus:
    """The warp statuses, the running warp's, and the pending writeback."""
    warps = _warp_statuses(c, tokens, registers, decoded.config)
    running = _running(c, tokens, warps)
    pdst, patom, has_wb = _pending(c, tokens, registers, decoded)
    valu_lane = _whole_warp_lanes(c, tokens, registers, warps)
    return WarpStatus(warps=warps, running=running, pdst=pdst, patom=patom, has_wb=has_wb, valu_lane=valu_lane)


def _warp_statuses(c: Circuit, tokens: TokenInputs, registers: Registers, config: Field) -> list[Status]:
    """Each warp's three registers: CT1's half, CT2's but wait, and wait; a CTA pass writes the
    initial masks (L_ROM MLP), an EXEC clears its warp's wait bit (a warp runs only once released)."""
    f, k, L = tokens.features, tokens.kind, L_STATUS
    masks = [bit for w in range(isa.MAX_WARPS) for bit in CONFIG.bits("mask", w)]
    init_all = c.field("init_all", len(masks), L_ROM)
    for i, bit in enumerate(masks):
        G.relu(c, L_ROM, {config[bit]: 1, k["CTA"]: 1}, -1, {init_all[i]: 1})
    runs = c.field("runs", isa.MAX_WARPS, L_ROM)      # the warp an EXEC runs
    for w in range(isa.MAX_WARPS):
        G.relu(c, L_ROM, {f["W"][w]: 1, k["EXEC"]: 1}, -1, {runs[w]: 1})
    warps = []
    for w in range(isa.MAX_WARPS):
        init = view(init_all, isa.LANES * w, isa.LANES * (w + 1))
        st = Status.of(c.field(f"status{w}", STATUS.width, L))
        halves = (("CT1", B.bits(f["PC"]) + B.bits(f["MASK"], init) + B.bits(f["SP"]), (st.pc, st.mask, st.sp),
                   [registers.ct1h[w]]),
                  ("CT2", B.bits(f["ALIVE"], init) + B.bits(f["PHASE"]), (st.alive, st.phase),
                   [registers.cur1h[w]]),
                  ("wait", B.bits(f["WAIT"]), (st.wait,), [registers.cur1h[w], runs[w]]))
        for name, data, fields, written in halves:
            bank = B.register(c, L, f"status{w}.{name}", len(data))
            B.write_bits(c, bank, tokens.zero, data, written + [k["CTA"]])
            B.read_into(c, bank, tokens.zero, [d for fld in fields for d in fld.dims])
        warps.append(st)
    c.clear(runs, L)
    return warps


def _running(c: Circuit, tokens: TokenInputs, warps: list[Status]) -> Status:
    """L_STATUS MLP: the running warp's status (EXEC passes), its mask ANDed with alive."""
    L = L_STATUS
    cs = c.field("cur_status", STATUS.width, L)
    for w, st in enumerate(warps):
        alive = dict(zip(st.mask.dims, st.alive.dims))
        for i, d in enumerate(sum((list(getattr(st, n).dims) for n in STATUS.fields), [])):
            also = {alive[d]: 1} if d in alive else {}
            G.relu(c, L, {d: 1, tokens.features["W"][w]: 1, **also}, -1 - len(also), {cs[i]: 1})
    return Status.of(cs)


def _pending(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded) -> tuple[Field, Field, Field]:
    """The pending writeback: what VAL and ST passes need of the EXEC pass before them (its warp,
    pc, slot into the token's features; pdst, patom); its destination register in a row by slot
    parity, so that a continuing token (inputs.py) reads its pass's (Registers.wb_row) while it
    writes the next pass's. And has_wb: the instruction has a result to write back."""
    f, k, L, zero = tokens.features, tokens.kind, L_STATUS, tokens.zero
    pdst = c.field("pdst", REG_BITS, L)
    patom = c.field("patom", 6, L)        # the pending instruction is an ATOM, its dst != r0, its op
    data = (B.bits(f["WB"]) + B.bits(f["PC"]) + B.bits(f["SLOT"])
            + B.bits(decoded.op["ATOM"]) + B.bits(decoded.dst_nz) + B.bits(decoded.rom0["mod"]))
    readers = [k["VAL"], k["VALU"], k["VALA"], k["VALQ"], k["VALP"], k["ST"], k["AT"], k["AW"], k["PART"], k["LD"]]
    pend = B.register(c, L, "pending", len(data))
    B.write_bits(c, pend, zero, data, [k["EXEC"]])
    B.read_into(c, pend, zero, f["WB"].dims + f["PC"].dims + f["SLOT"].dims + patom.dims, enable=readers)
    dst = B.declare_bank(c, L, "pending.dst", 2, pdst.width)
    B.write_bits(c, dst, [f["SLOT"].dims[1::2]], B.bits(decoded.rom0["dst"]), [k["EXEC"]])
    B.read_into(c, dst, B.bits(registers.wb_row), pdst.dims, enable=readers + [f["CONT"][0]])
    has_wb = c.field("has_wb", 1, L)
    G.relu(c, L, {decoded.has_result[0]: 1, decoded.dst_nz[0]: 1}, -1, {has_wb[0]: 1})
    return pdst, patom, has_wb


def _whole_warp_lanes(c: Circuit, tokens: TokenInputs, registers: Registers, warps: list[Status]) -> Field:
    """A VALU, VALA or VALQ pass writes every active lane of the pending warp: its status mask is
    the EXEC pass's mask (a status changes only at block ends)."""
    f, k, L = tokens.features, tokens.kind, L_STATUS
    valu_lane = c.field("valu_lane", isa.LANES, L)
    for w, st in enumerate(warps):
        t, k0 = match(f["WB"], w)
        for l in range(isa.LANES):
            whole = {k["VALU"]: 1, k["VALA"]: 1, k["VALQ"]: 1, registers.cont_whole[0]: 1}
            flag_if(c, L, [(t, k0, WARP_BITS), (whole, 0, 1), ({st.mask[l]: 1, st.alive[l]: 1}, 0, 2)],
                    {valu_lane[l]: 1})
    c.clear(registers.wb_row, L)
    c.clear(registers.cont_whole, L)
    return valu_lane
