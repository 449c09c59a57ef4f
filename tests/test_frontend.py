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


# --- floating point: compiled as written ------------------------------------------------
# The float ISA is not in the machine yet: these check the PTX each front end emits.
BOTH = pytest.mark.parametrize("fe", frontend.FRONTENDS)
# The only .ftz instructions allowed: inside libdevice's / NVRTC's own sequences (expf, exp10f,
# tanhf, cbrtf, erff... use ex2.approx.ftz; powf, tanhf, atanf, fmodf... rcp.approx.ftz;
# acosf, asinf, erfinvf, __frsqrt_rn... rsqrt.approx.ftz; erfinvf, normcdfinvf lg2.approx.ftz;
# sinhf, coshf div.approx.ftz). Never an arithmetic .ftz: the source's own float code keeps
# subnormals.
LIBRARY_FTZ = frozenset({"ex2.approx.ftz.f32", "rcp.approx.ftz.f32", "rsqrt.approx.ftz.f32",
                         "lg2.approx.ftz.f32", "div.approx.ftz.f32"})
_OPCODE = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.]*)", re.M)


def opcodes(ptx: str) -> list[str]:
    """Every instruction's opcode (lines that start with a lower-case word), in order."""
    return [m[1] for m in _OPCODE.finditer(ptx)]


def assert_as_written(ptx: str, ftz: frozenset = frozenset()) -> list[str]:
    """The determinism rule: every float add/sub/mul carries a rounding modifier (an
    unrounded one may be fused by ptxas), nothing is left to link (.extern), and .ftz only
    in `ftz`. Returns the opcodes."""
    ops = opcodes(ptx)
    unrounded = sorted({o for o in ops if re.fullmatch(r"(add|sub|mul)(\.ftz)?\.f(32|64)", o)})
    assert not unrounded, f"float arithmetic without a rounding modifier: {unrounded}"
    assert ".extern" not in ptx, re.findall(r".*\.extern.*", ptx)
    flushed = sorted({o for o in ops if ".ftz" in o} - ftz)
    assert not flushed, f".ftz outside the library's sequences: {flushed}"
    return ops


def float_kernel(body: str) -> str:
    return ('extern "C" __global__ void k(float *o, int *io, unsigned *uo, long long *lo) {\n'
            "    int t = threadIdx.x; float x = o[t], y = o[t + 4], z = o[t + 8]; int n = io[t];\n"
            f"{body}\n}}\n")


def float_ops(body: str, fe: str, ftz: frozenset = frozenset(), opt: int = 2) -> list[str]:
    return assert_as_written(body_of(compile_cuda(float_kernel(body), frontend=fe, opt=opt), "k"), ftz)


@BOTH
@pytest.mark.parametrize("opt", [1, 2, 3])
def test_a_times_x_plus_y_is_mul_then_add_and_fmaf_is_one_fma(fe, opt):
    saxpy = float_ops("    o[12 + t] = x * y + z;", fe, opt=opt)
    assert "mul.rn.f32" in saxpy and "add.rn.f32" in saxpy and not any(o.startswith("fma") for o in saxpy)
    fused = float_ops("    o[12 + t] = fmaf(x, y, z) + __fmaf_rn(y, z, x);", fe, opt=opt)
    assert fused.count("fma.rn.f32") == 2 and "mul.rn.f32" not in fused


@BOTH
def test_every_add_sub_mul_carries_its_rounding_and_nothing_is_fused(fe):
    ops = float_ops("    o[12 + t] = x * y - z * x; o[16 + t] = (x + y) * z - x; o[20 + t] = -(x * y) + z;\n"
                    "    o[24 + t] = __fadd_rn(x, y) * __fmul_rn(y, z);", fe)
    assert not any(o.startswith("fma") for o in ops)
    assert {"add.rn.f32", "sub.rn.f32", "mul.rn.f32"} <= set(ops)


@BOTH
def test_division_and_sqrt_are_correctly_rounded_and_nothing_flushes(fe):
    ops = float_ops("    o[12 + t] = x / y; o[16 + t] = 1.0f / y; o[20 + t] = sqrtf(x); o[24 + t] = hypotf(x, y);\n"
                    "    o[28 + t] = norm3df(x, y, z); o[32 + t] = __fdiv_rn(x, z) + __frcp_rn(z) + __fsqrt_rn(z);", fe)
    assert {"div.rn.f32", "rcp.rn.f32", "sqrt.rn.f32"} <= set(ops)
    assert not [o for o in ops if "approx" in o or "full" in o]


def test_clang_libdevice_answers_prec_sqrt_as_nvrtc_does():
    """clang-19 answers libdevice's __CUDA_PREC_SQRT with 0 (sqrt.approx); the linked copy says 1."""
    path, why = frontend.clang_libdevice()
    assert path is not None and path.suffix == ".bc", why
    assert frontend.libdevice_path().name.startswith("libdevice")
    for call in ("sqrtf(x)", "hypotf(x, y)", "norm3df(x, y, z)", "norm4df(x, y, z, x)", "jnf(n, x)"):
        ops = float_ops(f"    o[12 + t] = {call};", "clang", LIBRARY_FTZ)
        assert "sqrt.rn.f32" in ops and "sqrt.approx.f32" not in ops, call


def test_missing_libdevice_names_the_package(monkeypatch):
    monkeypatch.setattr(frontend, "clang_libdevice", lambda: (None, "libdevice is not installed"))
    with pytest.raises(CompileError, match=r"__nv_expf.*libdevice is not installed.*pip install nvidia-nvvm"):
        compile_cuda(float_kernel("    o[12 + t] = expf(x);") + "// no libdevice\n")
    compile_cuda(VEC_ADD + "// integer code needs no libdevice\n")
    assert "add.rn.f32" in compile_cuda(float_kernel("    o[12 + t] = x + y * z;") + "// nor + - * /\n")


@BOTH
def test_float_flags_leave_integer_ptx_unchanged(fe, monkeypatch, kernels_dir):
    """The float flags and libdevice change nothing in integer kernels (compiled with and without)."""
    names = ["vec_add", "warp_reduce_shfl", "histogram_shared", "int64_ops", "int_intrinsics", "radix_sort_ballot"]
    srcs = [(kernels_dir / f"{n}.cu").read_text() for n in names]

    def compile_all():
        full = [frontend.with_prelude(s, "k.cu") for s in srcs]
        return [frontend._clang(f, 2) if fe == "clang" else frontend._nvrtc(f, "k.cu") for f in full]
    ours = compile_all()
    monkeypatch.setattr(frontend, "CLANG_FP_FLAGS", ())
    monkeypatch.setattr(frontend, "clang_libdevice", lambda: (None, "off"))
    monkeypatch.setattr(frontend, "NVRTC_OPTIONS", tuple(o for o in frontend.NVRTC_OPTIONS
                                                           if o not in frontend.NVRTC_FP_OPTIONS))
    assert compile_all() == ours


# Each function's PTX: the instructions it must contain (both front ends, or (clang, NVRTC)).
MATH = [
    ("fabsf(x)", ["abs.f32"]), ("fminf(x, y)", ["min.f32"]), ("fmaxf(x, y)", ["max.f32"]),
    ("min(x, y) + max(y, z) + abs(x)", ["min.f32", "max.f32", "abs.f32"]),
    ("floorf(x)", ["cvt.rmi.f32.f32"]), ("ceilf(x)", ["cvt.rpi.f32.f32"]), ("truncf(x)", ["cvt.rzi.f32.f32"]),
    ("rintf(x)", ["cvt.rni.f32.f32"]), ("nearbyintf(x)", ["cvt.rni.f32.f32"]),
    ("roundf(x)", ["add.rz.f32", "cvt.rzi.f32.f32"]),
    ("copysignf(x, y)", ["copysign.f32"]),           # a bit move on both (the prelude's, on clang)
    ("fdimf(x, y)", ["sub.rn.f32"]), ("sqrtf(x) + sqrt(y)", ["sqrt.rn.f32"]),
    ("rsqrtf(x)", ["rsqrt.approx.f32"]), ("__frsqrt_rn(x)", ["rsqrt.approx.ftz.f32", "fma.rn.f32"]),
    ("expf(x)", ["ex2.approx.ftz.f32", "fma.rm.f32", "cvt.sat.f32.f32"]), ("exp2f(x)", ["ex2.approx.f32"]),
    ("exp10f(x)", ["ex2.approx.ftz.f32"]), ("logf(x)", ["fma.rn.f32", "cvt.rn.f32.s32"]),
    ("log2f(x)", ["fma.rn.f32"]), ("log10f(x)", ["fma.rn.f32"]), ("log1pf(x)", ["fma.rn.f32"]),
    ("sinf(x)", ["cvt.rni.s32.f32", "mul.rn.f64", "cvt.rn.f32.f64"]), ("cosf(x)", ["mul.rn.f64"]),
    ("tanf(x)", ["rcp.approx.ftz.f32", "mul.rn.f64"]), ("powf(x, y)", ["rcp.approx.ftz.f32"]),
    ("pow(x, n)", ["mul.rn.f32", "rcp.rn.f32"]), ("tanhf(x)", ["ex2.approx.ftz.f32", "rcp.approx.ftz.f32"]),
    ("atan2f(x, y)", ["fma.rn.f32"]), ("atanf(x)", ["rcp.approx.ftz.f32"]), ("asinf(x)", ["rsqrt.approx.ftz.f32"]),
    ("fmodf(x, y)", ["fma.rn.f32"]), ("ldexpf(x, n) + scalbnf(y, n)", ["mul.rn.f32"]),
    ("__expf(x)", ["ex2.approx.f32", "mul.rn.f32"]), ("__exp10f(x)", ["ex2.approx.f32"]),
    ("__logf(x)", ["lg2.approx.f32", "mul.rn.f32"]), ("__log2f(x)", ["lg2.approx.f32"]),
    ("__log10f(x)", ["lg2.approx.f32"]), ("__sinf(x)", ["sin.approx.f32"]), ("__cosf(x)", ["cos.approx.f32"]),
    ("__tanf(x)", ["sin.approx.f32", "cos.approx.f32", "div.approx.f32"]), ("__tanhf(x)", ["tanh.approx.f32"]),
    ("__powf(x, y)", ["lg2.approx.f32", "ex2.approx.f32"]), ("__fdividef(x, y)", ["div.approx.f32"]),
    ("fdividef(x, y)", ["div.rn.f32"]), ("__saturatef(x)", ["cvt.sat.f32.f32"]),
    ("__fadd_rn(x, y) + __fadd_rz(x, y) + __fadd_rd(x, y) + __fadd_ru(x, y)",
     ["add.rn.f32", "add.rz.f32", "add.rm.f32", "add.rp.f32"]),
    ("__fsub_rn(x, y) + __fsub_rz(x, y) + __fsub_rd(x, y) + __fsub_ru(x, y)",
     ["sub.rn.f32", "sub.rz.f32", "sub.rm.f32", "sub.rp.f32"]),
    ("__fmul_rn(x, y) + __fmul_rz(x, y) + __fmul_rd(x, y) + __fmul_ru(x, y)",
     ["mul.rn.f32", "mul.rz.f32", "mul.rm.f32", "mul.rp.f32"]),
    ("__fmaf_rn(x, y, z) + __fmaf_rz(x, y, z) + __fmaf_rd(x, y, z) + __fmaf_ru(x, y, z)",
     ["fma.rn.f32", "fma.rz.f32", "fma.rm.f32", "fma.rp.f32"]),
    ("__fdiv_rn(x, y) + __fdiv_rz(x, y) + __fdiv_rd(x, y) + __fdiv_ru(x, y)",
     ["div.rn.f32", "div.rz.f32", "div.rm.f32", "div.rp.f32"]),
    ("__frcp_rn(x) + __frcp_rz(x) + __frcp_rd(x) + __frcp_ru(x)",
     ["rcp.rn.f32", "rcp.rz.f32", "rcp.rm.f32", "rcp.rp.f32"]),
    ("__fsqrt_rn(x) + __fsqrt_rz(x) + __fsqrt_rd(x) + __fsqrt_ru(x)",
     ["sqrt.rn.f32", "sqrt.rz.f32", "sqrt.rm.f32", "sqrt.rp.f32"]),
    ("(float)(__float2int_rn(x) + __float2int_rz(x) + __float2int_rd(x) + __float2int_ru(x))",
     ["cvt.rni.s32.f32", "cvt.rzi.s32.f32", "cvt.rmi.s32.f32", "cvt.rpi.s32.f32"]),
    ("(float)(__float2uint_rn(x) + __float2uint_rz(x) + __float2uint_rd(x) + __float2uint_ru(x))",
     ["cvt.rni.u32.f32", "cvt.rzi.u32.f32", "cvt.rmi.u32.f32", "cvt.rpi.u32.f32"]),
    ("(float)(__float2ll_rn(x) + __float2ll_rz(x) + __float2ull_rd(x) + __float2ull_ru(x))",
     ["cvt.rni.s64.f32", "cvt.rzi.s64.f32", "cvt.rmi.u64.f32", "cvt.rpi.u64.f32"]),
    ("__int2float_rn(n) + __int2float_rz(n) + __int2float_rd(n) + __int2float_ru(n)",
     ["cvt.rn.f32.s32", "cvt.rz.f32.s32", "cvt.rm.f32.s32", "cvt.rp.f32.s32"]),
    ("__uint2float_rn(uo[t]) + __uint2float_rz(uo[t]) + __uint2float_rd(uo[t]) + __uint2float_ru(uo[t])",
     ["cvt.rn.f32.u32", "cvt.rz.f32.u32", "cvt.rm.f32.u32", "cvt.rp.f32.u32"]),
    ("__ll2float_rn(lo[t]) + __ll2float_rz(lo[t]) + __ull2float_rd(lo[t]) + __ull2float_ru(lo[t])",
     ["cvt.rn.f32.s64", "cvt.rz.f32.s64", "cvt.rm.f32.u64", "cvt.rp.f32.u64"]),
    ("(float)(int)x + (float)n + (float)(unsigned)n", ["cvt.rzi.s32.f32", "cvt.rn.f32.s32", "cvt.rn.f32.u32"]),
    ("(float)(isnan(x) + isinf(y) + isfinite(z))", ["abs.f32"]),
]


@BOTH
@pytest.mark.parametrize("expr, want", MATH, ids=[m[0] for m in MATH])
def test_math_functions_and_intrinsics_emit_their_instructions(fe, expr, want):
    if isinstance(want, tuple):
        want = want[frontend.FRONTENDS.index(fe)]
    ops = float_ops(f"    o[12 + t] = {expr};", fe, LIBRARY_FTZ)
    missing = [w for w in want if w not in ops]
    assert not missing, (missing, ops)
    assert not [o for o in ops if o.startswith("call")], ops        # the library is inlined


# The .ftz instructions in the library's sequences, exactly (both front ends).
FTZ_OF = {"expf(x)": {"ex2.approx.ftz.f32"}, "tanhf(x)": {"ex2.approx.ftz.f32", "rcp.approx.ftz.f32"},
          "powf(x, y)": {"rcp.approx.ftz.f32"}, "asinf(x)": {"rsqrt.approx.ftz.f32"},
          "erfinvf(x)": {"lg2.approx.ftz.f32", "rsqrt.approx.ftz.f32"},
          "sinhf(x)": {"ex2.approx.ftz.f32", "div.approx.ftz.f32"}, "exp2f(x)": set(), "logf(x)": set(),
          "sinf(x)": set(), "__expf(x)": set(), "rsqrtf(x)": set()}


@BOTH
@pytest.mark.parametrize("expr", FTZ_OF)
def test_ftz_only_inside_library_sequences(fe, expr):
    ops = float_ops(f"    o[12 + t] = {expr};", fe, LIBRARY_FTZ)
    assert {o for o in ops if ".ftz" in o} == FTZ_OF[expr]


# No approximate instruction at all (FACTS: logf, log2f, sinf, cosf need none; sinf/cosf's
# slow path has f64 multiplies). expf, exp2f, powf, tanhf, rsqrtf, fmodf (div.approx), and
# the __expf family do use them (MATH above).
EXACT = ["sqrtf(x)", "hypotf(x, y)", "logf(x)", "log2f(x)", "log10f(x)", "log1pf(x)", "logbf(x)", "sinf(x)",
         "cosf(x)", "sinpif(x)", "cospif(x)", "expm1f(x)", "atan2f(x, y)", "fabsf(x)", "floorf(x)", "roundf(x)",
         "copysignf(x, y)", "fdimf(x, y)", "ldexpf(x, n)", "frexpf(x, &n)", "modff(x, &y)", "pow(x, n)",
         "x / y", "fdividef(x, y)", "__fdiv_rn(x, y)", "__frcp_rn(x)", "__fsqrt_rn(x)", "__saturatef(x)"]


@BOTH
@pytest.mark.parametrize("expr", EXACT)
def test_exact_functions_use_no_approximate_instruction(fe, expr):
    ops = float_ops(f"    o[12 + t] = {expr};", fe)
    assert not [o for o in ops if "approx" in o or ".full" in o], ops


@BOTH
def test_round_toward_zero_int_to_float_stays_round_toward_zero(fe):
    """clang-19 -O2 compiles nvvm's i2f.rz as cvt.rn (LLVM bug): the prelude must not."""
    for opt in (1, 2, 3) if fe == "clang" else (2,):
        ops = float_ops("    o[12 + t] = __int2float_rz(n); o[16 + t] = __uint2float_rz(uo[t]);\n"
                        "    o[20 + t] = __ll2float_rz(lo[t]); o[24 + t] = __ull2float_rz(lo[t]);", fe, opt=opt)
        assert {"cvt.rz.f32.s32", "cvt.rz.f32.u32", "cvt.rz.f32.s64", "cvt.rz.f32.u64"} <= set(ops), ops
        assert not any(o.startswith("cvt.rn.f32") for o in ops), ops


@BOTH
def test_saturating_conversions_of_constants_are_not_folded_away(fe):
    """CUDA's __float2int_rz(1e10f) is INT_MAX (cvt saturates); clang-19 folds nvvm's f2i.rz of an
    out-of-range constant as undefined, dropping the store: the prelude keeps the cvt."""
    src = float_kernel("    io[t] = __float2int_rz(1e10f); uo[t] = __float2uint_rz(-1.0f);\n"
                       "    lo[t] = __float2ll_rz(__int_as_float(0x7fc00000));")
    body = body_of(compile_cuda(src, frontend=fe), "k")
    stores = re.findall(r"st\.global\.[us](32|64)", body)
    assert len(stores) >= 3, body
    if fe == "clang":
        assert {"cvt.rzi.s32.f32", "cvt.rzi.u32.f32", "cvt.rzi.s64.f32"} <= set(opcodes(body))


SHUFFLES = [("__shfl_sync(0xf, x * y, 2)", "idx"), ("__shfl_up_sync(0xf, x * y, 1)", "up"),
            ("__shfl_down_sync(0xf, x * y, 1)", "down"), ("__shfl_xor_sync(0xf, x * y, 1, 2)", "bfly")]


@BOTH
@pytest.mark.parametrize("call, mode", SHUFFLES, ids=[m for _, m in SHUFFLES])
def test_float_shuffles_move_the_bits(fe, call, mode):
    """A float shuffle moves the value's 32 bits: mov.b32 from the float register and back,
    never a conversion (an overload through int would compile and be wrong)."""
    body = body_of(compile_cuda(float_kernel(f"    static_assert(sizeof({call}) == 4, \"\");\n"
                                             f"    o[12 + t] = {call} + z;"), frontend=fe), "k")
    ops = assert_as_written(body)
    shfl = ops.index(f"shfl.sync.{mode}.b32")
    assert "mov.b32" in ops[:shfl] and "mov.b32" in ops[shfl:], ops
    assert not re.search(r"\bcvt\.", body), body


@BOTH
def test_float_atomics(fe):
    ops = float_ops("    __shared__ float s[4]; s[t] = 0.0f; __syncthreads();\n"
                    "    atomicAdd(&s[t ^ 1], x); __syncthreads(); o[12 + t] = atomicAdd(o + 16, s[t]);\n"
                    "    o[20 + t] = atomicExch(o + 24, y);", fe)
    assert {"atom.shared.add.f32", "atom.global.add.f32"} <= set(ops), ops
    assert any(o.startswith("atom.global.exch") for o in ops), ops


def test_trap_is_declared_on_both_front_ends_and_refused_by_name():
    from qwengpu import Device
    from qwengpu.errors import UnsupportedError
    src = 'extern "C" __global__ void k(int *x) { if (x[threadIdx.x] < 0) __trap(); x[threadIdx.x] += 1; }'
    for fe in ("clang", "nvrtc"):
        with pytest.raises(UnsupportedError, match=r"k\.cu:1 \(PTX line \d+\): trap is not supported"):
            Device(engine="interp", frontend=fe).compile(src, filename="k.cu").get_function("k")
