"""Refusals name the construct, the CUDA source line and what to do instead."""
import pytest

from qwengpu import Device
from qwengpu.errors import UnsupportedError

FRONTS = ["clang", "nvrtc"]


def refusal(src: str, fe: str, opt: int = 2) -> str:
    with pytest.raises(UnsupportedError) as e:
        Device(frontend=fe, opt=opt).compile(src, filename="mine.cu").get_function("k")
    return str(e.value)


@pytest.mark.parametrize("fe", FRONTS)
def test_local_array_names_its_source_line_and_no_optimisation_hint(fe):
    src = 'extern "C" __global__ void k(int *o, int n) {\n  int a[8];\n  for (int i = 0; i < 8; i++) a[i] = o[i];\n' \
          '  o[0] = a[n & 7];\n}'
    msg = refusal(src, fe)
    assert msg.startswith("mine.cu:") and "local memory" in msg and "__shared__" in msg
    assert int(msg.split(":")[1].split()[0]) in (3, 4)
    assert "-O1" not in msg


@pytest.mark.parametrize("fe", FRONTS)
def test_recursion_names_the_function_and_line(fe):
    src = '__device__ __noinline__ int f(int n) {\n  return n <= 1 ? n : f(n - 1) + f(n - 2);\n}\n' \
          'extern "C" __global__ void k(int *o) { o[0] = f(o[1]); }'
    assert refusal(src, fe).startswith("mine.cu:2 (PTX line")


def test_clock64_is_named_as_a_missing_clock():
    src = 'extern "C" __global__ void k(long long *o) {\n  o[0] = clock64();\n}'
    msg = refusal(src, "nvrtc")
    assert msg.startswith("mine.cu:2 ") and "%clock64" in msg and "no clock" in msg
