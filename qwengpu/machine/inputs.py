"""Registers written by tokens (L0): the staged word (a PUT's or VAL's parts), the latch, the
current warp, the thread block, and the per-lane enables the store queue and register file
read; each lane's word of a VALA, VALQ or VALP; which warp ended a block (on its CT1 and CT2 passes) or may
end it now; and a continuing token made the EXEC of its block's next pass."""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.residual import Field
from qwengpu.machine.plan import L_IN
from qwengpu.machine.tokens import AP_STRIDES, CONTINUABLE, P_BITS, Q_BITS, SLOTS
from qwengpu.machine.wiring import flag_if, match, view
from qwengpu.machine.words import PARTS, PC_BITS, WARP_BITS

# the passes after an EXEC that may end its warp's block
ENDS = ("CT1", "CT2", "VAL", "VALU", "VALA", "VALQ", "VALP", "ST", "AW")


def build_inputs(m) -> None:
    """Adds the L0 registers and enables to machine m."""
    c, f, k = m.c, m.f, m.k
    m.staged = c.field("staged", 32, L_IN)
    for j, bits in enumerate(PARTS):
        bank = B.register(c, L_IN, f"stage{j}", len(bits))
        B.write_bits(c, bank, m.zero, B.bits(view(f["SD"], bits.start, bits.stop)), [f["SE"][j]])
        B.read_into(c, bank, m.zero, m.staged.dims[bits.start: bits.stop],
                    enable=[k["PUT"], k["VAL"], k["VALU"], k["AW"]])
    m.latch = _register(m, "latch", f["V"], k["LATCH"], [k["PUT"]])
    ends = [k[n] for n in ENDS]
    m.cur = _register(m, "cur", f["WB"], k["EXEC"], ends)
    m.cta = _register(m, "cta", f["CTA"], k["CTA"], None)
    _progression(m)
    _continuation(m)
    # L0 MLP: per-lane enables
    m.val_lane = c.field("val_lane", 4, L_IN)
    m.q_addr = c.field("q_addr", 4, L_IN)     # store queue lane reads: ST, AT, AW passes
    m.q_data = c.field("q_data", 4, L_IN)     # ST, AT
    m.q_b = c.field("q_b", 4, L_IN)           # AT
    # the warp that ended a block, one-hot: ct1h on its CT1 pass, cur1h on its CT2 pass; ender
    # on every pass that may end its block (and so schedule the next warp): these, its EXEC
    # and the writeback tokens that follow it
    m.ct1h, m.cur1h = c.field("ct1h", 4, L_IN), c.field("cur1h", 4, L_IN)
    m.ender = c.field("ender", 4, L_IN)
    for l in range(4):
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["VAL"]: 1, k["VALP"]: 1}, -1, {m.val_lane[l]: 1})
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["ST"]: 1, k["AT"]: 1, k["AW"]: 1}, -1, {m.q_addr[l]: 1})
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["ST"]: 1, k["AT"]: 1}, -1, {m.q_data[l]: 1})
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["AT"]: 1}, -1, {m.q_b[l]: 1})
        t, k0 = match(m.cur, l)
        flag_if(c, L_IN, [(t, k0, 2), ({k["CT1"]: 1}, 0, 1)], {m.ct1h[l]: 1})
        flag_if(c, L_IN, [(t, k0, 2), ({k["CT2"]: 1}, 0, 1)], {m.cur1h[l]: 1})
        flag_if(c, L_IN, [(t, k0, 2), ({d: 1 for d in ends}, 0, 1)], {m.ender[l]: 1})
        G.relu(c, L_IN, {f["W"][l]: 1, k["EXEC"]: 1}, -1, {m.ender[l]: 1})


def _progression(m) -> None:
    """m.ap_data: each lane's word of a VALA(s, d) pass, (d + s * lane) mod 2 ** 12, of a VALQ(d)
    pass, its Q_BITS bits of d, or of a VALP(p, d) pass, its P_BITS bits of d (0 on other passes),
    which the register file writes on the pass's active lanes (VALP: on its two lanes)."""
    c, f = m.c, m.f
    width = len(PARTS[0])
    sd = [f["SD"][i] for i in PARTS[0]]
    m.ap_data = [c.field(f"ap_data{l}", width, L_IN) for l in range(isa.LANES)]
    for i, d in enumerate(sd):
        G.relu(c, L_IN, {d: 1, m.k["VALA"]: 1}, -1, {m.ap_data[0][i]: 1})
    for l in range(1, isa.LANES):
        for gate, stride in zip(f["STRIDE"].dims, AP_STRIDES):
            G.plus_constant(c, L_IN, sd, stride * l, m.ap_data[l], gate)
    for l in range(isa.LANES):
        for i in range(Q_BITS):
            G.relu(c, L_IN, {sd[Q_BITS * l + i]: 1, m.k["VALQ"]: 1}, -1, {m.ap_data[l][i]: 1})
        for i in range(P_BITS):
            G.relu(c, L_IN, {sd[P_BITS * (l % 2) + i]: 1, m.k["VALP"]: 1}, -1, {m.ap_data[l][i]: 1})


def _continuation(m) -> None:
    """A continuing token (CONT) writes back the last result of its pass and runs the next pass of
    the block: the L0 MLP gives every later unit an EXEC of the current warp (W, WB from cur),
    the latched pc and the slot after the last pass's (a counter: EXEC sets it, a continuing token
    steps it), and clears the token's own kind and lane. What its writeback needs later is
    private: m.cont_whole (a continuing VALU, VALA or VALQ writes every active lane) and m.wb_row,
    the row of the pending destination (status.py: a pass's row is its slot's parity, so a
    continuing token reads the pass before's while it writes its own)."""
    c, f, k = m.c, m.f, m.k
    cont = f["CONT"][0]
    pc = B.register(c, L_IN, "pc", PC_BITS)
    B.write_bits(c, pc, m.zero, B.bits(f["PC"]), [k["EXEC"]])
    B.read_into(c, pc, m.zero, f["PC"].dims, enable=[cont])
    slot = B.counter(c, L_IN, "slot", list(f["SLOT"].dims), [cont])
    m.wb_row = c.field("wb_row", 1, L_IN)
    for s in range(SLOTS):
        B.count_is(c, L_IN, slot, s, {f["SLOT"][s]: 1}, when={cont: 1}, need=1)
        B.count_is(c, L_IN, slot, s, {m.wb_row[0]: 1}, when={cont: 1}, need=int(s % 2 == 0))
    c.clear(slot, L_IN)
    for i in range(WARP_BITS):
        G.relu(c, L_IN, {m.cur[i]: 1, cont: 1}, -1, {f["WB"][i]: 1})
    for w in range(isa.MAX_WARPS):
        t, k0 = match(m.cur, w)
        flag_if(c, L_IN, [(t, k0, WARP_BITS), ({cont: 1}, 0, 1)], {f["W"][w]: 1})
    G.relu(c, L_IN, {cont: 1}, 0, {k["EXEC"]: 1})
    for name in CONTINUABLE:
        G.relu(c, L_IN, {k[name]: 1, cont: 1}, -1, {k[name]: -1})
    for d in f["LANE"].dims:
        G.relu(c, L_IN, {d: 1, cont: 1}, -1, {d: -1})
    m.cont_whole = c.field("cont_whole", 1, L_IN)
    G.relu(c, L_IN, {cont: 1, k["VALU"]: 1, k["VALA"]: 1, k["VALQ"]: 1}, -1, {m.cont_whole[0]: 1})


def _register(m, name, data: Field, write_en: int, read_en) -> Field:
    bank = B.register(m.c, L_IN, name, data.width)
    out = m.c.field(name, data.width, L_IN)
    B.write_bits(m.c, bank, m.zero, B.bits(data), [write_en])
    B.read_into(m.c, bank, m.zero, out.dims, enable=read_en)
    return out
