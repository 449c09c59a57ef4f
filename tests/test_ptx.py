"""The PTX parser: real clang-19 / NVRTC output and hand-written snippets."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from qwengpu.errors import CompileError
from qwengpu.toolchain import ptx
from qwengpu.toolchain.ptx import Addr, Imm, Label, Not, Pair, Reg, SpecialReg, Sym, Vec, parse_ptx

CLANG = shutil.which("clang-19") or "/usr/bin/clang-19"
BUILTINS = """
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __device__ __attribute__((device))
"""


def clang_ptx(src: str, opt: int = 2) -> str:
    cmd = [CLANG, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_75", "-nocudainc", "-nocudalib",
           "--cuda-path=/nonexistent", "--target=i386-unknown-linux-gnu", "-Xclang", "-target-feature",
           "-Xclang", "+ptx63", f"-O{opt}", "-S", "-o", "-", "-"]
    try:
        return subprocess.run(cmd, input=BUILTINS + src, capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        pytest.skip("clang-19 is not installed")


def instructions(fn):
    return [i for i in fn.body if isinstance(i, ptx.Instruction)]


def test_clang_output_structure():
    text = clang_ptx("""
__constant__ int table[3] = {7, 8, 9};
__device__ int counter[2] = {5, 6};
__global__ void vecAdd(int *a, const int *b, int n) {
    __shared__ int buf[8];
    int i = __nvvm_read_ptx_sreg_tid_x();
    buf[i & 7] = b[i];
    __syncthreads();
    if (i < n) a[i] += buf[(i + 1) & 7] + table[i % 3] + counter[1];
}
""")
    m = parse_ptx(text)
    assert (m.version, m.target, m.address_size) == ("6.3", "sm_75", 32)
    fn = m.functions["_Z6vecAddPiPKii"]
    assert fn.is_entry and list(m.kernels) == ["_Z6vecAddPiPKii"]
    assert [(p.name, p.type) for p in fn.params] == [(f"_Z6vecAddPiPKii_param_{k}", "u32") for k in range(3)]
    assert {v.name: (v.space, v.size, v.init) for v in m.variables} == {
        "table": ("const", 12, [7, 0, 0, 0, 8, 0, 0, 0, 9]),
        "counter": ("global", 8, [5, 0, 0, 0, 6])}
    demoted = fn.variables[0]
    assert (demoted.space, demoted.size, demoted.align) == ("shared", 32, 4)
    body = instructions(fn)
    assert any(i.opcode == "bar.sync" for i in body)
    assert any(isinstance(i, Label) for i in fn.body)
    movs = [i for i in body if i.opcode == "mov.u32" and isinstance(i.operands[1], SpecialReg)]
    assert movs and movs[0].operands[1] == SpecialReg("%tid.x")
    guarded = [i for i in body if i.pred is not None]
    assert guarded and guarded[0].opcode == "bra" and isinstance(guarded[0].operands[0], Sym)
    assert all(fn.regs[op.name] for i in body for op in i.operands if isinstance(op, Reg))


@pytest.mark.parametrize("opt", [1, 2, 3])
def test_clang_all_opt_levels_parse(opt):
    text = clang_ptx("""
__global__ void k(long long *o, short *s, char *c, unsigned x) {
    for (int i = 0; i < (int)x; i++) o[i] = o[i] * x + (o[i + 1] >> 3);
    s[0] = s[1] * 3;
    c[2] = c[0] + 1;
}""", opt)
    fn = parse_ptx(text).kernels["_Z1kPxPsPcj"]
    types = set(fn.regs.values())
    assert {"b64", "b32", "pred"} <= types
    assert instructions(fn)[-1].opcode == "ret" or any(i.opcode == "ret" for i in instructions(fn))


def test_nvrtc_output_structure():
    from qwengpu.toolchain.frontend import compile_cuda
    try:
        text = compile_cuda('extern "C" __global__ void add1(int *a) { a[threadIdx.x] += 1; }', frontend="nvrtc")
    except CompileError as e:
        pytest.skip(f"NVRTC unavailable: {e}")
    m = parse_ptx(text)
    assert m.address_size == 64 and m.version.startswith("9.")
    fn = m.kernels["add1"]
    assert fn.params[0].type == "u64"
    ops = [i.opcode for i in instructions(fn)]
    assert "cvta.to.global.u64" in ops


SNIPPET = r"""
//
// hand-written: every construct in one module
//
.version 6.3
.target sm_75, debug
.address_size 32
.file 1 "/tmp/x.cu"

.extern .shared .align 16 .b8 dyn[];
.visible .shared .align 8 .u32 tile[4][2];
.visible .const .align 4 .u32 tab[3] = {1, 2, 3};
.visible .global .align 4 .b8 bytes[8] = {1, 0, 0, 0, 0xff};

.func (.param .b32 func_retval0) helper(
    .param .b32 helper_param_0
)
{
    .reg .b32 %r<2>;
    ld.param.u32 %r1, [helper_param_0];
    st.param.b32 [func_retval0+0], %r1;
    ret;
}

.visible .entry kern(
    .param .u32 kern_param_0,
    .param .u64 .ptr .global .align 4 kern_param_1
)
.maxntid 16, 1, 1
{
    .reg .pred %p<3>;
    .reg .b16 %rs<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<3>;
    /* a block comment
       spanning lines */
    .loc 1 12 3
    ld.param.u32 %r1, [kern_param_0];   // trailing comment
    mov.u32 %r2, %ctaid.z;
    mov.u32 %r3, %laneid;
    setp.lt.s32 %p1|%p2, %r2, -5;
    @!%p1 bra $L__BB0_2;
    {
    .reg .b32 %r1;
    .reg .pred p;
    mov.b32 %r1, 0x10;
    setp.ne.s32 p, %r1, 0;
    vote.sync.any.pred %p2, !p, 15;
    }
    .pragma "nounroll";
    mov.b64 %rd1, {%r1, %r2};
    mov.b64 {%r4, %r5}, %rd1;
    ld.global.v2.u32 {%r6, %r7}, [%r1+-8];
    mov.u32 %r4, tile;
$L__BB0_2:
    mov.b32 %r5, 0f3F800000;
    ret;
$L__BB0_3:
    bra.uni $L__BB0_2;
}
"""


def test_snippet_module_level():
    m = parse_ptx(SNIPPET)
    assert m.target == "sm_75,debug"
    v = {x.name: x for x in m.variables}
    assert v["dyn"].extern and v["dyn"].size == 0 and v["dyn"].align == 16
    assert (v["tile"].size, v["tile"].align, v["tile"].type) == (32, 8, "u32")
    assert v["tab"].init == [1, 2, 3] and v["tab"].space == "const"
    assert v["bytes"].init == [1, 0, 0, 0, 255] and v["bytes"].elem_bytes == 1
    helper = m.functions["helper"]
    assert not helper.is_entry and helper.returns[0].name == "func_retval0"
    assert list(m.kernels) == ["kern"]
    k = m.kernels["kern"]
    assert [(p.name, p.type, p.size) for p in k.params] == [("kern_param_0", "u32", 4), ("kern_param_1", "u64", 8)]
    assert {f"%r{i}" for i in range(8)} <= set(k.regs) and k.regs["%rs1"] == "b16"


def test_snippet_instructions():
    k = parse_ptx(SNIPPET).kernels["kern"]
    body = k.body
    ins = instructions(k)
    by_op = {}
    for i in ins:
        by_op.setdefault(i.opcode, i)      # first of each opcode
    ld = ins[0]
    assert ld.opcode == "ld.param.u32" and ld.operands == [Reg("%r1"), Addr(Sym("kern_param_0"), 0)]
    # line numbers survive block comments and dropped .loc lines
    assert ld.line == SNIPPET.splitlines().index("    ld.param.u32 %r1, [kern_param_0];   // trailing comment") + 1
    assert by_op["mov.u32"].operands[1] == SpecialReg("%ctaid.z")
    setp = by_op["setp.lt.s32"]
    assert setp.operands == [Pair(Reg("%p1"), Reg("%p2")), Reg("%r2"), Imm(-5)]
    bra = next(i for i in ins if i.opcode == "bra")
    assert bra.pred == Reg("%p1") and bra.pred_negated and bra.operands == [Sym("$L__BB0_2")]
    # the inner scope's %r1 and p are renamed; the outer %r1 is untouched
    inner = [i for i in ins if i.opcode == "mov.b32" and i.operands[1] == Imm(16)][0]
    assert inner.operands[0] != Reg("%r1") and inner.operands[0].name.startswith("%r1#")
    vote = by_op["vote.sync.any.pred"]
    assert isinstance(vote.operands[1], Not) and vote.operands[1].reg.name.startswith("p")
    assert k.regs[vote.operands[1].reg.name] == "pred"
    packs = [i for i in ins if i.opcode == "mov.b64"]
    assert packs[0].operands[1] == Vec((Reg("%r1"), Reg("%r2")))
    assert packs[1].operands[0] == Vec((Reg("%r4"), Reg("%r5")))
    vld = by_op["ld.global.v2.u32"]
    assert vld.operands == [Vec((Reg("%r6"), Reg("%r7"))), Addr(Reg("%r1"), -8)]
    flt = [i for i in ins if i.opcode == "mov.b32" and i.operands[1].is_float][0]
    assert flt.operands[1] == Imm(0x3F800000, 32)
    labels = [b.name for b in body if isinstance(b, Label)]
    assert labels == ["$L__BB0_2", "$L__BB0_3"]
    assert ins[-1].opcode == "bra.uni"      # code after ret is kept


@pytest.mark.parametrize("text,pattern", [
    (".version 6.3\n.target sm_75\n.entry k()\n{\n  add.s32 %r1, %r1, 1;\n}", r"line 5: undeclared register %r1"),
    (".version 6.3\n.entry k()\n{\n .reg .b32 %r<2>;\n  add.s32 %r1, %r1, 1\n}", r"line 6: expected ';'"),
    (".version 6.3\n.entry k()\n{\n .reg .b32 %r<2>;\n  add.s32 %r1, %r1, #;\n}", r"line 5: unexpected character"),
    (".version 6.3\nbogus\n", r"line 2: unexpected 'bogus' at module level"),
    (".version 6.3\n.entry k()\n{\n .reg .b32 %r<2>;\n", r"unexpected end of PTX"),
    (".version 6.3\n.global .u32 p = generic(x);\n", r"line 2: address initialisers"),
])
def test_parse_errors_name_the_line(text, pattern):
    with pytest.raises(CompileError, match=pattern):
        parse_ptx(text)


def test_comments_do_not_hide_code():
    text = ".version 6.3 /* c */ .target sm_75 // x\n.address_size 64\n"
    m = parse_ptx(text)
    assert (m.version, m.target, m.address_size) == ("6.3", "sm_75", 64)
