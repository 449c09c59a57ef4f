"""The normal-mode expression language (qwengpu/chat/expr.py) against a reference evaluator with
C's semantics on 32-bit ints written here, independently of the compiler: random expression
trees are rendered to text with this file's own C precedence table, evaluated here in Python
and on the GPU (interpreter; a fixed sample on the model engine)."""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from qwengpu import Device, isa
from qwengpu.chat.expr import ExprError, evaluate_many, evaluate_on
from qwengpu.errors import MachineLimitError

INT_MIN, INT_MAX = -2**31, 2**31 - 1


# ---------------------------------------------------------------------------
# The reference: C on 32-bit two's-complement ints, wrapping on overflow
# ---------------------------------------------------------------------------
class CFailure(Exception):
    """The phrase the GPU's error message must contain."""


def wrap(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def c_div(a: int, b: int) -> int:
    if b == 0:
        raise CFailure("division by zero")
    if a == INT_MIN and b == -1:
        raise CFailure("overflow")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_shift_count(b: int) -> int:
    if not 0 <= b <= 31:
        raise CFailure("shift count")
    return b


BINARY = {
    "+": lambda a, b: wrap(a + b), "-": lambda a, b: wrap(a - b), "*": lambda a, b: wrap(a * b),
    "/": c_div, "%": lambda a, b: a - b * c_div(a, b),
    "<<": lambda a, b: wrap(a << c_shift_count(b)), ">>": lambda a, b: a >> c_shift_count(b),
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
}
PRECEDENCE = {"*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "<": 7, "<=": 7, ">": 7, ">=": 7,
              "==": 6, "!=": 6, "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1}     # C's table, tightest first


def c_pow(a: int, b: int) -> int:
    if b < 0:
        raise CFailure("negative exponent")
    return wrap(pow(a, b, 2**32))


def ev(t) -> int:
    """Evaluate tree `t` left to right, short-circuiting && || ?: as C does."""
    kind = t[0]
    if kind == "num":
        return wrap(t[1])
    if kind == "neg":
        return wrap(-ev(t[1]))
    if kind == "not":
        return int(ev(t[1]) == 0)
    if kind == "inv":
        return ~ev(t[1])
    if kind == "cond":
        return ev(t[2]) if ev(t[1]) else ev(t[3])
    if kind == "bin":
        op, a = t[1], ev(t[2])
        if op == "&&":
            return int(bool(a) and bool(ev(t[3])))
        if op == "||":
            return int(bool(a) or bool(ev(t[3])))
        return BINARY[op](a, ev(t[3]))
    name, args = t[1], t[2]
    if kind == "list":          # ("list", name, [lists of ints])
        values = [[wrap(v) for v in lst] for lst in args]
        if name == "dot":
            return wrap(sum(x * y for x, y in zip(*values)))
        if name == "product":
            out = 1
            for v in values[0]:
                out = wrap(out * v)
            return out
        return {"sum": lambda v: wrap(sum(v)), "min": min, "max": max}[name](values[0])
    vals = [ev(a) for a in args]            # ("call", name, [trees])
    return {"min": lambda *v: min(v), "max": lambda *v: max(v), "abs": lambda a: wrap(abs(a)),
            "pow": c_pow}[name](*vals)


def c_result(t):
    """(value, None) or (None, failure phrase)."""
    try:
        return ev(t), None
    except CFailure as e:
        return None, str(e)


# ---------------------------------------------------------------------------
# Random trees and their text
# ---------------------------------------------------------------------------
def random_literal(rng: random.Random) -> int:
    return rng.choice([rng.randint(0, 12), rng.randint(0, 40), rng.randint(0, 2**32 - 1),
                       rng.choice([0, 1, 2, 31, 32, INT_MAX, 2**31, 2**32 - 1])])


def random_tree(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.25:
        return ("num", random_literal(rng))
    roll = rng.random()
    if roll < 0.6:
        return ("bin", rng.choice(list(PRECEDENCE)), random_tree(rng, depth - 1), random_tree(rng, depth - 1))
    if roll < 0.75:
        return (rng.choice(["neg", "neg", "not", "inv"]), random_tree(rng, depth - 1))
    if roll < 0.82:
        return ("cond", random_tree(rng, depth - 1), random_tree(rng, depth - 1), random_tree(rng, depth - 1))
    if roll < 0.92:
        name = rng.choice(["min", "max", "abs", "pow"])
        n = 1 if name == "abs" else 2 if name == "pow" else rng.randint(2, 3)
        return ("call", name, [random_tree(rng, depth - 1) for _ in range(n)])
    name = rng.choice(["sum", "product", "dot", "min", "max"])
    length = rng.randint(1, 6)
    lists = [[rng.choice([-1, 1]) * random_literal(rng) for _ in range(length)]
             for _ in range(2 if name == "dot" else 1)]
    return ("list", name, lists)


def literal_text(v: int, rng: random.Random) -> str:
    if v == INT_MAX and rng.random() < 0.3:
        return "INT_MAX"
    return hex(v) if rng.random() < 0.3 else str(v)


def render(t, rng: random.Random) -> str:
    """C text for `t` with the parentheses C's precedence needs, and now and then some extra."""
    text, _ = _render(t, rng)
    return text


def _render(t, rng):
    """(text, precedence): 12 for atoms, 11 for unary, PRECEDENCE for binary, 0 for ?:."""
    kind = t[0]
    if kind == "num":
        out = (literal_text(t[1], rng), 12)
    elif kind in ("neg", "not", "inv"):
        inner = wrapped(t[1], 11, rng)
        out = ({"neg": "-", "not": "!", "inv": "~"}[kind] + inner, 11)
    elif kind == "bin":
        p = PRECEDENCE[t[1]]
        out = (f"{wrapped(t[2], p, rng)} {t[1]} {wrapped(t[3], p + 1, rng)}", p)    # left associative
    elif kind == "cond":
        out = (f"{wrapped(t[1], 1, rng)} ? {render(t[2], rng)} : {wrapped(t[3], 0, rng)}", 0)
    elif kind == "call":
        out = (f"{t[1]}({', '.join(render(a, rng) for a in t[2])})", 12)
    else:
        lists = ", ".join("[" + ", ".join(str(v) for v in lst) + "]" for lst in t[2])
        out = (f"{t[1]}({lists})", 12)
    if rng.random() < 0.1:
        return f"({out[0]})", 12
    return out


def wrapped(t, need: int, rng) -> str:
    text, p = _render(t, rng)
    return f"({text})" if p < need else text


def check(texts_and_trees, results):
    for (text, tree), got in zip(texts_and_trees, results):
        value, failure = c_result(tree)
        if failure is None:
            assert (got.value, got.error) == (value, None), text
        else:
            assert got.value is None and failure in got.error, (text, got.error)


@pytest.fixture(scope="module")
def interp():
    return Device("interp")


# ---------------------------------------------------------------------------
# Random expressions: 130 x 8 = 1,040 through the interpreter
# ---------------------------------------------------------------------------
@settings(max_examples=130, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_random_expressions_match_c_on_the_interpreter(rng):
    device = Device("interp")
    cases = [(render(tree, rng), tree) for tree in (random_tree(rng, 3) for _ in range(8))]
    check(cases, evaluate_many(device, [text for text, _ in cases]))


def test_the_reference_itself():
    """The reference's own C facts, so a bug there cannot hide one in the compiler."""
    assert c_div(-7, 2) == -3 and BINARY["%"](-7, 2) == -1 and BINARY["%"](7, -2) == 1
    assert BINARY["+"](INT_MAX, 1) == INT_MIN and BINARY[">>"](-8, 1) == -4
    assert BINARY["<<"](1, 31) == INT_MIN and wrap(2**32 - 1) == -1


# ---------------------------------------------------------------------------
# Hand-computed cases
# ---------------------------------------------------------------------------
HAND = [
    ("-7 / 2", -3), ("-7 % 2", -1), ("7 % -2", 1), ("7 / -2", -3), ("2147483647 + 1", INT_MIN),
    ("INT_MIN - 1", INT_MAX), ("-INT_MIN", INT_MIN), ("65536 * 65536", 0), ("0xFFFFFFFF", -1),
    ("0x7fffffff", INT_MAX), ("2147483648", INT_MIN), ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9),
    ("1 - 2 - 3", -4), ("100 / 10 / 5", 2), ("2 * 3 % 4", 2), ("1 << 2 + 1", 8), ("-8 >> 1", -4),
    ("1 << 31", INT_MIN), ("6 & 3", 2), ("6 | 3", 7), ("6 ^ 3", 5), ("~5", -6), ("1 | 2 ^ 3 & 4", 3),
    ("3 < 5", 1), ("5 <= 4", 0), ("-1 > 0", 0), ("2 >= 2", 1), ("1 == 1 == 1", 1), ("3 != 3", 0),
    ("1 < 2 == 1", 1), ("!0", 1), ("!7", 0), ("2 && 3", 1), ("0 || 0", 0), ("0 && 1 / 0", 0),
    ("1 || 1 / 0", 1), ("1 ? 5 : 1 / 0", 5), ("0 ? 1 : 2 ? 3 : 4", 3), ("min(3, -2)", -2),
    ("max(1, 7, 4)", 7), ("abs(-9)", 9), ("abs(INT_MIN)", INT_MIN), ("pow(2, 10)", 1024),
    ("pow(3, 0)", 1), ("pow(2, 32)", 0), ("pow(-3, 3)", -27), ("sum([1, 2, 3, 4])", 10), ("sum([])", 0),
    ("product([2, -3, 4])", -24), ("product([])", 1), ("dot([1, 2, 3], [4, 5, 6])", 32),
    ("min([5, -3, 9])", -3), ("max([5, -3, 9])", 9), ("sum([2147483647, 1])", INT_MIN),
    ("- - 3", 3), ("--3", 3), ("+4", 4), ("sum([1,2,3]) * 2 - max(4, 5)", 7), ("  12  ", 12),
]


def test_hand_computed_cases(interp):
    got = evaluate_many(interp, [text for text, _ in HAND])
    assert [(r.text, r.value, r.error) for r in got] == [(text, want, None) for text, want in HAND]


@pytest.mark.parametrize("text, message", [
    ("1 / 0", "division by zero at column 3"),
    ("5 % (2 - 2)", "division by zero at column 3"),
    ("INT_MIN / -1", "overflow: INT_MIN / -1 does not fit in 32 bits at column 9"),
    ("-2147483648 % -1", "overflow: INT_MIN % -1 does not fit in 32 bits at column 13"),
    ("1 << 32", "shift count outside 0..31 at column 3"),
    ("1 >> -1", "shift count outside 0..31 at column 3"),
    ("pow(2, -1)", "negative exponent in pow() at column 1"),
    ("1 + (1 / 0) / 0", "division by zero at column 8"),          # the first failure is the one reported
])
def test_runtime_failures_are_reported_not_answered(interp, text, message):
    got = evaluate_on(interp, text)
    assert (got.value, got.error) == (None, message)


def test_a_failure_leaves_the_other_expressions_of_its_launch_alone(interp):
    got = evaluate_many(interp, ["1 / 0", "6 * 7"])
    assert [(r.value, r.error is None) for r in got] == [(None, False), (42, True)]


# ---------------------------------------------------------------------------
# Parse errors and limits
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("(1 + 2", "expected ')' at column 7, found the end of the expression"),
    ("1 +", "expected a number, '(' or a function at column 4, found the end of the expression"),
    ("1 2", "unexpected '2' at column 3"),
    ("2 $ 3", "unexpected character '$' at column 3"),
    ("foo(1)", "unknown name 'foo' at column 1"),
    ("4294967296", "integer literal 4294967296 at column 1 does not fit in 32 bits"),
    ("010", "integer literal 010 at column 1 has a leading zero"),
    ("[1, 2]", "a list [...] at column 1 is allowed only as an argument of"),
    ("sum(1, 2)", "sum() at column 1 takes one list"),
    ("sum([1, x])", "expected an integer literal in the list at column 9"),
    ("dot([1, 2], [3])", "dot() at column 1: the lists have different lengths (2 and 1)"),
    ("min([])", "min() at column 1 of an empty list has no value"),
    ("max(1)", "max() at column 1 takes two or more numbers, or one list"),
    ("abs(1, 2)", "abs() at column 1 takes 1 number"),
    ("1 ? 2", "expected ':' at column 6"),
    ("", "expected a number, '(' or a function at column 1"),
])
def test_parse_errors_name_the_column(interp, text, message):
    assert_refused(interp, text, message)


def assert_refused(interp, text: str, message: str) -> None:
    with pytest.raises(ExprError) as e:
        evaluate_on(interp, text)
    assert message in str(e.value)


def test_deep_nesting_is_an_error_not_a_crash(interp):
    assert evaluate_on(interp, "(" * 40 + "1" + ")" * 40).value == 1
    with pytest.raises(ExprError, match="nests too deeply"):
        evaluate_on(interp, "(" * 500 + "1" + ")" * 500)


def test_a_parse_error_names_its_expression_in_a_group(interp):
    with pytest.raises(ExprError, match=r"expression 2: expected '\)' at column 3"):
        evaluate_many(interp, ["1", "(1", "2"])


def test_a_list_too_long_names_the_memory_limit(interp):
    assert evaluate_on(interp, f"sum([{', '.join(['1'] * 16382)}])").value == 16382
    with pytest.raises(MachineLimitError, match="holds 16383 numbers .* global memory holds 16384 words, "
                                                 "2 of them for the result, so at most 16382 numbers fit"):
        evaluate_on(interp, f"sum([{', '.join(['1'] * 16383)}])")


@pytest.mark.parametrize("text, limit", [
    (" / ".join(str(100000 + i) for i in range(40)), "ROM blocks; the ROM holds 128"),      # a division loop each
    (" + ".join(f"{i} * {i + 1}" for i in range(1, 40)), f"registers; a lane has {isa.USABLE_REGS}"),   # 78 loads live
], ids=["rom", "registers"])
def test_an_expression_too_large_for_the_machine_says_so(interp, text, limit):
    with pytest.raises(MachineLimitError, match=f"the expression is too large for one launch .*{limit}.*split it"):
        evaluate_on(interp, text)


def test_many_expressions_are_split_across_launches(interp):
    texts = [f"{i} / 3 + {i} % 3" for i in range(40)]
    got = evaluate_many(interp, texts)
    assert [r.value for r in got] == [i // 3 + i % 3 for i in range(40)]


# ---------------------------------------------------------------------------
# The model engine (the stand-in merged model)
# ---------------------------------------------------------------------------
def test_fifty_random_expressions_in_the_model():
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    rng = random.Random(15)
    cases = [(render(tree, rng), tree) for tree in (random_tree(rng, 2) for _ in range(50))]
    check(cases, evaluate_many(Device("model", max_tokens=200_000), [text for text, _ in cases]))


# ---------------------------------------------------------------------------
# Decimals: a reference with Python's unbounded ints, written from docs/chat.md's rules
# (independently of the compiler), random trees and their text
# ---------------------------------------------------------------------------
from decimal import Decimal                                       # noqa: E402

from qwengpu.chat.expr import parse_kind                          # noqa: E402

PLACES, LIMIT = 6, 10**18 - 1        # a quotient's places; the largest mantissa (18 digits)


class DFailure(Exception):
    """(phrase, column): what the GPU's error message must contain."""


class DecimalRef:
    """Evaluates a decimal tree: values are (mantissa, places); the first failure raises; the
    first rounding that changed a value is remembered by its column."""

    def __init__(self):
        self.rounded = None

    def fail(self, phrase, col):
        raise DFailure(phrase, col)

    def muldiv(self, x, y, d, col, mode=0):
        """x * y / d rounded half to even (mode 1: the remainder of x / d, x's sign)."""
        if d == 0:
            self.fail("division by zero" if mode or col[1] != "pow" else "negative exponent", col[0])
        n = abs(x) * abs(y)
        if n >= 2**63:
            self.fail("overflow", col[0])
        q, r = divmod(n, abs(d))
        if mode:
            q = r
        elif r:
            if 2 * r > abs(d) or (2 * r == abs(d) and q % 2):
                q += 1
            self.rounded = self.rounded or col[0]
        if q > LIMIT:
            self.fail("overflow", col[0])
        negative = x < 0 if mode else ((x < 0) != (y < 0)) != (d < 0)     # not chained: xor
        return -q if negative else q

    def align(self, v, at, col):
        m, p = v
        return self.muldiv(m, 10**(at - p), 1, (col, "align")) if at > p else m

    def add(self, a, b, col):
        if abs(a + b) > LIMIT:
            self.fail("overflow", col)
        return a + b

    def ev(self, t):
        kind = t[0]
        if kind == "num":
            return t[1], t[2]
        if kind == "neg":
            m, p = self.ev(t[1])
            return -m, p
        if kind == "not":
            return int(self.ev(t[1])[0] == 0), 0
        if kind == "cond":
            c = self.ev(t[1])[0]
            s = max(self.places(t[2]), self.places(t[3]))
            return self.align(self.ev(t[2] if c else t[3]), s, t[4]), s
        if kind == "bin":
            return self.binary(t)
        if kind == "call":
            return self.call(t)
        return self.listcall(t)

    def binary(self, t):
        _, op, left, right, col = t
        if op in ("&&", "||"):
            a = self.ev(left)[0] != 0
            if a == (op == "||"):
                return int(a), 0
            return int(self.ev(right)[0] != 0), 0
        a, b = self.ev(left), self.ev(right)
        if op == "*":
            s = min(a[1] + b[1], max(PLACES, a[1], b[1]))
            return self.muldiv(a[0], b[0], 10**(a[1] + b[1] - s), (col, op)), s
        if op == "/":
            s = max(PLACES, a[1], b[1])
            return self.muldiv(a[0], 10**(s + b[1] - a[1]), b[0], (col, op)), s
        s = max(a[1], b[1])
        x, y = self.align(a, s, col), self.align(b, s, col)
        if op == "%":
            return self.muldiv(x, 1, y, (col, op), mode=1), s
        if op in ("+", "-"):
            return self.add(x, y if op == "+" else -y, col), s
        return int({"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op]), 0

    def call(self, t):
        _, name, args, col = t
        if name == "pow":
            a, n = self.ev(args[0]), self.ev(args[1])
            s = 0 if a[1] == 0 else max(PLACES, a[1])
            x, m, acc, one = self.align(a, s, col), n[0], 10**s, 10**s
            if m < 0:
                self.fail("negative exponent", col)
            while True:
                if m & 1:
                    acc = self.muldiv(acc, x, one, (col, "pow"))
                m >>= 1
                if not m:
                    return acc, s
                x = self.muldiv(x, x, one, (col, "pow"))
        s = max(self.places(a) for a in args)
        values = [self.align(self.ev(a), s, col) for a in args]
        if name == "abs":
            return abs(values[0]), s
        return (min if name == "min" else max)(values), s

    def listcall(self, t):
        _, name, lists, col = t
        at = [max((p for _, p in lst), default=0) for lst in lists]
        items = [[m * 10**(q - p) for m, p in lst] for lst, q in zip(lists, at)]
        if name == "sum":
            acc = 0
            for v in items[0]:
                acc = self.add(acc, v, col)
            return acc, at[0]
        if name in ("min", "max"):
            return (min if name == "min" else max)(items[0]), at[0]
        if name == "product":
            s = 0 if at[0] == 0 else max(PLACES, at[0])
            acc = 10**s
            for v in items[0]:
                acc = self.muldiv(acc, v, 10**at[0], (col, name))
            return acc, s
        s = min(at[0] + at[1], max(PLACES, *at))
        acc = 0
        for x, y in zip(*items):
            acc = self.add(acc, self.muldiv(x, y, 10**(at[0] + at[1] - s), (col, name)), col)
        return acc, s

    def places(self, t):
        kind = t[0]
        if kind == "num":
            return t[2]
        if kind == "neg":
            return self.places(t[1])
        if kind == "not":
            return 0
        if kind == "cond":
            return max(self.places(t[2]), self.places(t[3]))
        if kind == "bin":
            a, b = self.places(t[2]), self.places(t[3])
            return {"*": min(a + b, max(PLACES, a, b)), "/": max(PLACES, a, b), "+": max(a, b),
                    "-": max(a, b), "%": max(a, b)}.get(t[1], 0)
        if kind == "call":
            if t[1] == "pow":
                a = self.places(t[2][0])
                return 0 if a == 0 else max(PLACES, a)
            return max(self.places(a) for a in t[2])
        at = [max((p for _, p in lst), default=0) for lst in t[2]]
        return {"sum": at[0], "min": at[0], "max": at[0], "product": 0 if at[0] == 0 else max(PLACES, at[0])}.get(
            t[1], min(sum(at), max(PLACES, *at)))


def literal_places(t):
    """The most places of the tree's literals: a decimal result shows at least as many."""
    if t[0] == "num":
        return t[2]
    if t[0] == "list":
        return max((p for lst in t[2] for _, p in lst), default=0)
    return max((literal_places(c) for c in t[1:] if isinstance(c, tuple)), default=0) if t[0] != "call" else \
        max(literal_places(a) for a in t[2])


def decimal_result(t):
    """(the value as the tool shows it, the first rounding's column, None) or (None, None, (phrase, column))."""
    ref = DecimalRef()
    try:
        m, p = ref.ev(t)
    except DFailure as e:
        return None, None, e.args
    shown = literal_places(t)
    while p > shown and m % 10 == 0:
        m, p = m // 10, p - 1
    return format(Decimal(m).scaleb(-p), "f"), ref.rounded, None


def random_decimal(rng: random.Random):
    p = rng.choice([0, 0, 1, 2, 2, 3, 4, 6, 9])
    m = rng.choice([0, rng.randint(0, 9), rng.randint(0, 999), rng.randint(0, 10**6), rng.randint(0, 10**12),
                    rng.randint(0, LIMIT), 10**p, 5 * 10**max(p - 1, 0)])
    return m, p


def decimal_tree(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.3:
        return ("num", *random_decimal(rng))
    roll = rng.random()
    if roll < 0.55:
        op = rng.choice(["+", "-", "*", "*", "/", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"])
        return ("bin", op, decimal_tree(rng, depth - 1), decimal_tree(rng, depth - 1), 0)
    if roll < 0.65:
        return (rng.choice(["neg", "neg", "not"]), decimal_tree(rng, depth - 1))
    if roll < 0.72:
        return ("cond", decimal_tree(rng, depth - 1), decimal_tree(rng, depth - 1), decimal_tree(rng, depth - 1), 0)
    if roll < 0.85:
        name = rng.choice(["min", "max", "abs", "pow"])
        if name == "pow":
            base = ("num", rng.randint(0, 300), rng.choice([0, 1, 2, 3]))
            return ("call", name, [base, ("num", rng.choice([0, 1, 2, 3, 5, 10, 30]), 0)], 0)
        n = 1 if name == "abs" else rng.randint(2, 3)
        return ("call", name, [decimal_tree(rng, depth - 1) for _ in range(n)], 0)
    name = rng.choice(["sum", "product", "dot", "min", "max"])
    length = rng.randint(1, 5)
    lists = [[(rng.choice([-1, 1]) * rng.randint(0, 10**rng.choice([1, 3, 6])), rng.choice([0, 1, 2, 3]))
              for _ in range(length)] for _ in range(2 if name == "dot" else 1)]
    return ("list", name, lists, 0)


def decimal_text(m, p, rng):
    if p == 0:
        return f"{m}." if rng.random() < 0.3 else str(m)
    digits = str(m).rjust(p + 1, "0")
    return f"{digits[:-p]}.{digits[-p:]}"


def render_decimal(t, rng) -> tuple[str, object]:
    """(text, the tree with each operator's column filled in)."""
    out = []

    def put(s):
        out.append(s)
        return sum(map(len, out)) - len(s) + 1          # the column where s starts

    def go(t, need):
        kind = t[0]
        prec = {"num": 12, "neg": 11, "not": 11, "call": 12, "list": 12, "cond": 0}.get(kind, None)
        prec = PRECEDENCE[t[1]] if prec is None else prec
        paren = prec < need or rng.random() < 0.08
        if paren:
            put("(")
        if kind == "num":
            put(decimal_text(t[1], t[2], rng))
            r = t
        elif kind in ("neg", "not"):
            put("-" if kind == "neg" else "!")
            r = (kind, go(t[1], 11))
        elif kind == "bin":
            a = go(t[2], prec)
            put(" ")
            col = put(t[1])
            put(" ")
            r = ("bin", t[1], a, go(t[3], prec + 1), col)
        elif kind == "cond":
            c = go(t[1], 1)
            put(" ")
            col = put("?")
            put(" ")
            a = go(t[2], 0)
            put(" : ")
            r = ("cond", c, a, go(t[3], 0), col)
        else:
            col = put(t[1])
            put("(")
            if kind == "call":
                args = []
                for i, a in enumerate(t[2]):
                    if i:
                        put(", ")
                    args.append(go(a, 0))
                r = ("call", t[1], args, col)
            else:
                put(", ".join("[" + ", ".join(("-" if m < 0 else "") + decimal_text(abs(m), p, rng) for m, p in lst) + "]"
                              for lst in t[2]))
                r = ("list", t[1], t[2], col)
            put(")")
        if paren:
            put(")")
        return r

    tree = go(t, 0)
    return "".join(out), tree


def decimal_cases(rng, count, depth):
    cases = []
    while len(cases) < count:
        text, tree = render_decimal(decimal_tree(rng, depth), rng)
        if "." in text and parse_kind(text)[1] == "decimal":
            cases.append((text, tree))
    return cases


def check_decimal(cases, results):
    for (text, tree), got in zip(cases, results):
        shown, rounded, failure = decimal_result(tree)
        if failure is None:
            assert (got.error, format(got.value, "f")) == (None, shown), text
            assert (got.rounded is None) == (rounded is None), (text, got.rounded, rounded)
            assert rounded is None or f"at column {rounded} " in got.rounded, (text, got.rounded, rounded)
        else:
            phrase, col = failure
            assert got.value is None and phrase in got.error and f"column {col}" in got.error, (text, got.error, failure)


def test_the_decimal_reference_itself():
    """The rules' own examples, so a bug there cannot hide one in the compiler."""
    cases = {("bin", "*", ("num", 2350, 2), ("num", 15, 0), 7): "352.50",
             ("bin", "/", ("num", 100, 0), ("num", 30, 1), 5): "33.333333",
             ("bin", "/", ("num", 1, 0), ("num", 8, 0), 3): "0.125",
             ("bin", "/", ("num", 5, 0), ("num", 2, 0), 3): "2.5",
             ("bin", "/", ("num", 25, 7), ("num", 10, 0), 3): "0.0000002",    # 0.00000025, 7 places: to even
             ("bin", "/", ("num", 35, 7), ("num", 10, 0), 3): "0.0000004",    # 0.00000035: to even, up
             ("bin", "*", ("num", 5, 4), ("num", 5, 3), 3): "0.000002",       # 0.0000025, 6 places: to even
             ("bin", "*", ("num", 5, 4), ("num", 5, 4), 3): "0.0000"}         # 0.00000025 rounds to 0
    assert [decimal_result(t)[0] for t in cases] == list(cases.values())
    assert decimal_result(("bin", "/", ("num", 1, 0), ("num", 0, 1), 3))[2] == ("division by zero", 3)
    assert decimal_result(("bin", "+", ("num", LIMIT, 0), ("num", 1, 0), 4))[2] == ("overflow", 4)


def evaluate_fitting(device, cases):
    """The cases whose kernels fit the machine, and their results (a random tree now and then
    needs more than the ROM's 128 blocks: evaluate_on refuses it, which is tested below)."""
    try:
        return cases, evaluate_many(device, [text for text, _ in cases])
    except MachineLimitError:
        kept, results = [], []
        for case in cases:
            try:
                results.append(evaluate_on(device, case[0]))
                kept.append(case)
            except MachineLimitError as e:
                assert "the expression is too large for one launch" in str(e) and "split it" in str(e)
        return kept, results


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_random_decimal_expressions_match_the_reference_on_the_interpreter(rng):
    check_decimal(*evaluate_fitting(Device("interp"), decimal_cases(rng, 6, rng.choice([2, 2, 3]))))


# Hand-computed decimal cases: (text, the value as shown, rounded?)
HAND_DECIMAL = [
    ("23.50 * 15 / 100", "3.525", False), ("23.50 * 0.15", "3.525", False), ("19.99 * 3", "59.97", False),
    ("0.1 + 0.2", "0.3", False), ("0.1 + 0.2 == 0.3", "1", False), ("23.50 + 1.20", "24.70", False),
    ("2.50 * 2", "5.00", False), ("1.5 + 2.25", "3.75", False), ("100 / 3.0", "33.333333", True),
    ("2 / 3.0", "0.666667", True), ("1 / 3.0 * 3", "0.999999", True), ("(1 / 3.0) > 0", "1", True),
    ("10 / 4.0", "2.5", False), ("1 / 8.0", "0.125", False), ("5. / 2", "2.5", False), ("7 / 2.0", "3.5", False),
    ("-7.5 / 2", "-3.75", False), ("7.5 % 2", "1.5", False), ("-7.5 % 2", "-1.5", False), ("7.5 % -2", "1.5", False),
    ("0.0000025 / 10", "0.0000002", True),        # 0.00000025 to 7 places (the dividend's): half to even
    ("0.0005 * 0.005", "0.000002", True),         # 0.0000025 to 6 places: half to even
    ("0.0015 * 0.005", "0.000008", True),         # 0.0000075: half to even, up
    ("pow(1.5, 3)", "3.375", False), ("pow(1.1, 2)", "1.21", False), ("pow(2, 10) * 1.0", "1024.0", False),
    ("pow(0.5, 10)", "0.000976", True),           # 0.0625 squared rounds to 0.003906, then 0.0009765 to even
    ("pow(2.5, 0)", "1.0", False), ("sum([12.50, 8.25, 3.10])", "23.85", False),
    ("sum([12.50, 8.25, 3.10]) / 3", "7.95", False), ("product([1.5, 2, 4])", "12.0", False),
    ("dot([1.5, 2], [2, 0.25])", "3.50", False), ("min([2.5, -1, 3])", "-1.0", False), ("max(1.5, 2)", "2.0", False),
    ("abs(-3.25)", "3.25", False), ("-abs(3.25)", "-3.25", False), ("1.5 < 2", "1", False), ("!0.0", "1", False),
    ("0.5 && 0", "0", False), ("0.0 || 0.25", "1", False), ("1.5 ? 2.25 : 3", "2.25", False),
    ("0.0 ? 1 : 2.5", "2.5", False), ("INT_MAX * 2.0", "4294967294.0", False), ("0xFF * 0.5", "127.5", False),
    ("4294967296 * 1.5", "6442450944.0", False), ("999999999999.99 + 0.01", "1000000000000.00", False),
    ("99999999999.999999 + 0.000001", "100000000000.000000", False),
    ("0.1 + 0.2 + 0.3 + 0.4 + 0.5 + 0.6 + 0.7 + 0.8 + 0.9 + 1.0 + 1.1 + 1.2", "7.8", False),
]


def test_hand_computed_decimal_cases(interp):
    got = evaluate_many(interp, [text for text, _, _ in HAND_DECIMAL])
    assert [(r.text, r.kind, r.error, format(r.value, "f"), r.rounded is not None) for r in got] == \
        [(text, "decimal", None, shown, rounded) for text, shown, rounded in HAND_DECIMAL]
    # and the reference agrees with every one of them
    for text, shown, rounded in HAND_DECIMAL:
        tree = to_tree(parse_kind(text)[0])
        assert decimal_result(tree)[0] == shown and (decimal_result(tree)[1] is not None) == rounded, text


def to_tree(node):
    """A parsed expression as the reference's tree."""
    from qwengpu.chat.expr import Binary, Call, Cond, ListLit, Num, Unary
    if isinstance(node, Num):
        return ("num", node.mantissa, node.places)
    if isinstance(node, Unary):
        return ({"-": "neg", "!": "not"}[node.op], to_tree(node.operand))
    if isinstance(node, Binary):
        return ("bin", node.op, to_tree(node.left), to_tree(node.right), node.col)
    if isinstance(node, Cond):
        return ("cond", to_tree(node.cond), to_tree(node.then), to_tree(node.other), node.col)
    assert isinstance(node, Call)
    if isinstance(node.args[0], ListLit):
        return ("list", node.name, [list(a.exact) for a in node.args], node.col)
    return ("call", node.name, [to_tree(a) for a in node.args], node.col)


def test_a_rounded_decimal_says_where(interp):
    assert evaluate_on(interp, "100 / 3.0").rounded == "rounded: the quotient at column 5 is rounded to 6 decimal places"
    assert evaluate_on(interp, "1.25 * 0.0001").rounded is None                  # 0.000125: 6 places, exact
    assert evaluate_on(interp, "1.25 * 0.00001").rounded == \
        "rounded: the product at column 6 is rounded to 6 decimal places"      # 0.0000125
    assert evaluate_on(interp, "pow(0.5, 10)").rounded == "rounded: pow() at column 1 is rounded to 6 decimal places"
    assert evaluate_on(interp, "100 / 3.0").shown() == \
        "33.333333 (rounded: the quotient at column 5 is rounded to 6 decimal places)"


@pytest.mark.parametrize("text, message", [
    ("1.5 / 0", "division by zero at column 5"),
    ("1.5 % 0.0", "division by zero at column 5"),
    ("1.5 / 0 + 2 / 0", "division by zero at column 5"),                    # the first failure is reported
    ("900000000000000000 + 100000000000000000 + 0.0",
     "overflow: + at column 20: the result has more than 18 digits"),
    ("999999999999999999 + 0.1", "overflow: + at column 20: an operand has more than 18 digits at 1 decimal places"),
    ("1000000000.5 * 1000000000.5", "overflow: the product at column 14 has more than 18 digits"),
    ("(10000 / 3.0) * (10000 / 3.0)",
     "overflow: the product at column 15 has more than 18 digits before rounding to 6 decimal places"),
    ("5000000000000.0 / 1", "overflow: the quotient at column 17 has more than 18 digits"),
    ("1000000000000000 / 0.5", "overflow: the dividend of / at column 18 has more than 18 digits at 7 decimal places"),
    ("pow(1.5, -1)", "negative exponent in pow() at column 1"),
    ("pow(10.5, 20)",
     "overflow: a product in pow() at column 1 has more than 18 digits before rounding to 6 decimal places"),
    ("sum([999999999999999999, 999999999999999999, -5.])", "overflow: sum() at column 1 has more than 18 digits"),
    ("product([10000000000, 10000000000.])", "overflow: product() at column 1 has more than 18 digits"),
])
def test_decimal_failures_are_reported_not_answered(interp, text, message):
    got = evaluate_on(interp, text)
    assert (got.kind, got.value, got.error) == ("decimal", None, message)


@pytest.mark.parametrize("text, message", [
    ("1.5 & 1", "'&' at column 5 takes integers; this expression is decimal (it has the decimal number 1.5 at "
                "column 1), and bitwise operators and shifts have no decimal meaning"),
    ("~1.5", "'~' at column 1 takes integers; this expression is decimal"),
    ("2 << 1 + 0.5", "'<<' at column 3 takes integers; this expression is decimal (it has the decimal number 0.5 "
                     "at column 10)"),
    ("sqrt(2) ^ 1", "'^' at column 9 takes integers; this expression is float32 (it calls sqrt() at column 1)"),
    ("0.1234567891", "decimal literal 0.1234567891 at column 1 has 10 decimal places; at most 9"),
    ("1234567890123456789.5", "literal 1234567890123456789.5 at column 1 has more than 18 digits"),
    ("1.5 + 1234567890123456789", "literal 1234567890123456789 at column 7 has more than 18 digits"),
    ("sum([999999999999999999, 0.5])", "sum() at column 1: the list element 999999999999999999 has more than 18 "
                                       "digits written with the list's 1 decimal places"),
    ("sum([1.5, x])", "expected a number in the list at column 11"),
    ("sqrt(1, 2)", "sqrt() at column 1 takes 1 number"),
])
def test_decimal_parse_and_compile_errors(interp, text, message):
    assert_refused(interp, text, message)


def test_the_kinds_of_an_expression():
    kinds = [parse_kind(t)[1:] for t in ["7 / 2", "7 / 2.0", "7 / 2.", "sqrt(16)", "pow(2, 0.5)", "pow(2, 1 / 2)",
                                         "pow(1.5, 2)", "0.5 ? sqrt(4) : 1"]]
    assert kinds == [("int", ""), ("decimal", "it has the decimal number 2.0 at column 5"),
                     ("decimal", "it has the decimal number 2. at column 5"), ("float32", "it calls sqrt() at column 1"),
                     ("float32", "the exponent of pow() at column 1 has decimal places"),
                     ("int", ""),                                          # integer: pow(2, 0) is 1, as before
                     ("decimal", "it has the decimal number 1.5 at column 5"),
                     ("float32", "it calls sqrt() at column 7")]


def test_integer_kernels_are_unchanged_by_decimals():
    """An integer expression compiles to the same kernel as before decimals: no decimal or float code."""
    from qwengpu.chat.expr import compile_exprs
    source = compile_exprs(["17 * 23", "sum([1, 2, 3])"]).source
    assert "qd_" not in source and "qf_" not in source
    assert "    err = out + 1;\n    out[0] = qe_mul(lit[0], lit[1]);\n    err = out + 3;\n" in source


def test_integers_decimals_and_floats_in_one_launch(interp):
    got = evaluate_many(interp, ["7 / 2", "7 / 2.0", "sqrt(2)", "1 / 0", "1 / 0.0", "INT_MAX + 1"])
    assert [(r.kind, r.value, r.error) for r in got] == [
        ("int", 3, None), ("decimal", Decimal("3.5"), None), ("float32", float(np.sqrt(np.float32(2))), None),
        ("int", None, "division by zero at column 3"), ("decimal", None, "division by zero at column 3"),
        ("int", -2**31, None)]
    assert [r.shown() for r in got if r.error is None] == ["3", "3.5", "1.4142135 (float32)", "-2147483648"]


# ---------------------------------------------------------------------------
# Float32 expressions (the interpreter; the model engine says what it lacks)
# ---------------------------------------------------------------------------
import numpy as np                                                 # noqa: E402

F = np.float32


def nearest_f32(text: str) -> np.float32:
    """The float32 nearest to the decimal `text` (ties to even), chosen among float32 neighbours
    by exact comparison: an oracle independent of the compiler's conversion."""
    from fractions import Fraction
    exact = Fraction(text)
    guess = np.float32(float(exact))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.uint32)) & 1))


def test_float32_literals_are_the_nearest_float32():
    from qwengpu.chat.expr import f32_bits
    rng = random.Random(32)
    texts = ["0.1", "0.2", "16777217", "16777219", "3.4028235", "0.000000001", "123456789.123456789"]
    texts += [f"{rng.randint(0, 10**rng.randint(1, 12))}.{rng.randint(0, 10**rng.randint(1, 9)):0{rng.randint(1, 9)}d}"
              for _ in range(300)]
    for text in texts:
        whole, _, frac = text.partition(".")
        frac = frac[:9]
        assert f32_bits(int(whole + frac), len(frac)) == int(nearest_f32(f"{whole}.{frac or 0}").view(np.uint32)), text
    assert f32_bits(-15, 1) == int(F(-1.5).view(np.uint32))
    assert f32_bits(10**18 - 1, 0) == int(F(1e18).view(np.uint32))


def test_float32_expressions_on_the_interpreter(interp):
    cases = [("sqrt(2)", np.sqrt(F(2))), ("sqrt(2) * 3.5 + 1", np.sqrt(F(2)) * F(3.5) + F(1)),
             ("0.1 + 0.2 + sqrt(0)", F(0.1) + F(0.2)), ("pow(2, 0.5)", None), ("sqrt(-1)", F("nan")),
             ("1 / 0 + sqrt(4)", F("inf")), ("max(1.5, sqrt(9))", F(3)), ("log10(1000) == 3", F(1)),
             ("dot([1.5, 2], [2, 0.25]) + log2(8)", F(6.5)), ("-sqrt(4) % 3", F(-2)),
             ("sum([0.1, 0.2, 0.3]) + exp(0)", (F(0.1) + F(0.2)) + F(0.3) + F(1)), ("log(1) + sqrt(16) / 3", F(4) / F(3))]
    got = evaluate_many(interp, [t for t, _ in cases])
    for (text, want), r in zip(cases, got):
        assert r.kind == "float32" and r.error is None, text
        if want is not None:
            assert np.array(r.value, np.float32).tobytes() == np.array(want, np.float32).tobytes() or \
                (np.isnan(want) and np.isnan(r.value)), (text, r.value, want)
    assert got[3].value == pytest.approx(2**0.5, rel=2**-22)                       # powf: libdevice's, within an ulp
    assert [r.shown() for r in got[:2]] == ["1.4142135 (float32)", "5.9497476 (float32)"]


# ---------------------------------------------------------------------------
# Decimals in the model engine (the stand-in merged model)
# ---------------------------------------------------------------------------
def test_decimals_in_the_model():
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    model = Device("model", max_tokens=200_000)
    hand = ["23.50 * 15 / 100", "100 / 3.0", "1.5 / 0", "pow(1.05, 10) * 1000", "sum([12.50, 8.25, 3.10]) / 3",
            "(10000 / 3.0) * (10000 / 3.0)", "7 / 2", "sqrt(2)"]
    got = evaluate_many(model, hand)
    assert [r.shown() if r.error is None else r.error for r in got[:2]] == [
        "3.525", "33.333333 (rounded: the quotient at column 5 is rounded to 6 decimal places)"]
    assert got[2].error == "division by zero at column 5"
    assert format(got[3].value, "f") == decimal_result(to_tree(parse_kind(hand[3])[0]))[0]
    assert [format(got[4].value, "f"), got[5].error.startswith("overflow: the product at column 15"), got[6].value] \
        == ["7.95", True, 3]
    assert got[7].shown() == "1.4142135 (float32)" and got[7].value == float(np.sqrt(np.float32(2)))
    assert got[0].tokens > 0                                # float32 in the model: FFMA, FSQRT micro-coded
    rng = random.Random(32)
    check_decimal(*evaluate_fitting(model, decimal_cases(rng, 12, 2)))
