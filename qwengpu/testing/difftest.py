"""Differential test: random integer kernels on qwengpu against the same source built for the host.

    summary = run_programs(300, seed=1)            # engine="interp", front ends clang + nvrtc
    summary.mismatches, summary.refused, summary.failures

The generator writes seeded, deterministic, *thread-independent* CUDA kernels
(each thread reads `in`, computes, writes only its own words of `out`) with no
undefined behaviour: overflow-prone arithmetic runs on unsigned types, divisions
are guarded, shift counts masked. Thread independence makes any execution order
correct, so the oracle can run the kernel thread by thread on the CPU: the source
is compiled by clang-19 (or the system C++ compiler) as ordinary x86 C++, with a
harness of its own (HARNESS) for the CUDA qualifiers, index variables and
builtins, written from CUDA's documented semantics, independent of
qwengpu/toolchain/prelude.h, which is part of what is tested. Many programs share
one host compile. docs/testing.md describes the coverage and the command.
"""
from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from qwengpu.errors import MachineLimitError, QwenGpuError

FRONTEND_CHOICES = ("clang", "nvrtc")
OPT_LEVELS = (1, 2, 3)


# ---------------------------------------------------------------------------
# C integer types
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CType:
    name: str
    bits: int
    signed: bool

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - self.signed)) - 1

    def wrap(self, v: int) -> int:
        v &= (1 << self.bits) - 1
        return v - (1 << self.bits) if self.signed and v >> (self.bits - 1) else v

    @property
    def narrow(self) -> bool:      # promoted to int before any arithmetic
        return self.bits < 32


I8, U8 = CType("signed char", 8, True), CType("unsigned char", 8, False)
I16, U16 = CType("short", 16, True), CType("unsigned short", 16, False)
I32, U32 = CType("int", 32, True), CType("unsigned", 32, False)
I64, U64 = CType("long long", 64, True), CType("unsigned long long", 64, False)
TYPES = (I8, U8, I16, U16, I32, U32, I64, U64)
UNSIGNED = {8: U8, 16: U16, 32: U32, 64: U64}
# scalar kernel parameters: plain `char` (signed on x86 and NVPTX alike) instead of signed char
CHAR = CType("char", 8, True)
PARAM_TYPES = (I32, U32, CHAR, I16, U8, U16, I64, U64)


def promoted(t: CType) -> CType:
    return I32 if t.narrow else t


def literal(t: CType, v: int) -> str:
    """v (wrapped into t) as a C expression of type t."""
    v = t.wrap(v)
    if t is U64:
        return f"{v}ull"
    if t is U32:
        return f"{v}u"
    if t in (I32, I64):
        sfx = "ll" if t is I64 else ""
        if v == t.lo:
            return f"({v + 1}{sfx} - 1)"     # -2147483648 is unary minus on an unsigned-sized literal
        return f"({v}{sfx})" if v < 0 else f"{v}{sfx}"
    return f"(({t.name})({v}))"


def interesting(rng: random.Random, t: CType) -> int:
    """A value of t, biased to the edges where arithmetic goes wrong."""
    r = rng.random()
    if r < 0.25:
        v = rng.choice([0, 1, 2, 3, 5, 7, 8, 15, 16, 31, 32, 33, 63, 64, 127, 255, -1, -2, -3])
    elif r < 0.45:
        v = rng.choice([t.lo, t.hi, t.lo + 1, t.hi - 1, t.hi >> 1, (t.hi >> 1) + 1])
    elif r < 0.65:
        v = (1 << rng.randrange(t.bits)) + rng.choice([-1, 0, 1])
    else:
        v = rng.randrange(t.lo, t.hi + 1)
    return t.wrap(v)


# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------
@dataclass
class GenOptions:
    """What the generator may use. `noinline`: each helper is `__noinline__` (a PTX call,
    which the toolchain inlines) or `__forceinline__` at random; off, all are
    `__forceinline__`. `negative_params` passes negative values to signed scalar
    parameters (char/short/int), which need sign extension."""
    max_statements: int = 20
    max_depth: int = 3
    max_helpers: int = 2
    max_threads: int = 16          # per block (machine limit 16)
    max_blocks: int = 16           # per grid (machine limit 16)
    use_64bit: bool = True
    use_div64: bool = True
    noinline: bool = True
    negative_params: bool = True

    @classmethod
    def small(cls, **kw) -> "GenOptions":
        """Short kernels on one 4-thread block, no 64-bit division: the model engine decodes
        every instruction as tokens (and micro-codes division and high multiplies)."""
        return cls(**{**dict(max_statements=6, max_depth=2, max_helpers=1, max_threads=4, max_blocks=1,
                             use_div64=False), **kw})


@dataclass
class Program:
    """One generated kernel and its launch. `args` are the scalar parameters (type, value)
    after `in` and `out`; `out_init` is what `out` holds before the launch."""
    seed: int
    source: str
    grid: int
    block: int
    params: list[CType]
    args: list[int]
    inputs: np.ndarray            # uint32
    out_init: np.ndarray          # uint32
    frontend: str = "clang"
    opt: int = 2


@dataclass
class Var:
    name: str
    type: CType
    mutable: bool = True


@dataclass
class Helper:
    name: str
    ret: CType
    params: list[CType]


# the builtins the oracle implements: (name, result, argument types); min/max not 64-bit yet
BUILTINS = (
    ("min", I32, (I32, I32)), ("min", U32, (U32, U32)), ("max", I32, (I32, I32)), ("max", U32, (U32, U32)),
    ("__popc", I32, (U32,)), ("__clz", I32, (I32,)), ("__brev", U32, (U32,)),
    ("__mulhi", I32, (I32, I32)), ("__umulhi", U32, (U32, U32)),
    ("__sad", U32, (I32, I32, U32)), ("__usad", U32, (U32, U32, U32)),
)

EXPR_WEIGHTS = {"leaf": 3, "cast": 2, "arith": 6, "bit": 3, "shl": 2, "shr": 2, "div": 2,
                "unary": 1, "cmp": 2, "ternary": 2, "logic": 1, "builtin": 3, "call": 2, "load": 1, "pair": 3}
STMT_WEIGHTS = {"decl": 5, "assign": 5, "mix": 2, "store": 1, "if": 3, "for": 1, "while": 1,
                "switch": 1, "jump": 1}


class Generator:
    """Writes one random kernel. Every expression is generated *at* a C type and is
    parenthesised (or atomic), so it can be dropped into any larger expression."""

    def __init__(self, seed: int, opts: GenOptions | None = None):
        self.rng = random.Random(seed)
        self.seed, self.opts = seed, opts or GenOptions()
        self.types = [t for t in TYPES if self.opts.use_64bit or t.bits < 64]
        self.scopes: list[list[Var]] = []
        self.helpers: list[Helper] = []
        self.counter = 0
        self.loop_depth = 0
        self.in_kernel = False            # loads, stores and the accumulator: kernel only
        self.budget = 0                   # statements left to write
        self.n_in = self.n_out_per = 1    # words of `in` in all, of `out` per thread

    # -- names and scopes ------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def visible(self, t: CType | None = None, mutable: bool = False) -> list[Var]:
        return [v for s in self.scopes for v in s
                if (t is None or v.type == t) and (v.mutable or not mutable)]

    def declare(self, t: CType, prefix: str = "v", mutable: bool = True) -> Var:
        var = Var(self.fresh(prefix), t, mutable)
        self.scopes[-1].append(var)
        return var

    # -- expressions ------------------------------------------------------
    def rtype(self) -> CType:
        return self.rng.choice(self.types)

    def expr(self, t: CType, depth: int) -> str:
        if depth <= 0 or self.rng.random() < 0.15:
            return self.leaf(t)
        kinds = [k for k in EXPR_WEIGHTS if self.applicable(k, t)]
        kind = self.rng.choices(kinds, [EXPR_WEIGHTS[k] for k in kinds])[0]
        return getattr(self, "e_" + kind)(t, depth - 1)

    def applicable(self, kind: str, t: CType) -> bool:
        if kind == "call":
            return bool(self.helpers)
        if kind == "load":
            return self.in_kernel
        if kind == "div" and t.bits == 64:
            return self.opts.use_div64
        if kind == "pair":
            return t.bits == 64
        return True

    def leaf(self, t: CType) -> str:
        r = self.rng.random()
        same, others = self.visible(t), self.visible()
        if same and r < 0.6:
            return self.rng.choice(same).name
        if others and r < 0.8:
            return f"(({t.name}){self.rng.choice(others).name})"
        if r < 0.85:
            return f"(({t.name})threadIdx.x)"
        return literal(t, interesting(self.rng, t))

    def var_leaf(self, t: CType) -> str:
        """A variable (never a literal) read as t: a divisor that may be zero."""
        same, others = self.visible(t), self.visible()
        if same and (self.rng.random() < 0.7 or not others):
            return self.rng.choice(same).name
        return f"(({t.name}){self.rng.choice(others).name})" if others else f"(({t.name})threadIdx.x)"

    def e_leaf(self, t, d):
        return self.leaf(t)

    def e_cast(self, t, d):
        return f"(({t.name}){self.expr(self.rtype(), d)})"

    def e_arith(self, t, d):
        op = self.rng.choice("+-*")
        a, b = self.expr(t, d), self.expr(t, d)
        if t in (U32, U64) or (t.narrow and not (t is U16 and op == "*")):
            # unsigned wraps; narrow operands promote to int, where +,- and signed * can't overflow
            return f"(({t.name})({a} {op} {b}))"
        u = UNSIGNED[promoted(t).bits]     # int/long long, or u16 * u16 (overflows int): unsigned
        return f"(({t.name})(({u.name}){a} {op} ({u.name}){b}))"

    def e_bit(self, t, d):
        return f"(({t.name})({self.expr(t, d)} {self.rng.choice('&|^')} {self.expr(t, d)}))"

    def shift_count(self, t: CType, d: int) -> str:
        width = promoted(t).bits
        if self.rng.random() < 0.5:
            return str(self.rng.randrange(width))
        return f"({self.expr(U32, d)} & {width - 1}u)"

    def e_shl(self, t, d):
        u = UNSIGNED[promoted(t).bits]     # left shifts of negative values are UB: shift unsigned
        return f"(({t.name})(({u.name}){self.expr(t, d)} << {self.shift_count(t, d)}))"

    def e_shr(self, t, d):
        return f"(({t.name})({self.expr(t, d)} >> {self.shift_count(t, d)}))"   # signed: arithmetic

    def e_div(self, t, d):
        op = self.rng.choice("/%")
        if self.rng.random() < 0.4:        # a constant divisor: the compilers' magic-number code
            v = 0
            while v == 0 or (v == -1 and not t.narrow):
                v = interesting(self.rng, t)
            return f"(({t.name})({self.expr(t, d)} {op} {literal(t, v)}))"
        b, fallback = self.var_leaf(t), literal(t, interesting(self.rng, t))
        if not t.signed or t.narrow:       # narrow signed divides in int: no INT_MIN / -1
            return f"(({t.name})({b} != 0 ? {self.expr(t, d)} {op} {b} : {fallback}))"
        if self.rng.random() < 0.5:        # the exact guard: n is read twice, so a leaf
            n = self.var_leaf(t)
            return f"(({b} == 0 || ({n} == {literal(t, t.lo)} && {b} == -1)) ? {fallback} : {n} {op} {b})"
        return f"(({b} == 0 || {b} == -1) ? {fallback} : {self.expr(t, d)} {op} {b})"

    def e_unary(self, t, d):
        op, a = self.rng.choice("~-!"), self.expr(t, d)
        if op == "-" and t in (I32, I64):
            return f"(({t.name})(-({UNSIGNED[t.bits].name}){a}))"
        return f"(({t.name})({op}{a}))"

    def e_cmp(self, t, d):
        return f"(({t.name}){self.comparison(d)})"

    def comparison(self, d: int) -> str:
        s = self.rtype()
        op = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
        if self.rng.random() < 0.15:       # mixed signedness: int converts to unsigned
            return f"({self.expr(I32, d)} {op} {self.expr(U32, d)})"
        return f"({self.expr(s, d)} {op} {self.expr(s, d)})"

    def cond(self, d: int) -> str:
        r = self.rng.random()
        if r < 0.15:
            return f"({self.expr(self.rtype(), d)})"       # nonzero test
        if r < 0.3:
            return f"({self.comparison(d)} {self.rng.choice(['&&', '||'])} {self.comparison(d)})"
        return self.comparison(d)

    def e_ternary(self, t, d):
        return f"(({t.name})({self.cond(d)} ? {self.expr(t, d)} : {self.expr(t, d)}))"

    def e_logic(self, t, d):
        op = self.rng.choice(["&&", "||"])
        return f"(({t.name})({self.cond(d)} {op} {self.cond(d)}))"

    def e_builtin(self, t, d):
        name, ret, args = self.rng.choice(BUILTINS)
        call = f"{name}({', '.join(self.expr(a, d) for a in args)})"
        return call if ret == t else f"(({t.name}){call})"

    def e_call(self, t, d):
        h = self.rng.choice(self.helpers)
        call = f"{h.name}({', '.join(self.expr(p, d) for p in h.params)})"
        return call if h.ret == t else f"(({t.name}){call})"

    def e_pair(self, t, d):
        """A full-width 64-bit value from two 32-bit halves (casts alone rarely set the high word)."""
        return f"(({t.name})(((unsigned long long){self.expr(U32, d)} << 32) | {self.expr(U32, d)}))"

    def e_load(self, t, d):
        return f"(({t.name})in[{self.expr(U32, d)} % {self.n_in}u])"

    # -- statements -------------------------------------------------------
    def block(self, n: int, depth: int) -> list[str]:
        self.scopes.append([])
        lines = []
        for _ in range(n):
            if self.budget <= 0 and lines:    # at least one statement: no empty bodies
                break
            lines += self.stmt(depth)
        self.scopes.pop()
        return lines

    def stmt(self, depth: int) -> list[str]:
        self.budget -= 1
        kinds = [k for k in STMT_WEIGHTS if self.stmt_ok(k, depth)]
        kind = self.rng.choices(kinds, [STMT_WEIGHTS[k] for k in kinds])[0]
        return getattr(self, "s_" + kind)(depth)

    def stmt_ok(self, kind: str, depth: int) -> bool:
        if kind in ("if", "switch"):
            return depth > 0
        if kind in ("for", "while"):
            return depth > 0 and self.loop_depth < 2
        if kind == "jump":
            return self.loop_depth > 0
        if kind in ("store", "mix"):
            return self.in_kernel
        if kind == "assign":
            return bool(self.visible(mutable=True))
        return True

    def ed(self) -> int:
        return self.rng.randint(1, self.opts.max_depth)

    def s_decl(self, depth):
        t = self.rtype()
        e = self.expr(t, self.ed())
        return [f"{t.name} {self.declare(t).name} = {e};"]

    def s_assign(self, depth):
        v = self.rng.choice(self.visible(mutable=True))
        t, name = v.type, v.name
        if t in (U32, U64):               # unsigned wraps: any compound op
            ops = ["+=", "-=", "*=", "^=", "|=", "&=", "<<=", ">>=", "++", "="]
        elif t.narrow and not t.signed:   # promoted to int: + - can't overflow; u16 * can
            ops = ["+=", "-=", "^=", "|=", "&=", ">>=", "++", "="] + ([] if t is U16 else ["*="])
        elif t.narrow:                    # signed: += and ++ may leave the type's range, and
            ops = ["^=", "|=", "&=", ">>=", "="]   # NVRTC then drops the wrap (docs/testing.md)
        else:                             # int, long long: no overflow-prone compound op
            ops = ["^=", "|=", "&=", ">>=", "="]
        op = self.rng.choice(ops)
        if op == "++":
            return [f"{name}++;"]
        if op in ("<<=", ">>="):
            return [f"{name} {op} {self.shift_count(t, 1)};"]
        return [f"{name} {op} {self.expr(t, self.ed())};"]

    def s_mix(self, depth):
        v = self.rng.choice(self.visible())
        return [f"acc = acc * 31u + {self.fold32(v)};"]

    @staticmethod
    def fold32(v: Var) -> str:
        if v.type.bits == 64:
            return f"(unsigned)((unsigned long long){v.name} ^ ((unsigned long long){v.name} >> 32))"
        return f"(unsigned){v.name}"

    def s_store(self, depth):
        j = self.rng.randrange(self.n_out_per)
        return [f"out[g * {self.n_out_per}u + {j}u] = (unsigned){self.expr(self.rtype(), self.ed())};"]

    def s_if(self, depth):
        lines = [f"if {self.paren(self.cond(self.ed()))} {{"]
        lines += indent(self.block(self.rng.randint(1, 3), depth - 1))
        if self.rng.random() < 0.6:
            lines += ["} else {"] + indent(self.block(self.rng.randint(1, 3), depth - 1))
        return lines + ["}"]

    @staticmethod
    def paren(c: str) -> str:
        return c if c.startswith("(") and c.endswith(")") else f"({c})"

    def loop_body(self, depth: int) -> list[str]:
        self.loop_depth += 1
        body = self.block(self.rng.randint(1, 3), depth - 1)
        self.loop_depth -= 1
        return body

    def s_for(self, depth):
        self.scopes.append([])
        if self.rng.random() < 0.5:
            i = self.declare(I32, "i", mutable=False)
            head = f"for (int {i.name} = 0; {i.name} < {self.rng.randint(1, 4)}; ++{i.name}) {{"
        else:                             # a thread-dependent trip count (0..3): lanes diverge
            bound = f"({self.expr(U32, 1)} & 3u)"
            i = self.declare(U32, "i", mutable=False)
            head = f"for (unsigned {i.name} = 0u; {i.name} < {bound}; ++{i.name}) {{"
        lines = [head] + indent(self.loop_body(depth)) + ["}"]
        self.scopes.pop()
        return lines

    def s_while(self, depth):
        self.scopes.append([])
        start = self.expr(U32, 2)         # before the counter is declared: it can't read itself
        n = self.declare(U32, "w", mutable=False)
        if self.rng.random() < 0.5:
            lines = [f"unsigned {n.name} = {start} & 7u;", f"while ({n.name} != 0u) {{",
                     f"    --{n.name};"] + indent(self.loop_body(depth)) + ["}"]
        else:
            lines = [f"unsigned {n.name} = ({start} & 3u) + 1u;", "do {",
                     f"    --{n.name};"] + indent(self.loop_body(depth)) + [f"}} while ({n.name} != 0u);"]
        self.scopes.pop()
        return ["{"] + indent(lines) + ["}"]

    def s_switch(self, depth):
        cases = sorted(self.rng.sample(range(8), self.rng.randint(1, 4)))
        lines = [f"switch ({self.expr(U32, 2)} & 7u) {{"]
        for label in [f"case {c}u:" for c in cases] + ["default:"]:
            body = self.block(self.rng.randint(1, 2), depth - 1)
            fall = label != "default:" and self.rng.random() < 0.25
            lines += [f"{label} {{"] + indent(body) + ["}" if fall else "} break;"]
        return lines + ["}"]

    def s_jump(self, depth):
        return [f"if {self.paren(self.cond(1))} {self.rng.choice(['break', 'continue'])};"]

    # -- helpers and the kernel --------------------------------------------
    def helper(self) -> list[str]:
        ret = self.rtype()
        params = [self.rtype() for _ in range(self.rng.randint(1, 3))]
        name = f"h{len(self.helpers)}"
        self.scopes = [[Var(f"x{i}", t) for i, t in enumerate(params)]]
        self.budget = self.rng.randint(1, 4)
        body = self.block(self.budget, 1) + [f"return {self.expr(ret, self.ed())};"]
        self.helpers.append(Helper(name, ret, params))
        qual = "__noinline__" if self.opts.noinline and self.rng.random() < 0.5 else "__forceinline__"
        sig = ", ".join(f"{t.name} x{i}" for i, t in enumerate(params))
        return [f"__device__ {qual} {ret.name} {name}({sig}) {{"] + indent(body) + ["}", ""]

    def launch_shape(self) -> tuple[int, int, int, int]:
        rng = self.rng
        block = rng.randint(1, self.opts.max_threads)
        grid = rng.choice([1, 1, 2, 2, 3, 4, rng.randint(1, self.opts.max_blocks)])
        per_in, per_out = rng.randint(1, 3), rng.randint(1, 3)
        while grid > 1 and grid * block * (per_in + per_out) > 1000:
            grid -= 1
        return grid, block, per_in, per_out

    def param_value(self, t: CType) -> int:
        if t.bits == 64:                  # passed zero-extended from one 32-bit word
            return interesting(self.rng, U32)
        v = interesting(self.rng, t)
        return -(v + 1) if v < 0 and not self.opts.negative_params else v   # lo -> hi, -1 -> 0

    def program(self) -> Program:
        rng = self.rng
        grid, block, per_in, per_out = self.launch_shape()
        self.n_in, self.n_out_per = grid * block * per_in, per_out
        ptypes = [rng.choice([t for t in PARAM_TYPES if self.opts.use_64bit or t.bits < 64])
                  for _ in range(rng.randint(1, 4))]
        lines = []
        for _ in range(rng.randint(0, self.opts.max_helpers)):
            lines += self.helper()
        self.in_kernel = True
        params = [Var(f"p{i}", t) for i, t in enumerate(ptypes)]
        sig = ", ".join(["const unsigned *in", "unsigned *out"] + [f"{p.type.name} {p.name}" for p in params])
        self.scopes = [params + [Var("g", U32, mutable=False)]]
        body = ["unsigned g = blockIdx.x * blockDim.x + threadIdx.x;", "unsigned acc = 0u;"]
        for j in range(per_in):
            body.append(f"unsigned {self.declare(U32, 'a').name} = in[g * {per_in}u + {j}u];")
        self.budget = rng.randint(3, self.opts.max_statements)
        while self.budget > 0:             # top level: in the kernel's scope, so outputs() sees it
            body += self.stmt(2)
        body += self.outputs(per_out)
        lines += [f'extern "C" __global__ void k({sig}) {{'] + indent(body) + ["}"]
        n_threads = grid * block
        inputs = np.array([interesting(rng, U32) for _ in range(n_threads * per_in)], np.uint32)
        out_init = np.full(n_threads * per_out, 0xA5A5A5A5, np.uint32)
        combos = [(f, o) for f in FRONTEND_CHOICES for o in OPT_LEVELS]
        frontend, opt = combos[self.seed % len(combos)]
        return Program(self.seed, "\n".join(lines) + "\n", grid, block, ptypes,
                       [self.param_value(t) for t in ptypes], inputs, out_init, frontend, opt)

    def outputs(self, per_out: int) -> list[str]:
        """Each out word folds the accumulator and a few of the kernel's top-level values,
        so most of what was computed reaches memory (and can't be optimised away)."""
        top = [v for v in self.scopes[0] if v.name not in ("g",)]
        lines = []
        for j in range(per_out):
            picked = self.rng.sample(top, min(len(top), self.rng.randint(1, 3)))
            terms = ["acc"] + [f"{self.fold32(v)} * {self.rng.randrange(1, 1 << 32, 2)}u" for v in picked]
            lines.append(f"out[g * {per_out}u + {j}u] = {' ^ '.join(terms)};")
        return lines


def indent(lines: list[str]) -> list[str]:
    return ["    " + s for s in lines]


def generate(seed: int, opts: GenOptions | None = None) -> Program:
    """The program of `seed` (deterministic; its front end and -O level rotate with the seed)."""
    return Generator(seed, opts).program()


# ---------------------------------------------------------------------------
# The host oracle
# ---------------------------------------------------------------------------
# CUDA's qualifiers, index variables and the builtins the generator uses, in portable
# C++ from the CUDA Math API / PTX ISA descriptions (not from qwengpu's prelude).
HARNESS = r"""
#include <cstdio>
#include <cstdlib>
struct qg_dim3 { unsigned x, y, z; };
static qg_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))

static inline int min(int a, int b) { return a < b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
/* number of set bits */
static inline int __popc(unsigned x) { int n = 0; for (; x; x >>= 1) n += x & 1u; return n; }
/* leading zero bits of the 32-bit value; 32 for 0 */
static inline int __clz(int x) {
    unsigned u = (unsigned)x; int n = 0;
    for (unsigned bit = 0x80000000u; bit && !(u & bit); bit >>= 1) n++;
    return n;
}
/* bit i of the result is bit 31 - i of x */
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
/* the high 32 bits of the 64-bit product */
static inline int __mulhi(int a, int b) {
    long long p = (long long)a * (long long)b;
    return (int)(unsigned)((unsigned long long)p >> 32);
}
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
/* |x - y| + z, the difference taken exactly, the sum mod 2^32 */
static inline unsigned __sad(int x, int y, unsigned z) {
    long long d = (long long)x - (long long)y;
    return (unsigned)(d < 0 ? -d : d) + z;
}
static inline unsigned __usad(unsigned x, unsigned y, unsigned z) {
    return (x > y ? x - y : y - x) + z;
}

typedef void (*qg_runner)(const unsigned *in, unsigned *out, const long long *args);
static void qg_grid(unsigned grid, unsigned block) {
    gridDim.x = grid; gridDim.y = gridDim.z = 1;
    blockDim.x = block; blockDim.y = blockDim.z = 1;
    threadIdx.y = threadIdx.z = blockIdx.y = blockIdx.z = 0;
}
"""

HARNESS_MAIN = r"""
/* stdin: per launch "index n_in n_out n_args" then the in words, the out words, the args;
   stdout: "index" then the final out words */
static unsigned qg_in[1024], qg_out[1024];
static long long qg_args[16];
int main() {
    unsigned idx, n_in, n_out, n_args;
    while (scanf("%u %u %u %u", &idx, &n_in, &n_out, &n_args) == 4) {
        for (unsigned i = 0; i < n_in; i++) if (scanf("%u", &qg_in[i]) != 1) return 2;
        for (unsigned i = 0; i < n_out; i++) if (scanf("%u", &qg_out[i]) != 1) return 2;
        for (unsigned i = 0; i < n_args; i++) if (scanf("%lld", &qg_args[i]) != 1) return 2;
        qg_table[idx](qg_in, qg_out, qg_args);
        printf("%u", idx);
        for (unsigned i = 0; i < n_out; i++) printf(" %u", qg_out[i]);
        printf("\n");
    }
    return 0;
}
"""


def host_compiler() -> list[str]:
    """clang-19 (else clang++, g++, c++) in C++17 mode: x86 C++ with CUDA's integer model."""
    for cc in ("clang-19", "clang++", "g++", "c++"):
        if shutil.which(cc):
            return [cc, "-x", "c++", "-std=c++17"]
    raise QwenGpuError("no host C++ compiler found for the differential oracle (clang-19, clang++ or g++)")


def host_unit(programs: Sequence[Program]) -> str:
    """One translation unit: the harness, each kernel in its own namespace with a runner
    that walks the grid thread by thread, and a table of runners."""
    parts = [HARNESS]
    for i, p in enumerate(programs):
        src = p.source.replace('extern "C" ', "")
        casts = ", ".join(f"({t.name})args[{j}]" for j, t in enumerate(p.params))
        parts += [f"namespace qg_p{i} {{", "#line 1", src, "}",
                  f"static void qg_run{i}(const unsigned *in, unsigned *out, const long long *args) {{",
                  f"    qg_grid({p.grid}u, {p.block}u);",
                  f"    for (unsigned b = 0; b < {p.grid}u; b++)",
                  f"        for (unsigned t = 0; t < {p.block}u; t++) {{",
                  "            blockIdx.x = b; threadIdx.x = t;",
                  f"            qg_p{i}::k(in, out{', ' if casts else ''}{casts});",
                  "        }", "}"]
    parts.append(f"static const qg_runner qg_table[] = {{{', '.join(f'qg_run{i}' for i in range(len(programs)))}}};")
    parts.append(HARNESS_MAIN)
    return "\n".join(parts)


def host_outputs(programs: Sequence[Program], opt: str = "-O1", sanitize: bool = False,
                 workdir: str | Path | None = None) -> list[np.ndarray]:
    """The oracle: every program's final `out`, from one host compile. `sanitize` builds with
    UBSan (aborting on the first report): a check that the generator writes no UB."""
    if not programs:
        return []
    flags = [opt, "-w"] + (["-fsanitize=undefined", "-fno-sanitize-recover=all"] if sanitize else [])
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        src, exe = Path(tmp) / "oracle.cpp", Path(tmp) / "oracle"
        src.write_text(host_unit(programs))
        cc = subprocess.run(host_compiler() + flags + [str(src), "-o", str(exe)], capture_output=True, text=True)
        if cc.returncode:
            raise QwenGpuError(f"the host oracle did not compile:\n{cc.stderr[-4000:]}")
        feed = "\n".join(oracle_input(i, p) for i, p in enumerate(programs)) + "\n"
        run = subprocess.run([str(exe)], input=feed, capture_output=True, text=True, timeout=600)
    if run.returncode:
        raise QwenGpuError(f"the host oracle failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
    results = [None] * len(programs)
    for line in run.stdout.splitlines():
        idx, *words = line.split()
        results[int(idx)] = np.array([int(w) for w in words], np.uint32)
    return results


def oracle_input(i: int, p: Program) -> str:
    words = [i, len(p.inputs), len(p.out_init), len(p.args), *p.inputs.tolist(), *p.out_init.tolist(), *p.args]
    return " ".join(map(str, words))


# ---------------------------------------------------------------------------
# qwengpu
# ---------------------------------------------------------------------------
def device_output(p: Program, engine: str = "interp", **device_kw) -> np.ndarray:
    """The program on qwengpu: its final `out` (MachineLimitError propagates: refused)."""
    from qwengpu import Device
    dev = Device(engine, frontend=p.frontend, opt=p.opt, **device_kw)
    fn = dev.compile(p.source, filename=f"diff{p.seed}.cu").get_function("k")
    out = p.out_init.copy()
    fn(grid=p.grid, block=p.block, args=[p.inputs.copy(), out, *p.args])
    return out


# ---------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------
@dataclass
class Failure:
    """A program whose qwengpu result differs from the oracle's (kind "mismatch") or that
    qwengpu could not compile or run (kind "error")."""
    kind: str
    program: Program
    expected: np.ndarray | None = None
    got: np.ndarray | None = None
    error: str = ""
    engine: str = "interp"

    def report(self) -> str:
        p = self.program
        lines = [f"== {self.kind}: seed {p.seed}, engine {self.engine}, front end {p.frontend}, -O{p.opt}",
                 f"reproduce: .venv/bin/python benchmarks/differential.py --seed {p.seed} --programs 1"
                 f" --engine {self.engine}",
                 f"grid {p.grid}, block {p.block}, scalar args "
                 + ", ".join(f"{t.name} p{i} = {v}" for i, (t, v) in enumerate(zip(p.params, p.args))),
                 f"in  = {p.inputs.tolist()}", f"out before = 0x{int(p.out_init[0]):08x} x {len(p.out_init)}",
                 p.source.rstrip()]
        if self.kind == "error":
            return "\n".join(lines + [f"error: {self.error}"])
        bad = np.flatnonzero(self.expected != self.got)
        lines += [f"expected = {self.expected.tolist()}", f"got      = {self.got.tolist()}",
                  f"{len(bad)} of {len(self.got)} words differ, first at out[{bad[0]}]: expected "
                  f"0x{int(self.expected[bad[0]]):08x}, got 0x{int(self.got[bad[0]]):08x}"]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        p = self.program
        return {"kind": self.kind, "seed": p.seed, "engine": self.engine, "frontend": p.frontend, "opt": p.opt,
                "grid": p.grid, "block": p.block, "params": [t.name for t in p.params], "args": p.args,
                "inputs": p.inputs.tolist(), "source": p.source, "error": self.error,
                "expected": None if self.expected is None else self.expected.tolist(),
                "got": None if self.got is None else self.got.tolist()}


@dataclass
class Summary:
    programs: int = 0                       # compared with the oracle
    mismatches: int = 0
    errors: int = 0                         # qwengpu compile/run errors other than machine limits
    refused: int = 0                        # MachineLimitError on lowering: regenerated
    refusal_reasons: dict[str, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    by_config: dict[str, int] = field(default_factory=dict)

    @property
    def refusal_rate(self) -> float:
        return self.refused / max(1, self.programs + self.errors + self.refused)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.errors

    def as_dict(self) -> dict:
        return {"programs": self.programs, "mismatches": self.mismatches, "errors": self.errors,
                "refused": self.refused, "refusal_rate": round(self.refusal_rate, 4),
                "refusal_reasons": self.refusal_reasons, "seconds": round(self.seconds, 1),
                "by_config": self.by_config, "failures": [f.as_dict() for f in self.failures]}


def refusal_reason(err: MachineLimitError) -> str:
    msg = str(err)
    for key in ("registers", "ROM blocks", "instructions", "shared memory", "parameters", "global memory"):
        if key in msg:
            return key
    return msg[:60]


DeviceRunner = Callable[[Program], np.ndarray]


def run_programs(n: int, seed: int = 1, engine: str = "interp", frontends: Sequence[str] = FRONTEND_CHOICES,
                 opts: GenOptions | None = None, batch: int = 100, runner: DeviceRunner | None = None,
                 progress: Callable[[Summary], None] | None = None, sanitize: bool = False,
                 max_attempts: int | None = None) -> Summary:
    """Compare `n` programs (seeds seed, seed+1, ...; refused ones are skipped and replaced)
    between qwengpu and the host oracle. `frontends` limits which programs' front end is used
    (a program's front end and -O level come from its seed); `runner` replaces the qwengpu run
    (tests use it to show a wrong result is caught); `progress` is called after each program."""
    runner = runner or (lambda p: device_output(p, engine))
    summary, start, next_seed = Summary(), time.perf_counter(), seed
    attempts_left = max_attempts if max_attempts is not None else 20 * n + 100
    while summary.programs + summary.errors < n and attempts_left > 0:
        pending: list[tuple[Program, np.ndarray]] = []
        while len(pending) < batch and summary.programs + summary.errors + len(pending) < n and attempts_left > 0:
            p, next_seed, attempts_left = generate(next_seed, opts), next_seed + 1, attempts_left - 1
            if p.frontend not in frontends:
                p.frontend = frontends[p.seed % len(frontends)]
            got = _device_attempt(p, runner, summary, engine)
            if got is not None:
                pending.append((p, got))
            if progress:
                progress(summary)
        _compare(pending, summary, engine, sanitize)
        if progress:
            progress(summary)
    summary.seconds = time.perf_counter() - start
    return summary


def compare_programs(programs: Sequence[Program], engine: str = "interp", runner: DeviceRunner | None = None,
                     sanitize: bool = False) -> Summary:
    """run_programs for given programs (hand-written ones included): none is replaced."""
    runner = runner or (lambda p: device_output(p, engine))
    summary, start = Summary(), time.perf_counter()
    ran = [(p, got) for p in programs if (got := _device_attempt(p, runner, summary, engine)) is not None]
    _compare(ran, summary, engine, sanitize)
    summary.seconds = time.perf_counter() - start
    return summary


def _compare(ran: list[tuple[Program, np.ndarray]], summary: Summary, engine: str, sanitize: bool) -> None:
    """One host compile for the batch; every word of `out` must agree."""
    for (p, got), want in zip(ran, host_outputs([p for p, _ in ran], sanitize=sanitize)):
        summary.programs += 1
        key = f"{p.frontend} -O{p.opt}"
        summary.by_config[key] = summary.by_config.get(key, 0) + 1
        if not np.array_equal(want, got):
            summary.mismatches += 1
            summary.failures.append(Failure("mismatch", p, want, got, engine=engine))


def _device_attempt(p: Program, runner: DeviceRunner, summary: Summary, engine: str) -> np.ndarray | None:
    """qwengpu's `out` for p, or None when it was refused (machine limit) or failed (recorded)."""
    try:
        return runner(p)
    except MachineLimitError as e:
        summary.refused += 1
        reason = refusal_reason(e)
        summary.refusal_reasons[reason] = summary.refusal_reasons.get(reason, 0) + 1
    except QwenGpuError as e:
        summary.errors += 1
        summary.failures.append(Failure("error", p, error=f"{type(e).__name__}: {e}", engine=engine))
    return None


def check_source(source: str, grid: int, block: int, params: Sequence[CType], args: Sequence[int],
                 inputs: Sequence[int], n_out: int, frontend: str = "clang", opt: int = 2,
                 engine: str = "interp") -> tuple[np.ndarray, np.ndarray]:
    """(expected, got) for a hand-written kernel `k(const unsigned *in, unsigned *out, ...)`:
    the way to re-check a minimised reproducer."""
    p = program_from_source(source, grid, block, params, args, inputs, n_out, frontend, opt)
    return host_outputs([p])[0], device_output(p, engine)


def program_from_source(source: str, grid: int, block: int, params: Sequence[CType], args: Sequence[int],
                        inputs: Sequence[int], n_out: int, frontend: str = "clang", opt: int = 2) -> Program:
    """A Program for a hand-written kernel (`out` starts as 0xA5A5A5A5 words, like generated ones)."""
    return Program(0, source, grid, block, list(params), list(args), np.array(inputs, np.uint32),
                   np.full(n_out, 0xA5A5A5A5, np.uint32), frontend, opt)
