"""The normal-mode expression language (docs/chat.md): integer expressions with C's
semantics on 32-bit signed ints, compiled into one CUDA kernel that the GPU evaluates.

    evaluate_on(Device("interp"), "sum([1, 2, 3]) * 2").value       # 12
    evaluate_many(device, ["7 / 2", "1 / 0"])                        # one launch for both

The host parses and compiles, and never evaluates: every literal reaches the kernel as data
(an input array), so not even the C compiler can fold the expression; the kernel writes each
value and an error word. Division by zero, INT_MIN / -1 (and % likewise), shift counts
outside 0..31 and negative pow exponents are detected in the kernel, which records the
first failing operation of each expression (C's evaluation order, short-circuits included).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from qwengpu import isa
from qwengpu.errors import MachineLimitError, QwenGpuError


class ExprError(QwenGpuError):
    """An expression that cannot be parsed or compiled; the message names the column."""


# ---------------------------------------------------------------------------
# Syntax tree
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Num:
    value: int          # the literal's 32-bit pattern, 0..2**32-1
    col: int


@dataclass(frozen=True)
class ListLit:
    values: tuple[int, ...]   # 32-bit patterns
    col: int


@dataclass(frozen=True)
class Unary:
    op: str
    operand: object
    col: int


@dataclass(frozen=True)
class Binary:
    op: str
    left: object
    right: object
    col: int


@dataclass(frozen=True)
class Cond:
    cond: object
    then: object
    other: object
    col: int


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    col: int


# ---------------------------------------------------------------------------
# Tokens and parser (recursive descent, C precedence)
# ---------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)|([A-Za-z_]\w*)|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^~!?:()\[\],]))")
NAMED = {"INT_MAX": 0x7FFF_FFFF, "INT_MIN": 0x8000_0000, "UINT_MAX": isa.MASK32}

# binary operators by precedence level, loosest first (C's table)
LEVELS = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
          ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

SCALAR_FUNCTIONS = {"min", "max", "abs", "pow"}
LIST_FUNCTIONS = {"sum", "product", "dot", "min", "max"}


@dataclass
class _Tok:
    kind: str     # "num", "name", "op", "end"
    text: str
    col: int      # 1-based


def tokenize(text: str) -> list[_Tok]:
    toks, at = [], 0
    while text[at:].strip():
        m = _TOKEN.match(text, at)
        if not m:
            bad = len(text) - len(text[at:].lstrip())
            raise ExprError(f"unexpected character {text[bad]!r} at column {bad + 1}")
        kind = "num" if m[1] else "name" if m[2] else "op"
        toks.append(_Tok(kind, m[m.lastindex], m.start(m.lastindex) + 1))
        at = m.end()
    toks.append(_Tok("end", "", len(text) + 1))
    return toks


class _Parser:
    def __init__(self, text: str):
        self.toks, self.i = tokenize(text), 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def take(self, *ops: str) -> _Tok | None:
        if self.tok.kind == "op" and self.tok.text in ops:
            self.i += 1
            return self.toks[self.i - 1]
        return None

    def expect(self, op: str) -> _Tok:
        tok = self.take(op)
        if tok is None:
            raise ExprError(f"expected {op!r} at column {self.tok.col}, found {_describe(self.tok)}")
        return tok

    def parse(self):
        node = self.expr()
        if self.tok.kind != "end":
            raise ExprError(f"unexpected {_describe(self.tok)} at column {self.tok.col}")
        return node

    def expr(self):
        cond = self.binary(0)
        q = self.take("?")
        if q is None:
            return cond
        then = self.expr()
        self.expect(":")
        return Cond(cond, then, self.expr(), q.col)

    def binary(self, level: int):
        if level == len(LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while (op := self.take(*LEVELS[level])) is not None:
            node = Binary(op.text, node, self.binary(level + 1), op.col)
        return node

    def unary(self):
        op = self.take("-", "+", "!", "~")
        if op is None:
            return self.primary()
        operand = self.unary()
        return operand if op.text == "+" else Unary(op.text, operand, op.col)

    def primary(self):
        tok = self.tok
        if tok.kind == "num":
            self.i += 1
            return Num(_literal(tok), tok.col)
        if self.take("("):
            node = self.expr()
            self.expect(")")
            return node
        if self.take("["):
            raise ExprError(f"a list [...] at column {tok.col} is allowed only as an argument of "
                            f"{', '.join(sorted(LIST_FUNCTIONS))}")
        if tok.kind == "name":
            self.i += 1
            if tok.text in NAMED:
                return Num(NAMED[tok.text], tok.col)
            if tok.text not in SCALAR_FUNCTIONS | LIST_FUNCTIONS:
                raise ExprError(f"unknown name {tok.text!r} at column {tok.col}; the functions are "
                                f"{', '.join(sorted(SCALAR_FUNCTIONS | LIST_FUNCTIONS))} and the constants "
                                f"{', '.join(NAMED)}")
            return self.call(tok)
        raise ExprError(f"expected a number, '(' or a function at column {tok.col}, found {_describe(tok)}")

    def call(self, name: _Tok) -> Call:
        self.expect("(")
        args = []
        if not self.take(")"):
            args.append(self.argument())
            while self.take(","):
                args.append(self.argument())
            self.expect(")")
        return _check_call(Call(name.text, tuple(args), name.col))

    def argument(self):
        return self.list_literal() if self.tok.text == "[" and self.tok.kind == "op" else self.expr()

    def list_literal(self) -> ListLit:
        """[n, -n, ...]: literals only (the list is the kernel's input data)."""
        start = self.expect("[")
        values = []
        if not self.take("]"):
            values.append(self.signed_literal())
            while self.take(","):
                values.append(self.signed_literal())
            self.expect("]")
        return ListLit(tuple(values), start.col)

    def signed_literal(self) -> int:
        negative = self.take("-") is not None
        tok = self.tok
        if tok.kind == "num":
            self.i += 1
            value = _literal(tok)
        elif tok.kind == "name" and tok.text in NAMED:
            self.i += 1
            value = NAMED[tok.text]
        else:
            raise ExprError(f"expected an integer literal in the list at column {tok.col}, found {_describe(tok)} "
                            f"(list elements are numbers, e.g. [1, -2, 0x10])")
        return (-value if negative else value) & isa.MASK32     # the literal "-5", written as its 32-bit pattern


def _describe(tok: _Tok) -> str:
    return "the end of the expression" if tok.kind == "end" else repr(tok.text)


def _literal(tok: _Tok) -> int:
    if re.fullmatch(r"0\d+", tok.text):       # C would read it as octal: refuse rather than guess
        raise ExprError(f"integer literal {tok.text} at column {tok.col} has a leading zero "
                        f"(octal is not supported; write it in decimal or hex)")
    value = int(tok.text, 0)
    if value > isa.MASK32:
        raise ExprError(f"integer literal {tok.text} at column {tok.col} does not fit in 32 bits "
                        f"(the largest is 4294967295 = 0xFFFFFFFF)")
    return value


def _check_call(call: Call) -> Call:
    """Arity and argument kinds: min/max take 2+ numbers or one list; sum/product one list;
    dot two lists of one length; abs one number; pow two numbers."""
    lists = [a for a in call.args if isinstance(a, ListLit)]
    n, where = len(call.args), f"{call.name}() at column {call.col}"
    if call.name in ("sum", "product") and not (n == 1 and lists):
        raise ExprError(f"{where} takes one list, e.g. {call.name}([1, 2, 3])")
    if call.name == "dot":
        if not (n == 2 and len(lists) == 2):
            raise ExprError(f"{where} takes two lists, e.g. dot([1, 2], [3, 4])")
        if len(lists[0].values) != len(lists[1].values):
            raise ExprError(f"{where}: the lists have different lengths ({len(lists[0].values)} "
                            f"and {len(lists[1].values)})")
    if call.name in ("min", "max"):
        if lists and n != 1:
            raise ExprError(f"{where} takes either one list or two or more numbers")
        if lists and not lists[0].values:
            raise ExprError(f"{where} of an empty list has no value")
        if not lists and n < 2:
            raise ExprError(f"{where} takes two or more numbers, or one list")
    if call.name in ("abs", "pow"):
        want = 1 if call.name == "abs" else 2
        if n != want or lists:
            raise ExprError(f"{where} takes {want} number{'s' if want > 1 else ''}")
    return call


def parse(text: str):
    """The syntax tree of `text` (ExprError with the column when it is not an expression)."""
    try:
        return _Parser(text).parse()
    except RecursionError:          # each level of parentheses is a dozen Python frames
        raise ExprError("the expression nests too deeply (at most about 60 levels of parentheses)") from None


# ---------------------------------------------------------------------------
# Compiler: syntax trees -> one CUDA kernel
# ---------------------------------------------------------------------------
KERNEL = "qe_eval"

# What a failed operation's error word says: (code & 3) is the kind, (code >> 2) the site.
FAILURES = {1: "division by zero", 2: "overflow: INT_MIN {op} -1 does not fit in 32 bits",
            3: "shift count outside 0..31"}
POW_FAILURE = "negative exponent in pow()"

# Every operation on ints goes through unsigned arithmetic or a checked helper: the kernel
# has no undefined behaviour for clang to exploit, so it computes exactly what docs/chat.md says.
PRELUDE = r"""
#define QE_U(x) ((unsigned)(x))
/* the first failure of an expression is the one it reports */
__device__ int qe_fail(int *err, int code) { atomicCAS(err, 0, code); return 0; }
__device__ int qe_add(int a, int b) { return (int)(QE_U(a) + QE_U(b)); }
__device__ int qe_sub(int a, int b) { return (int)(QE_U(a) - QE_U(b)); }
__device__ int qe_mul(int a, int b) { return (int)(QE_U(a) * QE_U(b)); }
__device__ int qe_neg(int a) { return (int)(0u - QE_U(a)); }
__device__ int qe_abs(int a) { return a < 0 ? qe_neg(a) : a; }
__device__ int qe_min(int a, int b) { return a < b ? a : b; }
__device__ int qe_max(int a, int b) { return a > b ? a : b; }
__device__ int qe_div(int a, int b, int *err, int site) {
    int bad = b == 0 ? 1 : (a == INT_MIN && b == -1) ? 2 : 0;
    return bad ? qe_fail(err, site | bad) : a / b;
}
__device__ int qe_rem(int a, int b, int *err, int site) {
    int bad = b == 0 ? 1 : (a == INT_MIN && b == -1) ? 2 : 0;
    return bad ? qe_fail(err, site | bad) : a % b;
}
__device__ int qe_shl(int a, int b, int *err, int site) {
    if (QE_U(b) > 31u) return qe_fail(err, site | 3);
    return (int)(QE_U(a) << b);
}
__device__ int qe_shr(int a, int b, int *err, int site) {
    if (QE_U(b) > 31u) return qe_fail(err, site | 3);
    return a >> b;                       /* arithmetic, as in CUDA */
}
__device__ int qe_pow(int a, int b, int *err, int site) {
    if (b < 0) return qe_fail(err, site | 1);
    unsigned r = 1u, x = QE_U(a);
    #pragma unroll 1
    for (; b; b >>= 1) { if (b & 1) r *= x; x *= x; }
    return (int)r;
}
/* The list reductions run on the warp's 4 lanes: each lane folds every 4th element, then a
   butterfly of shuffles gives every lane the whole result (every lane evaluates the whole
   expression on the same data, so they stay converged). */
#define QE_FOLD(combine) \
    for (int k = 1; k < warpSize; k <<= 1) acc = combine(acc, __shfl_xor_sync(0xffffffffu, acc, k))
#define QE_EACH(i, n) _Pragma("unroll 1") for (int i = threadIdx.x; i < (n); i += warpSize)
__device__ int qe_sum(const int *p, int n) {
    int acc = 0;
    QE_EACH(i, n) acc = qe_add(acc, p[i]);
    QE_FOLD(qe_add);
    return acc;
}
__device__ int qe_product(const int *p, int n) {
    int acc = 1;
    QE_EACH(i, n) acc = qe_mul(acc, p[i]);
    QE_FOLD(qe_mul);
    return acc;
}
__device__ int qe_dot(const int *p, const int *q, int n) {
    int acc = 0;
    QE_EACH(i, n) acc = qe_add(acc, qe_mul(p[i], q[i]));
    QE_FOLD(qe_add);
    return acc;
}
__device__ int qe_minl(const int *p, int n) {
    int acc = INT_MAX;
    QE_EACH(i, n) acc = qe_min(acc, p[i]);
    QE_FOLD(qe_min);
    return acc;
}
__device__ int qe_maxl(const int *p, int n) {
    int acc = INT_MIN;
    QE_EACH(i, n) acc = qe_max(acc, p[i]);
    QE_FOLD(qe_max);
    return acc;
}
"""

_PLAIN = {"+": "qe_add", "-": "qe_sub", "*": "qe_mul"}
_CHECKED = {"/": "qe_div", "%": "qe_rem", "<<": "qe_shl", ">>": "qe_shr"}
_C_OPS = {"<", "<=", ">", ">=", "==", "!=", "&&", "||", "&", "|", "^"}    # C's own operator is exact
_LIST_HELPERS = {"sum": "qe_sum", "product": "qe_product", "dot": "qe_dot", "min": "qe_minl", "max": "qe_maxl"}


@dataclass
class _Emitter:
    """Builds C text for one kernel: the literal words it reads and its failure sites."""
    words: list[int] = field(default_factory=list)
    sites: dict[int, tuple[str, int]] = field(default_factory=dict)    # site -> (operator, column)

    def literal(self, value: int) -> str:
        self.words.append(value)
        return f"lit[{len(self.words) - 1}]"

    def site(self, op: str, col: int) -> int:
        site = (len(self.sites) + 1) << 2
        self.sites[site] = (op, col)
        return site

    def emit(self, node) -> str:
        if isinstance(node, Num):
            return self.literal(node.value)
        if isinstance(node, Unary):
            inner = self.emit(node.operand)
            return f"qe_neg({inner})" if node.op == "-" else f"({node.op}{inner})"
        if isinstance(node, Binary):
            a, b = self.emit(node.left), self.emit(node.right)
            if node.op in _PLAIN:
                return f"{_PLAIN[node.op]}({a}, {b})"
            if node.op in _CHECKED:
                return f"{_CHECKED[node.op]}({a}, {b}, err, {self.site(node.op, node.col)})"
            assert node.op in _C_OPS, node.op
            return f"({a} {node.op} {b})"
        if isinstance(node, Cond):
            return f"({self.emit(node.cond)} ? {self.emit(node.then)} : {self.emit(node.other)})"
        return self.call(node)

    def call(self, node: Call) -> str:
        if isinstance(node.args[0], ListLit):
            lists = [self.list_words(a) for a in node.args]
            return f"{_LIST_HELPERS[node.name]}({', '.join(lists)}, {len(node.args[0].values)})"
        args = [self.emit(a) for a in node.args]
        if node.name == "abs":
            return f"qe_abs({args[0]})"
        if node.name == "pow":
            return f"qe_pow({args[0]}, {args[1]}, err, {self.site('pow', node.col)})"
        out = args[0]
        for arg in args[1:]:                    # min(a, b, c) = min(min(a, b), c)
            out = f"qe_{node.name}({out}, {arg})"
        return out

    def list_words(self, node: ListLit) -> str:
        start = len(self.words)
        self.words.extend(node.values)
        return f"lit + {start}"


@dataclass
class Compiled:
    """A kernel evaluating several expressions, and its launch: `args` are (lit, out); expression
    i writes its value to out[2i] and its error word to out[2i + 1]."""
    texts: list[str]
    source: str
    lit: np.ndarray
    sites: dict[int, tuple[str, int]]
    kernel: str = KERNEL
    grid: int = 1
    block: int = isa.LANES      # one warp: the list reductions share the work among its lanes

    def new_args(self) -> list[np.ndarray]:
        return [self.lit.copy(), np.zeros(2 * len(self.texts), np.int32)]

    def failure(self, code: int) -> str:
        """The message of error word `code`."""
        op, col = self.sites[code & ~3]
        if op == "pow":
            return f"{POW_FAILURE} at column {col}"
        return f"{FAILURES[code & 3].format(op=op)} at column {col}"


def compile_exprs(texts: list[str]) -> Compiled:
    """One kernel for all of `texts` (ExprError on a syntax error; MachineLimitError when the
    numbers do not fit in global memory)."""
    if not texts:
        raise ExprError("no expression to evaluate")
    em, lines = _Emitter(), []
    for i, text in enumerate(texts):
        try:
            node = parse(text)
        except ExprError as e:
            raise ExprError(f"{e}" if len(texts) == 1 else f"expression {i + 1}: {e}") from None
        lines.append(f"    err = out + {2 * i + 1};\n    out[{2 * i}] = {em.emit(node)};")
    _check_words(len(em.words), len(texts))
    source = (PRELUDE + f'\nextern "C" __global__ void {KERNEL}(const int *lit, int *out) {{\n'
              "    int *err;\n" + "\n".join(lines) + "\n}\n")
    lit = np.array([isa.s32(w) for w in em.words] or [0], np.int32)
    return Compiled(list(texts), source, lit, em.sites)


def _check_words(numbers: int, count: int) -> None:
    """The literals (list elements included) and 2 result words per expression share global memory."""
    room = isa.GLOBAL_WORDS - 2 * count
    if max(numbers, 1) > room:
        raise MachineLimitError(f"the expression{'s' if count > 1 else ''} hold{'' if count > 1 else 's'} {numbers} "
                                f"numbers (literals and list elements); the machine's global memory holds "
                                f"{isa.GLOBAL_WORDS} words, {2 * count} of them for the result"
                                f"{'s' if count > 1 else ''}, so at most {room} numbers fit")


# ---------------------------------------------------------------------------
# Running on a device
# ---------------------------------------------------------------------------
@dataclass
class Evaluation:
    """One expression's value, or the error its evaluation hit; the launch's costs (shared by the
    expressions of one launch)."""
    text: str
    value: int | None
    error: str | None
    tokens: int | None
    passes: int | None
    seconds: float


def evaluate_many(device, texts: list[str]) -> list[Evaluation]:
    """Evaluate `texts` on `device` (a qwengpu Device) in as few launches as the machine allows:
    all in one, or, when their kernel exceeds a machine limit (ROM, registers), each half in its own."""
    compiled = compile_exprs(texts)
    try:
        fn = device.compile(compiled.source, filename="expression.cu").get_function(compiled.kernel)
    except MachineLimitError as e:
        if len(texts) > 1:
            half = len(texts) // 2
            return evaluate_many(device, texts[:half]) + evaluate_many(device, texts[half:])
        raise MachineLimitError(f"the expression is too large for one launch ({e}); split it") from None
    args = compiled.new_args()
    res = fn(grid=compiled.grid, block=compiled.block, args=args)
    values, errors = args[1][0::2], args[1][1::2]
    return [Evaluation(text, None if errors[i] else int(values[i]),
                       compiled.failure(int(errors[i])) if errors[i] else None, res.tokens, res.passes, res.seconds)
            for i, text in enumerate(texts)]


def evaluate_on(device, text: str) -> Evaluation:
    """Evaluate one expression on `device`."""
    return evaluate_many(device, [text])[0]
