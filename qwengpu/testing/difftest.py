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
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from qwengpu import isa
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
    is_float: bool = False         # F32 only: float kernels (FloatGenerator)

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
    max_threads: int = 16          # per block: over isa.MACHINE_BLOCK_THREADS, a multiple of it (thread tiles)
    max_blocks: int = 16           # per grid (machine limit 16)
    use_64bit: bool = True
    use_div64: bool = True
    noinline: bool = True
    negative_params: bool = True
    floats: bool = False
    float_int64: bool = False      # the translator refuses cvt between f32 and 64-bit integers today

    @classmethod
    def small(cls, **kw) -> "GenOptions":
        """Short kernels on one 4-thread block, no 64-bit division: the model engine decodes
        every instruction as tokens (and micro-codes division and high multiplies)."""
        return cls(**{**dict(max_statements=6, max_depth=2, max_helpers=1, max_threads=4, max_blocks=1,
                             use_div64=False), **kw})


@dataclass
class Program:
    """One generated kernel and its launch. `args` are the scalar parameters (type, value)
    after `in` and `out` (a float parameter's value is its float32's bits); `out_init` is what
    `out` holds before the launch. A float kernel (`fin` set) takes `const float *fin,
    float *fout` after `out`: `fin` and `fout_init` are float32 bit patterns, and its result is
    `out`'s words followed by `fout`'s."""
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
    fin: np.ndarray | None = None          # uint32 bits: float kernels only
    fout_init: np.ndarray | None = None    # uint32 bits

    @property
    def floats(self) -> bool:
        return self.fin is not None


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
    expr_weights = EXPR_WEIGHTS
    stmt_weights = STMT_WEIGHTS

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
        kinds = [k for k in self.expr_weights if self.applicable(k, t)]
        kind = self.rng.choices(kinds, [self.expr_weights[k] for k in kinds])[0]
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
        kinds = [k for k in self.stmt_weights if self.stmt_ok(k, depth)]
        kind = self.rng.choices(kinds, [self.stmt_weights[k] for k in kinds])[0]
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
        return self.assign(self.rng.choice(self.visible(mutable=True)))

    def assign(self, v: Var) -> list[str]:
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

    def block_size(self) -> int:
        """Threads a block: over the machine's, a whole number of its tiles (threads.py)."""
        block, tile = self.rng.randint(1, self.opts.max_threads), isa.MACHINE_BLOCK_THREADS
        return block if block <= tile else block // tile * tile

    def launch_shape(self) -> tuple[int, int, int, int]:
        rng = self.rng
        block = self.block_size()
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
    """The program of `seed` (deterministic; its front end and -O level rotate with the seed);
    a float kernel when opts.floats."""
    return (FloatGenerator if opts is not None and opts.floats else Generator)(seed, opts).program()


# ---------------------------------------------------------------------------
# Float kernels
# ---------------------------------------------------------------------------
F32 = CType("float", 32, True, is_float=True)
SIGN_BIT = 0x8000_0000
ROUNDINGS = ("rn", "rn", "rn", "rz", "rd", "ru")     # the intrinsics' suffixes, nearest weighted
# float32 bit patterns where fp32 goes wrong: zeros, infinities, NaNs (CUDA's canonical one,
# the default quiet one, payloads, signalling ones); subnormals, the normal range's ends, 1 and
# its neighbours, halves, 2**23 and 2**24 (integral spacing), the integer types' limits
FLOAT_SPECIALS = (0x00000000, 0x7F800000, 0x7FFFFFFF, 0x7FC00000, 0x7FC00001, 0x7F800001, 0x7FBFFFFF,
                  0x7FA00000)       # a sign is added at random
FLOAT_EDGES = (0x00000001, 0x00000002, 0x007FFFFF, 0x00800000, 0x00800001, 0x00FFFFFF, 0x3F800000,
               0x3F800001, 0x3F7FFFFF, 0x3F000000, 0x3EFFFFFF, 0x3F400000, 0x3FC00000, 0x40000000,
               0x40400000, 0x40490FDB, 0x3FB504F3, 0x34000000, 0x33800000, 0x4B000000, 0x4B000001,
               0x4B800000, 0x4B800001, 0x4EFFFFFF, 0x4F000000, 0x4F7FFFFF, 0x4F800000, 0x5EFFFFFF,
               0x5F000000, 0x5F800000, 0x46FFFE00, 0x47000000, 0x7F7FFFFF, 0x7F7FFFFE, 0x7F000000)


def bits_to_f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFF_FFFF))[0]


def f32_to_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


def is_finite_bits(bits: int) -> bool:
    return (bits & 0x7F80_0000) != 0x7F80_0000


def interesting_float(rng: random.Random, finite: bool = False) -> int:
    """A float32 bit pattern biased to the edges; `finite`: no infinity or NaN."""
    while True:
        r = rng.random()
        sign = SIGN_BIT if rng.random() < 0.4 else 0
        if r < 0.12:
            bits = rng.choice(FLOAT_SPECIALS) | sign
        elif r < 0.32:
            bits = rng.choice(FLOAT_EDGES) | sign
        elif r < 0.55:                    # |x| in [2**-7, 2**8): sums and products stay in range
            bits = sign | rng.randint(120, 134) << 23 | rng.getrandbits(23)
        elif r < 0.65:                    # small integers and quarters: exact sums, ties
            bits = f32_to_bits(rng.randint(-1200, 1200) / rng.choice([1, 1, 2, 4]))
        elif r < 0.72:                    # subnormals and the smallest normals
            bits = sign | rng.randint(0, 2) << 23 | rng.getrandbits(23)
        elif r < 0.8:                     # near the top: overflow
            bits = sign | rng.randint(250, 254) << 23 | rng.getrandbits(23)
        else:
            bits = rng.getrandbits(32)
        if not finite or is_finite_bits(bits):
            return bits


def float_literal(bits: int) -> str:
    """A finite float32 as a C float literal: decimal where short and exact (2.25f), else hex
    (0x1.8p+1f); negative ones parenthesised."""
    v = abs(bits_to_f32(bits))
    if v < 1 << 24 and (v * 4).is_integer():
        text = repr(v)
    else:
        mantissa, exponent = v.hex().split("p")
        text = f"{mantissa.rstrip('0').rstrip('.')}p{exponent}"
    return f"(-{text}f)" if bits & SIGN_BIT else f"{text}f"


# (lo, hi) float literals: a C cast of a float in [lo, hi] to the type is defined (truncation
# lands in range); hi is the largest float below max + 1
CAST_CLAMP = {(t.bits, t.signed): (float_literal(f32_to_bits(float(t.lo))),
                  float_literal(f32_to_bits(float(t.hi + 1)) - 1))
              for t in (I8, U8, I16, U16, I32, U32, I64, U64)}
FLOAT_EXPR_WEIGHTS = {"leaf": 3, "arith": 8, "fma": 3, "root": 2, "abs": 1, "copysign": 1, "integral": 2,
                      "from_int": 2, "bits": 1, "saturate": 1, "ternary": 2, "call": 2, "load": 2}
FLOAT_INT_EXPR_WEIGHTS = {**EXPR_WEIGHTS, "to_int": 3, "as_int": 1, "classify": 1}
FLOAT_STMT_WEIGHTS = {**STMT_WEIGHTS, "mix": 4}


class FloatGenerator(Generator):
    """Writes one random float kernel: the integer generator's machinery plus float32 locals,
    parameters and arrays (`const float *fin, float *fout` after `in` and `out`). Every float
    arithmetic operation is an fp32 intrinsic (`__fadd_rz`, `__fmaf_rn`, `__fsqrt_ru`, ... or
    `fmaf`/`sqrtf`), so neither compiler can contract or reassociate, and the host oracle
    (FLOAT_HARNESS) defines each one exactly. Also: fminf/fmaxf, fabsf, copysignf,
    floorf/ceilf/truncf/rintf/roundf, __saturatef, comparisons (and their negations, the
    unordered ones), conversions both ways (CUDA's saturating intrinsics, C casts of
    in-range values), bit casts and the classification functions.

    NaN bits: an fp32 operation's NaN is CUDA's 0x7FFFFFFF, while moves, selects, bit casts
    and copysignf keep a NaN's bits. Negation, fminf and fmaxf (and copysignf with a sign a
    compiler could know), whose NaN bits the front ends leave open, are written only where
    those bits cannot show (`operand`). No NaN is a compile-time constant, which a front end
    would fold keeping its payload: float literals are finite, and bit casts mix in an input
    word; infinities and NaNs come from the inputs, the parameters, bit casts and
    arithmetic (docs/testing.md)."""
    expr_weights = FLOAT_INT_EXPR_WEIGHTS
    stmt_weights = FLOAT_STMT_WEIGHTS

    def __init__(self, seed: int, opts: GenOptions | None = None):
        super().__init__(seed, opts)
        self.n_fin = self.n_fout_per = self.per_in = 1

    # -- types ----------------------------------------------------------------
    def rtype(self) -> CType:
        return F32 if self.rng.random() < 0.55 else self.rng.choice(self.types)

    def int_vars(self) -> list[Var]:
        return [v for v in self.visible() if not v.type.is_float]

    def wide_ok(self, t: CType) -> bool:
        """Whether t converts to and from float directly (64-bit ones: only with float_int64)."""
        return t.bits < 64 or self.opts.float_int64

    def via32(self, t: CType) -> CType:
        return t if self.wide_ok(t) else (I32 if t.signed else U32)

    # -- integer expressions: float sources made safe ----------------------------
    def expr(self, t: CType, depth: int) -> str:
        return self.fexpr(depth) if t.is_float else super().expr(t, depth)

    def applicable(self, kind: str, t: CType) -> bool:
        return kind in ("to_int", "as_int", "classify") or super().applicable(kind, t)

    def leaf(self, t: CType) -> str:
        if t.is_float:
            return self.fleaf()
        r = self.rng.random()
        same, others, floats = self.visible(t), self.int_vars(), self.visible(F32)
        if same and r < 0.55:
            return self.rng.choice(same).name
        if others and r < 0.75:
            return f"(({t.name}){self.rng.choice(others).name})"
        if floats and r < 0.82:
            return self.float_to_int(t, self.rng.choice(floats).name)
        if r < 0.87:
            return f"(({t.name})threadIdx.x)"
        return literal(t, interesting(self.rng, t))

    def var_leaf(self, t: CType) -> str:
        same, others = self.visible(t), self.int_vars()
        if same and (self.rng.random() < 0.7 or not others):
            return self.rng.choice(same).name
        return f"(({t.name}){self.rng.choice(others).name})" if others else f"(({t.name})threadIdx.x)"

    def e_cast(self, t, d):
        s = self.rtype()
        if s.is_float:
            return self.float_to_int(t, self.operand(d))
        return f"(({t.name}){self.expr(s, d)})"

    def e_call(self, t, d):
        h = self.rng.choice(self.helpers)
        call = f"{h.name}({', '.join(self.expr(p, d) for p in h.params)})"
        if h.ret == t:
            return call
        return self.float_to_int(t, call) if h.ret.is_float else f"(({t.name}){call})"

    def e_to_int(self, t, d):
        return self.float_to_int(t, self.operand(d))

    def float_to_int(self, t: CType, x: str) -> str:
        """The float expression x as t, never undefined: CUDA's saturating conversions
        (NaN -> 0), or a C cast of x clamped into the type's range."""
        if self.rng.random() < 0.6:
            names = [("float2int", I32), ("float2uint", U32)]
            if self.opts.float_int64:
                names += [("float2ll", I64), ("float2ull", U64)]
            name, rt = self.rng.choice(names)
            call = f"__{name}_{self.rng.choice(ROUNDINGS)}({x})"
            return call if rt == t else f"(({t.name}){call})"
        target = self.via32(t)
        lo, hi = CAST_CLAMP[target.bits, target.signed]
        cast = f"(({target.name})fminf(fmaxf({x}, {lo}), {hi}))"
        return cast if target == t else f"(({t.name}){cast})"

    def e_as_int(self, t, d):
        name, rt = self.rng.choice([("__float_as_int", I32), ("__float_as_uint", U32)])
        call = f"{name}({self.fexpr(d)})"
        return call if rt == t else f"(({t.name}){call})"

    def e_classify(self, t, d):
        name = self.rng.choice(["__isnanf", "__isinff", "__finitef", "__signbitf"])
        return f"(({t.name})({name}({self.fexpr(d)}) != 0))"

    def comparison(self, d: int) -> str:
        if self.rng.random() < 0.3:       # float: ordered, or negated (the unordered forms)
            op = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
            test = f"({self.operand(d)} {op} {self.operand(d)})"
            return f"(!{test})" if self.rng.random() < 0.3 else test
        return super().comparison(d)

    # -- float expressions --------------------------------------------------------
    def fexpr(self, depth: int) -> str:
        if depth <= 0 or self.rng.random() < 0.15:
            return self.fleaf()
        kinds = [k for k in FLOAT_EXPR_WEIGHTS if self.f_applicable(k)]
        kind = self.rng.choices(kinds, [FLOAT_EXPR_WEIGHTS[k] for k in kinds])[0]
        return getattr(self, "f_" + kind)(depth - 1)

    def f_applicable(self, kind: str) -> bool:
        if kind == "call":
            return bool(self.helpers)
        if kind in ("load", "copysign", "bits"):
            return self.in_kernel
        return True

    def fleaf(self) -> str:
        r = self.rng.random()
        floats, ints = self.visible(F32), self.int_vars()
        if floats and r < 0.7:
            return self.rng.choice(floats).name
        if ints and r < 0.8:
            v = self.rng.choice(ints)
            return self.int_to_float(v.type, v.name)
        if r < 0.82:
            return "((float)threadIdx.x)"
        return float_literal(interesting_float(self.rng, finite=True))

    def int_to_float(self, t: CType, x: str) -> str:
        """(float)x, through a 32-bit type where 64-bit conversions are off."""
        s = self.via32(t)
        return f"((float){x})" if s == t else f"((float)({s.name}){x})"

    def operand(self, d: int) -> str:
        """An operand whose NaN bits cannot show in the result (the operation's NaN is
        canonical, or it is compared or converted). Here, and only here, come the operations
        whose NaN bits the front ends leave open: a negation (neg.f32), copysignf with any sign
        (NVRTC folds a constant sign into abs.f32/neg.f32, which canonicalise a NaN),
        fminf/fmaxf (both front ends fold fminf(x, x) to x, keeping a NaN's payload)."""
        r = self.rng.random()
        if r < 0.08:
            return f"(-{self.fexpr(d)})"
        if r < 0.12:
            return f"copysignf({self.fexpr(d)}, {self.fexpr(d)})"
        if r < 0.25:
            d = max(d - 1, 0)
            return f"{self.rng.choice(['fminf', 'fmaxf'])}({self.operand(d)}, {self.operand(d)})"
        return self.fexpr(d)

    def f_leaf(self, d):
        return self.fleaf()

    def f_copysign(self, d):
        """copysign.f32 moves bits (a NaN keeps its payload) with a sign no compiler can know:
        one loaded from `fin`."""
        return f"copysignf({self.fexpr(d)}, fin[{self.expr(U32, d)} % {self.n_fin}u])"

    def f_arith(self, d):
        op = self.rng.choice(["fadd", "fsub", "fmul", "fdiv"])
        return f"__{op}_{self.rng.choice(ROUNDINGS)}({self.operand(d)}, {self.operand(d)})"

    def f_fma(self, d):
        rnd = self.rng.choice(ROUNDINGS)
        name = "fmaf" if rnd == "rn" and self.rng.random() < 0.4 else f"__fmaf_{rnd}"
        return f"{name}({self.operand(d)}, {self.operand(d)}, {self.operand(d)})"

    def f_root(self, d):
        rnd = self.rng.choice(ROUNDINGS)
        name = self.rng.choice([f"__fsqrt_{rnd}", f"__frcp_{rnd}", "sqrtf"])
        return f"{name}({self.operand(d)})"

    def f_abs(self, d):
        return f"fabsf({self.operand(d)})"

    def f_integral(self, d):
        return f"{self.rng.choice(['floorf', 'ceilf', 'truncf', 'rintf', 'roundf'])}({self.operand(d)})"

    def f_saturate(self, d):
        return f"__saturatef({self.operand(d)})"

    def f_from_int(self, d):
        if self.rng.random() < 0.3:
            t = self.rng.choice(self.types)
            return self.int_to_float(t, self.expr(t, d))
        names = [("int2float", I32), ("uint2float", U32)]
        if self.opts.float_int64:
            names += [("ll2float", I64), ("ull2float", U64)]
        name, t = self.rng.choice(names)
        return f"__{name}_{self.rng.choice(ROUNDINGS)}({self.expr(t, d)})"

    def f_bits(self, d):
        """A bit cast of an integer that no compiler can know: one of the thread's `in` words
        is mixed in, so it is never a NaN constant (clang folds llvm.ceil, llvm.fabs, llvm.fma,
        ... of a NaN constant keeping its payload, where the GPU's instruction would give
        0x7FFFFFFF: found as seed 1531, docs/testing.md)."""
        word = f"in[g * {self.per_in}u + {self.rng.randrange(self.per_in)}u]"
        if self.rng.random() < 0.5:
            return f"__int_as_float({self.expr(I32, d)} ^ (int){word})"
        return f"__uint_as_float({self.expr(U32, d)} ^ {word})"

    def f_ternary(self, d):
        return f"({self.cond(d)} ? {self.fexpr(d)} : {self.fexpr(d)})"

    def f_call(self, d):
        h = self.rng.choice(self.helpers)
        call = f"{h.name}({', '.join(self.expr(p, d) for p in h.params)})"
        return call if h.ret.is_float else self.int_to_float(h.ret, call)

    def f_load(self, d):
        return f"fin[{self.expr(U32, d)} % {self.n_fin}u]"

    # -- statements -----------------------------------------------------------------
    def mixed(self, v: Var, lines: list[str]) -> list[str]:
        """lines, and in the kernel often the new value of float v folded into the accumulator
        too: a last-bit difference reaches `out` even where v is a block's local or is
        overwritten later."""
        if self.in_kernel and self.rng.random() < 0.7:
            lines.append(f"acc = acc * 31u + {self.fold32(v)};")
        return lines

    def s_decl(self, depth):
        t = self.rtype()
        if not t.is_float:
            e = self.expr(t, self.ed())
            return [f"{t.name} {self.declare(t).name} = {e};"]
        e = self.fexpr(self.ed())
        v = self.declare(F32)
        return self.mixed(v, [f"float {v.name} = {e};"])

    def assign(self, v: Var) -> list[str]:
        if not v.type.is_float:
            return super().assign(v)
        r, d = self.rng.random(), self.ed()
        if r < 0.4:
            return self.mixed(v, [f"{v.name} = {self.fexpr(d)};"])
        rnd = self.rng.choice(ROUNDINGS)
        if r < 0.8:
            op = self.rng.choice(["fadd", "fsub", "fmul", "fdiv"])
            a, b = v.name, self.operand(d)
            if self.rng.random() < 0.3:
                a, b = b, a
            return self.mixed(v, [f"{v.name} = __{op}_{rnd}({a}, {b});"])
        return self.mixed(v, [f"{v.name} = __fmaf_{rnd}({self.operand(d)}, {self.operand(d)}, {v.name});"])

    @staticmethod
    def fold32(v: Var) -> str:
        return f"__float_as_uint({v.name})" if v.type.is_float else Generator.fold32(v)

    def s_store(self, depth):
        t = self.rtype()
        if t.is_float and self.rng.random() < 0.6:
            j = self.rng.randrange(self.n_fout_per)
            return [f"fout[g * {self.n_fout_per}u + {j}u] = {self.fexpr(self.ed())};"]
        j = self.rng.randrange(self.n_out_per)
        value = f"__float_as_uint({self.fexpr(self.ed())})" if t.is_float else f"(unsigned){self.expr(t, self.ed())}"
        return [f"out[g * {self.n_out_per}u + {j}u] = {value};"]

    # -- the kernel -------------------------------------------------------------------
    def param_value(self, t: CType) -> int:
        return interesting_float(self.rng) if t.is_float else super().param_value(t)

    def program(self) -> Program:
        rng = self.rng
        block = self.block_size()
        grid = rng.choice([1, 1, 2, 2, 3, 4, rng.randint(1, self.opts.max_blocks)])
        per_in, per_out, per_fin, per_fout = rng.randint(1, 3), rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 2)
        while grid > 1 and grid * block * (per_in + per_out + per_fin + per_fout) > 1000:
            grid -= 1
        n_threads = grid * block
        self.n_in, self.n_out_per, self.per_in = n_threads * per_in, per_out, per_in
        self.n_fin, self.n_fout_per = n_threads * per_fin, per_fout
        int_params = [t for t in PARAM_TYPES if self.opts.use_64bit or t.bits < 64]
        ptypes = [F32 if rng.random() < 0.35 else rng.choice(int_params) for _ in range(rng.randint(1, 4))]
        lines = []
        for _ in range(rng.randint(0, self.opts.max_helpers)):
            lines += self.helper()
        self.in_kernel = True
        params = [Var(f"p{i}", t) for i, t in enumerate(ptypes)]
        sig = ", ".join(["const unsigned *in", "unsigned *out", "const float *fin", "float *fout"]
                        + [f"{p.type.name} {p.name}" for p in params])
        self.scopes = [params + [Var("g", U32, mutable=False)]]
        body = ["unsigned g = blockIdx.x * blockDim.x + threadIdx.x;", "unsigned acc = 0u;"]
        for j in range(per_in):
            body.append(f"unsigned {self.declare(U32, 'a').name} = in[g * {per_in}u + {j}u];")
        for j in range(per_fin):
            body.append(f"float {self.declare(F32, 'f').name} = fin[g * {per_fin}u + {j}u];")
        self.budget = rng.randint(3, self.opts.max_statements)
        while self.budget > 0:
            body += self.stmt(2)
        body += self.outputs(per_out) + self.float_outputs(per_fout)
        lines += [f'extern "C" __global__ void k({sig}) {{'] + indent(body) + ["}"]
        inputs = np.array([interesting(rng, U32) for _ in range(n_threads * per_in)], np.uint32)
        fin = np.array([interesting_float(rng) for _ in range(n_threads * per_fin)], np.uint32)
        combos = [(f, o) for f in FRONTEND_CHOICES for o in OPT_LEVELS]
        frontend, opt = combos[self.seed % len(combos)]
        return Program(self.seed, "\n".join(lines) + "\n", grid, block, ptypes,
                       [self.param_value(t) for t in ptypes], inputs,
                       np.full(n_threads * per_out, 0xA5A5A5A5, np.uint32), frontend, opt,
                       fin=fin, fout_init=np.full(n_threads * per_fout, 0xA5A5A5A5, np.uint32))

    def outputs(self, per_out: int) -> list[str]:
        """Each out word folds the accumulator, a few top-level integers and the bits of every
        top-level float."""
        top = [v for v in self.scopes[0] if v.name != "g"]
        ints, floats = [v for v in top if not v.type.is_float], [v for v in top if v.type.is_float]
        lines = []
        for j in range(per_out):
            picked = self.rng.sample(ints, min(len(ints), self.rng.randint(1, 3))) + floats
            terms = ["acc"] + [f"{self.fold32(v)} * {self.rng.randrange(1, 1 << 32, 2)}u" for v in picked]
            lines.append(f"out[g * {per_out}u + {j}u] = {' ^ '.join(terms)};")
        return lines

    def float_outputs(self, per_fout: int) -> list[str]:
        """Each fout word: a top-level float (an input one, perhaps updated), one combined with
        a float expression, or a float expression."""
        top = [v for v in self.scopes[0] if v.type.is_float]
        lines = []
        for j in range(per_fout):
            r = self.rng.random()
            if top and r < 0.3:
                value = self.rng.choice(top).name
            elif top and r < 0.8:
                op = self.rng.choice(["fadd", "fsub", "fmul", "fdiv"])
                value = f"__{op}_{self.rng.choice(ROUNDINGS)}({self.rng.choice(top).name}, {self.operand(2)})"
            else:
                value = self.fexpr(3)
            lines.append(f"fout[g * {per_fout}u + {j}u] = {value};")
        return lines


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


# The float kernels' additions: CUDA's fp32 intrinsics and functions as the generator uses
# them, from the CUDA Math API and PTX ISA descriptions (not from qwengpu's prelude or fp32.py).
# x86-64 does float arithmetic in SSE, correctly rounded in the rounding mode fesetround puts
# in MXCSR; the unit is compiled with -ffp-contract=off -frounding-math -fno-math-errno.
FLOAT_HARNESS = r"""
#include <cfenv>
#pragma STDC FENV_ACCESS ON
static inline unsigned qg_fbits(float x) { unsigned u; __builtin_memcpy(&u, &x, 4); return u; }
static inline float qg_bitsf(unsigned u) { float x; __builtin_memcpy(&x, &u, 4); return x; }
/* an empty asm the value passes through: the compiler can neither fold nor move it */
static inline float qg_opaque(float x) { __asm__ volatile("" : "+x"(x)); return x; }
static inline int qg_isnan(float x) { return (qg_fbits(x) & 0x7FFFFFFFu) > 0x7F800000u; }
/* CUDA: a float operation's NaN result is the quiet NaN 0x7FFFFFFF, whatever the inputs */
static inline float qg_canon(float x) { return qg_isnan(x) ? qg_bitsf(0x7FFFFFFFu) : x; }
enum { QG_RN = FE_TONEAREST, QG_RZ = FE_TOWARDZERO, QG_RD = FE_DOWNWARD, QG_RU = FE_UPWARD };

/* One IEEE operation, correctly rounded in `mode`: operands and result pass through empty
   asm between the two fesetround calls, so the operation happens there and nothing folds it.
   fmaf is the C library's (exact in every mode), sqrt is sqrtss. */
#define QG_IN_MODE(EXPR) do {                                                     \
        fesetround(mode); a = qg_opaque(a); b = qg_opaque(b); c = qg_opaque(c);   \
        r = qg_opaque(EXPR); fesetround(FE_TONEAREST);                             \
    } while (0)
static inline float qg_op(int op, int mode, float a, float b, float c) {
    float r = 0.0f;
    switch (op) {
    case 0: QG_IN_MODE(a + b); break;
    case 1: QG_IN_MODE(a - b); break;
    case 2: QG_IN_MODE(a * b); break;
    case 3: QG_IN_MODE(a / b); break;
    case 4: QG_IN_MODE(__builtin_fmaf(a, b, c)); break;
    default: QG_IN_MODE(__builtin_sqrtf(a)); break;
    }
    return qg_canon(r);
}
#define QG_ROUNDED(R, MODE)                                                                      \
    static inline float __fadd_##R(float x, float y) { return qg_op(0, MODE, x, y, 0.0f); }      \
    static inline float __fsub_##R(float x, float y) { return qg_op(1, MODE, x, y, 0.0f); }      \
    static inline float __fmul_##R(float x, float y) { return qg_op(2, MODE, x, y, 0.0f); }      \
    static inline float __fdiv_##R(float x, float y) { return qg_op(3, MODE, x, y, 0.0f); }      \
    static inline float __fmaf_##R(float x, float y, float z) { return qg_op(4, MODE, x, y, z); } \
    static inline float __fsqrt_##R(float x) { return qg_op(5, MODE, x, 0.0f, 0.0f); }          \
    static inline float __frcp_##R(float x) { return qg_op(3, MODE, 1.0f, x, 0.0f); }
QG_ROUNDED(rn, QG_RN) QG_ROUNDED(rz, QG_RZ) QG_ROUNDED(rd, QG_RD) QG_ROUNDED(ru, QG_RU)
#undef QG_ROUNDED
static inline float fmaf(float x, float y, float z) { return __fmaf_rn(x, y, z); }
static inline float sqrtf(float x) { return __fsqrt_rn(x); }      /* CUDA's sqrtf: sqrt.rn */

/* min.f32/max.f32: one NaN gives the other operand, two give NaN; -0 < +0 */
static inline float fminf(float a, float b) {
    if (qg_isnan(a)) return qg_canon(b);
    if (qg_isnan(b)) return a;
    if (a == b) return (qg_fbits(a) >> 31) ? a : b;
    return a < b ? a : b;
}
static inline float fmaxf(float a, float b) {
    if (qg_isnan(a)) return qg_canon(b);
    if (qg_isnan(b)) return a;
    if (a == b) return (qg_fbits(a) >> 31) ? b : a;
    return a > b ? a : b;
}
/* fabsf is a float operation (abs.f32, which the GPU computes as |x| + -0): NaN canonical;
   copysignf moves bits (a NaN keeps its payload) */
static inline float fabsf(float x) { return qg_canon(qg_bitsf(qg_fbits(x) & 0x7FFFFFFFu)); }
static inline float copysignf(float x, float y) {
    return qg_bitsf((qg_fbits(x) & 0x7FFFFFFFu) | (qg_fbits(y) & 0x80000000u));
}
/* integral values (cvt.rmi/rpi/rzi/rni.f32.f32; roundf: halves away from zero) */
static inline float floorf(float x) { return qg_canon(__builtin_floorf(qg_opaque(x))); }
static inline float ceilf(float x) { return qg_canon(__builtin_ceilf(qg_opaque(x))); }
static inline float truncf(float x) { return qg_canon(__builtin_truncf(qg_opaque(x))); }
static inline float rintf(float x) { return qg_canon(__builtin_nearbyintf(qg_opaque(x))); }
static inline float roundf(float x) { return qg_canon(__builtin_roundf(qg_opaque(x))); }
/* clamp to [+0, 1]: NaN and every negative (-0 too) give +0 */
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
static inline int __isnanf(float x) { return qg_isnan(x); }
static inline int __isinff(float x) { return (qg_fbits(x) & 0x7FFFFFFFu) == 0x7F800000u; }
static inline int __finitef(float x) { return (qg_fbits(x) & 0x7F800000u) != 0x7F800000u; }
static inline int __signbitf(float x) { return (int)(qg_fbits(x) >> 31); }
static inline int __float_as_int(float x) { return (int)qg_fbits(x); }
static inline unsigned __float_as_uint(float x) { return qg_fbits(x); }
static inline float __int_as_float(int x) { return qg_bitsf((unsigned)x); }
static inline float __uint_as_float(unsigned x) { return qg_bitsf(x); }

/* float -> integer (cvt.rni/rzi/rmi/rpi): the integral value in the mode, clamped to the
   type's range; NaN gives 0, or 1 << 63 for a 64-bit result */
static inline float qg_integral(float x, int mode) {
    switch (mode) {
    case QG_RZ: return __builtin_truncf(qg_opaque(x));
    case QG_RD: return __builtin_floorf(qg_opaque(x));
    case QG_RU: return __builtin_ceilf(qg_opaque(x));
    default: return __builtin_nearbyintf(qg_opaque(x));
    }
}
static inline int qg_f2i(float x, int mode) {
    if (qg_isnan(x)) return 0;
    float r = qg_integral(x, mode);
    if (r >= 2147483648.0f) return 2147483647;
    if (r < -2147483648.0f) return -2147483647 - 1;
    return (int)r;
}
static inline unsigned qg_f2u(float x, int mode) {
    if (qg_isnan(x)) return 0u;
    float r = qg_integral(x, mode);
    if (r >= 4294967296.0f) return 4294967295u;
    if (r <= 0.0f) return 0u;
    return (unsigned)r;
}
static inline long long qg_f2ll(float x, int mode) {
    if (qg_isnan(x)) return -9223372036854775807ll - 1;
    float r = qg_integral(x, mode);
    if (r >= 9223372036854775808.0f) return 9223372036854775807ll;
    if (r < -9223372036854775808.0f) return -9223372036854775807ll - 1;
    return (long long)r;
}
static inline unsigned long long qg_f2ull(float x, int mode) {
    if (qg_isnan(x)) return 1ull << 63;
    float r = qg_integral(x, mode);
    if (r >= 18446744073709551616.0f) return 18446744073709551615ull;
    if (r <= 0.0f) return 0ull;
    return (unsigned long long)r;
}
/* integer -> float (cvt.rn/rz/rm/rp.f32), rounded in integers: the magnitude's top 24 bits,
   then the bits below them decide */
static inline float qg_i2f(unsigned long long m, int negative, int mode) {
    if (m == 0) return 0.0f;
    int top = 63;
    while (!(m >> top)) top--;
    int shift = top > 23 ? top - 23 : 0;
    unsigned long long q = m >> shift, rest = shift ? m & ((1ull << shift) - 1) : 0;
    int up = 0;
    if (rest) {
        unsigned long long half = 1ull << (shift - 1);
        if (mode == QG_RN) up = rest > half || (rest == half && (q & 1));
        else if (mode == QG_RD) up = negative;
        else if (mode == QG_RU) up = !negative;
    }
    float f = (float)(q + up) * (float)(1ull << shift);    /* 2**24 and powers of two: exact */
    return negative ? -f : f;
}
static inline unsigned long long qg_mag(long long x) {
    return x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x;
}
#define QG_CVTS(R, MODE)                                                                          \
    static inline int __float2int_##R(float x) { return qg_f2i(x, MODE); }                        \
    static inline unsigned __float2uint_##R(float x) { return qg_f2u(x, MODE); }                  \
    static inline long long __float2ll_##R(float x) { return qg_f2ll(x, MODE); }                  \
    static inline unsigned long long __float2ull_##R(float x) { return qg_f2ull(x, MODE); }       \
    static inline float __int2float_##R(int x) { return qg_i2f(qg_mag(x), x < 0, MODE); }         \
    static inline float __uint2float_##R(unsigned x) { return qg_i2f(x, 0, MODE); }               \
    static inline float __ll2float_##R(long long x) { return qg_i2f(qg_mag(x), x < 0, MODE); }    \
    static inline float __ull2float_##R(unsigned long long x) { return qg_i2f(x, 0, MODE); }
QG_CVTS(rn, QG_RN) QG_CVTS(rz, QG_RZ) QG_CVTS(rd, QG_RD) QG_CVTS(ru, QG_RU)
#undef QG_CVTS

typedef void (*qg_frunner)(const unsigned *in, unsigned *out, const float *fin, float *fout,
                           const long long *args);
"""

FLOAT_HARNESS_MAIN = r"""
/* stdin: per launch "index n_in n_out n_fin n_fout n_args" then the in, out, fin and fout
   words and the args; stdout: "index" then the final out words and fout words */
static unsigned qg_in[1024], qg_out[1024];
static float qg_fin[1024], qg_fout[1024];
static long long qg_args[16];
int main() {
    unsigned idx, n_in, n_out, n_fin, n_fout, n_args, w;
    while (scanf("%u %u %u %u %u %u", &idx, &n_in, &n_out, &n_fin, &n_fout, &n_args) == 6) {
        for (unsigned i = 0; i < n_in; i++) if (scanf("%u", &qg_in[i]) != 1) return 2;
        for (unsigned i = 0; i < n_out; i++) if (scanf("%u", &qg_out[i]) != 1) return 2;
        for (unsigned i = 0; i < n_fin + n_fout; i++) {
            if (scanf("%u", &w) != 1) return 2;
            __builtin_memcpy(i < n_fin ? &qg_fin[i] : &qg_fout[i - n_fin], &w, 4);
        }
        for (unsigned i = 0; i < n_args; i++) if (scanf("%lld", &qg_args[i]) != 1) return 2;
        qg_ftable[idx](qg_in, qg_out, qg_fin, qg_fout, qg_args);
        printf("%u", idx);
        for (unsigned i = 0; i < n_out; i++) printf(" %u", qg_out[i]);
        for (unsigned i = 0; i < n_fout; i++) { __builtin_memcpy(&w, &qg_fout[i], 4); printf(" %u", w); }
        printf("\n");
    }
    return 0;
}
"""
FLOAT_FLAGS = ["-ffp-contract=off", "-frounding-math", "-fno-math-errno"]


def host_compiler() -> list[str]:
    """clang-19 (else clang++, g++, c++) in C++17 mode: x86 C++ with CUDA's integer model."""
    for cc in ("clang-19", "clang++", "g++", "c++"):
        if shutil.which(cc):
            return [cc, "-x", "c++", "-std=c++17"]
    raise QwenGpuError("no host C++ compiler found for the differential oracle (clang-19, clang++ or g++)")


def host_unit(programs: Sequence[Program]) -> str:
    """One translation unit: the harness, each kernel in its own namespace with a runner
    that walks the grid thread by thread, and a table of runners. With a float kernel in
    the batch, the float harness joins and every runner takes `fin` and `fout` too."""
    floats = any(p.floats for p in programs)
    parts = [HARNESS] + ([FLOAT_HARNESS] if floats else [])
    arrays = "const unsigned *in, unsigned *out" + (", const float *fin, float *fout" if floats else "")
    for i, p in enumerate(programs):
        src = p.source.replace('extern "C" ', "")
        args = ["in", "out"] + (["fin", "fout"] if p.floats else []) + [
            f"qg_bitsf((unsigned)args[{j}])" if t.is_float else f"({t.name})args[{j}]" for j, t in enumerate(p.params)]
        parts += [f"namespace qg_p{i} {{", "#line 1", src, "}",
                  f"static void qg_run{i}({arrays}, const long long *args) {{",
                  f"    qg_grid({p.grid}u, {p.block}u);",
                  f"    for (unsigned b = 0; b < {p.grid}u; b++)",
                  f"        for (unsigned t = 0; t < {p.block}u; t++) {{",
                  "            blockIdx.x = b; threadIdx.x = t;",
                  f"            qg_p{i}::k({', '.join(args)});",
                  "        }", "}"]
    runners = ", ".join(f"qg_run{i}" for i in range(len(programs)))
    if floats:
        parts += [f"static const qg_frunner qg_ftable[] = {{{runners}}};", FLOAT_HARNESS_MAIN]
    else:
        parts += [f"static const qg_runner qg_table[] = {{{runners}}};", HARNESS_MAIN]
    return "\n".join(parts)


def host_outputs(programs: Sequence[Program], opt: str = "-O1", sanitize: bool = False,
                 workdir: str | Path | None = None) -> list[np.ndarray]:
    """The oracle: every program's final `out` (and a float kernel's `fout` after it), from one
    host compile. `sanitize` builds with UBSan (aborting on the first report): a check that
    the generator writes no UB (float casts out of range included)."""
    if not programs:
        return []
    floats = any(p.floats for p in programs)
    flags = [opt, "-w"] + (["-fsanitize=undefined", "-fno-sanitize-recover=all"] if sanitize else [])
    flags += FLOAT_FLAGS if floats else []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        src, exe = Path(tmp) / "oracle.cpp", Path(tmp) / "oracle"
        src.write_text(host_unit(programs))
        cc = subprocess.run(host_compiler() + flags + [str(src), "-o", str(exe)] + (["-lm"] if floats else []),
                            capture_output=True, text=True)
        if cc.returncode:
            raise QwenGpuError(f"the host oracle did not compile:\n{cc.stderr[-4000:]}")
        feed = "\n".join(oracle_input(i, p, floats) for i, p in enumerate(programs)) + "\n"
        run = subprocess.run([str(exe)], input=feed, capture_output=True, text=True, timeout=600)
    if run.returncode:
        raise QwenGpuError(f"the host oracle failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
    results = [None] * len(programs)
    for line in run.stdout.splitlines():
        idx, *words = line.split()
        results[int(idx)] = np.array([int(w) for w in words], np.uint32)
    return results


def oracle_input(i: int, p: Program, floats: bool = False) -> str:
    """One launch for the oracle's stdin (`floats`: the float harness's format)."""
    fin = p.fin.tolist() if p.floats else []
    fout = p.fout_init.tolist() if p.floats else []
    counts = [len(p.inputs), len(p.out_init)] + ([len(fin), len(fout)] if floats else [])
    words = [i, *counts, len(p.args), *p.inputs.tolist(), *p.out_init.tolist(), *fin, *fout, *p.args]
    return " ".join(map(str, words))


# ---------------------------------------------------------------------------
# qwengpu
# ---------------------------------------------------------------------------
def device_output(p: Program, engine: str = "interp", **device_kw) -> np.ndarray:
    """The program on qwengpu: its final `out`, and a float kernel's `fout` words after it
    (MachineLimitError propagates: refused). Float arrays and parameters go in as float32
    with the exact bits (NaN payloads too)."""
    from qwengpu import Device
    dev = Device(engine, frontend=p.frontend, opt=p.opt, **device_kw)
    fn = dev.compile(p.source, filename=f"diff{p.seed}.cu").get_function("k")
    out = p.out_init.copy()
    arrays = [p.inputs.copy(), out]
    if p.floats:
        fout = p.fout_init.copy().view(np.float32)
        arrays += [p.fin.copy().view(np.float32), fout]
    scalars = [np.array([v], np.uint32).view(np.float32)[0] if t.is_float else v for t, v in zip(p.params, p.args)]
    fn(grid=p.grid, block=p.block, args=arrays + scalars)
    return np.concatenate([out, fout.view(np.uint32)]) if p.floats else out


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
        if p.floats:
            again = (f"reproduce: .venv/bin/python -c \"from qwengpu.testing import difftest as d; "
                     f"print(d.compare_programs([d.generate({p.seed}, d.GenOptions(floats=True))], "
                     f"engine='{self.engine}').failures[0].report())\"")
        else:
            again = (f"reproduce: .venv/bin/python benchmarks/differential.py --seed {p.seed} --programs 1"
                     f" --engine {self.engine}")
        lines = [f"== {self.kind}: seed {p.seed}, engine {self.engine}, front end {p.frontend}, -O{p.opt}", again,
                 f"grid {p.grid}, block {p.block}, scalar args "
                 + ", ".join(f"{t.name} p{i} = " + (f"0x{v:08x} ({bits_to_f32(v)!r})" if t.is_float else f"{v}")
                             for i, (t, v) in enumerate(zip(p.params, p.args))),
                 f"in  = {p.inputs.tolist()}", f"out before = 0x{int(p.out_init[0]):08x} x {len(p.out_init)}"]
        if p.floats:
            lines += [f"fin = [{', '.join(f'0x{int(w):08x}' for w in p.fin)}]",
                      f"fout before = 0x{int(p.fout_init[0]):08x} x {len(p.fout_init)}"]
        lines.append(p.source.rstrip())
        if self.kind == "error":
            return "\n".join(lines + [f"error: {self.error}"])
        bad = np.flatnonzero(self.expected != self.got)
        first = bad[0] if bad.size else 0
        where = f"out[{first}]" if first < len(p.out_init) else f"fout[{first - len(p.out_init)}]"
        lines += [f"expected = {self.expected.tolist()}", f"got      = {self.got.tolist()}"]
        if p.floats:
            lines.append(f"(out's {len(p.out_init)} words, then fout's {len(p.fout_init)})")
        lines += [f"{len(bad)} of {len(self.got)} words differ, first at {where}: expected "
                  f"0x{int(self.expected[first]):08x}, got 0x{int(self.got[first]):08x}"]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        p = self.program
        return {"kind": self.kind, "seed": p.seed, "engine": self.engine, "frontend": p.frontend, "opt": p.opt,
                "grid": p.grid, "block": p.block, "params": [t.name for t in p.params], "args": p.args,
                "inputs": p.inputs.tolist(), "fin": None if p.fin is None else p.fin.tolist(),
                "source": p.source, "error": self.error,
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
    for key in ("registers", "ROM blocks", "instructions", "shared memory", "parameters", "global memory",
                "passes"):
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
                 engine: str = "interp", fin: Sequence[int] | None = None,
                 n_fout: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(expected, got) for a hand-written kernel `k(const unsigned *in, unsigned *out, ...)`:
    the way to re-check a minimised reproducer. With `fin` (float32 bit patterns) the kernel is
    a float one, `k(in, out, const float *fin, float *fout, ...)`, and the words compared are
    out's then fout's `n_fout`; a float parameter (F32) takes its value's bits."""
    p = program_from_source(source, grid, block, params, args, inputs, n_out, frontend, opt, fin, n_fout)
    return host_outputs([p])[0], device_output(p, engine)


def program_from_source(source: str, grid: int, block: int, params: Sequence[CType], args: Sequence[int],
                        inputs: Sequence[int], n_out: int, frontend: str = "clang", opt: int = 2,
                        fin: Sequence[int] | None = None, n_fout: int = 0) -> Program:
    """A Program for a hand-written kernel (`out`, and a float kernel's `fout`, start as
    0xA5A5A5A5 words, like generated ones)."""
    return Program(0, source, grid, block, list(params), list(args), np.array(inputs, np.uint32),
                   np.full(n_out, 0xA5A5A5A5, np.uint32), frontend, opt,
                   fin=None if fin is None else np.array(fin, np.uint32),
                   fout_init=None if fin is None else np.full(n_fout, 0xA5A5A5A5, np.uint32))
