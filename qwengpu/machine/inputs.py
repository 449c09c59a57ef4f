"""Registers written by tokens (plan.L_IN): the staged word (a PUT's or VAL's parts), the latch,
the current warp, the thread block, and the per-lane enables the store queue and register file
read; each lane's word of a VALA, VALQ or VALP; which warp ended a block (on its CT1 and CT2
passes) or may end it now; and a continuing token made the EXEC of its block's next pass.

Interface: `token_inputs(c)` declares the token's features (tokens.FEATURES), the circuit's
inputs, as `TokenInputs`; `build_inputs(c, tokens)` reads them and returns `Registers`. One
layer, L_IN. A continuing token also rewrites its own features there (kind, lane, W, WB, PC,
SLOT): every later unit sees the EXEC of the block's next pass.
"""
from __future__ import annotations

from dataclasses import dataclass

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.circuit import memory as B
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.residual import Field
from qwengpu.machine.plan import L_IN
from qwengpu.machine.tokens import AP_STRIDES, CONTINUABLE, FEATURES, KINDS, P_BITS, PUT_TARGETS, Q_BITS, SLOTS
from qwengpu.machine.wiring import flag_if, match, view
from qwengpu.machine.words import PARTS, PC_BITS, WARP_BITS

# the passes after an EXEC that may end its warp's block
ENDS = ("CT1", "CT2", "VAL", "VALU", "VALA", "VALQ", "VALP", "ST", "AW")


@dataclass(frozen=True)
class TokenInputs:
    """The token's features: what the host embeds, and what every unit reads of the token."""
    features: dict[str, Field]     # each feature of tokens.FEATURES
    kind: dict[str, int]           # the token's kind, a dim per name of tokens.KINDS
    put: dict[str, int]            # a PUT's target, a dim per name of tokens.PUT_TARGETS
    zero: list[list[int]]          # an always-0 dim: the row-0 address of one-row registers


@dataclass(frozen=True)
class Registers:
    """What the L_IN registers and enables give later units."""
    staged: Field                  # the staged word (a PUT's or VAL's parts)
    latch: Field                   # the latched word: a PUT's row
    cta: Field                     # the thread block
    ct1h: Field                    # one-hot: the warp on its CT1 pass
    cur1h: Field                   # one-hot: the warp on its CT2 pass
    ender: Field                   # one-hot: the warp whose pass may end its block
    val_lane: Field                # lanes a VAL or VALP writes
    q_addr: Field                  # store queue lanes read: address (ST, AT, AW, LD)
    q_data: Field                  # ... data (ST, AT)
    q_b: Field                     # ... an atomic's operand (AT)
    ap_data: list[Field]           # each lane's word of a VALA, VALQ or VALP
    wb_row: Field                  # the pending destination's row (slot parity): status.py
    cont_whole: Field              # a continuing VALU, VALA or VALQ: every active lane


def token_inputs(c: Circuit) -> TokenInputs:
    """The circuit's inputs: the token's features, then the always-0 dim."""
    features = {name: c.input(name, w) for name, w in FEATURES.items()}
    zero = [[c.input("zero", 1)[0]]]
    return TokenInputs(features, {name: features["kind"][i] for i, name in enumerate(KINDS)},
                       {name: features["PT"][i] for i, name in enumerate(PUT_TARGETS)}, zero)


def build_inputs(c: Circuit, tokens: TokenInputs) -> Registers:
    """The L_IN registers and enables."""
    f, k, zero = tokens.features, tokens.kind, tokens.zero
    staged = c.field("staged", 32, L_IN)
    for j, bits in enumerate(PARTS):
        bank = B.register(c, L_IN, f"stage{j}", len(bits))
        B.write_bits(c, bank, zero, B.bits(view(f["SD"], bits.start, bits.stop)), [f["SE"][j]])
        B.read_into(c, bank, zero, staged.dims[bits.start: bits.stop],
                    enable=[k["PUT"], k["VAL"], k["VALU"], k["AW"]])
    latch = _register(c, zero, "latch", f["V"], k["LATCH"], [k["PUT"]])
    ends = [k[n] for n in ENDS]
    cur = _register(c, zero, "cur", f["WB"], k["EXEC"], ends)
    cta = _register(c, zero, "cta", f["CTA"], k["CTA"], None)
    ap_data = _progression(c, tokens)
    wb_row, cont_whole = _continuation(c, tokens, cur)
    # L0 MLP: per-lane enables
    val_lane = c.field("val_lane", 4, L_IN)
    q_addr = c.field("q_addr", 4, L_IN)     # store queue lane reads: ST, AT, AW, LD passes
    q_data = c.field("q_data", 4, L_IN)     # ST, AT
    q_b = c.field("q_b", 4, L_IN)           # AT
    # the warp that ended a block, one-hot: ct1h on its CT1 pass, cur1h on its CT2 pass; ender
    # on every pass that may end its block (and so schedule the next warp): these, its EXEC
    # and the writeback tokens that follow it
    ct1h, cur1h = c.field("ct1h", 4, L_IN), c.field("cur1h", 4, L_IN)
    ender = c.field("ender", 4, L_IN)
    for l in range(4):
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["VAL"]: 1, k["VALP"]: 1}, -1, {val_lane[l]: 1})
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["ST"]: 1, k["AT"]: 1, k["AW"]: 1, k["LD"]: 1}, -1, {q_addr[l]: 1})
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["ST"]: 1, k["AT"]: 1}, -1, {q_data[l]: 1})
        G.relu(c, L_IN, {f["LANE"][l]: 1, k["AT"]: 1}, -1, {q_b[l]: 1})
        t, k0 = match(cur, l)
        flag_if(c, L_IN, [(t, k0, 2), ({k["CT1"]: 1}, 0, 1)], {ct1h[l]: 1})
        flag_if(c, L_IN, [(t, k0, 2), ({k["CT2"]: 1}, 0, 1)], {cur1h[l]: 1})
        flag_if(c, L_IN, [(t, k0, 2), ({d: 1 for d in ends}, 0, 1)], {ender[l]: 1})
        G.relu(c, L_IN, {f["W"][l]: 1, k["EXEC"]: 1}, -1, {ender[l]: 1})
    return Registers(staged=staged, latch=latch, cta=cta, ct1h=ct1h, cur1h=cur1h, ender=ender, val_lane=val_lane,
                     q_addr=q_addr, q_data=q_data, q_b=q_b, ap_data=ap_data, wb_row=wb_row, cont_whole=cont_whole)


def _progression(c: Circuit, tokens: TokenInputs) -> list[Field]:
    """Each lane's word of a VALA(s, d) pass, (d + s * lane) mod 2 ** 12, of a VALQ(d) pass, its
    Q_BITS bits of d, or of a VALP(p, d) pass, its P_BITS bits of d (0 on other passes), which the
    register file writes on the pass's active lanes (VALP: on its two lanes)."""
    f, k = tokens.features, tokens.kind
    width = len(PARTS[0])
    sd = [f["SD"][i] for i in PARTS[0]]
    ap_data = [c.field(f"ap_data{l}", width, L_IN) for l in range(isa.LANES)]
    for i, d in enumerate(sd):
        G.relu(c, L_IN, {d: 1, k["VALA"]: 1}, -1, {ap_data[0][i]: 1})
    for l in range(1, isa.LANES):
        for gate, stride in zip(f["STRIDE"].dims, AP_STRIDES):
            G.plus_constant(c, L_IN, sd, stride * l, ap_data[l], gate)
    for l in range(isa.LANES):
        for i in range(Q_BITS):
            G.relu(c, L_IN, {sd[Q_BITS * l + i]: 1, k["VALQ"]: 1}, -1, {ap_data[l][i]: 1})
        for i in range(P_BITS):
            G.relu(c, L_IN, {sd[P_BITS * (l % 2) + i]: 1, k["VALP"]: 1}, -1, {ap_data[l][i]: 1})
    return ap_data


def _continuation(c: Circuit, tokens: TokenInputs, cur: Field) -> tuple[Field, Field]:
    """A continuing token (CONT) writes back the last result of its pass and runs the next pass of
    the block: the L0 MLP gives every later unit an EXEC of the current warp (W, WB from cur),
    the latched pc and the slot after the last pass's (a counter: EXEC sets it, a continuing token
    steps it), and clears the token's own kind and lane. Returns what its writeback needs later:
    wb_row, the row of the pending destination (status.py: a pass's row is its slot's parity, so
    a continuing token reads the pass before's while it writes its own), and cont_whole (a
    continuing VALU, VALA or VALQ writes every active lane)."""
    f, k, zero = tokens.features, tokens.kind, tokens.zero
    cont = f["CONT"][0]
    pc = B.register(c, L_IN, "pc", PC_BITS)
    B.write_bits(c, pc, zero, B.bits(f["PC"]), [k["EXEC"]])
    B.read_into(c, pc, zero, f["PC"].dims, enable=[cont])
    slot = B.counter(c, L_IN, "slot", list(f["SLOT"].dims), [cont])
    wb_row = c.field("wb_row", 1, L_IN)
    for s in range(SLOTS):
        B.count_is(c, L_IN, slot, s, {f["SLOT"][s]: 1}, when={cont: 1}, need=1)
        B.count_is(c, L_IN, slot, s, {wb_row[0]: 1}, when={cont: 1}, need=int(s % 2 == 0))
    c.clear(slot, L_IN)
    for i in range(WARP_BITS):
        G.relu(c, L_IN, {cur[i]: 1, cont: 1}, -1, {f["WB"][i]: 1})
    for w in range(isa.MAX_WARPS):
        t, k0 = match(cur, w)
        flag_if(c, L_IN, [(t, k0, WARP_BITS), ({cont: 1}, 0, 1)], {f["W"][w]: 1})
    G.relu(c, L_IN, {cont: 1}, 0, {k["EXEC"]: 1})
    for name in CONTINUABLE:
        G.relu(c, L_IN, {k[name]: 1, cont: 1}, -1, {k[name]: -1})
    for d in f["LANE"].dims:
        G.relu(c, L_IN, {d: 1, cont: 1}, -1, {d: -1})
    cont_whole = c.field("cont_whole", 1, L_IN)
    G.relu(c, L_IN, {cont: 1, k["VALU"]: 1, k["VALA"]: 1, k["VALQ"]: 1}, -1, {cont_whole[0]: 1})
    return wb_row, cont_whole


def _register(c: Circuit, zero, name: str, data: Field, write_en: int, read_en) -> Field:
    """A one-row register that tokens with write_en write `data` into, read into a field named `name`."""
    bank = B.register(c, L_IN, name, data.width)
    out = c.field(name, data.width, L_IN)
    B.write_bits(c, bank, zero, B.bits(data), [write_en])
    B.read_into(c, bank, zero, out.dims, enable=read_en)
    return out
