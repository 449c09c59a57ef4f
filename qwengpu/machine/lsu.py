"""The load/store unit (L10-L13): the store queue (address, data and an atomic's operand per
lane, L10), write and load enables per memory group and lane, memory faults (L10-L11), global
memory (8 groups x 4 lane replicas, L11-L12), shared and CONST memory and a load's result in
place of its address (L13)."""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.memory import declare_bank
from qwengpu.circuit.residual import Field
from qwengpu.machine.plan import L_LOAD, L_Q
from qwengpu.machine.wiring import flag_if, match, view
from qwengpu.machine.words import SPACES

ROW_BITS = 7                                   # 128 rows per GDN head
# each space's word address bits, as its banks hold it: global memory is 8 heads of 128 rows
# (GROUPS), shared memory 2 (SHARED_GROUPS), CONST 1
ADDRESS_BITS = {isa.Space.GLOBAL: 10, isa.Space.SHARED: 8, isa.Space.CONST: 7}
GA, SA = ADDRESS_BITS[isa.Space.GLOBAL], ADDRESS_BITS[isa.Space.SHARED]      # word address bits
GROUPS, SHARED_GROUPS = 1 << GA - ROW_BITS, 1 << SA - ROW_BITS


def build_lsu(m) -> None:
    """Adds the store queue, the memories, faults and the loads' results (in r) to machine m."""
    c, f, k = m.c, m.f, m.k
    Lq = L_Q
    # store queue: word address + space, and data, per lane
    m.ma, m.md, m.mb = c.field("ma", GA + len(SPACES), Lq), c.field("md", 32, Lq), c.field("mb", 32, Lq)
    for l in range(4):
        addr = B.register(c, Lq, f"st.addr{l}", GA + len(SPACES))
        data = B.register(c, Lq, f"st.data{l}", 32)
        value = B.register(c, Lq, f"st.b{l}", 32)
        B.write_bits(c, addr, m.zero, B.bits(view(m.r[l], 2, 2 + GA)) + B.bits(m.st_space),
                [m.op["ST"][0], m.op["ATOM"][0]])
        B.write_bits(c, data, m.zero, B.bits(m.cc[l]), [m.op["ST"][0], m.op["ATOM"][0]])
        B.write_bits(c, value, m.zero, B.bits(m.b[l]), [m.op["ATOM"][0]])
        B.read_into(c, addr, m.zero, m.ma.dims, enable=[m.q_addr[l]])
        B.read_into(c, data, m.zero, m.md.dims, enable=[m.q_data[l]])
        B.read_into(c, value, m.zero, m.mb.dims, enable=[m.q_b[l]])
    # Lq MLP: write enables (ST passes and prompt PUTs) and load enables per lane
    waddr = B.bits(view(m.ma, 0, GA), m.latch)
    wdata = B.bits(m.md, m.staged)
    mspace = view(m.ma, GA, GA + len(SPACES))        # one-hot: global, shared, const
    # the two banked spaces: groups, word address bits, the PUT that fills them, write enables, first load enable
    banked = ((GROUPS, GA, "GLOBAL", "gw", 0), (SHARED_GROUPS, SA, "SHARED", "sw", GROUPS))
    we = []
    for space, (groups, bits, target, name, _) in enumerate(banked):
        fld = c.field(name, groups, Lq)
        for g in range(groups):
            t, k0 = match(view(m.ma, ROW_BITS, bits), g)
            flag_if(c, Lq, [({k["ST"]: 1, k["AW"]: 1, mspace[space]: 1}, 0, 2), (t, k0, bits - ROW_BITS)], {fld[g]: 1})
            t, k0 = match(view(m.latch, ROW_BITS, bits), g)
            flag_if(c, Lq, [({m.put[target]: 1}, 0, 1), (t, k0, bits - ROW_BITS)], {fld[g]: 1})
        we.append(fld)
    gw, sw = we
    lg = [c.field(f"lg{l}", GROUPS + SHARED_GROUPS, Lq) for l in range(4)]
    for l in range(4):
        for space, (groups, bits, _, _, first) in enumerate(banked):
            for g in range(groups):
                out = {lg[l][first + g]: 1}
                t, k0 = match(view(m.r[l], 2 + ROW_BITS, 2 + bits), g)
                flag_if(c, Lq, [({m.ld_space[space]: 1}, 0, 1), (t, k0, bits - ROW_BITS)], out)
                t, k0 = match(view(m.ma, ROW_BITS, bits), g)
                flag_if(c, Lq, [({k["AT"]: 1, f["LANE"][l]: 1, mspace[space]: 1}, 0, 3), (t, k0, bits - ROW_BITS)], out)
    _faults(m, Lq)
    m.loaded = [c.field(f"loaded{l}", 32, Lq + 1) for l in range(4)]
    m.global_banks = []
    wrow = waddr[:ROW_BITS]
    for g in range(GROUPS):
        bank = declare_bank(c, Lq + 1 + g // 4, f"global{g}", 1 << ROW_BITS, 32, replicas=4)
        m.global_banks.append(bank)
        B.write_bits(c, bank, wrow, wdata, [gw[g]])
        for l in range(4):
            B.read_into(c, bank, _lane_row(m, l), m.loaded[l].dims, l, [lg[l][g]])
    Lm = L_LOAD
    for g in range(SHARED_GROUPS):
        bank = declare_bank(c, Lm, f"shared{g}", 1 << ROW_BITS, 32, replicas=4)
        B.write_bits(c, bank, wrow, wdata, [sw[g]])
        for l in range(4):
            B.read_into(c, bank, _lane_row(m, l), m.loaded[l].dims, l,
                   [lg[l][GROUPS + g]])
    const = declare_bank(c, Lm, "const", 1 << ROW_BITS, 32, replicas=4)
    B.write_bits(c, const, wrow, wdata, [m.put["CONST"]])
    for l in range(4):
        B.read_into(c, const, _lane_row(m, l), m.loaded[l].dims, l,
               [m.ld_space[2]])
    # Lm MLP: a load's result replaces its address
    is_ld = sum(([m.ld_space[g]] for g in range(3)), [])
    for l in range(4):
        for i in range(32):
            G.relu(c, Lm, {m.r[l][i]: 1, **{d: 1 for d in is_ld}}, -1, {m.r[l][i]: -1})
        G.copy_bits(c, Lm, m.loaded[l], Field("r", m.r[l].dims, "bits", Lm))
        c.clear(m.loaded[l], Lm)


def _faults(m, Lq):
    """A load, store or atomic of an active lane at a misaligned or out-of-range address (or a
    store to CONST) makes the pass emit FAULT instead of its next token."""
    c = m.c
    limits = {g: 2 + ADDRESS_BITS[space] for g, space in enumerate(SPACES)}     # byte address bits
    bad = c.field("bad", 16, Lq)
    for l in range(4):
        for g, top in limits.items():
            flags = {m.ld_space[g]: 64, m.st_space[g]: 64}
            out_of_range = {m.r[l][i]: 1 for i in [0, 1] + list(range(top, 32))}
            G.step(c, Lq, {**out_of_range, **flags, m.cs.mask[l]: 64}, 129, {bad[4 * l + g]: 1})
        G.relu(c, Lq, {m.st_space[2]: 1, m.cs.mask[l]: 1}, -1, {bad[4 * l + 3]: 1})
    m.fault = c.field("fault", 1, Lq + 1)
    G.step(c, Lq + 1, {d: 1 for d in bad.dims}, 1, {m.fault[0]: 1})
    c.clear(bad, Lq + 1)


def _lane_row(m, l):
    """Lane l's memory row: its address register on EXEC passes, the store queue's on AT passes."""
    return B.bits(view(m.r[l], 2, 2 + ROW_BITS), view(m.ma, 0, ROW_BITS))
