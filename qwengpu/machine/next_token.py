"""The next token (docs/machine.md, "Sequences"), decided in the last four circuit layers.

    E1  nonzero parts above k of each lane's value (none above part 0 when they are all ones:
        its VAL/VALU(0) carries the whole word); lanes after the current one that are
        active; the lowest active lane; whether the active lanes' values differ; lane 0's
        value + s * l (VALA); the next thread block's index; whether this block was the last;
        whether another warp of the thread block, and this one after its terminator, has a live lane
    E2  the first such lane, and whether it and the next are a VALP pair; whether no lane of
        the thread block lives on; the VAL(l, k) -> VAL(l, k + 1) and VALU(k) -> VALU(k + 1)
        cases; for each VALA stride, the bits where an active lane is not lane 0's + s * l
    E3  one flag per case: next VAL lane, VALU(0), VALA, VALQ, ST lane, EXEC(w, pc, s + 1); at
        a block's end, right after a terminator's EXEC (no writeback tokens) or after its
        pass's last writeback token, CT1 when the top of stack's mask or depth changed (and a
        lane is alive: branch.build_status_change), else CT2 when the warp's alive lanes or phase
        did (but where no lane of the thread block lives on: what CT2's pass would emit), else
        the scheduler's EXEC; CTA(c + 1), the copy-out's first or next COPY, HALT, FAULT (CT2
        after a CT1 when both changed: no flag)
    E4  the output code: every feature dim gets 2 * next - 1, the input's features and the
        anchor are cleared, so the tied head's argmax is exactly the next token
"""
from __future__ import annotations

from qwengpu import isa
from qwengpu.circuit import gadgets as G
from qwengpu.machine.plan import L_NEXT
from qwengpu.machine.tokens import AP_STRIDES, FEATURES, KINDS, P_BITS, Q_BITS, SLOTS
from qwengpu.machine.wiring import all_hold, match
from qwengpu.machine.words import CONFIG, COPY0, CT2, CTA_BITS, GROUP_BITS, PARTS, PC_BITS, WARP_BITS, WORD_BITS


def build_next_token(m) -> None:
    """Adds the emission layers, the circuit's last four, on top of machine `m`."""
    c, f, k = m.c, m.f, m.k
    E1 = L_NEXT
    E2, E3, E4 = E1 + 1, E1 + 2, E1 + 3
    lanes = range(isa.LANES)
    more = range(len(PARTS) - 1)          # parts after which a word may go on
    # k one-hot of a VAL token: SE is the thermometer [j >= k]
    def part_is(j):
        return {f["SE"][j]: 1, **({f["SE"][j - 1]: -1} if j else {})}

    # ---- E1
    nz = {(l, j): c.field(f"nz{l}.{j}", 1, E1) for l in lanes for j in more}
    for (l, j), fld in nz.items():
        G.step(c, E1, {d: 1 for d in m.r[l].dims[PARTS[j].stop:]}, 1, {fld[0]: 1})
    # each lane's bits above part 0 all ones: its VAL/VALU(0) carries the whole word, and no part follows
    ones = [c.field(f"ones{l}", 1, E1) for l in lanes]
    for l in lanes:
        high = {d: 1 for d in m.r[l].dims[PARTS[0].stop:]}
        G.step(c, E1, high, len(high), {ones[l][0]: 1, nz[l, 0][0]: -1})
    cand = c.field("cand", 4, E1)          # active lanes after the current one(s) (all of them on EXEC, COPY)
    for l in lanes:
        after = {f["LANE"][i]: 1 for i in range(l)}      # a VALP names two lanes, l among them maybe
        G.step(c, E1, {**after, k["EXEC"]: 1, k["COPY"]: 1, m.cs.mask[l]: 3, f["LANE"][l]: -3}, 4, {cand[l]: 1})
    six = c.field("six", isa.LANES, E1)    # each lane's value is below 2 ** P_BITS (VALP)
    for l in lanes:
        G.relu(c, E1, *all_hold({d: -1 for d in m.r[l].dims[P_BITS:]}, 0, 0), {six[l]: 1})
    next_cta = c.field("next_cta", CTA_BITS, E1)
    G.basis(c, E1, {d: 1 << i for i, d in enumerate(m.cta.dims)}, 0,
            [(lambda v, i=i: (v + 1) >> i & 1, {next_cta[i]: 1}) for i in range(CTA_BITS)], values=list(range(1 << CTA_BITS)))
    nzn = [c.field(f"nzn.{j}", 1, E1) for j in more]           # the atomic's new value, parts above j
    for j, fld in enumerate(nzn):
        G.step(c, E1, {d: 1 for d in m.new.dims[PARTS[j].stop:]}, 1, {fld[0]: 1})
    low = c.field("low", isa.LANES, E1)    # the lowest active lane (EXEC and VALU passes)
    for l in lanes:
        G.relu(c, E1, {m.cs.mask[l]: 1, **{m.cs.mask[i]: -1 for i in range(l)}}, 0, {low[l]: 1})
    # EXEC and COPY passes: bits on which two active lanes' values differ (0: one VALU token per part)
    mixed = c.field("mixed", 1, E1, kind="int", vmax=32 * len(lanes) * (len(lanes) - 1) // 2)
    for l in lanes:
        for l2 in range(l + 1, len(lanes)):
            both = {m.cs.mask[l]: 1, m.cs.mask[l2]: 1, k["EXEC"]: 1, k["COPY"]: 1}
            for i in range(32):
                for x, y in ((m.r[l][i], m.r[l2][i]), (m.r[l2][i], m.r[l][i])):
                    G.relu(c, E1, {**both, x: 1, y: -1}, -3, {mixed[0]: 1})
    # EXEC and COPY passes, for VALA: part 0 of lane 0's value plus s * l for each stride s and
    # lane l >= 1 (E2 compares it with lane l's), and how many active lanes have bits above part 0
    low_bits = PARTS[0]
    lane0 = [m.r[0][i] for i in low_bits]
    ahead = {(s, l): c.field(f"ap.sum{s}.{l}", len(low_bits), E1) for s in AP_STRIDES for l in lanes[1:]}
    for (s, l), fld in ahead.items():
        G.plus_constant(c, E1, lane0, s * l, fld)
    wide = c.field("ap.wide", 1, E1, kind="int", vmax=len(lanes))
    wideq = c.field("q.wide", 1, E1, kind="int", vmax=len(lanes))      # ... and above VALQ's Q_BITS
    for l in lanes:
        for fld, lo in ((wide, low_bits.stop), (wideq, Q_BITS)):
            high = {d: 1 for d in m.r[l].dims[lo:]}
            G.step(c, E1, {**high, m.cs.mask[l]: len(high)}, 1 + len(high), {fld[0]: 1})
    # a live lane in another warp of the thread block (this pass's warp: WB); when there is none and
    # this warp's last lanes exit, the block end emits what CT2's pass would: CTA, COPY or HALT
    others = c.field("others", 1, E1, kind="int", vmax=isa.MAX_WARPS * (isa.MAX_WARPS - 1))
    big = isa.LANES + 1                    # a warp match outweighs every alive count
    for w, st in enumerate(m.status):
        for cur in (v for v in range(isa.MAX_WARPS) if v != w):
            t, k0 = match(f["WB"], cur)
            G.step(c, E1, G.add_terms(G.ones(st.alive), {d: big * v for d, v in t.items()}),
                   big * (WARP_BITS - k0) + 1, {others[0]: 1})
    lives = {name: c.field(f"lives.{name}", 1, E1) for name in ("now", "q")}   # the warp keeps a live lane
    for fld, alive in ((lives["now"], m.ns.alive), (lives["q"], m.ctq["ALIVE"])):
        G.step(c, E1, G.ones(alive), 1, {fld[0]: 1})
    last = c.field("last", 1, E1)          # this thread block is the last: cta == ncta - 1
    diff = {**{d: 1 << i for i, d in enumerate(m.cta.dims)},
            **{m.config[b]: -(1 << i) for i, b in enumerate(CONFIG.bits("last_cta"))}}
    G.step(c, E1, diff, 0, {last[0]: 1})
    G.step(c, E1, diff, 1, {last[0]: -1})

    # ---- E2
    ends_cta = {name: c.field(f"ends_cta.{name}", 1, E2) for name in lives}   # no lane of the block lives on
    for name, fld in ends_cta.items():
        G.relu(c, E2, *all_hold({others[0]: -1, lives[name][0]: -1}, 0, 0), {fld[0]: 1})
    c.clear(others, E2)
    for fld in lives.values():
        c.clear(fld, E2)
    first = c.field("first", 4, E2)
    for l in lanes:
        G.relu(c, E2, {cand[l]: 1, **{cand[i]: -1 for i in range(l)}}, 0, {first[l]: 1})
    vn = {(l, j): c.field(f"vn{l}.{j}", 1, E2) for l in lanes for j in more}
    for (l, j), fld in vn.items():
        G.relu(c, E2, {k["VAL"]: 1, f["LANE"][l]: 1, **part_is(j), nz[l, j][0]: 1}, -3, {fld[0]: 1})
    vnany = {fld[0]: 1 for fld in vn.values()}
    un = [c.field(f"un.{j}", 1, E2) for j in more]              # VALU(j) -> VALU(j + 1)
    for j, fld in enumerate(un):
        for l in lanes:
            G.relu(c, E2, {k["VALU"]: 1, low[l]: 1, **part_is(j), nz[l, j][0]: 1}, -3, {fld[0]: 1})
    unany = {fld[0]: 1 for fld in un}
    split = c.field("split", 1, E2)        # the active lanes' values are not all equal
    G.step(c, E2, {mixed[0]: 1}, 1, {split[0]: 1})
    c.clear(mixed, E2)
    # for each stride, the bits on which an active lane l >= 1 is not lane 0's + s * l
    off = {s: c.field(f"ap.off{s}", 1, E2, kind="int", vmax=len(lanes) * len(low_bits)) for s in AP_STRIDES}
    for (s, l), fld in ahead.items():
        for i, d in zip(low_bits, fld.dims):
            for x, y in ((d, m.r[l][i]), (m.r[l][i], d)):
                G.relu(c, E2, {x: 1, y: -1, m.cs.mask[l]: 1}, -1, {off[s][0]: 1})
        c.clear(fld, E2)
    pn = [c.field(f"pn.{j}", 1, E2) for j in more]             # PART(j) -> PART(j + 1) of the new value
    for j, fld in enumerate(pn):
        G.relu(c, E2, {k["PART"]: 1, **part_is(j), nzn[j][0]: 1}, -2, {fld[0]: 1})
    pnany = {fld[0]: 1 for fld in pn}
    small = c.field("q.small", 1, E2)      # every active lane's value is below 2 ** Q_BITS (VALQ)
    G.const_one(c, E2, {small[0]: 1})
    G.step(c, E2, {wideq[0]: 1}, 1, {small[0]: -1})
    c.clear(wideq, E2)
    patom, pdst = m.patom[0], m.patom[1]
    anyc = {first[l]: 1 for l in lanes}
    # for continuing tokens: another active lane after the first, the lowest lane's value goes on after part 0
    two = c.field("cand.two", 1, E2)
    G.step(c, E2, {cand[l]: 1 for l in lanes}, 2, {two[0]: 1})
    three = c.field("cand.three", 1, E2)   # ... and one after a pair
    G.step(c, E2, {cand[l]: 1 for l in lanes}, 3, {three[0]: 1})
    # lane by lane, the first lane and the next one write one VALP: the first is even (lanes 2p
    # and 2p + 1), the next is active too, and both values are small
    pairable = c.field("pairable", 1, E2)
    first_of = {p: c.field(f"pair{p}", 1, E2) for p in range(isa.LANES // 2)}
    for p, fld in first_of.items():
        lo, hi = 2 * p, 2 * p + 1
        terms = {cand[lo]: 1, cand[hi]: 1, six[lo]: 1, six[hi]: 1, **{cand[i]: -1 for i in range(lo)}}
        G.relu(c, E2, *all_hold(terms, 0, 4), {fld[0]: 1, pairable[0]: 1})
    c.clear(six, E2)
    u_more = c.field("u.more", 1, E2)
    for l in lanes:
        G.relu(c, E2, {low[l]: 1, nz[l, 0][0]: 1}, -1, {u_more[0]: 1})

    # ---- E3: case flags
    names = ("vlane", "ulane", "qlane", "st", "at", "atval", "apart", "aw", "nexec", "ct1now", "ct1q", "ct2now", "ct2q",
             "sched", "cta", "copy0", "copy", "halt", "fault")
    flag = {name: c.field(f"next.{name}", 1, E3) for name in names}
    no_vn, no_c = {d: -1 for d in vnany}, {d: -1 for d in anyc}
    fault = m.fault[0]                      # EXEC passes only: FAULT replaces every other next token
    # after an EXEC with a result: VALU(0) when the lanes' values are equal, else VALA(s) when
    # they are lane 0's + s * lane with lane 0 active and all in part 0 (when they differ, at
    # most one s fits), else VALQ when all are small, else VAL(first lane, 0); the same for a
    # COPY's words
    alane = {s: c.field(f"next.alane{s}", 1, E3) for s in AP_STRIDES}
    vlane, qlane = flag["vlane"][0], flag["qlane"][0]
    for has in ({m.has_wb[0]: 1}, {k["COPY"]: 1}):
        differ = {**has, **anyc, split[0]: 1, fault: -1}
        G.relu(c, E3, differ, -2, {vlane: 1})
        G.relu(c, E3, {**differ, small[0]: 1}, -3, {qlane: 1, vlane: -1})
        G.relu(c, E3, {**has, **anyc, split[0]: -1, fault: -1}, -1, {flag["ulane"][0]: 1})
        for s, fld in alane.items():
            fits = {**differ, m.cs.mask[0]: 1, off[s][0]: -1, wide[0]: -1}
            G.relu(c, E3, fits, -3, {fld[0]: 1})
            G.relu(c, E3, {**fits, small[0]: -1}, -3, {vlane: -1})     # VALA, not VALQ, when both fit
            G.relu(c, E3, {**fits, small[0]: 1}, -4, {qlane: -1})
    for fld in (wide, small, *off.values()):
        c.clear(fld, E3)
    # the pending instruction's "atomic" bit (patom) is the last EXEC pass's: in the copy-out that
    # may be an atomic whose pass also ran the warp's last terminator, so copying overrides it
    copying, copy_last = m.copyq["copying"], m.copyq["last"]
    G.relu(c, E3, {k["VAL"]: 1, **no_vn, **anyc, patom: -1}, -1, {flag["vlane"][0]: 1})
    G.relu(c, E3, {k["VALP"]: 1, **anyc}, -1, {flag["vlane"][0]: 1})
    G.relu(c, E3, {k["VAL"]: 1, **no_vn, **anyc, patom: 1, copying: 1}, -3, {flag["vlane"][0]: 1})
    G.relu(c, E3, {k["ST"]: 1, m.op["ST"][0]: 1, **anyc, fault: -1}, -1, {flag["st"][0]: 1})
    G.relu(c, E3, {k["AW"]: 1, m.op["ATOM"][0]: 1, **anyc, fault: -1}, -1, {flag["at"][0]: 1})
    G.relu(c, E3, {k["AT"]: 1, pdst: 1}, -1, {flag["atval"][0]: 1})
    G.relu(c, E3, {k["AT"]: 1, pdst: -1}, 0, {flag["apart"][0]: 1})
    G.relu(c, E3, {k["VAL"]: 1, patom: 1, **no_vn, copying: -1}, -1, {flag["apart"][0]: 1})
    G.relu(c, E3, {k["PART"]: 1, **{d: -1 for d in pnany}}, 0, {flag["aw"][0]: 1})
    # a VAL, VALU, VALA, VALQ or VALP that ends a result: the warp's next instruction, or in the copy-out the next
    # group (COPY) or HALT after the last
    ends = ({k["VAL"]: 1, **no_vn, **no_c}, {k["VALU"]: 1, **{d: -1 for d in unany}}, {k["VALA"]: 1}, {k["VALQ"]: 1},
            {k["VALP"]: 1, **no_c})
    for end in ends:
        G.relu(c, E3, {**end, copying: 1, copy_last: -1}, -1, {flag["copy"][0]: 1})
        G.relu(c, E3, {**end, copying: 1, copy_last: 1}, -2, {flag["halt"][0]: 1})
    # ... or, when the EXEC pass before ran the terminator too (tpend), the block's end: CT1 (from
    # the control queue) when the top of stack's mask or depth changed, else CT2 when the other
    # half did, else the scheduler's EXEC (its warp's new pc is in build_warp_pcs's registers)
    pend = m.tpend[0]
    any_copy = m.copy0[COPY0.bits("any").start]

    def thread_block_ends(terms, n):
        """CTA(c + 1), or after the last thread block the copy-out's first COPY or HALT, where
        `terms` sum to n."""
        G.relu(c, E3, {**terms, last[0]: -1}, 1 - n, {flag["cta"][0]: 1})
        G.relu(c, E3, {**terms, last[0]: 1, any_copy: 1}, -1 - n, {flag["copy0"][0]: 1})
        G.relu(c, E3, {**terms, last[0]: 1, any_copy: -1}, -n, {flag["halt"][0]: 1})
    sched_ok = {m.sched["found"][0]: 1, m.sched["deadlock"][0]: -1}   # FAULT replaces a deadlock's EXEC
    q1, q2 = m.changedq["CT1"][0], m.changedq["CT2"][0]
    for terms in ({**ends[0], patom: -1, copying: -1}, *({**end, copying: -1} for end in ends[1:]),
                  {k["ST"]: 1, **no_c}, {k["AW"]: 1, **no_c}):
        G.relu(c, E3, {**terms, pend: -1}, 0, {flag["nexec"][0]: 1})
        G.relu(c, E3, {**terms, pend: 1, q1: 1}, -2, {flag["ct1q"][0]: 1})
        G.relu(c, E3, {**terms, pend: 1, q1: -1, q2: 1, ends_cta["q"][0]: -1}, -2, {flag["ct2q"][0]: 1})
        thread_block_ends({**terms, pend: 1, q1: -1, q2: 1, ends_cta["q"][0]: 1}, 4)
        G.relu(c, E3, {**terms, pend: 1, q1: -1, q2: -1, **sched_ok}, -2, {flag["sched"][0]: 1})
    # an EXEC pass without writeback tokens: the warp's next EXEC, or the block's end now when
    # it ran the terminator (CT1, CT2 or the scheduler's EXEC, as above)
    term_flags = {m.op[t][0]: 1 for t in ("JMP", "BRC", "BAR", "EXIT")}
    quiet = {m.has_wb[0]: -1, m.op["ST"][0]: -1, m.op["ATOM"][0]: -1, fault: -1}
    n1, n2 = m.changed["CT1"][0], m.changed["CT2"][0]
    G.relu(c, E3, {k["EXEC"]: 1, **quiet, **{d: -1 for d in term_flags}}, 0, {flag["nexec"][0]: 1})
    G.relu(c, E3, {**quiet, **term_flags, n1: 1}, -1, {flag["ct1now"][0]: 1})
    G.relu(c, E3, {**quiet, **term_flags, n1: -1, n2: 1, ends_cta["now"][0]: -1}, -1, {flag["ct2now"][0]: 1})
    thread_block_ends({**quiet, **term_flags, n1: -1, n2: 1, ends_cta["now"][0]: 1}, 3)
    G.relu(c, E3, {**quiet, **term_flags, n1: -1, n2: -1, **sched_ok}, -1, {flag["sched"][0]: 1})
    # the scheduler's token follows CTA, CT2, and CT1 when no CT2 follows it
    follows = q2
    sched_pass = {k["CT2"]: 1, k["CTA"]: 1, k["CT1"]: 1, follows: -1}
    G.relu(c, E3, {**sched_pass, **sched_ok}, -1, {flag["sched"][0]: 1})
    G.relu(c, E3, {**sched_pass, m.sched["done"][0]: 1, last[0]: -1}, -1, {flag["cta"][0]: 1})
    # after the last thread block: the copy-out's first group, or HALT when there is none
    G.relu(c, E3, {**sched_pass, m.sched["done"][0]: 1, last[0]: 1, any_copy: 1}, -3, {flag["copy0"][0]: 1})
    G.relu(c, E3, {**sched_pass, m.sched["done"][0]: 1, last[0]: 1, any_copy: -1}, -2, {flag["halt"][0]: 1})
    G.relu(c, E3, {k[n]: 1 for n in ("LATCH", "PART", "PUT", "HALT", "FAULT")}, 0, {flag["halt"][0]: 1})
    G.relu(c, E3, {**sched_pass, m.sched["deadlock"][0]: 1}, -1, {flag["fault"][0]: 1})
    G.relu(c, E3, {fault: 1}, 0, {flag["fault"][0]: 1})
    # continuing: the token emitted is its pass's last writeback token and the pass does not end the
    # block (no terminator ran, or runs: tpend), nor is it the copy-out, an atomic's or a fault's
    nopend = c.field("next.nopend", 1, E3)
    G.relu(c, E3, {**{d: -1 for d in term_flags}, pend: -1, copying: -1, fault: -1, patom: -1, k["COPY"]: -1}, 1,
           {nopend[0]: 1})
    goes_on = {name: c.field(f"next.more.{name}", 1, E3) for name in ("un", "vn", "vlane")}   # a part follows
    for j, fld in enumerate(un[:-1]):
        for l in lanes:
            G.relu(c, E3, {fld[0]: 1, low[l]: 1, nz[l, j + 1][0]: 1}, -2, {goes_on["un"][0]: 1})
    for (l, j), fld in vn.items():
        if j + 1 in more:
            G.relu(c, E3, {fld[0]: 1, nz[l, j + 1][0]: 1}, -1, {goes_on["vn"][0]: 1})
    for l in lanes:
        G.relu(c, E3, {first[l]: 1, nz[l, 0][0]: 1}, -1, {goes_on["vlane"][0]: 1})

    # ---- E4: the output code
    feat = {name: list(f[name].dims) for name in FEATURES}

    def emit(name, i, terms, bias):
        """feature (name, i) of the next token is relu(terms + bias) (exactly 0 or 1)."""
        G.relu(c, E4, terms, bias, {feat[name][i]: 2})

    def kind(name, terms, bias=0):
        emit("kind", KINDS.index(name), terms, bias)

    fl = {n: v[0] for n, v in flag.items()}

    def payload(case, j, sources, but=None):
        """SE and SD of a token carrying part j of a word on `case` (and not `but`): the word of
        `sources` (word, gate dims, lane) whose gate dims are all on (at most one is); for part 0
        of a lane's word (VAL, VALU), the whole word when its high bits are all ones."""
        when = {case: 1, **({but: -1} if but is not None else {})}
        for jj in range(j, len(PARTS)):
            emit("SE", jj, when, 0)
        for word, gate, l in sources:
            for i in PARTS[j]:
                emit("SD", i, {**when, **{d: 1 for d in gate}, word[i]: 1}, -1 - len(gate))
            for i in range(PARTS[1].start, WORD_BITS) if j == 0 and l is not None else ():
                emit("SD", i, {**when, **{d: 1 for d in gate}, ones[l][0]: 1}, -1 - len(gate))

    # VAL(l, k + 1, part k + 1 of lane l)
    for (l, j), fld in vn.items():
        kind("VAL", {fld[0]: 1})
        emit("LANE", l, {fld[0]: 1}, 0)
        payload(fld[0], j + 1, [(m.r[l], (), l)])
    # VAL(l', 0, part 0 of lane l') for the first active lane l' after the current one, or
    # VALP(p, both values) when that lane and the next are a pair of small values
    vlane, pair = fl["vlane"], pairable[0]
    kind("VAL", {vlane: 1, pair: -1})
    for l in lanes:
        emit("LANE", l, {vlane: 1, first[l]: 1, pair: -1}, -1)
    payload(vlane, 0, [(m.r[l], (first[l],), l) for l in lanes], but=pair)
    kind("VALP", {vlane: 1, pair: 1}, -1)
    for p, fld in first_of.items():
        for l in (2 * p, 2 * p + 1):
            emit("LANE", l, {vlane: 1, fld[0]: 1}, -1)
            for i in range(P_BITS):
                emit("SD", P_BITS * (l % 2) + i, {vlane: 1, fld[0]: 1, m.r[l][i]: 1}, -2)
    # VALU(0, part 0) and VALU(k + 1, part k + 1) of the lowest active lane's value
    kind("VALU", {fl["ulane"]: 1})
    payload(fl["ulane"], 0, [(m.r[l], (low[l],), l) for l in lanes])
    for j, fld in enumerate(un):
        kind("VALU", {fld[0]: 1})
        payload(fld[0], j + 1, [(m.r[l], (low[l],), l) for l in lanes])
    # VALA(s, part 0 of lane 0's value)
    for i, fld in enumerate(alane.values()):
        kind("VALA", {fld[0]: 1})
        emit("STRIDE", i, {fld[0]: 1}, 0)
        payload(fld[0], 0, [(m.r[0], (), None)])
    # VALQ(each active lane's value in its Q_BITS bits)
    kind("VALQ", {fl["qlane"]: 1})
    for jj in range(len(PARTS)):
        emit("SE", jj, {fl["qlane"]: 1}, 0)
    for l in lanes:
        for i in range(Q_BITS):
            emit("SD", Q_BITS * l + i, {fl["qlane"]: 1, m.cs.mask[l]: 1, m.r[l][i]: 1}, -2)
    # ST(l') and AT(l')
    for name in ("st", "at"):
        kind(name.upper(), {fl[name]: 1})
        for l in lanes:
            emit("LANE", l, {fl[name]: 1, first[l]: 1}, -1)
    # an atomic, lane l: VAL(l, 0, old), then PART(k, new) for each part up to the highest nonzero, then AW(l)
    kind("VAL", {fl["atval"]: 1})
    for l in lanes:
        emit("LANE", l, {fl["atval"]: 1, f["LANE"][l]: 1}, -1)
    payload(fl["atval"], 0, [(m.r[l], (f["LANE"][l],), l) for l in lanes])
    kind("PART", {fl["apart"]: 1})
    payload(fl["apart"], 0, [(m.new, (), None)])
    for j, fld in enumerate(pn):
        kind("PART", {fld[0]: 1})
        payload(fld[0], j + 1, [(m.new, (), None)])
    kind("AW", {fl["aw"]: 1})
    for l in lanes:
        emit("LANE", l, {fl["aw"]: 1, m.alane[l]: 1}, -1)
    # EXEC(w, pc, s + 1) of the current warp, or the scheduler's EXEC(w', pc', 0)
    kind("EXEC", {fl["nexec"]: 1})
    kind("EXEC", {fl["sched"]: 1})
    wb = f["WB"]
    for w in range(isa.MAX_WARPS):
        terms = {fl["nexec"]: 1, **{wb[i]: (1 if w >> i & 1 else -1) for i in range(WARP_BITS)}}
        emit("W", w, terms, -sum(w >> i & 1 for i in range(WARP_BITS)))
        emit("W", w, {fl["sched"]: 1, m.sched["warp"][w]: 1}, -1)
    for i in range(WARP_BITS):
        emit("WB", i, {fl["nexec"]: 1, wb[i]: 1}, -1)
        emit("WB", i, {fl["sched"]: 1, **{m.sched["warp"][w]: 1 for w in range(isa.MAX_WARPS) if w >> i & 1}}, -1)
    for i in range(PC_BITS):
        emit("PC", i, {fl["nexec"]: 1, f["PC"][i]: 1}, -1)
        emit("PC", i, {fl["sched"]: 1, m.sched["pc"][i]: 1}, -1)
    for s in range(SLOTS - 1):
        emit("SLOT", s + 1, {fl["nexec"]: 1, f["SLOT"][s]: 1}, -1)
    emit("SLOT", 0, {fl["sched"]: 1}, 0)
    # CT1(new pc, mask, stack depth) after a terminator: right after its EXEC pass (from the new
    # status it computed) or after the last token of that pass's writeback (from the control queue);
    # CT2 after CT1 if its half changed
    for case, payload1 in ((fl["ct1now"], {"PC": m.ns.pc, "MASK": m.ns.mask, "SP": m.ns.sp}),
                           (fl["ct1q"], m.ct1q)):
        kind("CT1", {case: 1})
        for name, fld in payload1.items():
            for i, d in enumerate(fld.dims):
                emit(name, i, {case: 1, d: 1}, -1)
    # CT2(alive, phase, wait) after such a CT1, or at a block end whose CT1's half did not change
    for case, payload2, bias in (({k["CT1"]: 1, follows: 1}, m.ctq, -1), ({fl["ct2q"]: 1}, m.ctq, 0),
                                 ({fl["ct2now"]: 1}, {name.upper(): getattr(m.ns, name) for name in CT2.fields}, 0)):
        kind("CT2", case, bias)
        for name, fld in payload2.items():
            for i, d in enumerate(fld.dims):
                emit(name, i, {**case, d: 1}, bias - 1)
    # COPY(the first group) or COPY(the next group)
    kind("COPY", {fl["copy0"]: 1})
    kind("COPY", {fl["copy"]: 1})
    first_group = [m.copy0[b] for b in COPY0.bits("group")]
    for i in range(GROUP_BITS):
        emit("CG", i, {fl["copy0"]: 1, first_group[i]: 1}, -1)
        emit("CG", i, {fl["copy"]: 1, m.copyq["next"][i]: 1}, -1)
    # CTA(c + 1), HALT, FAULT
    kind("CTA", {fl["cta"]: 1})
    for i in range(CTA_BITS):
        emit("CTA", i, {fl["cta"]: 1, next_cta[i]: 1}, -1)
    kind("HALT", {fl["halt"]: 1})
    kind("FAULT", {fl["fault"]: 1})
    # CONT: the VAL, VALU, VALA or VALQ emitted is the last writeback token of a pass that continues
    ends_pass = (({fl["ulane"]: 1}, {u_more[0]: -1}), ({fld[0]: 1 for fld in un}, {goes_on["un"][0]: -1}),
                 ({fld[0]: 1 for fld in alane.values()}, {}), ({fl["qlane"]: 1}, {}),
                 ({fld[0]: 1 for fld in vn.values()}, {goes_on["vn"][0]: -1, **no_c}),
                 ({vlane: 1}, {goes_on["vlane"][0]: -1, two[0]: -1, pair: -1}))
    for case, more_follows in ends_pass:
        emit("CONT", 0, {**case, **more_follows, nopend[0]: 1}, -1)
    emit("CONT", 0, {vlane: 1, pair: 1, three[0]: -1, nopend[0]: 1}, -2)      # VALP
    # every feature dim: - 1 and minus what the pass put there; the anchor leaves the residual
    lay = c.layout
    every = [d for name in FEATURES for d in feat[name]]
    G.const_one(c, E4, {d: -1 for d in every})
    for d in every:
        G.relu(c, E4, {d: 1}, 0, {d: -1})
    G.const_one(c, E4, {d: -lay.anchor_value for d in lay.anchor.dims})
