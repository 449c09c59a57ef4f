"""The load/store unit (L_Q to L_MOVE): the store queue (address and space, data and an atomic's
operand per lane, L_Q), write and load enables per memory group and lane, memory faults (L_Q,
L_Q + 1), the lane words of global memory (8 groups x 4 lane replicas, L_Q + 1 and L_Q + 2), of
shared and CONST memory and a load's result in place of its address (L_LOAD), and the paged
words (one copy, from L_PAGED - 1), which LD and AT passes read for one lane.

Docs/machine.md, step 28: each space's first words (isa.LANE_WORDS) are replicated per lane, so
that a warp's load reads all four lanes in its EXEC pass. The words above live once, in four
banks by address mod 4: a load with an active lane there goes lane by lane (`slow`): its EXEC
pass queues each lane's address, and an LD(l) pass per active lane reads lane l's word from the
queue's address (for a lane word, from lane l's replica, as an AT pass does). Each paged head is
addressed by the whole word address, so all of them share one query and only the head holding
the word answers; a word read lands in the result of the lane its bank is named for and moves
to the LD's lane at L_MOVE.

Interface: `build_lsu(c, tokens, registers, decoded, status, operands, results)` reads the
store queue's enables and a PUT's staged word and latch (Registers), the spaces of a load, store
or atomic (Decoded), the running warp's mask, the ALU's operands (a store's data, an atomic's b)
and each lane's address in its result; a load's word replaces the address there. Returns `Memory`.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.memory import Bank, declare_bank
from qwengpu.circuit.residual import Field
from qwengpu.machine.alu import LaneResults
from qwengpu.machine.fetch import Decoded
from qwengpu.machine.inputs import Registers, TokenInputs
from qwengpu.machine.operands import AluOperands
from qwengpu.machine.plan import L_ATOM, L_LOAD, L_MOVE, L_PAGED, L_Q, PAGED_LAYERS
from qwengpu.machine.status import WarpStatus
from qwengpu.machine.wiring import flag_if, match, view
from qwengpu.machine.words import SPACES

ROW_BITS = 7                                   # 128 rows per GDN head
# each space's word address bits, and those of its lane words (replicated per lane: global
# memory's are 8 heads of 128 rows (GROUPS), shared memory's 2 (SHARED_GROUPS), CONST's 1); the
# words above them are paged
ADDRESS_BITS = {isa.Space.GLOBAL: 14, isa.Space.SHARED: 11, isa.Space.CONST: 11}
LANE_BITS = {isa.Space.GLOBAL: 10, isa.Space.SHARED: 8, isa.Space.CONST: 7}
GA, SA = ADDRESS_BITS[isa.Space.GLOBAL], ADDRESS_BITS[isa.Space.SHARED]      # word address bits
GROUPS, SHARED_GROUPS, CONST_GROUPS = (1 << LANE_BITS[space] - ROW_BITS for space in SPACES)
PAGED_BANKS = 4                                # the paged words: bank b holds the words = b mod 4


@dataclass(frozen=True)
class Memory:
    """What the memories give the units after them, and the host."""
    store_data: Field          # the store queue's head: a store's data, an atomic's c
    store_b: Field             # ... an atomic's b
    fault: Field               # a memory fault: the pass emits FAULT
    global_banks: list[Bank]   # global memory's banks (the host reads it back: readout.py)
    slow: Field                # a load with an active lane above its space's lane words: LD passes write it back


def build_lsu(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded, status: WarpStatus,
              operands: AluOperands, results: LaneResults) -> Memory:
    """The store queue, the memories, faults and the loads' results (in the lanes' results)."""
    f, k, regs, r, Lq = tokens.features, tokens.kind, registers, results.r, L_Q
    ma, md, mb = _store_queue(c, tokens, registers, decoded, operands, results)
    # Lq MLP: write enables (ST passes and prompt PUTs) and load enables per lane
    waddr = B.bits(view(ma, 0, GA), regs.latch)
    wdata = B.bits(md, regs.staged)
    mspace = view(ma, GA, GA + len(SPACES))        # one-hot: global, shared, const
    # the lane words of each space: groups, word address bits, the PUT that fills them, write enables, first load enable
    banked = ((GROUPS, GA, "GLOBAL", "gw", 0), (SHARED_GROUPS, SA, "SHARED", "sw", GROUPS),
              (CONST_GROUPS, ADDRESS_BITS[isa.Space.CONST], "CONST", "cw", GROUPS + SHARED_GROUPS))
    we = []
    for space, (groups, bits, target, name, _) in enumerate(banked):
        fld = c.field(name, groups, Lq)
        lane_bits = LANE_BITS[SPACES[space]]
        for g in range(groups):
            t, k0 = match(view(ma, ROW_BITS, bits), g)
            flag_if(c, Lq, [({k["ST"]: 1, k["AW"]: 1, mspace[space]: 1}, 0, 2), (t, k0, bits - ROW_BITS)], {fld[g]: 1})
            t, k0 = match(view(regs.latch, ROW_BITS, lane_bits), g)
            flag_if(c, Lq, [({tokens.put[target]: 1}, 0, 1), (t, k0, lane_bits - ROW_BITS)], {fld[g]: 1})
        we.append(fld)
    lg = [c.field(f"lg{l}", GROUPS + SHARED_GROUPS + CONST_GROUPS, Lq) for l in range(4)]
    for l in range(4):
        for space, (groups, bits, _, _, first) in enumerate(banked):
            for g in range(groups):
                out = {lg[l][first + g]: 1}
                t, k0 = match(view(r[l], 2 + ROW_BITS, 2 + bits), g)
                flag_if(c, Lq, [({decoded.ld_space[space]: 1}, 0, 1), (t, k0, bits - ROW_BITS)], out)
                t, k0 = match(view(ma, ROW_BITS, bits), g)        # an AT(l) or LD(l) pass: lane l's queued address
                flag_if(c, Lq, [({k["AT"]: 1, k["LD"]: 1, f["LANE"][l]: 1, mspace[space]: 1}, 0, 3),
                                (t, k0, bits - ROW_BITS)], out)
    fault = _faults(c, decoded, status, results)
    slow = _slow(c, decoded, status, results)
    global_banks = _memories(c, decoded, results, ma, waddr[:ROW_BITS], wdata, we, lg)
    global_banks += _paged(c, tokens, registers, ma, wdata, results)
    return Memory(store_data=md, store_b=mb, fault=fault, global_banks=global_banks, slow=slow)


def _store_queue(c: Circuit, tokens: TokenInputs, registers: Registers, decoded: Decoded, operands: AluOperands,
                 results: LaneResults) -> tuple[Field, Field, Field]:
    """Per lane, a store's, atomic's or load's word address + space, data and an atomic's b, written
    on its EXEC pass and read by its ST/AT/AW/LD passes, lane by lane: (address, data, b) at the
    queue's head."""
    Lq, zero, op = L_Q, tokens.zero, decoded.op
    ma, md, mb = c.field("ma", GA + len(SPACES), Lq), c.field("md", 32, Lq), c.field("mb", 32, Lq)
    for l in range(4):
        addr = B.register(c, Lq, f"st.addr{l}", GA + len(SPACES))
        data = B.register(c, Lq, f"st.data{l}", 32)
        value = B.register(c, Lq, f"st.b{l}", 32)
        B.write_bits(c, addr, zero, B.bits(view(results.r[l], 2, 2 + GA)) + B.bits(decoded.st_space, decoded.ld_space),
                     [op["ST"][0], op["ATOM"][0], *decoded.ld_space.dims])
        B.write_bits(c, data, zero, B.bits(operands.cc[l]), [op["ST"][0], op["ATOM"][0]])
        B.write_bits(c, value, zero, B.bits(operands.b[l]), [op["ATOM"][0]])
        B.read_into(c, addr, zero, ma.dims, enable=[registers.q_addr[l]])
        B.read_into(c, data, zero, md.dims, enable=[registers.q_data[l]])
        B.read_into(c, value, zero, mb.dims, enable=[registers.q_b[l]])
    return ma, md, mb


def _memories(c: Circuit, decoded: Decoded, results: LaneResults, ma: Field, wrow, wdata, we: list[Field],
              lg: list[Field]) -> list[Bank]:
    """Global memory (L_Q + 1, L_Q + 2), shared and CONST (L_LOAD), written at row wrow with wdata
    where the write enables say and read into each lane's loaded word where its load enables say;
    at L_LOAD a load's word replaces its address in the lane's result. Returns global memory's banks."""
    Lq, r, (gw, sw, cw) = L_Q, results.r, we
    loaded = [c.field(f"loaded{l}", 32, Lq + 1) for l in range(4)]
    global_banks = []
    for g in range(GROUPS):
        bank = declare_bank(c, Lq + 1 + g // 4, f"global{g}", 1 << ROW_BITS, 32, replicas=4, base=g << ROW_BITS)
        global_banks.append(bank)
        B.write_bits(c, bank, wrow, wdata, [gw[g]])
        for l in range(4):
            B.read_into(c, bank, _lane_row(r, ma, l), loaded[l].dims, l, [lg[l][g]])
    Lm = L_LOAD
    for g in range(SHARED_GROUPS):
        bank = declare_bank(c, Lm, f"shared{g}", 1 << ROW_BITS, 32, replicas=4)
        B.write_bits(c, bank, wrow, wdata, [sw[g]])
        for l in range(4):
            B.read_into(c, bank, _lane_row(r, ma, l), loaded[l].dims, l, [lg[l][GROUPS + g]])
    const = declare_bank(c, Lm, "const", 1 << ROW_BITS, 32, replicas=4)
    B.write_bits(c, const, wrow, wdata, [cw[0]])
    for l in range(4):
        B.read_into(c, const, _lane_row(r, ma, l), loaded[l].dims, l, [lg[l][GROUPS + SHARED_GROUPS]])
    # Lm MLP: a load's result replaces its address
    is_ld = sum(([decoded.ld_space[g]] for g in range(3)), [])
    for l in range(4):
        for i in range(32):
            G.relu(c, Lm, {r[l][i]: 1, **{d: 1 for d in is_ld}}, -1, {r[l][i]: -1})
        G.copy_bits(c, Lm, loaded[l], Field("r", r[l].dims, "bits", Lm))
        c.clear(loaded[l], Lm)
    return global_banks


def _faults(c: Circuit, decoded: Decoded, status: WarpStatus, results: LaneResults) -> Field:
    """A load, store or atomic of an active lane at a misaligned or out-of-range address (or a
    store to CONST) makes the pass emit FAULT instead of its next token."""
    Lq, r, mask = L_Q, results.r, status.running.mask
    limits = {g: 2 + ADDRESS_BITS[space] for g, space in enumerate(SPACES)}     # byte address bits
    bad = c.field("bad", 1, Lq, kind="int", vmax=16)     # how many (lane, reason): one dim, not 16
    for l in range(4):
        for g, top in limits.items():
            flags = {decoded.ld_space[g]: 64, decoded.st_space[g]: 64}
            out_of_range = {r[l][i]: 1 for i in [0, 1] + list(range(top, 32))}
            G.step(c, Lq, {**out_of_range, **flags, mask[l]: 64}, 129, {bad[0]: 1})
        G.relu(c, Lq, {decoded.st_space[2]: 1, mask[l]: 1}, -1, {bad[0]: 1})
    fault = c.field("fault", 1, Lq + 1)
    G.step(c, Lq + 1, {bad[0]: 1}, 1, {fault[0]: 1})
    c.clear(bad, Lq + 1)
    return fault


def _slow(c: Circuit, decoded: Decoded, status: WarpStatus, results: LaneResults) -> Field:
    """A global or shared load (or a COPY: its words are lane words) with an active lane whose word is paged."""
    Lq, r, mask = L_Q, results.r, status.running.mask
    paged = c.field("paged", 1, Lq, kind="int", vmax=4)     # how many: one dim where the residual is full
    for space, lane_bits in enumerate(LANE_BITS.values()):
        high = range(2 + lane_bits, 2 + ADDRESS_BITS[SPACES[space]])    # byte address bits above the lane words
        K = len(high)
        for l in range(4):
            G.step(c, Lq, {decoded.ld_space[space]: K, mask[l]: K, **{r[l][i]: 1 for i in high}}, 2 * K + 1,
                   {paged[0]: 1})
    last = L_ATOM - 1                                # where the residual has room for the bit
    slow = c.field("slow", 1, last)
    G.step(c, last, {paged[0]: 1}, 1, {slow[0]: 1})
    c.clear(paged, last)
    return slow


def _paged(c: Circuit, tokens: TokenInputs, registers: Registers, ma: Field, wdata, results: LaneResults) -> list[Bank]:
    """The words above each space's lane words, one copy: bank b's heads hold the words = b mod 4
    (global: 120 heads at L_PAGED..L_ATOM - 1; shared: 16, at L_PAGED - 1 and one a layer after;
    CONST: 16 at L_MOVE - 1, after the atomic's old value: CONST has no atomics), all addressed by
    the store queue's word address (only the head holding it answers) and the space. ST and AW
    write them at the queue's address, PUT(GLOBAL.PAGED) and PUT(CONST.PAGED) at page * 2 **
    LATCH_BITS + latch (the page register, set by PAGE, is read here, where the paged banks need
    it); LD and AT passes read one into r[b], and at L_MOVE it moves to the pass's lane (r[l], l =
    its LANE). Returns the global banks."""
    k, f, r, zero, put = tokens.kind, tokens.features, results.r, tokens.zero, tokens.put
    at = L_PAGED - 1
    page_bits = GA - LANE_BITS[isa.Space.GLOBAL]
    page = c.field("page", page_bits, at)
    reg = B.register(c, at, "page", page_bits)
    B.write_bits(c, reg, zero, B.bits(view(f["V"], 0, page_bits)), [k["PAGE"]])
    B.read_into(c, reg, zero, page.dims, enable=[put["GLOBAL.PAGED"], put["CONST.PAGED"]])
    # the MLP before at: which paged space a pass writes (ST, AW) or reads (LD, AT), the queue's
    # space, for the heads from at on (a layer's heads run before its MLP)
    mspace = view(ma, GA, GA + len(SPACES))
    writes, reads = c.field("paged.w", 2, at - 1), c.field("paged.r", len(SPACES), at - 1)
    for space in range(len(SPACES)):
        if space < 2:
            G.relu(c, at - 1, {k["ST"]: 1, k["AW"]: 1, mspace[space]: 1}, -1, {writes[space]: 1})
        G.relu(c, at - 1, {k["LD"]: 1, k["AT"]: 1, mspace[space]: 1}, -1, {reads[space]: 1})
    addr = B.bits(view(ma, 0, GA))
    latched = B.bits(view(ma, 0, GA), list(registers.latch.dims) + list(page.dims))
    last = L_PAGED + PAGED_LAYERS - 1

    def heads(space):               # a bank's
        return -(-((1 << ADDRESS_BITS[space]) - isa.LANE_WORDS[space]) // (PAGED_BANKS << ROW_BITS))
    n_global = PAGED_BANKS * heads(isa.Space.GLOBAL)
    spaces = ((isa.Space.GLOBAL, [L_PAGED + i * PAGED_LAYERS // n_global for i in range(n_global)], latched,
               [writes[0], put["GLOBAL.PAGED"]]),
              (isa.Space.SHARED, [at] * (PAGED_BANKS * heads(isa.Space.SHARED) - PAGED_LAYERS)
               + list(range(L_PAGED, last + 1)), addr, [writes[1]]),
              (isa.Space.CONST, [L_MOVE - 1] * PAGED_BANKS * heads(isa.Space.CONST), latched, [put["CONST.PAGED"]]))
    banks = []
    for space, layers, waddr, wen in spaces:
        for i, layer in enumerate(layers):
            b, h = i % PAGED_BANKS, i // PAGED_BANKS
            bank = declare_bank(c, layer, f"paged.{space.value}{b}.{h}", 1 << ROW_BITS, 32, base=isa.LANE_WORDS[space]
                                + b + (h << ROW_BITS) * PAGED_BANKS, stride=PAGED_BANKS, addr_width=GA)
            B.write_bits(c, bank, waddr, wdata, wen)
            B.read_into(c, bank, addr, r[b].dims, enable=[reads[SPACES.index(space)]])
            if space is isa.Space.GLOBAL:
                banks.append(bank)
    move = c.field("paged.move", PAGED_BANKS * (PAGED_BANKS - 1), L_MOVE - 1)    # (lane l, bank b != l)
    pairs = [(l, b) for l in range(isa.LANES) for b in range(PAGED_BANKS) if b != l]
    for (l, b), d in zip(pairs, move.dims):
        t, k0 = match(view(ma, 0, 2), b)
        flag_if(c, L_MOVE - 1, [({k["LD"]: 1, k["AT"]: 1, f["LANE"][l]: 1}, 0, 2), (t, k0, 2)], {d: 1})
    for (l, b), d in zip(pairs, move.dims):
        for i in range(32):
            G.relu(c, L_MOVE, {r[b][i]: 1, d: 1}, -1, {r[l][i]: 1, r[b][i]: -1})
    c.clear(writes, last)
    c.clear(page, L_MOVE - 1)
    for fld in (move, reads):
        c.clear(fld, L_MOVE)
    return banks


def _lane_row(r: list[Field], ma: Field, l: int):
    """Lane l's memory row: its address register on EXEC passes, the store queue's on AT passes."""
    return B.bits(view(r[l], 2, 2 + ROW_BITS), view(ma, 0, ROW_BITS))
