"""Refusals name the construct, the CUDA source line and what to do instead."""
import pytest

from qwengpu import Device
from qwengpu.errors import QwenGpuWarning, UnsupportedError

FRONTS = ["clang", "nvrtc"]


def refusal(src: str, fe: str, opt: int = 2) -> str:
    with pytest.raises(UnsupportedError) as e:
        Device(frontend=fe, opt=opt).compile(src, filename="mine.cu").get_function("k")
    return str(e.value)


@pytest.mark.parametrize("fe", FRONTS)
def test_recursion_names_the_function_and_line(fe):
    src = '__device__ __noinline__ int f(int n) {\n  return n <= 1 ? n : f(n - 1) + f(n - 2);\n}\n' \
          'extern "C" __global__ void k(int *o) { o[0] = f(o[1]); }'
    assert refusal(src, fe).startswith("mine.cu:2 (PTX line")


def test_clock64_is_named_as_a_missing_clock():
    src = 'extern "C" __global__ void k(long long *o) {\n  o[0] = clock64();\n}'
    msg = refusal(src, "nvrtc")
    assert msg.startswith("mine.cu:2 ") and "%clock64" in msg and "no clock" in msg


NO_LINE_PTX = """.version 6.3
.target sm_75
.address_size 32
.visible .entry k(.param .u32 k_param_0)
{
    .reg .b32 %r<4>;
    .loc 1 2 5
    ld.param.u32 %r1, [k_param_0];
    .loc 1 0 9
    sin.approx.f32 %r2, %r1;
    ret;
}
.file 1 "five.cu"
"""


def test_a_ptx_line_without_a_cuda_line_is_called_a_ptx_line():
    from qwengpu.toolchain.lower import lower
    from qwengpu.toolchain.ptx import parse_ptx
    with pytest.raises(UnsupportedError) as e:          # `.loc 1 0`: the PTX gives no source line
        lower(parse_ptx(NO_LINE_PTX, filename="five.cu"), "k")
    assert str(e.value).startswith("five.cu: PTX line 10 (no CUDA source line): ")
    with pytest.raises(UnsupportedError, match=r"^PTX line 10: "):          # no file name known
        lower(parse_ptx(NO_LINE_PTX), "k")


SHUFFLES = '''extern "C" __global__ void k(int *o) {
    int v = o[threadIdx.x];
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
    int a = __shfl_xor_sync(0xffffffff, v, 16);
    int b = __shfl_sync(0xffffffff, v, 5);
    int c = __shfl_down_sync(0xffffffff, v, 1, 32);
    long long w = __shfl_up_sync(0xffffffff, (long long)v, 8);
    o[threadIdx.x] = v + a + b + c + (int)w + __shfl_down_sync(0xffffffff, v, 1);
}'''


@pytest.mark.parametrize("fe", FRONTS)
def test_shuffles_past_a_4_lane_warp_warn_at_their_line(fe):
    with pytest.warns(QwenGpuWarning) as caught:
        fn = Device(frontend=fe).compile(SHUFFLES, filename="mine.cu").get_function("k")
    messages = [str(w.message) for w in caught if issubclass(w.category, QwenGpuWarning)]
    assert messages == fn.program.warnings
    assert [m.split(" with ")[0].split(" from ")[0] for m in messages] == [
        "mine.cu:3: warning: __shfl_down_sync", "mine.cu:4: warning: __shfl_xor_sync",
        "mine.cu:5: warning: __shfl_sync", "mine.cu:6: warning: __shfl_down_sync",
        "mine.cu:7: warning: __shfl_up_sync"], messages
    assert "offsets 16, 8 and 4: a warp here has 4 lanes (warpSize == 4)" in messages[0]
    assert "lane mask 16" in messages[1] and "reads lane 1" in messages[2] and "width 32" in messages[3]
    assert "offset 8" in messages[4]


def test_shuffles_within_the_warp_do_not_warn():
    import warnings
    src = SHUFFLES.replace("off = 16", "off = warpSize / 2").replace("16)", "2)").replace("5)", "3)")
    src = src.replace(", 32)", ")").replace("8)", "1)")
    with warnings.catch_warnings():
        warnings.simplefilter("error", QwenGpuWarning)
        assert Device().compile(src, filename="mine.cu").get_function("k").program.warnings == []
