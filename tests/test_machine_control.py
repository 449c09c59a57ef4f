"""SIMT control (qwengpu/machine/branch.py, scheduler.py) through the stock Qwen3.5 layers, fp32 and bf16.

The terminator runs token by token (the SIMT stack lives in GDN state across tokens) on a
host with 2B-shaped GDN heads; the test plays the CT tokens: each pass's output status is
fed back as that warp's input status on its next pass. Expected values come from an eager
Python model of interp's SIMT stack written here from interp's rules (push/pop/settle,
exit_lanes), and the scheduler is held against a Python run_block/_next_runnable model.
"""
import numpy as np
import pytest
import torch
from transformers.cache_utils import DynamicCache

from qwengpu.circuit import CircuitError
from qwengpu.circuit.check import BANK_HOST, MLP_HOST
from qwengpu.circuit.host import QWEN35_2B, circuit_width
from qwengpu.circuit.layer import Circuit
from qwengpu.circuit.model import build_model, decode, encode, run_prefill
from qwengpu.machine.branch import TERMS, build_terminator
from qwengpu.machine.scheduler import build_scheduler
from qwengpu.machine.status import Status

DTYPES = ("float32", "bfloat16")


# ---------------------------------------------------------------------------
# random structured programs (blocks with JMP/BRC/BAR/EXIT), reconv = immediate post-dominator
# ---------------------------------------------------------------------------
def random_program(rng, max_depth=3):
    """Blocks [kind, target, fallthrough, reconv]: nested if/else, if-exit (some lanes EXIT, by a
    branch to an EXIT block or by a BRC whose taken lanes exit: kind BRX, target -1), do-while
    loops with a divergent exit and breaks, barriers; block 0 is the entry; at most 128 blocks
    (the ROM)."""
    while len(prog := _random_program(rng, max_depth)) > 128:
        pass
    return prog


def _random_program(rng, max_depth):
    blocks = []

    def block(kind, target=-1, ft=-1):
        blocks.append([kind, target, ft, -1])
        return len(blocks) - 1

    def seq(cont, depth, loop_exit=None, n=None):
        for _ in range(n or rng.integers(1, 4)):
            cont = stmt(cont, depth, loop_exit)
        return cont

    def stmt(cont, depth, loop_exit):
        if depth < max_depth:
            choice = rng.choice(["jmp", "bar", "if", "loop", "exit_if", "break"], p=[.1, .1, .4, .2, .1, .1])
        else:
            choice = rng.choice(["jmp", "bar", "exit_if"])
        if choice == "jmp" or (choice == "break" and loop_exit is None):
            return block("JMP", cont)
        if choice == "bar":
            return block("BAR", cont)
        if choice == "exit_if":
            return block("BRC", block("EXIT"), cont) if rng.random() < 0.5 else block("BRX", -1, cont)
        if choice == "break":
            return block("BRC", loop_exit, cont)
        if choice == "if":
            then = seq(cont, depth + 1, loop_exit)
            other = seq(cont, depth + 1, loop_exit) if rng.random() < 0.7 else cont
            return block("BRC", then, other)
        latch = block("BRC", -1, cont)                 # do { body } while (cond)
        body = seq(latch, depth + 1, loop_exit=cont)
        blocks[latch][1] = body
        return body

    entry = seq(block("EXIT"), 0, n=4)
    order = [entry] + [b for b in range(len(blocks)) if b != entry]
    new = {old: i for i, old in enumerate(order)}
    prog = [[k, new.get(t, -1), new.get(f, -1), -1] for k, t, f, _ in (blocks[b] for b in order)]
    for b, ipdom in enumerate(post_dominators(prog)):
        prog[b][3] = ipdom
    return prog


def post_dominators(prog):
    """Immediate post-dominator of every block (-1: the virtual exit), by the iterative set algorithm."""
    n = len(prog)
    exit_node = n
    succ = []
    for kind, t, f, _ in prog:
        succ.append({"JMP": [t], "BAR": [t], "BRC": [t, f], "BRX": [exit_node, f], "EXIT": [exit_node]}[kind])
    pdom = [set(range(n + 1)) for _ in range(n)] + [{exit_node}]
    changed = True
    while changed:
        changed = False
        for b in range(n):
            new = {b} | set.intersection(*(pdom[s] for s in succ[b]))
            if new != pdom[b]:
                pdom[b], changed = new, True
    ipdom = []
    for b in range(n):
        strict = pdom[b] - {b}
        near = max(strict, key=lambda s: len(pdom[s]))      # the closest strict post-dominator
        ipdom.append(-1 if near == exit_node else near)
    return ipdom


# ---------------------------------------------------------------------------
# eager reference: interp's SIMT stack, rule by rule
# ---------------------------------------------------------------------------
class EagerWarp:
    def __init__(self, init_mask):
        self.init = init_mask
        self.stack = [[0, -1, init_mask]]          # [pc, reconv, mask]
        self.alive, self.phase, self.wait = init_mask, 0, 0
        self.arrived = None                        # after a BAR: the lanes that arrived

    def settle(self):
        while self.stack and self.stack[-1][0] == self.stack[-1][1] >= 0:
            self.stack.pop()

    def terminate(self, kind, target, ft, reconv, conds):
        top = self.stack[-1]
        mask = top[2]
        self.wait = int(kind == "BAR")
        self.arrived = mask if kind == "BAR" else None
        if kind in ("EXIT", "BRX"):
            gone = mask if kind == "EXIT" else sum(1 << l for l in range(4) if mask >> l & 1 and conds[l])
            for entry in self.stack:
                entry[2] &= ~gone
            self.stack = [e for e in self.stack if e[2]]
            self.alive &= ~gone
            if kind == "BRX" and top[2]:
                top[0] = ft
        elif kind == "BRC":
            taken = sum(1 << l for l in range(4) if mask >> l & 1 and conds[l])
            if taken == mask:
                top[0] = target
            elif taken == 0:
                top[0] = ft
            else:
                top[0] = reconv
                self.stack += [[ft, reconv, mask & ~taken], [target, reconv, taken]]
        else:
            top[0] = target
            self.phase = (self.phase + 1) % 4 if kind == "BAR" else self.phase
        self.settle()

    def status(self):
        if not self.stack:
            return None
        pc, _, mask = self.stack[-1]
        if self.arrived is not None:
            # a BAR's status carries the lanes that arrived: the settled top's mask when they are
            # all the live lanes, else (a divergent barrier) what shows the scheduler the deadlock
            mask = self.arrived
        return {"pc": pc, "mask": mask, "sp": len(self.stack) - 1, "alive": self.alive,
                "phase": self.phase, "wait": self.wait}


# ---------------------------------------------------------------------------
# the terminator circuit, driven token by token
# ---------------------------------------------------------------------------
STATUS = ("pc", "mask", "sp", "alive", "phase", "wait")
WIDTH = {"pc": 7, "mask": 4, "sp": 3, "alive": 4, "phase": 2, "wait": 1}


@pytest.fixture(scope="module")
def terminator():
    return compile_terminator()


def compile_terminator():
    c = Circuit(BANK_HOST, circuit_width(BANK_HOST, 600))
    f = {"w": c.input("w", 2), "target": c.input("target", 7), "ft": c.input("ft", 7),
         "reconv": c.input("reconv", 7), "rvalid": c.input("rvalid", 1), "init": c.input("init", 4)}
    f.update({k: c.input(k, 1) for k in (*TERMS, "exits")})
    f.update({f"cond{l}": c.input(f"cond{l}", 32) for l in range(4)})
    f.update({f"old.{k}": c.input(f"old.{k}", WIDTH[k]) for k in STATUS})
    old = Status(*(f[f"old.{k}"] for k in STATUS))
    new, end = build_terminator(c, 0, 2, wbits=f["w"], term={k: f[k] for k in TERMS}, exits=f["exits"],
                                target=f["target"],
                                fallthrough=f["ft"], reconv=f["reconv"], rvalid=f["rvalid"],
                                cond=[f[f"cond{l}"] for l in range(4)], old=old, init_mask=f["init"])
    assert end == len(c.layers)
    return c, f, new


def draw_conds(rng):
    """Per lane: zero half the time, else a word with one high or low bit, or a random word."""
    out = []
    for _ in range(4):
        r = rng.random()
        out.append(0 if r < 0.5 else (1 << int(rng.integers(0, 32))) if r < 0.75 else int(rng.integers(1, 1 << 32)))
    return out


def make_trace(rng, passes):
    """Random thread blocks (1..16 threads, a fresh random program each) run by the eager model.
    Each event is one token: a terminator pass of a random live warp, sometimes a pass that
    runs no terminator (its outputs are don't-care, the stack must not change) or a text token.
    Thread blocks follow each other on the same stack rows (stale rows must never be trusted)."""
    events, stats = [], {"diverge": 0, "max_sp": 0, "partial_exit": 0, "bar": 0, "exit_reconv": 0,
                         "branch_exit": 0}
    warps = {}
    while len(events) < passes:
        if not any(runs_again(e) for e in warps.values()):
            prog, nthreads = random_program(rng), int(rng.integers(1, 17))
            warps = {w: EagerWarp(init_of(w, nthreads)) for w in range(4) if init_of(w, nthreads)}
            fresh = set(warps)
        r = rng.random()
        if r < 0.03:
            events.append({"text": True})
            continue
        w = int(rng.choice([w for w, e in warps.items() if runs_again(e)]))
        eager = warps[w]
        old = eager.status()
        kind, target, ft, reconv = prog[old["pc"]] if r > 0.08 else ("NONE", 0, 0, -1)
        conds = draw_conds(rng)
        vals = {"w": w, "target": max(target, 0), "ft": max(ft, 0), "reconv": reconv,
                "rvalid": int(reconv >= 0), "init": eager.init}
        if reconv < 0:          # the field is garbage; the worst is the top entry's own reconv point
            own = eager.stack[-1][1]
            vals["reconv"] = int(rng.choice([own if own >= 0 else 0, 0, 127, int(rng.integers(0, 128))]))
        vals.update({k: int(kind == k) for k in TERMS})
        vals.update(BRC=int(kind in ("BRC", "BRX")), exits=int(kind == "BRX"))
        vals.update({f"cond{l}": conds[l] for l in range(4)})
        want = None
        if kind != "NONE":
            depth = len(eager.stack)
            eager.terminate(kind, target, ft, reconv, conds)
            want = eager.status() or {"alive": 0}
            stats["diverge"] += len(eager.stack) > depth
            stats["exit_reconv"] += len(eager.stack) > depth and reconv < 0
            stats["max_sp"] = max(stats["max_sp"], want.get("sp", 0))
            stats["partial_exit"] += kind == "EXIT" and want["alive"] != 0
            stats["branch_exit"] += kind == "BRX" and 0 < want["alive"] != old["alive"] and "pc" in want
            stats["bar"] += kind == "BAR"
        events.append({"text": False, "vals": vals, "w": w, "old": old, "want": want, "first": w in fresh})
        if want is not None:
            fresh.discard(w)                   # from now on the warp's status is the circuit's
    return events, stats


def runs_again(eager):
    """A warp that has lanes left and did not arrive at a barrier with only some of them (a sure
    deadlock: the machine faults there, test_scheduler_faults_at_a_divergent_barrier)."""
    return eager.status() is not None and eager.arrived in (None, eager.stack[-1][2])


def init_of(w, nthreads):
    return sum(1 << l for l in range(4) if 4 * w + l < nthreads)


def embed(c, f, event, old, rng):
    if event["text"]:
        x = np.zeros((1, c.layout.total))
        x[0, :c.layout.n] = rng.normal(0, 1, c.layout.n)
        return x
    vals = dict(event["vals"])
    vals.update({f"old.{k}": old[k] for k in STATUS})
    return encode(c, {f[k]: [v] for k, v in vals.items()}, 1)


def compare(hidden, new, event, t) -> list[str]:
    """Mismatches of one pass's outputs (every output dim must be exactly 0.0 or 1.0)."""
    got, bad = {}, []
    for k in STATUS:
        v, err = decode(hidden[None], getattr(new, k))
        if err != 0.0:
            bad.append(f"pass {t}: {k} not exact (deviation {err})")
        got[k] = int(v[0])
    want = event["want"]
    if want == {"alive": 0}:                   # every lane exited: only alive matters
        got = {"alive": got["alive"]}
    if got != want:
        bad.append(f"pass {t}: warp {event['w']} from {event['old']}: got {got}, want {want}")
    return bad, got


def replay_decode(c, f, new, model, events, rng):
    """Token by token (recurrent GDN path); each warp's input status is the circuit's own output
    from that warp's previous pass (the test plays the CT tokens)."""
    L, kv = len(c.layers), DynamicCache(config=model.config)
    status, bad = {}, []
    for t, ev in enumerate(events):
        if not ev["text"]:
            w = ev["w"]
            old = ev["old"] if ev["first"] else status[w]
        x = embed(c, f, ev, None if ev["text"] else old, rng)
        hs = step(model, kv, x)
        if ev["text"] or ev["want"] is None:
            continue
        mismatches, got = compare(hs[L], new, ev, t)
        bad += mismatches
        status[w] = got
        if len(bad) > 5:
            break
    return bad


def replay_prefill(c, f, new, model, events, rng):
    """One chunked prefill over the whole trace; input statuses from the eager model (equal to the
    circuit's own outputs wherever those are right)."""
    L = len(c.layers)
    x = np.concatenate([embed(c, f, ev, None if ev["text"] else ev["old"], rng) for ev in events])
    hs, _ = run_prefill(model, x[None])
    text = [t for t, ev in enumerate(events) if ev["text"]]
    bad = [f"layer {layer} changed a text token" for layer in range(1, L + 1)
           if not np.array_equal(hs[layer][0][text], hs[0][0][text])]
    for t, ev in enumerate(events):
        if not ev["text"] and ev["want"] is not None:
            bad += compare(hs[L][0][t], new, ev, t)[0]
    return bad


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The recurrent path is ~6x faster on one thread on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@torch.no_grad()
def step(model, kv, x):
    emb = torch.tensor(x[None], dtype=torch.float32).to(model.dtype)
    out = model.model(inputs_embeds=emb, output_hidden_states=True, use_cache=True, cache=kv)
    return np.stack([h.float().numpy()[0, 0] for h in out.hidden_states])


def test_fits_a_2b_layer():
    """Compiled against the Qwen3.5-2B shape: the stack takes 13 of 16 heads in its layer and no
    layer needs more MLP neurons than the host has."""
    c = Circuit(QWEN35_2B, 1024)
    ins = {k: c.input(k, w) for k, w in (("w", 2), ("tg", 7), ("ft", 7), ("rc", 7), ("rv", 1), ("init", 4))}
    old = Status(*(c.input(k, WIDTH[k]) for k in STATUS))
    new, end = build_terminator(c, 3, 5, wbits=ins["w"], term={k: c.input(k, 1) for k in TERMS},
                                exits=c.input("exits", 1), target=ins["tg"], fallthrough=ins["ft"],
                                reconv=ins["rc"], rvalid=ins["rv"],
                                cond=[c.input(f"c{l}", 32) for l in range(4)], old=old, init_mask=ins["init"])
    sched, send = build_scheduler(c, end, [new] * 4, c.input("nw", 4), c.input("turn", 4))
    assert (end, send) == (8, 11)
    assert [lay.heads_used for lay in c.layers][5] == 13
    assert max(lay.neuron_count for lay in c.layers) <= QWEN35_2B.intermediate
    c.layers[5].weights()                      # the bank layer (z gates edited) passes silence and bf16 checks
    with pytest.raises(CircuitError, match="at \\+ 2"):
        build_terminator(c, 20, 21, wbits=ins["w"], term={k: c.input(k, 1) for k in TERMS},
                         exits=c.input("x", 1), target=ins["tg"],
                         fallthrough=ins["ft"], reconv=ins["rc"], rvalid=ins["rv"],
                         cond=[c.input(f"d{l}", 32) for l in range(4)], old=old, init_mask=ins["init"])


def test_trace_covers_the_stack_cases():
    _, stats = make_trace(np.random.default_rng(2), 600)
    assert stats["diverge"] >= 40 and stats["max_sp"] == 6 and stats["partial_exit"] >= 10
    assert stats["bar"] >= 20 and stats["exit_reconv"] >= 10 and stats["branch_exit"] >= 10, stats


@pytest.mark.parametrize("dtype", DTYPES)
def test_terminator_decode_with_feedback(terminator, dtype):
    c, f, new = terminator
    passes = 100 if dtype == "float32" else 40          # bf16 steps are ~4x slower on CPU
    events, stats = make_trace(np.random.default_rng(2 if dtype == "float32" else 22), passes)
    bad = replay_decode(c, f, new, build_model(c, dtype), events, np.random.default_rng(0))
    assert bad == []
    assert stats["diverge"] >= 5 and stats["max_sp"] >= 4 and stats["branch_exit"] >= 3


@pytest.mark.parametrize("dtype", DTYPES)
def test_terminator_prefill_long_trace(terminator, dtype):
    c, f, new = terminator
    events, _ = make_trace(np.random.default_rng(2), 600 if dtype == "float32" else 300)
    assert replay_prefill(c, f, new, build_model(c, dtype), events, np.random.default_rng(0)) == []


# ---------------------------------------------------------------------------
# scheduler
# ---------------------------------------------------------------------------
def compile_scheduler():
    c = Circuit(MLP_HOST, circuit_width(MLP_HOST, 300))
    warps = [{k: c.input(f"w{i}.{k}", WIDTH[k]) for k in STATUS} for i in range(4)]
    nwarps, turn = c.input("nwarps", 4), c.input("turn", 4)
    out, end = build_scheduler(c, 0, [Status(*(w[k] for k in STATUS)) for w in warps], nwarps, turn)
    assert end == len(c.layers)
    return c, warps, nwarps, turn, out


def spec_choice(states, nwarps, turn):
    """The scheduler's rule, stated directly (phases mod 4)."""
    live = [i < nwarps and states[i]["alive"] != 0 for i in range(4)]

    def released(i):
        return all((states[j]["phase"] - states[i]["phase"]) % 4 in (0, 1) for j in range(4) if live[j])
    runnable = [live[i] and (not states[i]["wait"] or released(i)) for i in range(4)]
    chosen = next((i for i in ((turn + k) % 4 for k in range(4)) if runnable[i]), None)
    # a divergent barrier: a waiting warp has live lanes that did not arrive (not in its mask)
    divergent = any(i < nwarps and states[i]["wait"] and states[i]["alive"] & ~states[i]["mask"] for i in range(4))
    deadlock = divergent or (chosen is None and any(live[i] and states[i]["wait"] for i in range(4)))
    return chosen, not any(live), deadlock


def simulate_blocks(rng, blocks):
    """interp's run_block loop (arrived thread set, live count, waiting flags, round robin from
    turn) for warps whose live lanes reach each barrier together. Each warp runs a random script
    of passes (JMP / BAR / EXIT of some lanes / EXIT of all). Returns the scheduling points:
    (statuses as the CT tokens carry them, nwarps, turn, interp's choice or None, done, deadlock)."""
    points = []
    for _ in range(blocks):
        nthreads = int(rng.integers(1, 17))
        n = -(-nthreads // 4)
        warps = []
        for i in range(n):
            alive = init_of(i, nthreads)
            script = list(rng.choice(["JMP", "BAR", "BAR", "EXIT_SOME"], int(rng.integers(0, 8)))) + ["EXIT"]
            warps.append({"alive": alive, "waiting": False, "phase": 0, "wait": 0, "pc": 0, "script": script})
        arrived, live, turn = set(), nthreads, 0
        while True:
            chosen = next((i for i in ((turn + k) % n for k in range(n))
                           if warps[i]["alive"] and not warps[i]["waiting"]), None)
            states = [{"pc": w["pc"], "mask": w["alive"], "sp": int(rng.integers(0, 7)), "alive": w["alive"],
                       "phase": w["phase"] % 4, "wait": w["wait"]} for w in warps]
            states += [random_status(rng) for _ in range(4 - n)]         # warps >= nwarps: garbage
            done = not any(w["alive"] for w in warps)
            points.append((states, n, turn, chosen, done, chosen is None and any(w["waiting"] for w in warps)))
            if chosen is None:
                break
            w = warps[chosen]
            ev = w["script"].pop(0)
            w["pc"], w["wait"] = int(rng.integers(0, 128)), int(ev == "BAR")
            if ev == "BAR":
                w["waiting"], w["phase"] = True, w["phase"] + 1
                arrived |= {4 * chosen + l for l in range(4) if w["alive"] >> l & 1}
            elif ev.startswith("EXIT"):
                gone = w["alive"] if ev == "EXIT" else w["alive"] & int(rng.integers(1, 16))
                w["alive"] &= ~gone
                live -= bin(gone).count("1")
                if not w["alive"]:
                    w["script"] = []
                elif not w["script"]:
                    w["script"] = ["EXIT"]
            turn = (chosen + 1) % n
            if arrived and len(arrived) == live:
                arrived.clear()
                for x in warps:
                    x["waiting"] = False
    return points


def random_status(rng):
    return {k: int(rng.integers(0, 1 << WIDTH[k])) for k in STATUS}


def random_points(rng, count):
    """Arbitrary statuses (also unreachable ones: phases far apart, deadlocks), held against spec_choice."""
    points = []
    for _ in range(count):
        states = [random_status(rng) for _ in range(4)]
        for s in states:
            if rng.random() < 0.3:
                s["alive"] = 0
            s["wait"] = int(rng.random() < 0.6)
        n = int(rng.integers(1, 5))
        turn = int(rng.integers(0, 4))         # turn >= nwarps acts as 0 (interp's turn is mod nwarps)
        points.append((states, n, turn, *spec_choice(states, n, turn)))
    return points


def test_phase_rule_equals_interp_barrier_release():
    """Pure Python: on reachable states the phase rule picks what interp's arrived/live rule picks."""
    points = simulate_blocks(np.random.default_rng(5), 300)
    assert len(points) > 2000
    for states, n, turn, chosen, done, deadlock in points:
        assert spec_choice(states, n, turn) == (chosen, done, deadlock)
    assert sum(any(s["wait"] for s in st[:n]) and c is not None for st, n, _, c, _, _ in points) > 200


def run_scheduler(points, dtype):
    """The scheduler circuit on (statuses, nwarps, turn, ...) points: its outputs per point."""
    c, warps, nwarps, turn, out = compile_scheduler()
    values = {nwarps: [1 << (n - 1) for _, n, *_ in points], turn: [1 << t for _, _, t, *_ in points]}
    for i, fields in enumerate(warps):
        for k, field in fields.items():
            values[field] = [p[0][i][k] for p in points]
    x = encode(c, values, len(points))
    hs, _ = run_prefill(build_model(c, dtype), x[None])
    h = hs[len(c.layers)][0]
    got = {}
    for k, field in out.items():
        got[k], err = decode(h, field)
        assert err == 0.0, k
    return [{k: int(v[p]) for k, v in got.items()} for p in range(len(points))]


@pytest.mark.parametrize("dtype", DTYPES)
def test_scheduler(dtype):
    rng = np.random.default_rng(11 + (dtype == "bfloat16"))
    points = simulate_blocks(rng, 150) + random_points(rng, 1500)
    outs = run_scheduler(points, dtype)
    for p, (states, n, t, chosen, done, deadlock) in enumerate(points):
        want = {"found": int(chosen is not None), "warp": 0 if chosen is None else 1 << chosen,
                "done": int(done), "deadlock": int(deadlock)}
        # (the chosen warp's pc comes from its pc register at L24: build_warp_pcs, held to the
        # reference stream by the suite's replay)
        assert {k: outs[p][k] for k in want} == want, (p, states, n, t)
    assert sum(d for *_, d in points) > 20 and sum(d for *_, d, _ in points) > 100
    # deadlocks with a runnable warp (only a divergent barrier makes those)
    assert sum(d and c is not None for *_, c, _, d in points) > 20


def st(alive, mask, phase, wait, pc=5):
    return {"pc": pc, "mask": mask, "sp": 0, "alive": alive, "phase": phase, "wait": wait}


FULL = 0b1111
# (statuses of warps 0-3, nwarps, turn, chosen warp, deadlock), worked out by hand from CUDA's rule
# (a barrier completes when every live thread of the block has arrived; a warp waiting at it runs
# none of its lanes) and the machine's round robin
DIVERGENT_POINTS = [
    # one warp, lanes 0-1 arrived, 2-3 live on its stack: the phase rule would release it
    ([st(FULL, 0b0011, 1, 1), st(0, 0, 0, 0), st(0, 0, 0, 0), st(0, 0, 0, 0)], 1, 0, 0, True),
    # lanes 2-3 exited before, 0-1 arrived: the barrier is complete, the warp runs on
    ([st(0b0011, 0b0011, 1, 1), st(0, 0, 0, 0), st(0, 0, 0, 0), st(0, 0, 0, 0)], 1, 0, 0, False),
    # warp 0 arrived whole, warp 1 with lanes 0-1 of 4: released by phase, but a deadlock
    ([st(FULL, FULL, 1, 1), st(FULL, 0b0011, 1, 1), st(0, 0, 0, 0), st(0, 0, 0, 0)], 2, 0, 0, True),
    # warp 1 (partial) is the first to arrive; warp 0 still runs (phase 0): a deadlock already
    ([st(FULL, FULL, 0, 0), st(FULL, 0b0110, 1, 1), st(0, 0, 0, 0), st(0, 0, 0, 0)], 2, 0, 0, True),
    # both whole, warp 1 with only 2 live lanes left: released, no deadlock
    ([st(FULL, FULL, 1, 1), st(0b1001, 0b1001, 1, 1), st(0, 0, 0, 0), st(0, 0, 0, 0)], 2, 1, 1, False),
    # a partial status in warp 2 >= nwarps (stale garbage) does not count
    ([st(FULL, FULL, 2, 1), st(0b0111, 0b0111, 2, 1), st(FULL, 0b0001, 3, 1), st(0, 0, 0, 0)], 2, 1, 1, False),
    # a partial status that no longer waits (wait 0: it ran again) is not a barrier
    ([st(FULL, 0b0011, 1, 0), st(0, 0, 0, 0), st(0, 0, 0, 0), st(0, 0, 0, 0)], 1, 0, 0, False),
    # four warps, warp 3 arrives with 1 of its 2 live lanes while warps 0-2 wait (and could go)
    ([st(FULL, FULL, 3, 1), st(FULL, FULL, 3, 1), st(FULL, FULL, 3, 1), st(0b0011, 0b0010, 3, 1)], 4, 0, 0, True),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_scheduler_faults_at_a_divergent_barrier(dtype):
    """A warp that waits at a barrier with live lanes that did not arrive can never be released
    (those lanes are parked on its own stack): deadlock, whatever the phases say."""
    points = [(states, n, t) for states, n, t, _, _ in DIVERGENT_POINTS]
    outs = run_scheduler(points, dtype)
    for (states, n, t, chosen, deadlock), got in zip(DIVERGENT_POINTS, outs):
        assert (got["deadlock"], got["found"], got["warp"]) == (int(deadlock), 1, 1 << chosen), (states, n, t)
        assert spec_choice(states, n, t)[2] == deadlock
