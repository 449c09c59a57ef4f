"""The normal-mode expression language (docs/chat.md): integer expressions with C's
semantics on 32-bit signed ints, decimal expressions computed exactly in decimal (an
expression with a number like 23.50 in it), and float32 ones (an expression calling sqrt,
exp, log, log2 or log10), compiled into one CUDA kernel that the GPU evaluates.

    evaluate_on(Device("interp"), "sum([1, 2, 3]) * 2").value       # 12
    evaluate_on(device, "23.50 * 15 / 100").value                    # Decimal('3.525')
    evaluate_many(device, ["7 / 2", "1 / 0"])                        # one launch for both

The host parses and compiles, and never evaluates: every literal reaches the kernel as data
(an input array), so not even the C compiler can fold the expression; the kernel writes each
value and an error word. Division by zero, INT_MIN / -1 (and % likewise), shift counts
outside 0..31 and negative pow exponents are detected in the kernel, which records the
first failing operation of each expression (C's evaluation order, short-circuits included).

A decimal value is a 64-bit integer count of 10**-places, its places fixed by the expression's
text (the rules: docs/chat.md, "Decimals"); overflow past 18 digits is an error, never a wrong
value, and a division or product that has to round says so. Its arithmetic is a state
machine in the kernel around one shared multiply-divide routine, so that the machine's ROM
holds an expression of a dozen operations.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

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
    value: int          # the literal's 32-bit pattern, 0..2**32-1 (integer expressions)
    col: int
    mantissa: int = 0   # its exact value is mantissa / 10**places (decimal and float32 expressions)
    places: int = 0
    decimal: bool = False     # written with a point (23.50, 5., .5)


@dataclass(frozen=True)
class ListLit:
    values: tuple[int, ...]   # 32-bit patterns
    col: int
    exact: tuple[tuple[int, int], ...] = ()     # (mantissa, places) of each element


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
_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+\.\d*|\.\d+|\d+)|([A-Za-z_]\w*)|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^~!?:()\[\],]))")
NAMED = {"INT_MAX": 0x7FFF_FFFF, "INT_MIN": 0x8000_0000, "UINT_MAX": isa.MASK32}

# binary operators by precedence level, loosest first (C's table)
LEVELS = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
          ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

# the functions that make an expression float32, and their CUDA names
FLOAT_FUNCTIONS = {"sqrt": "sqrtf", "exp": "expf", "log": "logf", "log2": "log2f", "log10": "log10f"}
SCALAR_FUNCTIONS = {"min", "max", "abs", "pow", *FLOAT_FUNCTIONS}
LIST_FUNCTIONS = {"sum", "product", "dot", "min", "max"}

# Decimals (docs/chat.md, "Decimals"): a quotient (and a product that would have more places)
# keeps DECIMAL_PLACES places, or as many as its operands have; a literal has at most
# MAX_LITERAL_PLACES; every value has at most DECIMAL_DIGITS digits, places included.
DECIMAL_PLACES = 6
MAX_LITERAL_PLACES = 9
DECIMAL_DIGITS = 18
DECIMAL_LIMIT = 10**DECIMAL_DIGITS - 1


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
        # an expression with a decimal literal or a float32 function reads every literal as a
        # number of up to 18 digits (not as a 32-bit pattern)
        self.wide = any(t.kind == "num" and "." in t.text or t.kind == "name" and t.text in FLOAT_FUNCTIONS
                        for t in self.toks)

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
            return _wide_literal(tok) if self.wide else Num(_literal(tok), tok.col)
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
                return Num(NAMED[tok.text], tok.col, isa.s32(NAMED[tok.text]) if tok.text != "UINT_MAX" else isa.MASK32)
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
        if self.wide:
            return ListLit(tuple(n.value for n in values), start.col, tuple((n.mantissa, n.places) for n in values))
        return ListLit(tuple(values), start.col)

    def signed_literal(self):
        negative = self.take("-") is not None
        tok = self.tok
        if tok.kind == "num":
            self.i += 1
            if self.wide:
                num = _wide_literal(tok)
                return Num(num.value, num.col, -num.mantissa if negative else num.mantissa, num.places, num.decimal)
            value = _literal(tok)
        elif tok.kind == "name" and tok.text in NAMED:
            self.i += 1
            value = NAMED[tok.text]
            if self.wide:
                exact = isa.s32(value) if tok.text != "UINT_MAX" else value
                return Num(value, tok.col, -exact if negative else exact)
        else:
            raise ExprError(f"expected {'a number' if self.wide else 'an integer literal'} in the list at column "
                            f"{tok.col}, found {_describe(tok)} (list elements are numbers, e.g. "
                            f"{'[1.5, -2, 0.25]' if self.wide else '[1, -2, 0x10]'})")
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


def _wide_literal(tok: _Tok) -> Num:
    """A literal of a decimal or float32 expression: its exact value, mantissa / 10**places."""
    text = tok.text
    if "." in text:
        whole, frac = text.split(".")
        if len(frac) > MAX_LITERAL_PLACES:
            raise ExprError(f"decimal literal {text} at column {tok.col} has {len(frac)} decimal places; "
                            f"at most {MAX_LITERAL_PLACES}")
        mantissa, places = int(whole + frac or "0"), len(frac)
    else:
        if re.fullmatch(r"0\d+", text):
            raise ExprError(f"integer literal {text} at column {tok.col} has a leading zero "
                            f"(octal is not supported; write it in decimal or hex)")
        mantissa, places = int(text, 0), 0
    if mantissa > DECIMAL_LIMIT:
        raise ExprError(f"literal {text} at column {tok.col} has more than {DECIMAL_DIGITS} digits "
                        f"(a decimal holds {DECIMAL_DIGITS} digits, its decimal places included)")
    return Num(mantissa & isa.MASK32, tok.col, mantissa, places, "." in text)


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
    if call.name in ("abs", "pow", *FLOAT_FUNCTIONS):
        want = 2 if call.name == "pow" else 1
        if n != want or lists:
            raise ExprError(f"{where} takes {want} number{'s' if want > 1 else ''}")
    return call


def parse(text: str):
    """The syntax tree of `text` (ExprError with the column when it is not an expression)."""
    return parse_kind(text)[0]


def parse_kind(text: str) -> tuple[object, str, str]:
    """(syntax tree, kind, why): kind "int" (no decimal literal, no float32 function), "decimal"
    (a literal with a point: 23.50) or "float32" (a call of sqrt, exp, log, log2, log10, or pow
    with an exponent that has decimal places); `why` names what made it so, for messages."""
    parser = _Parser(text)
    try:
        node = parser.parse()
    except RecursionError:          # each level of parentheses is a dozen Python frames
        raise ExprError("the expression nests too deeply (at most about 60 levels of parentheses)") from None
    if not parser.wide:
        return node, "int", ""
    for n in _nodes(node):
        if isinstance(n, Call) and n.name in FLOAT_FUNCTIONS:
            return node, "float32", f"it calls {n.name}() at column {n.col}"
        if isinstance(n, Call) and n.name == "pow" and places(n.args[1]) > 0:
            return node, "float32", f"the exponent of pow() at column {n.col} has decimal places"
    first = next(t for t in parser.toks if t.kind == "num" and "." in t.text)
    return node, "decimal", f"it has the decimal number {first.text} at column {first.col}"


def _nodes(node):
    """Every node of a tree, depth first."""
    yield node
    children = ((node.operand,) if isinstance(node, Unary) else (node.left, node.right) if isinstance(node, Binary)
                else (node.cond, node.then, node.other) if isinstance(node, Cond)
                else node.args if isinstance(node, Call) else ())
    for child in children:
        yield from _nodes(child)


def places(node) -> int:
    """The decimal places of `node`'s value in a decimal expression, from its text alone
    (docs/chat.md, "Decimals"): a literal has the places it is written with; + - % ?: min max
    abs sum keep the most of their operands'; a product the sum of its operands', at most
    max(6, its operands'); a quotient max(6, its operands'); comparisons and && || ! none."""
    p = DECIMAL_PLACES
    if isinstance(node, Num):
        return node.places
    if isinstance(node, ListLit):
        return max((q for _, q in node.exact), default=0)
    if isinstance(node, Unary):
        return 0 if node.op == "!" else places(node.operand)
    if isinstance(node, Cond):
        return max(places(node.then), places(node.other))
    if isinstance(node, Binary):
        a, b = places(node.left), places(node.right)
        if node.op in ("+", "-", "%"):
            return max(a, b)
        if node.op == "*":
            return min(a + b, max(p, a, b))
        if node.op == "/":
            return max(p, a, b)
        return 0
    args = [places(a) for a in node.args]
    if node.name in ("min", "max", "abs", "sum"):
        return max(args)
    if node.name in ("pow", "product"):
        return 0 if args[0] == 0 else max(p, args[0])
    if node.name == "dot":
        return min(args[0] + args[1], max(p, *args))
    return 0


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
    decimal_messages: dict[int, dict[int, str]] = field(default_factory=dict)   # site -> error kind -> message
    rounding_notes: dict[int, str] = field(default_factory=dict)        # site -> where a decimal was rounded

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


# ---------------------------------------------------------------------------
# Decimal expressions: a state machine around one multiply-divide routine
# ---------------------------------------------------------------------------
# A decimal is a long long: its value is the integer / 10**places, places known from the text.
# Every operation keeps |value| <= 10**18 - 1 (DECIMAL_LIMIT) or fails; the multiply-divide
# routine is the only division in the kernel (the machine's ROM holds 128 blocks, and a
# division costs dozens of them), so every product, quotient, remainder and alignment of
# places calls it from the state machine that evaluates the expressions.
DECIMAL_PRELUDE = r"""
#define QD_LIM 999999999999999999LL
typedef unsigned long long qd_u;
__device__ long long qd_lit(const int *p) { return (long long)(((qd_u)(unsigned)p[1] << 32) | (unsigned)p[0]); }
__device__ qd_u qd_mag(long long a) { return a < 0 ? 0ull - (qd_u)a : (qd_u)a; }
/* the first failure of an expression stays: site | kind (1 division by zero or a negative
   exponent, 2 more than 18 digits, 3 more than 18 digits before rounding) */
__device__ void qd_fail(int *e, int code) { *e = *e ? *e : code; }
/* a + b (|a|, |b| <= QD_LIM: the sum cannot wrap) */
__device__ long long qd_add(long long a, long long b, int site, int *e) {
    long long s = a + b;
    if ((qd_u)(s + QD_LIM) > (qd_u)(2 * QD_LIM)) { qd_fail(e, site | 2); return 0; }    /* |s| > QD_LIM */
    return s;
}
/* x * y / d rounded half-even, with the sign of the product (mode 1: the remainder of x / d,
   with x's sign, y = 1). The product must be below 2**63 and the result at most QD_LIM; a
   rounding that changes the value records its site in *r (the first one stays). */
__device__ long long qd_muldiv(long long x, long long y, long long d, int mode, int site, int *e, int *r) {
    int neg = mode ? x < 0 : ((x < 0) != (y < 0)) != (d < 0);
    qd_u mx = qd_mag(x), my = qd_mag(y), md = qd_mag(d), n = mx * my, q = 0;
    int fail = md == 0 ? 1 : (__clzll(mx) + __clzll(my) < 64 || (n >> 63)) ? (md == 1 ? 2 : 3) : 0;
    if (fail) n = 0;
    if (md <= 1) {
        q = n;
        n = 0;
    } else if (md < 0x10000) {          /* 16-bit digits, one 32-bit division each */
        unsigned rem = 0, dd = (unsigned)md;
        #pragma unroll 1
        for (int i = 0; i < 4; i++) {
            unsigned cur = rem << 16 | (unsigned)(n >> 48), digit = cur / dd;
            rem = cur - digit * dd;
            q = q << 16 | digit;
            n <<= 16;
        }
        n = rem;
    } else {                            /* shift and subtract, one step per quotient bit */
        qd_u s = md;
        int k = __clzll(md) - __clzll(n);
        if (k >= 0) {
            s <<= k;
            #pragma unroll 1
            for (; k >= 0; k--) {
                qd_u t = n >= s;
                q = q << 1 | t;
                n -= t ? s : 0;
                s >>= 1;
            }
        }
    }
    if (mode) {
        q = n;
    } else if (n) {                     /* n is the remainder: round half to even */
        qd_u half = md - n;
        q += n > half || (n == half && (q & 1));
        *r = *r ? *r : site;
    }
    if (q > (qd_u)QD_LIM) fail = 2;
    if (fail) {
        qd_fail(e, site | fail);
        return 0;
    }
    return neg ? -(long long)q : (long long)q;
}
__device__ void qd_out(int *o, long long v, int e, int r) {
    o[0] = (int)v;
    o[1] = (int)(v >> 32);
    o[2] = e;
    o[3] = r;
}
"""

_BITWISE = {"&", "|", "^", "<<", ">>", "~"}
_COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}


@dataclass
class _Dec:
    """A decimal value while compiling: a C expression (None: a literal not yet written, whose
    words are written at the places it is used with) and its places."""
    expr: str | None
    places: int
    literal: int | None = None      # the literal's mantissa


def _refuse_bitwise(op: str, col: int, kind: str, why: str) -> ExprError:
    return ExprError(f"{op!r} at column {col} takes integers; this expression is {kind} ({why}), "
                     f"and bitwise operators and shifts have no {kind} meaning")


class _DecimalCode:
    """The decimal expressions of one launch as a state machine: C statements in segments
    (`qs` is the segment to run), each ending with a jump to a segment (`continue`), a call
    of qd_muldiv (its result is `qv` when the next segment starts), or the end (`break`)."""

    def __init__(self, em: "_Emitter"):
        self.em = em
        self.segments: list[list[str]] = [[]]
        self.cur = 0
        self.temps = 0          # long long t0, t1, ...
        self.counters = 0       # int i0, i1, ...
        self.why = ""

    # -- segments --------------------------------------------------------------
    def put(self, stmt: str) -> None:
        self.segments[self.cur].append(stmt)

    def segment(self) -> int:
        self.segments.append([])
        return len(self.segments) - 1

    def goto(self, target: int) -> None:
        self.put(f"qs = {target}; continue;")

    def temp(self) -> str:
        """A decimal variable: in global memory (words of `out` after the results), as registers
        cannot hold what a state machine keeps from one state to a later one."""
        self.temps += 1
        return f"qt[{self.temps - 1}]"

    def counter(self) -> str:
        self.counters += 1
        return f"qc[{self.counters - 1}]"

    @property
    def scratch_words(self) -> int:
        return 2 * self.temps + self.counters

    def muldiv(self, x: str, y: str, d: str, site: int, mode: int = 0) -> str:
        """x * y / d rounded (mode 1: the remainder of x / d) by the routine: a temp holding it."""
        nxt = self.segment()
        self.put(f"qx = {x}; qy = {y}; qd = {d}; qsite = {site}; qmode = {mode}; qs = {nxt};")
        self.cur = nxt
        t = self.temp()
        self.put(f"{t} = qv;")
        return t

    # -- values ----------------------------------------------------------------
    def site(self, op: str, col: int, messages: dict[int, str], note: str | None = None) -> int:
        site = self.em.site(op, col)
        self.em.decimal_messages[site] = messages
        if note:
            self.em.rounding_notes[site] = note
        return site

    def words(self, mantissa: int) -> int:
        """Write a 64-bit literal; the index of its first word."""
        start = len(self.em.words)
        self.em.words.extend([mantissa & isa.MASK32, (mantissa >> 32) & isa.MASK32])
        return start

    def value(self, v: _Dec, at: int, op: str = "", col: int = 0) -> str:
        """C for `v` with `at` >= v.places places: a literal is written so, a computed value is
        multiplied by 10**(at - places) (which fails past 18 digits)."""
        k = at - v.places
        if v.literal is not None and abs(v.literal) * 10**k <= DECIMAL_LIMIT:
            return f"qd_lit(lit + {self.words(v.literal * 10**k)})"
        expr = v.expr if v.literal is None else f"qd_lit(lit + {self.words(v.literal)})"
        if k == 0:
            return expr
        site = self.site(op, col, {2: f"overflow: {op} at column {col}: an operand has more than "
                                      f"{DECIMAL_DIGITS} digits at {at} decimal places"})
        return self.muldiv(expr, f"{10**k}LL", "1LL", site)

    # -- expressions -----------------------------------------------------------
    def expression(self, node, why: str, offset: int) -> None:
        """Append the code of one expression, which writes out[offset .. offset+3]."""
        self.why = why
        v = self.emit(node)
        self.put(f"qd_out(out + {offset}, {self.value(v, v.places)}, qe, qr);")
        self.put("qe = qr = 0;")

    def emit(self, node) -> _Dec:
        if isinstance(node, Num):
            return _Dec(None, node.places, node.mantissa)
        if isinstance(node, Unary):
            if node.op == "~":
                raise _refuse_bitwise(node.op, node.col, "decimal", self.why)
            v = self.emit(node.operand)
            x, t = self.value(v, v.places), self.temp()
            if node.op == "-":
                self.put(f"{t} = -{x};")
                return _Dec(t, v.places)
            self.put(f"{t} = {x} == 0;")
            return _Dec(t, 0)
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, Cond):
            return self.conditional(node)
        return self.call(node)

    def binary(self, node: Binary) -> _Dec:
        op, col = node.op, node.col
        if op in _BITWISE:
            raise _refuse_bitwise(op, col, "decimal", self.why)
        if op in ("&&", "||"):
            return self.logical(node)
        a, b = self.emit(node.left), self.emit(node.right)
        if op == "*":
            s = places(node)
            k = a.places + b.places - s
            site = self.site(op, col, {
                2: f"overflow: the product at column {col} has more than {DECIMAL_DIGITS} digits",
                3: f"overflow: the product at column {col} has more than {DECIMAL_DIGITS} digits before "
                   f"rounding to {s} decimal places"}, f"the product at column {col} is rounded to {s} decimal places")
            return _Dec(self.muldiv(self.value(a, a.places), self.value(b, b.places), f"{10**k}LL", site), s)
        if op == "/":
            s = places(node)
            e = s + b.places - a.places
            site = self.site(op, col, {
                1: f"division by zero at column {col}",
                2: f"overflow: the quotient at column {col} has more than {DECIMAL_DIGITS} digits",
                3: f"overflow: the dividend of / at column {col} has more than {DECIMAL_DIGITS} digits at "
                   f"{a.places + e} decimal places"}, f"the quotient at column {col} is rounded to {s} decimal places")
            return _Dec(self.muldiv(self.value(a, a.places), f"{10**e}LL", self.value(b, b.places), site), s)
        s = max(a.places, b.places)
        x, y = self.value(a, s, op, col), self.value(b, s, op, col)
        if op == "%":
            site = self.site(op, col, {1: f"division by zero at column {col}"})
            return _Dec(self.muldiv(x, "1LL", y, site, mode=1), s)
        t = self.temp()
        if op in _COMPARISONS:
            self.put(f"{t} = {x} {op} {y};")
            return _Dec(t, 0)
        site = self.site(op, col, {2: f"overflow: {op} at column {col}: the result has more than {DECIMAL_DIGITS} digits"})
        self.put(f"{t} = qd_add({x}, {'-' if op == '-' else ''}({y}), {site}, &qe);")
        return _Dec(t, s)

    def logical(self, node: Binary) -> _Dec:
        """&& and ||: 0 or 1; the right side runs only when the left does not decide."""
        a = self.emit(node.left)
        x, r = self.value(a, a.places), self.temp()
        right, merge = self.segment(), self.segment()
        if node.op == "&&":
            self.put(f"{r} = 0; qs = {x} != 0 ? {right} : {merge}; continue;")
        else:
            self.put(f"{r} = 1; qs = {x} != 0 ? {merge} : {right}; continue;")
        self.cur = right
        b = self.emit(node.right)
        self.put(f"{r} = {self.value(b, b.places)} != 0;")
        self.goto(merge)
        self.cur = merge
        return _Dec(r, 0)

    def conditional(self, node: Cond) -> _Dec:
        s = places(node)
        c = self.emit(node.cond)
        r = self.temp()
        then, other, merge = self.segment(), self.segment(), self.segment()
        self.put(f"qs = {self.value(c, c.places)} != 0 ? {then} : {other}; continue;")
        for seg, branch in ((then, node.then), (other, node.other)):
            self.cur = seg
            v = self.emit(branch)
            self.put(f"{r} = {self.value(v, s, '?:', node.col)};")
            self.goto(merge)
        self.cur = merge
        return _Dec(r, s)

    def call(self, node: Call) -> _Dec:
        name, col = node.name, node.col
        if isinstance(node.args[0], ListLit):
            return self.list_call(node)
        if name == "pow":
            return self.power(node)
        s = places(node)
        values = [self.value(v, s, f"{name}()", col) for v in map(self.emit, node.args)]
        t = self.temp()
        if name == "abs":
            self.put(f"{t} = {values[0]} < 0 ? -{values[0]} : {values[0]};")
            return _Dec(t, s)
        self.put(f"{t} = {values[0]};")
        for v in values[1:]:                    # min(a, b, c) = min(min(a, b), c)
            self.put(f"{t} = {v} {'<' if name == 'min' else '>'} {t} ? {v} : {t};")
        return _Dec(t, s)

    def power(self, node: Call) -> _Dec:
        """pow(a, n), n >= 0 with no decimal places: square and multiply, each product rounded
        to the result's places (none when a has none)."""
        col, s = node.col, places(node)
        a, n = self.emit(node.args[0]), self.emit(node.args[1])
        x0, n0 = self.value(a, s, "pow()", col), self.value(n, 0)
        site = self.site("pow", col, {
            1: f"{POW_FAILURE} at column {col}",
            2: f"overflow: pow() at column {col} has more than {DECIMAL_DIGITS} digits",
            3: f"overflow: a product in pow() at column {col} has more than {DECIMAL_DIGITS} digits before "
               f"rounding to {s} decimal places"}, f"pow() at column {col} is rounded to {s} decimal places")
        x, m, acc = self.temp(), self.temp(), self.temp()
        head, half, done = self.segment(), self.segment(), self.segment()
        self.put(f"{x} = {x0}; {m} = {n0}; {acc} = {10**s}LL;")
        self.put(f"if ({m} < 0) {{ qd_fail(&qe, {site | 1}); {m} = 0; }}")
        self.goto(head)
        self.cur = head                         # acc *= x when the exponent is odd
        self.put(f"if (!({m} & 1)) {{ qs = {half}; continue; }}")
        self.put(f"{acc} = {self.muldiv(acc, x, f'{10**s}LL', site)};")
        self.goto(half)
        self.cur = half                         # halve the exponent; square x while bits remain
        self.put(f"{m} >>= 1;")
        self.put(f"if ({m} == 0) {{ qs = {done}; continue; }}")
        self.put(f"{x} = {self.muldiv(x, x, f'{10**s}LL', site)};")
        self.goto(head)
        self.cur = done
        return _Dec(acc, s)

    def list_words(self, node: ListLit, at: int, where: str) -> int:
        """The list's elements, each at `at` places; the index of the first word."""
        start = len(self.em.words)
        for mantissa, q in node.exact:
            scaled = mantissa * 10**(at - q)
            if abs(scaled) > DECIMAL_LIMIT:
                raise ExprError(f"{where}: the list element {Decimal(mantissa).scaleb(-q)} has more than "
                                f"{DECIMAL_DIGITS} digits written with the list's {at} decimal places")
            self.words(scaled)
        return start

    def list_call(self, node: Call) -> _Dec:
        name, col, s = node.name, node.col, places(node)
        where = f"{name}() at column {col}"
        lists = node.args
        n = len(lists[0].exact)
        at = [places(a) for a in lists]
        base = [self.list_words(a, q, where) for a, q in zip(lists, at)]
        acc, i = self.temp(), self.counter()
        item = [f"qd_lit(lit + {b} + 2 * {i})" for b in base]
        if name in ("sum", "min", "max"):
            if name == "sum":
                site = self.site(name, col, {2: f"overflow: {where} has more than {DECIMAL_DIGITS} digits"})
                self.put(f"{acc} = 0;")
                step = f"{acc} = qd_add({acc}, {item[0]}, {site}, &qe);"
            else:
                self.put(f"{acc} = qd_lit(lit + {base[0]});")
                step = f"{acc} = {item[0]} {'<' if name == 'min' else '>'} {acc} ? {item[0]} : {acc};"
            self.put(f"#pragma unroll 1\nfor ({i} = {0 if name == 'sum' else 1}; {i} < {n}; {i}++) {step}")
            return _Dec(acc, s)
        # product and dot: a loop of calls, each product rounded by the rule of *
        k = sum(at) - s if name == "dot" else at[0]
        site = self.site(name, col, {
            2: f"overflow: {where} has more than {DECIMAL_DIGITS} digits",
            3: f"overflow: a product in {where} has more than {DECIMAL_DIGITS} digits before rounding to "
               f"{s} decimal places"}, f"a product in {where} is rounded to {s} decimal places")
        add = self.site(name, col, {2: f"overflow: {where} has more than {DECIMAL_DIGITS} digits"})
        head, done = self.segment(), self.segment()
        self.put(f"{acc} = {10**s if name == 'product' else 0}LL; {i} = 0;")
        self.goto(head)
        self.cur = head
        self.put(f"if ({i} == {n}) {{ qs = {done}; continue; }}")
        if name == "product":
            self.put(f"{acc} = {self.muldiv(acc, item[0], f'{10**k}LL', site)};")
        else:
            term = self.muldiv(item[0], item[1], f"{10**k}LL", site)
            self.put(f"{acc} = qd_add({acc}, {term}, {add}, &qe);")
        self.put(f"{i}++;")
        self.goto(head)
        self.cur = done
        return _Dec(acc, s)

    # -- the kernel's block ----------------------------------------------------
    def _localise(self) -> None:
        """A variable that one segment alone uses lives in a register of that segment (qt[3]
        becomes t3, declared there); the others stay in memory."""
        used: dict[str, set[int]] = {}
        for k, seg in enumerate(self.segments):
            for name in re.findall(r"qt\[\d+\]", "\n".join(seg)):
                used.setdefault(name, set()).add(k)
        for name, segs in used.items():
            if len(segs) == 1:
                [k] = segs
                local = "t" + name[3:-1]
                self.segments[k] = [stmt.replace(name, local) for stmt in self.segments[k]]
                self.segments[k].insert(0, f"long long {local};")

    def source(self, scratch: int) -> str:
        """The kernel's block; its variables start at out[scratch] (an even word: 8-byte aligned)."""
        self.put("break;")
        self._localise()
        body = self._dispatch(0, len(self.segments), "            ")
        return ("    {\n"
                "        int qs = 0, qe = 0, qr = 0, qsite = 0, qmode = 0;\n"
                "        long long qx = 0, qy = 0, qd = 0, qv = 0;\n"
                f"        long long *qt = (long long *)(out + {scratch});\n"
                f"        int *qc = out + {scratch + 2 * self.temps};\n"
                "        #pragma unroll 1\n"
                "        for (;;) {\n"
                f"{body}\n"
                "            qv = qd_muldiv(qx, qy, qd, qmode, qsite, &qe, &qr);\n"
                "        }\n"
                "    }\n")

    def _dispatch(self, lo: int, hi: int, pad: str) -> str:
        """Segments lo .. hi-1, chosen by qs in a balanced tree of comparisons."""
        if hi - lo == 1:
            lines = "\n".join(pad + "    " + line for stmt in self.segments[lo] for line in stmt.split("\n"))
            return f"{pad}{{\n{lines}\n{pad}}}"
        mid = (lo + hi) // 2
        return (f"{pad}if (qs < {mid})\n{self._dispatch(lo, mid, pad + '    ')}\n"
                f"{pad}else\n{self._dispatch(mid, hi, pad + '    ')}")


# ---------------------------------------------------------------------------
# Float32 expressions
# ---------------------------------------------------------------------------
FLOAT_PRELUDE = r"""
__device__ float qf_lit(const int *p) { return __int_as_float(*p); }
__device__ float qf_bool(int c) { return c ? 1.0f : 0.0f; }
/* the list functions fold left to right, each operation rounded to nearest (no fma) */
__device__ float qf_sum(const int *p, int n) {
    float a = 0.0f;
    #pragma unroll 1
    for (int i = 0; i < n; i++) a = __fadd_rn(a, __int_as_float(p[i]));
    return a;
}
__device__ float qf_product(const int *p, int n) {
    float a = 1.0f;
    #pragma unroll 1
    for (int i = 0; i < n; i++) a = __fmul_rn(a, __int_as_float(p[i]));
    return a;
}
__device__ float qf_dot(const int *p, const int *q, int n) {
    float a = 0.0f;
    #pragma unroll 1
    for (int i = 0; i < n; i++) a = __fadd_rn(a, __fmul_rn(__int_as_float(p[i]), __int_as_float(q[i])));
    return a;
}
__device__ float qf_minl(const int *p, int n) {
    float a = __int_as_float(p[0]);
    #pragma unroll 1
    for (int i = 1; i < n; i++) a = fminf(a, __int_as_float(p[i]));
    return a;
}
__device__ float qf_maxl(const int *p, int n) {
    float a = __int_as_float(p[0]);
    #pragma unroll 1
    for (int i = 1; i < n; i++) a = fmaxf(a, __int_as_float(p[i]));
    return a;
}
"""
_FLOAT_OPS = {"+": "__fadd_rn", "-": "__fsub_rn", "*": "__fmul_rn", "/": "__fdiv_rn", "%": "fmodf"}


def f32_bits(mantissa: int, places: int) -> int:
    """The float32 nearest to mantissa / 10**places (ties to even), as its bit pattern."""
    sign = 0x8000_0000 if mantissa < 0 else 0
    v = Fraction(abs(mantissa), 10**places)
    if v == 0:
        return sign
    e = max(v.numerator.bit_length() - v.denominator.bit_length() - 24, -149)
    while v >= Fraction(2**24) * Fraction(2)**e:
        e += 1
    while e > -149 and v < Fraction(2**23) * Fraction(2)**e:
        e -= 1
    q = v / Fraction(2)**e                  # the significand, 2**23 <= q < 2**24 unless subnormal
    n = q.numerator // q.denominator
    rest = q - n
    n += rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n & 1)
    if n == 2**24:
        n, e = n // 2, e + 1
    if n < 2**23:                           # subnormal (e == -149)
        return sign | n
    biased = e + 150
    return sign | (0x7F80_0000 if biased >= 255 else biased << 23 | (n - 2**23))


class _FloatCode:
    """A float32 expression as one C expression: every number a float32, every operation
    rounded to nearest (__fadd_rn ...: no contraction), the functions libdevice's."""

    def __init__(self, em: "_Emitter", why: str):
        self.em, self.why = em, why

    def literal(self, mantissa: int, places: int) -> str:
        self.em.words.append(f32_bits(mantissa, places))
        return f"qf_lit(lit + {len(self.em.words) - 1})"

    def emit(self, node) -> str:
        if isinstance(node, Num):
            return self.literal(node.mantissa, node.places)
        if isinstance(node, Unary):
            if node.op == "~":
                raise _refuse_bitwise(node.op, node.col, "float32", self.why)
            x = self.emit(node.operand)
            return f"(-{x})" if node.op == "-" else f"qf_bool({x} == 0.0f)"
        if isinstance(node, Binary):
            if node.op in _BITWISE:
                raise _refuse_bitwise(node.op, node.col, "float32", self.why)
            a, b = self.emit(node.left), self.emit(node.right)
            if node.op in _FLOAT_OPS:
                return f"{_FLOAT_OPS[node.op]}({a}, {b})"
            if node.op in ("&&", "||"):
                return f"qf_bool({a} != 0.0f {node.op} {b} != 0.0f)"
            return f"qf_bool({a} {node.op} {b})"
        if isinstance(node, Cond):
            return f"({self.emit(node.cond)} != 0.0f ? {self.emit(node.then)} : {self.emit(node.other)})"
        if isinstance(node.args[0], ListLit):
            lists = []
            for a in node.args:
                lists.append(f"lit + {len(self.em.words)}")
                self.em.words.extend(f32_bits(m, q) for m, q in a.exact)
            return f"qf_{node.name}{'l' if node.name in ('min', 'max') else ''}({', '.join(lists)}, {len(node.args[0].exact)})"
        args = [self.emit(a) for a in node.args]
        if node.name in FLOAT_FUNCTIONS:
            return f"{FLOAT_FUNCTIONS[node.name]}({args[0]})"
        if node.name in ("abs", "pow"):
            return f"{'fabsf' if node.name == 'abs' else 'powf'}({', '.join(args)})"
        out = args[0]
        for arg in args[1:]:
            out = f"f{node.name}f({out}, {arg})"
        return out


# ---------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------
@dataclass
class Compiled:
    """A kernel evaluating several expressions, and its launch: `args` are (lit, out). An integer
    expression writes its value and error word to out[o], out[o+1]; a decimal one its value's
    two words, its error word and its rounding word to out[o .. o+3]; a float32 one its bits to
    out[o]. `layout` holds (kind, o, places, shown places) for each expression."""
    texts: list[str]
    source: str
    lit: np.ndarray
    sites: dict[int, tuple[str, int]]
    layout: list[tuple[str, int, int, int]] = field(default_factory=list)
    scratch_words: int = 0      # the decimal state machine's variables, after the results
    decimal_messages: dict[int, dict[int, str]] = field(default_factory=dict)
    rounding_notes: dict[int, str] = field(default_factory=dict)
    kernel: str = KERNEL
    grid: int = 1
    block: int = isa.LANES      # one warp: the list reductions share the work among its lanes

    @property
    def out_words(self) -> int:
        results = max((o + (4 if kind == "decimal" else 2) for kind, o, _, _ in self.layout), default=0)
        return results + self.scratch_words

    def new_args(self) -> list[np.ndarray]:
        return [self.lit.copy(), np.zeros(self.out_words, np.int32)]

    def failure(self, code: int) -> str:
        """The message of error word `code`."""
        site = code & ~3
        if site in self.decimal_messages:
            return self.decimal_messages[site][code & 3]
        op, col = self.sites[site]
        if op == "pow":
            return f"{POW_FAILURE} at column {col}"
        return f"{FAILURES[code & 3].format(op=op)} at column {col}"


def compile_exprs(texts: list[str]) -> Compiled:
    """One kernel for all of `texts` (ExprError on a syntax error or an operation the
    expression's kind lacks; MachineLimitError when the numbers do not fit in global memory)."""
    if not texts:
        raise ExprError("no expression to evaluate")
    em, lines, layout, offset = _Emitter(), [], [], 0
    decimal = _DecimalCode(em)
    for i, text in enumerate(texts):
        try:
            node, kind, why = parse_kind(text)
            if kind == "int":
                lines.append(f"    err = out + {offset + 1};\n    out[{offset}] = {em.emit(node)};")
                layout.append(("int", offset, 0, 0))
            elif kind == "float32":
                lines.append(f"    out[{offset}] = __float_as_int({_FloatCode(em, why).emit(node)});")
                layout.append(("float32", offset, 0, 0))
            else:
                decimal.expression(node, why, offset)
                shown = max(q for n in _nodes(node) for q in
                            ([n.places] if isinstance(n, Num) else [p for _, p in n.exact] if isinstance(n, ListLit) else [0]))
                layout.append(("decimal", offset, places(node), shown))
        except ExprError as e:
            raise ExprError(f"{e}" if len(texts) == 1 else f"expression {i + 1}: {e}") from None
        offset += 4 if kind == "decimal" else 2
    kinds = {kind for kind, *_ in layout}
    scratch = 0
    if "decimal" in kinds:                      # the decimal variables, 8-byte aligned after the results
        scratch = offset % 2 + decimal.scratch_words
        offset += offset % 2
    _check_words(len(em.words), offset + decimal.scratch_words, len(texts), "decimal" in kinds)
    source = (PRELUDE + (DECIMAL_PRELUDE if "decimal" in kinds else "") + (FLOAT_PRELUDE if "float32" in kinds else "")
              + f'\nextern "C" __global__ void {KERNEL}(const int *lit, int *out) {{\n'
              + ("    int *err;\n" if "int" in kinds else "") + "\n".join(lines) + ("\n" if lines else "")
              + (decimal.source(offset) if "decimal" in kinds else "") + "}\n")
    lit = np.array([isa.s32(w) for w in em.words] or [0], np.int32)
    return Compiled(list(texts), source, lit, em.sites, layout, scratch, em.decimal_messages, em.rounding_notes)


def _check_words(numbers: int, results: int, count: int, wide: bool = False) -> None:
    """The literals (list elements included) and the result words share global memory."""
    room = isa.GLOBAL_WORDS - results
    if max(numbers, 1) > room:
        what = "words of numbers (literals and list elements; a decimal takes 2 words)" if wide else \
            "numbers (literals and list elements)"
        raise MachineLimitError(f"the expression{'s' if count > 1 else ''} hold{'' if count > 1 else 's'} {numbers} "
                                f"{what}; the machine's global memory holds {isa.GLOBAL_WORDS} words, {results} of "
                                f"them for the result{'s' if count > 1 else ''}, so at most {room} "
                                f"{'words' if wide else 'numbers'} fit")


# ---------------------------------------------------------------------------
# Running on a device
# ---------------------------------------------------------------------------
@dataclass
class Evaluation:
    """One expression's value, or the error its evaluation hit; the launch's costs (shared by the
    expressions of one launch). `value` is an int (integer expressions), a Decimal (decimal
    ones: exact, shown with the places it needs and at least the most its literals have) or a
    float (float32 ones: the float32's exact value); `rounded` says where a decimal value was
    rounded (None: it is exact)."""
    text: str
    value: int | Decimal | float | None
    error: str | None
    tokens: int | None
    passes: int | None
    seconds: float
    kind: str = "int"
    rounded: str | None = None

    def shown(self) -> str:
        """The value as the gpu_eval tool answers it: 64, 3.525, 33.333333 (rounded: ...), 1.4142135 (float32)."""
        if self.kind == "decimal":
            return format(self.value, "f") + (f" ({self.rounded})" if self.rounded else "")
        if self.kind == "float32":
            return f"{str(np.float32(self.value))} (float32)"     # the shortest text that reads back
        return str(self.value)


def evaluate_many(device, texts: list[str]) -> list[Evaluation]:
    """Evaluate `texts` on `device` (a qwengpu Device) in as few launches as the machine allows:
    all in one, or, when their kernel exceeds a machine limit (ROM, registers), each half in its own."""
    compiled = compile_exprs(texts)
    try:
        fn = device.compile(compiled.source, filename="expression.cu").get_function(compiled.kernel)
        args = compiled.new_args()
        res = fn(grid=compiled.grid, block=compiled.block, args=args)
    except MachineLimitError as e:
        if len(texts) > 1:
            half = len(texts) // 2
            return evaluate_many(device, texts[:half]) + evaluate_many(device, texts[half:])
        raise MachineLimitError(f"the expression is too large for one launch ({e}); split it") from None
    return [_result(compiled, args[1], i, text, res) for i, text in enumerate(texts)]


def _result(compiled: Compiled, out: np.ndarray, i: int, text: str, res) -> Evaluation:
    kind, o, scale, shown = compiled.layout[i]
    costs = (res.tokens, res.passes, res.seconds)
    if kind == "float32":
        return Evaluation(text, float(out[o:o + 1].view(np.float32)[0]), None, *costs, kind)
    err = int(out[o + (2 if kind == "decimal" else 1)])
    if err:
        return Evaluation(text, None, compiled.failure(err), *costs, kind)
    if kind == "int":
        return Evaluation(text, int(out[o]), None, *costs)
    mantissa = (int(out[o + 1]) << 32) | (int(out[o]) & isa.MASK32)
    while scale > shown and mantissa % 10 == 0:          # 3.5250 -> 3.525; 24.70 stays 24.70
        mantissa, scale = mantissa // 10, scale - 1
    note = compiled.rounding_notes.get(int(out[o + 3]))
    return Evaluation(text, Decimal(mantissa).scaleb(-scale), None, *costs, kind, note and f"rounded: {note}")


def evaluate_on(device, text: str) -> Evaluation:
    """Evaluate one expression on `device`."""
    return evaluate_many(device, [text])[0]
