"""Front ends and prelude: what reaches the PTX, and the diagnostics.

Expected PTX operands are worked out here from the CUDA definitions (e.g. the
shuffle c operand ((32 - width) << 8) | 0x1f), not taken from the prelude.
"""
import re

import pytest

from qwengpu import CompileError
from qwengpu.toolchain import frontend
from qwengpu.toolchain.frontend import compile_cuda, nvrtc_log_to_diagnostics

VEC_ADD = """\
extern "C" __global__ void vec_add(const int *a, const int *b, int *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def body_of(ptx: str, kernel: str) -> str:
    start = ptx.index(f".entry {kernel}")
    return ptx[start:ptx.index("\n}", start)]


@pytest.mark.parametrize("opt", [1, 2, 3])
def test_clang_compiles_at_every_optimisation_level(opt):
    ptx = compile_cuda(VEC_ADD, opt=opt)
    assert ".target sm_75" in ptx and ".address_size 32" in ptx
    body = body_of(ptx, "vec_add")
    assert "%tid.x" in body and "%ctaid.x" in body and "%ntid.x" in body
    assert "add.s32" in body and "st.global" in body
    assert ".local" not in body           # nothing spilled to a stack


def test_prelude_leaves_no_functions_or_variables_in_the_ptx():
    ptx = compile_cuda(VEC_ADD)
    assert ".func" not in ptx and ".global ." not in ptx and ".extern" not in ptx


def test_cpp_kernel_is_mangled_and_extern_c_is_not():
    ptx = compile_cuda("__global__ void k(int *p) { *p = 1; }\n"
                       'extern "C" __global__ void plain(int *p) { *p = 2; }\n')
    assert re.search(r"\.entry _Z1kPi\b", ptx) and re.search(r"\.entry plain\b", ptx)


def test_compile_error_has_user_file_and_line():
    src = "// line 1\n__global__ void k(int *p) {\n    p[0] = undefined_name;\n}\n"
    with pytest.raises(CompileError) as e:
        compile_cuda(src, filename="broken.cu")
    assert re.search(r"^broken\.cu:3:\d+: error: .*undefined_name", str(e.value), re.M), str(e.value)


def test_error_on_first_line_is_line_1():
    with pytest.raises(CompileError, match=r"first\.cu:1:"):
        compile_cuda("this is not C++;\n", filename="first.cu")


def test_missing_clang_says_how_to_install(monkeypatch):
    monkeypatch.setattr(frontend, "clang_path", lambda: None)
    with pytest.raises(CompileError, match="apt-get install -y clang-19"):
        compile_cuda(VEC_ADD + "// uncached\n")


@pytest.mark.parametrize("kwargs, message", [({"opt": 4}, "0..3"), ({"opt": "2"}, "0..3"),
                                             ({"frontend": "gcc"}, "unknown front end 'gcc'")])
def test_bad_options(kwargs, message):
    with pytest.raises(CompileError, match=message):
        compile_cuda(VEC_ADD, **kwargs)


# --- the prelude, builtin by builtin ---------------------------------------
def kernel_using(body: str, params: str = "int *p, unsigned *q") -> str:
    return f'extern "C" __global__ void k({params}) {{\n    int t = threadIdx.x;\n{body}\n}}\n'


def compiled_body(body: str, params: str = "int *p, unsigned *q") -> str:
    return body_of(compile_cuda(kernel_using(body, params)), "k")


def test_index_variables_read_their_special_registers():
    regs = {"threadIdx": "tid", "blockIdx": "ctaid", "blockDim": "ntid", "gridDim": "nctaid"}
    for var, reg in regs.items():
        for axis in "xyz":
            body = compiled_body(f"    p[0] = {var}.{axis};")
            assert f"%{reg}.{axis}" in body, (var, axis)


def test_index_variables_convert_to_dim3_and_uint3():
    compiled_body("    dim3 b = blockDim; uint3 i = threadIdx; p[0] = b.x * i.y;")


def test_warp_size_is_four():
    compiled_body("    static_assert(warpSize == 4, \"4-lane warps\"); p[0] = t / warpSize;")


@pytest.mark.parametrize("call, instruction", [
    ("atomicAdd(p, t)", "atom.global.add.u32"), ("atomicAdd(q, 1u)", "atom.global.add.u32"),
    ("atomicExch(p, t)", "atom.global.exch.b32"), ("atomicExch(q, 1u)", "atom.global.exch.b32"),
    ("atomicMin(p, t)", "atom.global.min.s32"), ("atomicMin(q, 1u)", "atom.global.min.u32"),
    ("atomicMax(p, t)", "atom.global.max.s32"), ("atomicMax(q, 1u)", "atom.global.max.u32"),
    ("atomicAnd(p, t)", "atom.global.and.b32"), ("atomicAnd(q, 1u)", "atom.global.and.b32"),
    ("atomicOr(p, t)", "atom.global.or.b32"), ("atomicOr(q, 1u)", "atom.global.or.b32"),
    ("atomicXor(p, t)", "atom.global.xor.b32"), ("atomicXor(q, 1u)", "atom.global.xor.b32"),
    ("atomicCAS(p, 1, t)", "atom.global.cas.b32"), ("atomicCAS(q, 1u, 2u)", "atom.global.cas.b32"),
    ("atomicInc(q, 9u)", "atom.inc.u32"), ("atomicDec(q, 9u)", "atom.dec.u32"),
])
def test_atomics_on_global_memory(call, instruction):
    assert instruction in compiled_body(f"    p[1] = {call};")


def test_atomic_sub_adds_the_negation():
    body = compiled_body("    p[1] = atomicSub(p, t); q[1] = atomicSub(q, 5u);")
    assert "atom.global.add.u32" in body and "-5" in body and "neg.s32" in body


def test_atomics_on_shared_memory():
    body = compiled_body("    __shared__ int s[4]; __shared__ unsigned u[4];\n"
                         "    s[t] = 0; u[t] = 0; __syncthreads();\n"
                         "    atomicAdd(&s[0], t); atomicMax(&u[1], 3u); atomicCAS(&s[2], 0, t);\n"
                         "    __syncthreads(); p[t] = s[t]; q[t] = u[t];")
    for op in ("atom.shared.add.u32", "atom.shared.max.u32", "atom.shared.cas.b32"):
        assert op in body, op


def shfl_c(width: int, up: bool = False) -> int:
    """CUDA's c operand for a 32-lane GPU (CUDA sm_30_intrinsics)."""
    return ((32 - width) << 8) | (0 if up else 0x1F)


@pytest.mark.parametrize("call, mode, width", [
    ("__shfl_sync(0xf, t, 2)", "idx", 4), ("__shfl_sync(0xf, t, 1, 2)", "idx", 2),
    ("__shfl_up_sync(0xf, t, 1)", "up", 4), ("__shfl_up_sync(0xf, t, 1, 2)", "up", 2),
    ("__shfl_down_sync(0xf, t, 1)", "down", 4), ("__shfl_down_sync(0xf, t, 1, 1)", "down", 1),
    ("__shfl_xor_sync(0xf, t, 1)", "bfly", 4), ("__shfl_xor_sync(0xf, t, 1, 2)", "bfly", 2),
    ("__shfl_sync(0xf, q[0], 3)", "idx", 4), ("__shfl_down_sync(0xf, q[0], 2u)", "down", 4),
])
def test_shuffles_pass_cuda_c_operand(call, mode, width):
    body = compiled_body(f"    p[t] = {call};")
    m = re.search(rf"shfl\.sync\.{mode}\.b32\s+%r\d+, %r\d+, (\S+), (\S+), 15;", body)
    assert m, body
    assert int(m[2]) == shfl_c(width, up=(mode == "up"))


def test_votes():
    body = compiled_body("    p[0] = __ballot_sync(0xf, t & 1); p[1] = __any_sync(0xf, t > 2);\n"
                         "    p[2] = __all_sync(0xf, t < 3); p[3] = __activemask();")
    for op in ("vote.sync.ballot.b32", "vote.sync.any.pred", "vote.sync.all.pred", "activemask.b32"):
        assert op in body, op


def test_synchronisation():
    body = compiled_body("    p[t] = t; __syncwarp(); __syncwarp(0xf); __threadfence(); __threadfence_block();\n"
                         "    __syncthreads(); q[t] = p[t ^ 1];")
    for op in ("bar.warp.sync", "membar.gl", "membar.cta", "bar.sync"):
        assert op in body, op


@pytest.mark.parametrize("expr", [
    "min(p[1], p[2])", "max(p[1], p[2])", "min(q[1], q[2])", "max(q[1], 3u)", "min(p[1], q[2])",
    "umin(q[1], q[2])", "umax(q[1], q[2])", "abs(p[1])", "__popc(q[1])", "__clz(p[1])", "__ffs(p[1])",
    "__brev(q[1])", "__mulhi(p[1], p[2])", "__umulhi(q[1], q[2])", "__mul24(p[1], p[2])",
    "__umul24(q[1], q[2])", "__sad(p[1], p[2], q[3])", "__usad(q[1], q[2], q[3])",
])
def test_integer_intrinsics_compile_without_calls(expr):
    body = compiled_body(f"    p[0] = {expr};")
    assert "call" not in body and "st.global" in body


# --- NVRTC ------------------------------------------------------------------
def test_nvrtc_compiles_with_the_same_prelude():
    ptx = compile_cuda(VEC_ADD + "// nvrtc\n", frontend="nvrtc")
    assert ".address_size 64" in ptx
    body = body_of(ptx, "vec_add")
    assert "%tid.x" in body and "st.global" in body


def test_nvrtc_uses_four_lane_warp_size_and_shuffle_width():
    src = kernel_using("    static_assert(warpSize == 4, \"\"); p[t] = __shfl_down_sync(0xf, t, 1);")
    body = body_of(compile_cuda(src, frontend="nvrtc"), "k")
    assert re.search(r"shfl\.sync\.down\.b32", body)
    assert str(shfl_c(4)) in body


def test_nvrtc_error_has_user_file_and_line():
    src = "__global__ void k(int *p) {\n\n    p[0] = undefined_name;\n}\n"
    with pytest.raises(CompileError) as e:
        compile_cuda(src, frontend="nvrtc", filename="broken.cu")
    assert re.search(r"^broken\.cu:3: error: .*undefined_name", str(e.value), re.M), str(e.value)


def test_nvrtc_log_rewrite():
    log = 'k.cu(12): error: identifier "x" is undefined\n\n1 error detected in the compilation of "k.cu".\n'
    assert nvrtc_log_to_diagnostics(log) == 'k.cu:12: error: identifier "x" is undefined'


def test_real_gpu_build_maps_warps_onto_four_lane_groups():
    """The cuda engine's build: member masks move onto the thread's group of 4 lanes."""
    src = kernel_using("    p[t] = __shfl_sync(0xf, t, 1) + __ballot_sync(0xf, t & 1) + __activemask();\n"
                       "    __syncwarp(0xf);")
    ptx = compile_cuda(src, frontend="nvrtc", defines=("QWENGPU_REAL_GPU",))
    body = body_of(ptx, "k")
    assert "%laneid" in body and "shfl.sync.idx.b32" in body and "vote.sync.ballot.b32" in body
    assert "bar.warp.sync" in body and not re.search(r"bar\.warp\.sync\s+15;", body)
