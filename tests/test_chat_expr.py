"""The normal-mode expression language (qwengpu/chat/expr.py) against a reference evaluator with
C's semantics on 32-bit ints written here, independently of the compiler: random expression
trees are rendered to text with this file's own C precedence table, evaluated here in Python
and on the GPU (interpreter; a fixed sample on the model engine)."""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from qwengpu import Device
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
    assert evaluate_on(interp, f"sum([{', '.join(['1'] * 1022)}])").value == 1022
    with pytest.raises(MachineLimitError, match="holds 1023 numbers .* global memory holds 1024 words, "
                                                 "2 of them for the result, so at most 1022 numbers fit"):
        evaluate_on(interp, f"sum([{', '.join(['1'] * 1023)}])")


@pytest.mark.parametrize("text, limit", [
    (" / ".join(str(100000 + i) for i in range(40)), "ROM blocks; the ROM holds 128"),      # a division loop each
    (" + ".join(f"{i} / {i + 1}" for i in range(1, 40)), "registers; a lane has 15"),       # 39 quotients live
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
