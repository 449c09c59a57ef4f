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
    assert GLOBAL_WORDS == 1024                     # the numbers below are written for this limit
    assert parse_arg("i32:zeros(1024)").tolist() == [0] * 1024
    assert parse_arg("u32:range(1024)")[-1] == 1023
    assert parse_arg("[" + "7 " * 1024 + "]").size == 1024


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
                          "memory; expected at most 1024 words (qwengpu.isa.GLOBAL_WORDS)"),
    ("i32:zeros(10000000)", "10000000 elements do not fit in the machine's global memory"),
    ("i32:zeros(1025)", "1025 elements do not fit"),
    ("full(0xffffffff, 1)", "4294967295 elements do not fit"),
    ("range(-2147483648, 2147483647)", "4294967295 elements do not fit"),
    ("[" + "0," * 1025 + "0]", "1026 elements do not fit"),
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
    ("1e3", "the value '1e3' is not a number"),
    ("1.0", "the value '1.0' is not a number"),
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
    ("f32:[1]", "unknown type 'f32'; expected i32: or u32: before the value"),
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
