"""The --arg/--grid/--block grammar (qwengpu/args.py): every form, every mistake, and the mistakes
end to end through `qgpu run kernels/dot.cu --engine interp`. Expected values written by hand."""
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from qwengpu.args import ArgSyntaxError, parse_arg, parse_dims
from qwengpu.cli import app
from qwengpu.errors import QwenGpuError
from qwengpu.isa import GLOBAL_WORDS
from qwengpu.suite import DEFAULT_DIR


# --- arrays -----------------------------------------------------------------
@pytest.mark.parametrize("text, want, dtype", [
    ("i32:[1,2,-3]", [1, 2, -3], np.int32),
    ("i32:[1, 2, 3]", [1, 2, 3], np.int32),                 # Python style, spaces after commas
    ("i32:[1 2 3]", [1, 2, 3], np.int32),                   # NumPy style
    ("[ 1  -2\n  3]", [1, -2, 3], np.int32),                # as numpy prints a wrapped array
    ("[\t7\t]", [7], np.int32),
    ("[4,5]", [4, 5], np.int32),                            # no type: int32
    (" i32 : [ 9 ] ", [9], np.int32),
    ("u32:[1, 0xffffffff]", [1, 4294967295], np.uint32),
    ("u32:[0X10 0xAb]", [16, 171], np.uint32),
    ("i32:[-2147483648, 2147483647]", [-2147483648, 2147483647], np.int32),
    ("i32:[0, -0]", [0, 0], np.int32),
    ("u32:zeros(3)", [0, 0, 0], np.uint32),
    ("i32:zeros( 2 )", [0, 0], np.int32),
    ("i32:zeros(0x3)", [0, 0, 0], np.int32),
    ("i32:range(4)", [0, 1, 2, 3], np.int32),
    ("i32:range(2,5)", [2, 3, 4], np.int32),
    ("i32:range(-2, 2)", [-2, -1, 0, 1], np.int32),
    ("i32:range(10, 0, -3)", [10, 7, 4, 1], np.int32),
    ("u32:range(1, 8, 3)", [1, 4, 7], np.uint32),
    ("i32:full(2,-1)", [-1, -1], np.int32),
    ("u32:full(3, 0xffffffff)", [4294967295, 4294967295, 4294967295], np.uint32),
    ("range(1)", [0], np.int32),
])
def test_array_forms(text, want, dtype):
    got = parse_arg(text)
    assert isinstance(got, np.ndarray) and got.dtype == dtype and got.tolist() == want


def test_an_array_as_large_as_global_memory():
    assert GLOBAL_WORDS == 16384                    # the numbers below are written for this limit
    assert parse_arg("i32:zeros(16384)").tolist() == [0] * 16384
    assert parse_arg("u32:range(16384)")[-1] == 16383
    assert parse_arg("[" + "7 " * 16384 + "]").size == 16384


# --- scalars ----------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("5", 5), ("-3", -3), ("0", 0), ("-0", 0), ("0x1f", 31), ("0X1F", 31), ("-0x10", -16), (" 42\n", 42),
    ("u32:7", 7), ("i32:-7", -7), ("u32:4294967295", 4294967295), ("u32:0xffffffff", 4294967295),
    ("i32:-2147483648", -2147483648), ("4294967295", 4294967295), ("-2147483648", -2147483648),
    ("0x0000000000000000000000001", 1),             # leading zeros after 0x are harmless
])
def test_scalar_forms(text, want):
    got = parse_arg(text)
    assert type(got) is int and got == want         # a plain int (JSON-serialisable), never a numpy scalar


# --- mistakes: an ArgSyntaxError quoting the value and saying what was expected ---------------------
@pytest.mark.parametrize("text, message", [
    # whitespace: a separator inside [...], never joined into one number
    ("1 0", "--arg '1 0': a scalar is one number, and this has whitespace inside; expected a number"),
    ("u32:1 0", "a scalar is one number, and this has whitespace inside"),
    ("i32:[1, 2 3]", "element 2 '2 3' has whitespace inside; expected elements separated by commas ([1,2,3]) "
                     "or by whitespace ([1 2 3]), not both"),
    ("[1 - 2]", "element 2 '-' is not a number"),
    ("[1 2,3]", "element 1 '1 2' has whitespace inside"),
    ("i32:zeros(1 0)", "argument 1 of zeros '1 0' has whitespace inside"),
    (" ", "--arg ' ': the value is empty; expected a scalar"),
    ("", "--arg '': the value is empty"),
    ("u32:", "--arg 'u32:': the value is empty"),
    # empty elements
    ("i32:[1,,2]", "--arg 'i32:[1,,2]': element 2 of 3 is empty; expected numbers separated by single commas"),
    ("[1,2,]", "element 3 of 3 is empty"),
    ("[,1]", "element 1 of 2 is empty"),
    ("[ , ]", "element 1 of 2 is empty"),
    # empty arrays: a 0-word array would get the next array's address
    ("i32:[]", "--arg 'i32:[]': the array is empty (a 0-word array has no address of its own: it would alias "
               "the next array); expected at least one element"),
    ("[  ]", "the array is empty"),
    ("zeros(0)", "the count in zeros(...) is 0"),
    ("zeros(-1)", "--arg 'zeros(-1)': the count in zeros(...) is -1 (a 0-word array"),
    ("full(-2,1)", "the count in full(...) is -2"),
    ("range(-3)", "--arg 'range(-3)': range(-3) is empty (a 0-word array"),
    ("range(5,5)", "range(5, 5) is empty"),
    ("range(5,2)", "range(5, 2) is empty"),
    ("range(0, 5, -1)", "range(0, 5, -1) is empty"),
    # sizes beyond the machine's global memory, refused before anything is built
    ("range(0x7fffffff)", "--arg 'range(0x7fffffff)': 2147483647 elements do not fit in the machine's global "
                          "memory; expected at most 16384 words (qwengpu.isa.GLOBAL_WORDS)"),
    ("i32:zeros(10000000)", "10000000 elements do not fit in the machine's global memory"),
    ("i32:zeros(16385)", "16385 elements do not fit"),
    ("full(0xffffffff, 1)", "4294967295 elements do not fit"),
    ("range(-2147483648, 2147483647)", "4294967295 elements do not fit"),
    ("[" + "0," * 16385 + "0]", "16386 elements do not fit"),
    # argument counts of the calls
    ("range(1,2,3,4)", "range takes 1 to 3 arguments, got 4; expected range(stop), range(start, stop) or "
                       "range(start, stop, step)"),
    ("zeros(1,2)", "zeros takes 1 argument, got 2; expected zeros(n)"),
    ("full(3)", "full takes 2 arguments, got 1; expected full(n, value)"),
    ("full(1,2,3)", "full takes 2 arguments, got 3"),
    ("zeros()", "argument 1 of zeros is empty"),
    ("zeros(1,)", "argument 2 of zeros is empty"),
    ("range(1,2,0)", "range's step must not be 0"),
    ("i32:ones(3)", "unknown function 'ones'; expected zeros(n), full(n, value) or range(...)"),
    ("array([1, 2])", "unknown function 'array'"),
    ("zeros(3) x", "a call is a name and its arguments in parentheses, and nothing may follow it"),
    ("range(1,2", "a call is a name and its arguments in parentheses"),
    ("zeros(3)(4)", "argument 1 of zeros '3)(4' is not a number"),
    # numbers: decimal or hex, ASCII digits, nothing else Python's int() would take
    ("1_000", "--arg '1_000': the value '1_000' is not a number; expected a decimal or hex integer such as 5, "
              "-3 or 0x1f (ASCII digits; no '+', '_' or leading zeros)"),
    ("+5", "the value '+5' is not a number"),
    ("0b101", "the value '0b101' is not a number"),
    ("0o17", "the value '0o17' is not a number"),
    ("010", "the value '010' is not a number"),    # C would read 010 as octal 8
    ("\u0661\u0662", "the value '\u0661\u0662' is not a number"),        # Arabic-Indic 12: int() takes it
    ("[\uff11]", "element 1 '\uff11' is not a number"),                     # fullwidth 1
    ("1\u00a00", "the value '1\\xa00' is not a number"),                   # a no-break space is not a separator
    ("0x", "the value '0x' is not a number"),
    ("0xg", "the value '0xg' is not a number"),
    ("--1", "the value '--1' is not a number"),
    ("abc", "the value 'abc' is not a number"),
    ("True", "the value 'True' is not a number"),
    ("i32:[1,2,x]", "element 3 'x' is not a number"),
    ("[0 0 0 ... 0 0]", "element 4 '...' is not a number"),    # numpy's summary of a long array
    ("zeros(n)", "argument 1 of zeros 'n' is not a number"),
    ("[[1,2]]", "element 1 '[1' is not a number"),
    # trailing garbage and unclosed brackets
    ("i32:[1,2", "an array must end with ']' and nothing may follow it"),
    ("i32:[1,2]x", "an array must end with ']'"),
    ("[1]]", "element 1 '1]' is not a number"),
    ("5x", "the value '5x' is not a number"),
    # types and ranges
    ("f64:[1]", "unknown type 'f64'; expected i32:, u32: or f32: before the value"),
    ("I32:[1]", "unknown type 'I32'"),
    ("u32:-1", "--arg 'u32:-1': -1 does not fit in uint32; expected values in 0 .. 4294967295"),
    ("i32:2147483648", "2147483648 does not fit in int32; expected values in -2147483648 .. 2147483647"),
    ("i32:[2147483648]", "2147483648 does not fit in int32"),
    ("[0xffffffff]", "4294967295 does not fit in int32"),            # untyped arrays are int32
    ("u32:[1 -1]", "-1 does not fit in uint32"),
    ("u32:range(-1, 2)", "-1 does not fit in uint32"),
    ("u32:full(2, -5)", "-5 does not fit in uint32"),
    ("4294967296", "4294967296 does not fit in 32 bits; expected a scalar in -2**31 .. 2**32-1"),
    ("-2147483649", "-2147483649 does not fit in 32 bits"),
    ("0x100000000", "--arg '0x100000000': 4294967296 does not fit in 32 bits"),
    ("0xffffffffffffffffffff", "the value '0xffffffffffffffffffff' does not fit in 32 bits"),
    ("0x" + "f" * 5000, "(5002 characters) does not fit in 32 bits"),
    ("9" * 5000, "(5000 characters) does not fit in 32 bits"),    # int() refuses past 4,300 digits
    ("[1 " + "9" * 5000 + "]", "element 2 '99999999999999999999999999999999999999999999999999'... (5000 "
                               "characters) does not fit in 32 bits"),
])
def test_mistakes(text, message):
    with pytest.raises(ArgSyntaxError) as err:
        parse_arg(text)
    assert message in str(err.value)
    assert isinstance(err.value, QwenGpuError) and "\n" not in str(err.value)     # one line for the CLI


def test_long_values_are_quoted_cut_short():
    with pytest.raises(ArgSyntaxError) as err:
        parse_arg("i32:[" + "1," * 2000 + "]")
    assert str(err.value).startswith("--arg 'i32:[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1'... "
                                     "(4006 characters): element 2001 of 2001 is empty")


@pytest.mark.parametrize("text", ["range(0x7fffffff)", "i32:zeros(0x7fffffff)", "full(2147483647, 3)",
                                  "u32:range(0, 4294967295, 1)"])
def test_huge_sizes_are_refused_before_anything_is_built(text):
    start = time.perf_counter()
    with pytest.raises(ArgSyntaxError, match="do not fit in the machine's global memory"):
        parse_arg(text)
    assert time.perf_counter() - start < 0.5          # was 20 s and 12 GB for range(0x7fffffff)


# --- grid and block -----------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("2", (2,)), ("4,2", (4, 2)), ("2x2x2", (2, 2, 2)), ("4, 2", (4, 2)), (" 3 ", (3,)), ("16,1,1", (16, 1, 1)),
    ("1 x 4", (1, 4)),
])
def test_dims_forms(text, want):
    assert parse_dims("grid", text) == want


@pytest.mark.parametrize("text, message", [
    ("4,,2", "--grid '4,,2': size 2 is empty; expected 1 to 3 positive integers separated by ',' or 'x', "
             "e.g. 4, 4,2 or 2x2x1"),
    ("2x", "--grid '2x': size 2 is empty"),
    (",4", "size 1 is empty"),
    ("", "--grid '': size 1 is empty"),
    (" ", "size 1 is empty"),
    ("0", "--grid '0': size 1 is 0"),
    ("4,0", "size 2 is 0"),
    ("-1", "size 1 '-1' is not a positive decimal integer"),
    ("+5", "size 1 '+5' is not a positive decimal integer"),
    ("04", "size 1 '04' is not a positive decimal integer"),
    ("1_0", "size 1 '1_0' is not a positive decimal integer"),
    ("\u0661\u0662", "size 1 '\u0661\u0662' is not a positive decimal integer"),
    ("4 2", "size 1 '4 2' is not a positive decimal integer"),
    ("4a", "size 1 '4a' is not a positive decimal integer"),
    ("2X2", "size 1 '2X2' is not a positive decimal integer"),
    ("4,a", "size 2 'a' is not a positive decimal integer"),
    ("1,1,1,1", "it has 4 sizes"),
    ("2x2x2x2", "it has 4 sizes"),
    ("4,2x1", "it mixes ',' and 'x'"),
    ("99999999999", "size 1 '99999999999' is too large"),
    ("9" * 5000, "is too large"),
])
def test_dims_mistakes(text, message):
    with pytest.raises(ArgSyntaxError) as err:
        parse_dims("grid", text)
    assert message in str(err.value)


def test_dims_name_the_option():
    with pytest.raises(ArgSyntaxError, match=r"^--block '2x': size 2 is empty"):
        parse_dims("block", "2x")


# --- end to end: qgpu run kernels/dot.cu --engine interp --------------------------------------------------
runner = CliRunner()
DOT = DEFAULT_DIR / "dot.cu"


def run_dot(*args):
    return runner.invoke(app, ["run", str(DOT), "--engine", "interp", "--grid", "1", "--block", "4", *args])


@pytest.mark.parametrize("a, b", [("i32:[1 2 3]", "i32:[4 5 6]"), ("[1, 2, 3]", "[ 4  5  6]"),
                                  ("i32:range(1,4)", "i32:range(4, 7)")])
def test_dot_with_numpy_style_arrays_and_range(a, b):
    result = run_dot("--arg", a, "--arg", b, "--arg", "i32:zeros(1)", "--arg", "3")
    assert result.exit_code == 0, result.output
    assert "a = [1, 2, 3]" in result.output and "b = [4, 5, 6]" in result.output
    assert "out = [32]" in result.output                               # 1*4 + 2*5 + 3*6


@pytest.mark.parametrize("args, message", [
    (("i32:[1 2 3]", "i32:[4,5,6]", "i32:zeros(-1)", "3"), "--arg 'i32:zeros(-1)': the count in zeros(...) is -1"),
    (("i32:[1,2,3]", "i32:[4,5,6]", "i32:[]", "3"), "--arg 'i32:[]': the array is empty"),
    (("i32:[1,,2,3]", "i32:[4,5,6]", "i32:zeros(1)", "3"), "--arg 'i32:[1,,2,3]': element 2 of 4 is empty"),
    (("i32:[1,2,3]", "i32:[4,5,6]", "i32:zeros(1)", "1 0"), "--arg '1 0': a scalar is one number"),
    (("i32:range(0x7fffffff)", "i32:[4,5,6]", "i32:zeros(1)", "3"), "2147483647 elements do not fit in the "
                                                                     "machine's global memory"),
    (("i32:range(2,5,1,1)", "i32:[4,5,6]", "i32:zeros(1)", "3"), "range takes 1 to 3 arguments, got 4"),
    (("i32:[1,2,3]", "i32:[4,5,6]", "i32:zeros(1)", "\u0663"), "the value '\u0663' is not a number"),
    (("i32:[1,2,3]", "i32:[4,5,6]", "u32:zeros(1)", "u32:-1"), "--arg 'u32:-1': -1 does not fit in uint32"),
])
def test_dot_refuses_bad_args(args, message):
    result = run_dot(*[x for a in args for x in ("--arg", a)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("error:") and message in result.output, result.output
    assert "out = " not in result.output


@pytest.mark.parametrize("option, value, message", [("--grid", "4,,2", "--grid '4,,2': size 2 is empty"),
                                                    ("--grid", "0", "--grid '0': size 1 is 0"),
                                                    ("--block", "2x", "--block '2x': size 2 is empty")])
def test_dot_refuses_bad_dims(option, value, message):
    result = run_dot("--arg", "i32:[1,2,3]", "--arg", "i32:[4,5,6]", "--arg", "i32:zeros(1)", "--arg", "3",
                     option, value)
    assert result.exit_code == 1 and message in result.output, result.output


def test_dot_json_has_plain_int_scalars():
    result = run_dot("--arg", "i32:[1 2 3]", "--arg", "i32:[4 5 6]", "--arg", "i32:zeros(1)", "--arg", "u32:3",
                     "--json")
    assert result.exit_code == 0, result.output
    assert '"n": 3' in result.output and '"out": [\n      32\n    ]' in result.output


# --- floats (issue 32): expected bits written by hand, or from struct/Decimal/gmpy2 as oracles ---------------
def f32_bits(value) -> list[int]:
    """The bits of a float32 scalar or array, as ints (a NaN's payload too)."""
    return np.atleast_1d(np.asarray(value, np.float32)).view(np.uint32).tolist()


@pytest.mark.parametrize("text, bits", [
    ("1.5", 0x3FC00000), ("1.5f", 0x3FC00000), ("1.5F", 0x3FC00000), ("-1.5", 0xBFC00000),
    ("1.0", 0x3F800000), ("1e3", 0x447A0000), ("1E+2", 0x42C80000), ("2.f", 0x40000000), ("5.", 0x40A00000),
    (".5", 0x3F000000), ("-.5", 0xBF000000), ("0.1", 0x3DCCCCCD), ("-2.5e-3", 0xBB23D70A),
    ("0.0", 0x00000000), ("-0.0", 0x80000000), ("0e99999999999", 0x00000000), ("-0e-5", 0x80000000),
    ("inf", 0x7F800000), ("-inf", 0xFF800000), ("INF", 0x7F800000), ("Infinity", 0x7F800000),
    ("nan", 0x7FC00000), ("NaN", 0x7FC00000), ("-nan", 0xFFC00000),
    ("0f3FC00000", 0x3FC00000), ("0f3fc00000", 0x3FC00000), ("0F80000000", 0x80000000),
    ("0f7FFFFFFF", 0x7FFFFFFF), ("0f7F800001", 0x7F800001), ("0fFFFFFFFF", 0xFFFFFFFF),   # NaN payloads kept
    ("0f00000001", 0x00000001),
    ("f32:2", 0x40000000), ("f32:-3", 0xC0400000), ("f32:0", 0x00000000), ("f32:-0", 0x80000000),
    ("f32:1.5", 0x3FC00000), (" f32 : 0f3FC00000 ", 0x3FC00000),
    ("3.4028235e38", 0x7F7FFFFF),               # FLT_MAX
    ("3.40282356e38", 0x7F7FFFFF),              # just below the point where rounding goes to inf
    ("1.17549435e-38", 0x00800000),             # FLT_MIN, the smallest normal
    ("1.1754942e-38", 0x007FFFFF),              # the largest subnormal
    ("1e-45", 0x00000001), ("1.4e-45", 0x00000001), ("7.1e-46", 0x00000001),   # the smallest subnormal
    ("f32:16777216", 0x4B800000), ("f32:16777217", 0x4B800000),   # a tie: to the even significand
    ("f32:16777219", 0x4B800002), ("f32:16777218", 0x4B800001),
])
def test_float_scalars(text, bits):
    got = parse_arg(text)
    assert type(got) is np.float32 and f32_bits(got) == [bits]


@pytest.mark.parametrize("text, bits", [
    ("f32:[1.5, 2, -0.25]", [0x3FC00000, 0x40000000, 0xBE800000]),
    ("f32:[1.5 2 -0.25]", [0x3FC00000, 0x40000000, 0xBE800000]),
    ("[1 2.5]", [0x3F800000, 0x40200000]),                      # untyped with a float element: float32
    ("[0f3FC00000, 7]", [0x3FC00000, 0x40E00000]),
    ("[inf -inf nan -0.0 0]", [0x7F800000, 0xFF800000, 0x7FC00000, 0x80000000, 0]),
    ("f32:[1, 2]", [0x3F800000, 0x40000000]),
    ("f32:zeros(3)", [0, 0, 0]),
    ("f32:full(3, 0.5)", [0x3F000000] * 3), ("full(2, -0.0)", [0x80000000] * 2), ("full(2, 1.5f)", [0x3FC00000] * 2),
    ("f32:full(2, 3)", [0x40400000] * 2), ("f32:full(1, nan)", [0x7FC00000]),
    ("f32:range(3)", [0, 0x3F800000, 0x40000000]), ("f32:range(-2, 1)", [0xC0000000, 0xBF800000, 0]),
    ("f32:range(16777214, 16777217)", [0x4B7FFFFE, 0x4B7FFFFF, 0x4B800000]),
])
def test_float_arrays(text, bits):
    got = parse_arg(text)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and f32_bits(got) == bits


@pytest.mark.parametrize("text, dtype", [("[1, 2]", np.int32), ("zeros(2)", np.int32), ("full(2, 3)", np.int32),
                                         ("range(2)", np.int32), ("[0x10 1]", np.int32)])
def test_arrays_without_a_float_stay_int32(text, dtype):
    assert parse_arg(text).dtype == dtype


def test_float_array_as_large_as_global_memory():
    got = parse_arg("[" + "0.5 " * GLOBAL_WORDS + "]")
    assert got.dtype == np.float32 and f32_bits(got) == [0x3F000000] * GLOBAL_WORDS


# the decimal -> float32 conversion is exact: no float64 in between
DOUBLE_ROUNDING = "1.00000005960464477539062500000000001"     # 1 + 2**-24 + 1e-35: just above a tie


def test_decimal_rounds_once_not_through_float64():
    # the decimal lies just above the tie 1 + 2**-24 between 1.0 (0x3F800000) and its successor
    # 0x3F800001, so its nearest float32 is 0x3F800001. Through a float64 it rounds twice: first to the
    # tie itself (a float64 has no bits left for 1e-35), then to the even side, 1.0.
    assert float(DOUBLE_ROUNDING) == 1 + 2**-24
    assert f32_bits(np.float32(float(DOUBLE_ROUNDING))) == [0x3F800000]      # the double rounding
    assert f32_bits(parse_arg(DOUBLE_ROUNDING)) == [0x3F800001]
    assert f32_bits(parse_arg("-" + DOUBLE_ROUNDING)) == [0xBF800001]
    assert f32_bits(parse_arg("f32:[" + DOUBLE_ROUNDING + "]")) == [0x3F800001]


@pytest.mark.parametrize("text, bits", [
    ("1.000000059604644775390625", 0x3F800000),         # 1 + 2**-24 exactly: a tie, to even (1.0)
    ("1.000000059604644775390624999", 0x3F800000),      # just below the tie
    ("1.000000059604644775390625000000000000000000000000000000000000000001", 0x3F800001),   # just above
    ("1.000000178813934326171875", 0x3F800002),         # 1 + 3 * 2**-24: a tie between ...01 and ...02, to even
    # 2**-150 = 7.00649232162408535461864791644958065...e-46, half the smallest subnormal, is a tie between 0
    # and 0f00000001: to even would be 0, which is refused (test below); a hair above it rounds up
    ("7.006492321624085354618647916449581e-46", 0x00000001),
    ("1." + "0" * 5000 + "1", 0x3F800000),              # 5,000 digits: the tail only decides ties
    ("1.000000059604644775390625" + "0" * 300 + "1", 0x3F800001),   # a tie broken by digit 326
    ("1.000000059604644775390625" + "0" * 300, 0x3F800000),         # a tie, trailing zeros change nothing
])
def test_ties_and_long_decimals(text, bits):
    assert f32_bits(parse_arg(text)) == [bits]


@pytest.mark.parametrize("text", [str(__import__("decimal").Decimal(2.0**-150)),    # exact: 2**-150 is a double
                                  "7.006492321624085354618647916449580e-46"])             # a hair below it
def test_half_the_smallest_subnormal_is_a_tie_that_rounds_to_zero_and_is_refused(text):
    with pytest.raises(ArgSyntaxError, match="would round to 0"):
        parse_arg(text)


def _decimal_of(x: float) -> str:
    """The exact decimal of a float64 (every float64 has one)."""
    from decimal import Decimal
    return format(Decimal(x), "f") if abs(x) >= 1e-5 else format(Decimal(x), "e")


def _struct_f32(x: float) -> int:
    """C's float64 -> float32 conversion (nearest, ties to even): a single rounding, exact for a decimal
    that is itself a float64."""
    import struct
    return struct.unpack("<I", struct.pack("<f", x))[0]


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=400, deadline=None)
@given(st.floats(min_value=2.0**-149, max_value=3.4e38, allow_nan=False, allow_infinity=False), st.booleans())
def test_exact_float64_decimals_round_like_c(x, negative):
    x = -x if negative else x
    assert f32_bits(parse_arg("f32:" + _decimal_of(x))) == [_struct_f32(x)]     # f32: reads 4294967296 too


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 0x7F7FFFFE), st.integers(-1, 1), st.booleans())
def test_midpoints_between_neighbours(bits, side, negative):
    """The exact midpoint between two neighbouring float32s goes to the even one; a hair above or below
    it (a 1 in the 300th digit) goes to the nearer one. Midpoints are float64s, so Decimal writes them
    exactly."""
    lo, hi = np.array([bits, bits + 1], np.uint32).view(np.float32).astype(np.float64)
    mid = (lo + hi) / 2                                  # exact in float64 (25 significant bits)
    text = _decimal_of(mid)
    if side:
        mantissa, _, exponent = text.partition("e")
        mantissa += ("" if "." in mantissa else ".") + "0" * 300
        digits = list(mantissa)
        if side > 0:
            digits[-1] = "1"                             # just above the midpoint
            text = "".join(digits) + ("e" + exponent if exponent else "")
        else:                                            # just below: the float64 below it, exactly
            text = _decimal_of(np.nextafter(mid, 0.0))
    want = bits + 1 if side > 0 else bits if side < 0 else bits + (bits & 1)
    sign = 0x80000000 if negative else 0
    assert f32_bits(parse_arg("f32:" + ("-" if negative else "") + text)) == [sign | want]


def test_random_decimals_against_mpfr():
    gmpy2 = pytest.importorskip("gmpy2")
    import random
    rng = random.Random(32)
    ctx = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True, round=gmpy2.RoundToNearest)
    checked = 0
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40))).lstrip("0") or "1"
        text = f"{digits[0]}.{digits[1:] or '0'}e{rng.randint(-47, 39)}"
        with ctx:                                        # MPFR: correctly rounded to float32's format
            ref = gmpy2.mpfr(text)
        if gmpy2.is_infinite(ref) or gmpy2.is_zero(ref):
            with pytest.raises(ArgSyntaxError, match="infinity|round to 0"):
                parse_arg(text)
            continue
        assert f32_bits(parse_arg(text)) == [_struct_f32(float(ref))], text
        checked += 1
    assert checked > 2000


@pytest.mark.parametrize("text, message", [
    ("1f", "--arg '1f': the value '1f' is not a number: a float needs a '.' or an exponent, as in C; "
           "expected 1.0f or 1.f"),
    ("-3F", "expected -3.0f or -3.f"),
    ("+1.5", "the value '+1.5' is not a number; expected a decimal or hex integer such as 5, -3 or 0x1f "
             "(ASCII digits; no '+', '_' or leading zeros), or a float such as 1.5, -2.5e-3, 1.5f, inf, nan or "
             "0f3FC00000 (exact bits)"),
    ("1.5e", "the value '1.5e' is not a number"), ("1.5.2", "the value '1.5.2' is not a number"),
    ("1,5", "the value '1,5' is not a number"), ("1.5ff", "is not a number"), ("1.5d", "is not a number"),
    ("01.5", "the value '01.5' is not a number"), ("1_0.5", "is not a number"), ("0x1.8p0", "is not a number"),
    ("\u0661.5", "is not a number"), ("+inf", "is not a number"), ("infinit", "is not a number"),
    ("nan(1)", "unknown function 'nan'"), ("1.5 f", "a scalar is one number, and this has whitespace inside"),
    ("[1.5 f]", "element 2 'f' is not a number"),
    # exact bits: 0f and exactly 8 hex digits, the sign inside
    ("0f3fc0000", "--arg '0f3fc0000': the value '0f3fc0000' has 7 hex digits after 0f; expected 0f and exactly "
                  "8 hex digits, a float's bits as PTX writes them (0f3FC00000 is 1.5)"),
    ("0f3FC000000", "has 9 hex digits after 0f"), ("0f", "a float needs a '.' or an exponent"),
    ("-0f3FC00000", "the sign of a float's bits is in the bits; expected 0fBFC00000"),
    ("0f3FC0000G", "is not a number"),
    # a hex integer under f32 is ambiguous (value or bits?)
    ("f32:0x10", "--arg 'f32:0x10': the value '0x10' is a hex integer, which is ambiguous as a float32 (its value "
                 "or its bits?); expected the value in decimal, or the bits as 0f and 8 hex digits"),
    ("[0x10, 1.5]", "element 1 '0x10' is a hex integer, which is ambiguous as a float32"),
    ("f32:full(2, 0x3fc00000)", "argument 2 of full '0x3fc00000' is a hex integer"),
    # out of float32's range: refused, never silently inf or 0
    ("3.4028236e38", "--arg '3.4028236e38': the value '3.4028236e38' is beyond float32's range and would round "
                     "to infinity; expected a magnitude up to 3.4028235e38 (FLT_MAX), or inf"),
    ("-1e39", "is beyond float32's range"), ("f32:[1, 1e40]", "element 2 '1e40' is beyond float32's range"),
    ("f32:" + "9" * 40, "is beyond float32's range"), ("1e999999999999", "is beyond float32's range"),
    ("1e-46", "--arg '1e-46': the value '1e-46' would round to 0 (float32's smallest subnormal is 1.4e-45, "
              "0f00000001); expected a magnitude above 7.0064923e-46 (half the smallest subnormal), or 0"),
    ("-7e-46", "would round to 0"), ("1e-999999999999", "would round to 0"),
    ("0." + "0" * 5000 + "1", "(5003 characters) would round to 0"),
    ("9" * 5000 + ".5", "(5002 characters) is beyond float32's range"),
    # floats where an integer is wanted
    ("i32:1.5", "--arg 'i32:1.5': the value '1.5' is a float; expected an integer in int32 (a float32 scalar is "
                "written without i32:/u32:, or with f32:)"),
    ("u32:inf", "the value 'inf' is a float"),
    ("i32:[1, 2.5]", "--arg 'i32:[1, 2.5]': element 2 '2.5' is a float; expected integers in int32 (a float32 "
                     "array is written f32:[...], or untyped with a float element)"),
    ("u32:[0f3FC00000]", "element 1 '0f3FC00000' is a float; expected integers in uint32"),
    ("i32:full(2, 0.5)", "argument 2 of full '0.5' is a float; expected integers in int32"),
    ("zeros(2.0)", "argument 1 of zeros '2.0' is a float; expected an integer count in zeros(n)"),
    ("f32:full(1.5, 2)", "argument 1 of full '1.5' is a float; expected an integer count in full(n, value)"),
    ("range(0.5, 2)", "argument 1 of range '0.5' is a float; expected integers in range(...) (a range of floats "
                      "is not supported: write the values out, f32:[0.5, 1, 1.5])"),
    ("f32:range(0, 1, 0.25)", "argument 3 of range '0.25' is a float"),
    ("f32:range(16777215, 16777218)", "f32:range(...) reaches 16777217, beyond 2**24, where float32 does not "
                                      "hold every integer exactly"),
    ("f32:range(-16777217, -16777215)", "reaches -16777217"),
    ("f32:[]", "the array is empty"), ("f32:zeros(0)", "the count in zeros(...) is 0"),
    ("f32:zeros(16385)", "16385 elements do not fit"),
    ("F32:1.5", "unknown type 'F32'; expected i32:, u32: or f32: before the value"),
    ("f32:", "the value is empty"),
])
def test_float_mistakes(text, message):
    with pytest.raises(ArgSyntaxError) as err:
        parse_arg(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_integer_forms_are_unchanged_by_floats():
    """Integers still come back as plain ints and int32/uint32 arrays, whatever floats were added."""
    assert type(parse_arg("5")) is int and type(parse_arg("f32:5")) is np.float32
    assert parse_arg("-0").__repr__() == "0" and f32_bits(parse_arg("f32:-0")) == [0x80000000]   # as float("-0")
    assert parse_arg("[1 2]").dtype == np.int32 and parse_arg("u32:[1 2]").dtype == np.uint32
