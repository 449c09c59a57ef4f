"""Launch validation and layout, the Python API round trip, and the suite runner.

The launch tests use hand-built machine programs, so they need neither the
PTX parser nor the lowering; expected values are computed with NumPy.
"""
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from qwengpu import isa
from qwengpu.api import Device, Function, Module
from qwengpu.errors import CompileError, LaunchError, MachineLimitError, MemoryFault, QwenGpuError, UnsupportedError
from qwengpu.isa import Imm, Instr, MachineBlock, Op, Param, Program, Reg, Space, Term, Terminator
from qwengpu.launch import Launch
from qwengpu.suite import DEFAULT_DIR


def exit_program(params=("a",), **kw) -> Program:
    return Program("k", [MachineBlock([], Terminator(Term.EXIT))],
                   [Param(name, i) for i, name in enumerate(params)], **kw)


def jmp(target):
    return Terminator(Term.JMP, target)


def scale_add_program() -> Program:
    """out[tid] = src[tid] * 2 + n, written by hand in the machine ISA."""
    r = Reg
    blocks = [
        MachineBlock([Instr(Op.S2R, r(1), (Imm(isa.SReg.TID_X),)), Instr(Op.SHL, r(1), (r(1), Imm(2))),
                      Instr(Op.LD, r(2), (Imm(0), Imm(0)), Space.CONST)], jmp(1)),       # r2 = src
        MachineBlock([Instr(Op.LD, r(3), (r(2), r(1)), Space.GLOBAL)], jmp(2)),          # r3 = src[tid]
        MachineBlock([Instr(Op.ADD, r(3), (r(3), r(3))),
                      Instr(Op.LD, r(4), (Imm(0), Imm(8)), Space.CONST)], jmp(3)),       # r4 = n
        MachineBlock([Instr(Op.ADD, r(3), (r(3), r(4))),
                      Instr(Op.LD, r(5), (Imm(0), Imm(4)), Space.CONST)], jmp(4)),       # r5 = out
        MachineBlock([Instr(Op.ST, r(0), (r(5), r(1), r(3)), Space.GLOBAL)], Terminator(Term.EXIT)),
    ]
    return Program("scale_add", blocks, [Param("src", 0), Param("out", 1), Param("n", 2)], regs_used=5)


def as_function(program: Program, engine="interp") -> Function:
    return Function(Module(Device(engine), "", "", "<hand-built>"), program.name, program)


# --- grid and block ---------------------------------------------------------
@pytest.mark.parametrize("grid, block, want", [
    (2, 4, ((2, 1, 1), (4, 1, 1))), ((2, 3), (4, 2), ((2, 3, 1), (4, 2, 1))),
    ([1, 1, 16], (2, 2, 4), ((1, 1, 16), (2, 2, 4))), (np.int64(3), (np.int32(4),), ((3, 1, 1), (4, 1, 1))),
])
def test_grid_and_block_become_three_sizes(grid, block, want):
    launch = Launch.build(exit_program(()), grid, block, [])
    assert (launch.grid, launch.block) == want


def test_too_many_threads_per_block_names_limit_and_amount():
    with pytest.raises(MachineLimitError, match=r"1025 threads; the limit is 1024"):
        Launch.build(exit_program(()), 1, 1025, [])


def test_a_block_that_does_not_tile_names_the_rule():
    with pytest.raises(MachineLimitError, match=r"\(5, 4, 1\) \(20 threads\) cannot run in tiles of 16 consecutive"):
        Launch.build(exit_program(()), 1, (5, 4), [])


def test_a_block_over_16_threads_needs_a_program_lowered_for_it():
    with pytest.raises(LaunchError, match=r"lowered for blocks of up to 16 threads; a block of \(64, 1, 1\)"):
        Launch.build(exit_program(()), 1, 64, [])


def test_too_many_blocks_names_limit_and_amount():
    with pytest.raises(MachineLimitError, match=r"512 thread blocks.*limit is 256"):
        Launch.build(exit_program(()), (16, 16, 2), 1, [])


@pytest.mark.parametrize("bad", [0, (4, 0), (1, 1, 1, 1), (), 2.0, "4", (True,), -1])
def test_malformed_block_is_a_launch_error(bad):
    with pytest.raises(LaunchError, match="block must be 1 to 3 positive integers"):
        Launch.build(exit_program(()), 1, bad, [])


# --- arguments --------------------------------------------------------------
def test_argument_count_must_match():
    with pytest.raises(LaunchError, match=r"takes 2 arguments \(a, n\); 3 were given"):
        Launch.build(exit_program(("a", "n")), 1, 1, [np.zeros(2, np.int32), 1, 2])


@pytest.mark.parametrize("arg, message", [
    (np.zeros((2, 2), np.int32), r"argument 0 \(a\) must be a 1-D int32, uint32 or float32 numpy array, "
                                 r"got int32\[2, 2\]$"),
    (np.zeros(4, np.float64), r"argument 0 \(a\) must be a 1-D int32, uint32 or float32 numpy array, got "
                              r"float64\[4\] \(the machine's floats are float32: pass .astype\(np.float32\)\)"),
    (np.zeros((2, 2), np.float32), r"got float32\[2, 2\]$"),
    (np.zeros(4, np.int64), r"argument 0 \(a\) .*int64"),
    (np.zeros(8, np.int32)[::2], r"argument 0 \(a\) must be contiguous"),
    ([1, 2, 3], r"argument 0 \(a\) got a Python list: pass an integer, or for an array a numpy array, "
                r"np.array\(\[1, 2, 3\], dtype=np.int32\)"),
    (1.5, r"argument 0 \(a\) is an integer parameter and got the float 1.5: pass an integer"),
    (np.float32(0.1), r"argument 0 \(a\) is an integer parameter and got the float 0.1: pass an integer"),
    (True, r"argument 0 \(a\) .* got bool"),
    (2**32, r"argument 0 \(a\) = 4294967296 does not fit in 32 bits"),
    (-2**31 - 1, r"does not fit in 32 bits"),
])
def test_bad_arguments_are_named(arg, message):
    with pytest.raises(LaunchError, match=message):
        Launch.build(exit_program(), 1, 1, [arg])


@pytest.mark.parametrize("value, word", [(5, 5), (-1, 0xFFFF_FFFF), (np.int32(-2), 0xFFFF_FFFE),
                                         (np.uint32(0xFFFF_FFFF), 0xFFFF_FFFF), (2**31, 0x8000_0000),
                                         (-2**31, 0x8000_0000)])
def test_scalars_become_32_bit_words(value, word):
    assert Launch.build(exit_program(), 1, 1, [value]).params == [word]


def test_negative_value_for_64_bit_parameter_is_refused():
    program = Program("k", exit_program().blocks, [Param("n", 0, bits=64)])
    assert Launch.build(program, 1, 1, [7]).params == [7]
    with pytest.raises(LaunchError, match="64-bit parameter"):
        Launch.build(program, 1, 1, [-1])


# --- memory layout ----------------------------------------------------------
def test_layout_statics_then_arrays_in_argument_order():
    program = exit_program(("a", "n", "b"), global_init={0: 7, 2: 0xFFFF_FFFF}, static_global_words=3)
    a = np.array([1, -2], np.int32)
    b = np.array([10, 20, 30], np.uint32)
    launch = Launch.build(program, 1, 1, [a, 9, b])
    assert launch.params == [3 * 4, 9, 5 * 4]             # byte addresses after 3 static words
    want = np.zeros(isa.GLOBAL_WORDS, np.uint32)
    want[:8] = [7, 0, 0xFFFF_FFFF, 1, 0xFFFF_FFFE, 10, 20, 30]
    np.testing.assert_array_equal(launch.memory, want)


def test_parameter_words_follow_program_params():
    program = Program("k", exit_program().blocks, [Param("x", 1), Param("y", 0)])
    assert Launch.build(program, 1, 1, [11, 22]).params == [22, 11]


def test_same_array_twice_shares_one_address():
    a = np.arange(4, dtype=np.int32)
    launch = Launch.build(exit_program(("x", "y", "z")), 1, 1, [a, a, a.view(np.uint32)])
    assert launch.params == [0, 0, 0] and len(launch.arrays) == 1


def test_partly_overlapping_arrays_are_refused():
    a = np.arange(8, dtype=np.int32)
    with pytest.raises(LaunchError, match="argument 1 .* partly overlaps argument 0"):
        Launch.build(exit_program(("x", "y")), 1, 1, [a[:4], a[2:6]])


def test_global_memory_overflow_names_words_needed():
    program = exit_program(("a", "b"), static_global_words=24)
    with pytest.raises(MachineLimitError, match=r"needs 16385 words of global memory.*limit is 16384"):
        Launch.build(program, 1, 1, [np.zeros(16360, np.int32), np.zeros(1, np.uint32)])
    Launch.build(program, 1, 1, [np.zeros(16359, np.int32), np.zeros(1, np.uint32)])    # exactly full


def test_copy_back_in_place_keeps_dtype():
    a, b = np.array([1, 2], np.int32), np.array([3, 4], np.uint32)
    a_before = a
    launch = Launch.build(exit_program(("a", "b")), 1, 1, [a, b])
    launch.memory[0:4] = [0xFFFF_FFFF, 5, 0x8000_0000, 6]
    launch.copy_back()
    assert a is a_before and a.dtype == np.int32 and b.dtype == np.uint32
    assert a.tolist() == [-1, 5] and b.tolist() == [0x8000_0000, 6]


def test_read_only_array_may_be_read_but_not_written():
    a = np.array([1, 2], np.int32)
    a.flags.writeable = False
    launch = Launch.build(exit_program(), 1, 1, [a])
    launch.copy_back()                       # unchanged: fine
    launch.memory[0] = 9
    with pytest.raises(LaunchError, match="read-only"):
        launch.copy_back()


def test_a_read_only_output_is_refused_before_the_launch():
    fn = Device().compile((DEFAULT_DIR / "dot.cu").read_text(), filename="dot.cu").get_function("dot")
    read_only = lambda *v: np.frombuffer(np.array(v, np.int32).tobytes(), np.int32)   # noqa: E731
    out = np.zeros(1, np.int32)
    fn(grid=1, block=4, args=[read_only(1, 2, 3), read_only(4, 5, 6), out, 3])       # inputs may be read-only
    assert out[0] == 32
    args = [read_only(1, 2, 3), read_only(4, 5, 6), read_only(0), 3]
    with pytest.raises(LaunchError, match=r"^argument 2 \(out\) is a read-only numpy array, but kernel dot "
                                          r"stores through out: pass a writeable array"):
        Launch.build(fn.program, 1, 4, args, names=fn.arg_names)     # refused while laying out: nothing ran
    # no analysis (every pointer parameter may be written): the launch runs, the copy-back refuses
    fn.program.writes = isa.Writes(frozenset({0, 1, 2}), False, traced=False)
    launch = Launch.build(fn.program, 1, 4, [read_only(1, 2, 3), read_only(4, 5, 6), out, 3], names=fn.arg_names)
    assert launch.slot_of[2].array is out


# --- engines through the API ------------------------------------------------
def test_interp_engine_runs_hand_built_program():
    src = np.array([1, -3, 2**30, 7], np.int32)
    out = np.zeros(4, np.int32)
    result = as_function(scale_add_program())(grid=1, block=4, args=[src, out, -5])
    want = (src.astype(np.int64) * 2 - 5).astype(np.uint64).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(src, [1, -3, 2**30, 7])
    assert result.engine == "interp" and result.passes == 5 and result.instructions == 9
    assert result.tokens is None and result.trace is None and result.seconds >= 0


def test_trace_is_returned_when_asked():
    out = np.zeros(4, np.int32)
    result = as_function(scale_add_program())(grid=1, block=4, args=[np.ones(4, np.int32), out, 0], trace=True)
    assert result.trace is not None and len(result.trace) == result.passes


class _StubModel:
    """Plays `script` (the logits pick script[i] on the i-th call after the prefill)."""

    def __init__(self, vocab, script):
        self.vocab, self.script, self.calls = vocab, script, 0
        self.device = torch.device("cpu")
        self.config = SimpleNamespace(qwengpu={"gpu_token_ids": [50, 50 + len(vocab)]})

    def __call__(self, input_ids, cache, use_cache, logits_to_keep):
        logits = torch.zeros(1, 1, 50 + len(self.vocab))
        logits[0, 0, self.vocab.id(self.script[self.calls])] = 1.0
        self.calls += 1
        return SimpleNamespace(logits=logits)


class _StubFast:
    """A FastModel of a _StubModel: the same script through prefill/step."""

    def __init__(self, stock):
        self.stock, (self.first, self.end) = stock, stock.config.qwengpu["gpu_token_ids"]

    def new_state(self):
        return None

    def prefill(self, state, ids):
        return self.step(state, ids[-1])

    def step(self, state, token_id):
        self.stock.calls += 1
        return self.stock.vocab.id(self.stock.script[self.stock.calls - 1])

    def cache(self, state):
        return "fast cache"


def _stub_machine_build(monkeypatch, ops, script=(), final=None):
    """A stand-in qwengpu.machine.build whose model plays `script` and whose memory reads
    `final`, and a stand-in qwengpu.fast."""
    from qwengpu.driver import runtime
    from qwengpu.machine.tokens import Vocab
    caches = []
    machine = SimpleNamespace(vocab=Vocab(), read_global=lambda cache, layer_offset=0: caches.append(cache) or final)
    loads = []

    def load_model(path, dtype, device):
        loads.append((path, dtype, device))
        return _StubModel(machine.vocab, list(script)), {}

    class StubFast(_StubFast):
        @staticmethod
        def from_checkpoint(path, dtype):            # the fast path reads the checkpoint itself, on the CPU
            loads.append((path, dtype, "cpu"))
            return _StubFast(_StubModel(machine.vocab, list(script)))
    monkeypatch.setitem(sys.modules, "qwengpu.fast", SimpleNamespace(FastModel=StubFast))
    build = SimpleNamespace(MODEL_OPS=ops, machine_for=lambda cfg, width=None: SimpleNamespace(readout=machine))
    monkeypatch.setitem(sys.modules, "qwengpu.machine.build", build)
    from qwengpu.model import merge
    monkeypatch.setattr(merge, "default_merged_model", lambda: "standin-path")
    monkeypatch.setattr(runtime, "load_model", load_model)
    monkeypatch.setattr(runtime, "host_config", lambda model: {})
    monkeypatch.setattr(runtime, "load_config", lambda path: {})
    monkeypatch.setattr(runtime, "_new_cache", lambda model: "stock cache")
    return loads, caches


def test_model_engine_refuses_unsupported_ops_before_loading(monkeypatch):
    loads, _ = _stub_machine_build(monkeypatch, {isa.Op.S2R, isa.Op.SHL, "ADD", "JMP", "EXIT"})
    with pytest.raises(UnsupportedError, match="kernel scale_add uses LD, ST, which the model engine does not support"):
        as_function(scale_add_program(), "model")(grid=1, block=4, args=[np.ones(4, np.int32),
                                                                          np.zeros(4, np.int32), 0])
    assert loads == []


@pytest.mark.parametrize("fast", [True, False])
def test_model_engine_runs_a_launch_through_the_runtime(monkeypatch, fast):
    from qwengpu.driver.protocol import expected_stream
    src, out = np.array([1, -3, 2**30, 7], np.int32), np.zeros(4, np.int32)
    launch = Launch.build(scale_add_program(), 1, 4, [src, out, -5])
    stream = expected_stream(launch)
    all_ops = {op.name for op in isa.Op} | {t.name for t in isa.Term}
    loads, caches = _stub_machine_build(monkeypatch, all_ops, stream.tokens, stream.memory)
    fn = Function(Module(Device("model", dtype="bfloat16", check="replay", fast=fast), "", "", "<hand-built>"),
                  "scale_add", scale_add_program())
    result = fn(grid=1, block=4, args=[src, out, -5], trace=True)
    want = (src.astype(np.int64) * 2 - 5).astype(np.uint64).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(out, want)
    # a model pass runs one instruction, and each block's JMP or EXIT runs in its last instruction's
    # pass (encoding.term_slot); the S2R and the three parameter loads run in no pass (their
    # results are fixed operands): 5 passes for 9 instructions and 5 blocks
    assert (result.engine, result.passes, result.instructions, result.blocks) == ("model", 5, 9, 5)
    assert result.tokens == len(stream.tokens) and result.trace == stream.tokens
    assert loads == [("standin-path", "bfloat16", "cpu")]
    assert caches == ["fast cache" if fast else "stock cache"]     # memory read from the decoder that ran


@pytest.mark.parametrize("kwargs, message", [({"dtype": "fp16"}, "unknown dtype 'fp16'"),
                                             ({"check": "full"}, "unknown check 'full'"),
                                             ({"max_tokens": 0}, "max_tokens must be at least 1")])
def test_device_rejects_bad_model_options(kwargs, message):
    with pytest.raises(QwenGpuError, match=message):
        Device("model", **kwargs)


def test_launch_errors_come_before_any_engine_runs():
    with pytest.raises(MachineLimitError):
        as_function(scale_add_program(), "model")(grid=1, block=1025, args=[np.ones(4, np.int32),
                                                                           np.zeros(4, np.int32), 0])


def test_cuda_engine_without_gpu_says_so():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a GPU is present")
    except Exception:
        pass
    with pytest.raises(QwenGpuError, match="cuda engine needs CuPy and an NVIDIA GPU"):
        as_function(scale_add_program(), "cuda")(grid=1, block=4, args=[np.ones(4, np.int32),
                                                                         np.zeros(4, np.int32), 0])


@pytest.mark.parametrize("kwargs, message", [({"engine": "tpu"}, "unknown engine 'tpu'"),
                                             ({"frontend": "nvcc"}, "unknown front end 'nvcc'")])
def test_device_rejects_unknown_choices(kwargs, message):
    with pytest.raises(QwenGpuError, match=message):
        Device(**kwargs)


def test_compile_error_propagates_with_file_and_line():
    with pytest.raises(CompileError, match=r"bad\.cu:2:"):
        Device().compile("__global__ void k() {\n  nope;\n}\n", filename="bad.cu")


# --- CUDA source end to end (needs the PTX parser and the lowering) --------
DOT = (DEFAULT_DIR / "dot.cu").read_text()   # the suite's demo kernel


@pytest.mark.parametrize("frontend", ["clang", "nvrtc"])
def test_round_trip_dot(frontend):
    module = Device(frontend=frontend).compile(DOT, filename="dot.cu")
    assert ".entry dot" in module.ptx
    fn = module.get_function("dot")
    assert [p.name for p in fn.program.params] and "B0:" in fn.program.listing()
    a, b, out = np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), np.zeros(1, np.int32)
    result = fn(grid=1, block=4, args=[a, b, out, 3])
    assert out[0] == np.dot(a, b) and result.passes > 0 and result.instructions > 0
    assert module.get_function("dot") is fn


TOP_OF_MEMORY = """\
extern "C" __global__ void k(const int *x, int *out, int at) {
    int t = threadIdx.x + 4 * blockIdx.x;
    out[at + t] = x[at + t] * 3 - t;
}
"""


def test_a_kernel_reads_and_writes_the_top_of_global_memory():
    """Two arrays of 8192 words fill the 16384 words: x at words 0..8191, out at 8192..16383. Eight
    threads read x[8184..8191] and write out[8184..8191], global words 16376..16383; one word higher,
    thread 7 (thread block 1, lane 3) stores to out[8192], byte address 65536: past the end."""
    fn = Device("interp").compile(TOP_OF_MEMORY).get_function("k")
    x = np.random.default_rng(0).integers(-1000, 1000, 8192).astype(np.int32)
    out = np.zeros(8192, np.int32)
    fn(grid=2, block=4, args=[x, out, 8184])
    want = np.zeros(8192, np.int32)
    want[8184:] = x[8184:] * 3 - np.arange(8)
    np.testing.assert_array_equal(out, want)
    with pytest.raises(MemoryFault, match=r"store at global byte address 0x10000 is past the end \(65536 bytes\) "
                                          r"\(thread block 1, warp 0, lane 3, pc B\d+\)"):
        fn(grid=2, block=4, args=[x, np.zeros(8192, np.int32), 8185])


PRELUDE_SEMANTICS = """\
extern "C" __global__ void k(const int *x, int *out) {
    int t = threadIdx.x, v = x[t];
    int *o = out + 16 * t;
    o[0] = warpSize;
    o[1] = __shfl_sync(0xf, v, 3);
    o[2] = __shfl_up_sync(0xf, v, 1);
    o[3] = __shfl_down_sync(0xf, v, 1, 2);
    o[4] = __shfl_xor_sync(0xf, v, 3);
    o[5] = __ballot_sync(0xf, v > 0);
    o[6] = __any_sync(0xf, v == 2);
    o[7] = __all_sync(0xf, v > -100);
    o[8] = __popc(v) + 100 * __clz(v);
    o[9] = (int)__brev((unsigned)v);
    o[10] = __mul24(v, 0x1000001);
    o[11] = __umulhi((unsigned)v, 0x80000000u);
    o[12] = (int)__sad(v, 5, 1u);
    o[13] = min(v, 1) + max(v, 2) * 1000;
    o[14] = abs(v);
    o[15] = __ffs(v) + 100 * __ffs((int)((unsigned)v << 29));
}
"""


@pytest.mark.parametrize("frontend", ["clang", "nvrtc"])
def test_prelude_builtins_compute_cuda_results(frontend):
    x = np.array([3, -7, 0, 2], np.int32)
    out = np.zeros(64, np.int32)
    Device(frontend=frontend).compile(PRELUDE_SEMANTICS).get_function("k")(grid=1, block=4, args=[x, out])
    got = out.reshape(4, 16)
    u = x.view(np.uint32).astype(np.int64)
    for t in range(4):
        v, w = int(x[t]), int(u[t])
        want = [4, int(x[3]), int(x[t - 1]) if t >= 1 else v,
                int(x[t + 1]) if t % 2 == 0 else v,           # width 2: lane 1 and 3 have no source
                int(x[t ^ 3]), sum(1 << i for i in range(4) if x[i] > 0), int(2 in x), 1,
                bin(w).count("1") + 100 * (32 - w.bit_length()),
                int(np.uint32(int(f"{w:032b}"[::-1], 2)).view(np.int32)),
                # __mul24: low 24 bits sign-extended times 0x000001 (0x1000001's low 24 bits)
                ((v & 0xFFFFFF) ^ 0x800000) - 0x800000,
                (w * 0x80000000) >> 32, abs(v - 5) + 1, min(v, 1) + max(v, 2) * 1000, abs(v),
                (w & -w).bit_length() + 100 * ((w << 29) % 2**32 & -((w << 29) % 2**32)).bit_length()]
        assert got[t].tolist() == want, t


@pytest.mark.parametrize("src, kernel, count, want", [
    ('extern "C" __global__ void dot(const int *a, const int* __restrict__ b, int *out, int n) {}', "dot", 4,
     ["a", "b", "out", "n"]),
    ("__global__ void __launch_bounds__(16) k(unsigned int x, int *) {}", "k", 2, ["x", "arg1"]),
    ("__global__ void other(int a) {}\n__global__ void k(int *p) {}", "k", 1, ["p"]),
    ("__global__ void k(int a) {}", "k", 2, None),            # count disagrees with the PTX
    ("__device__ void k(int a) {}", "k", 1, None),
])
def test_source_parameter_names(src, kernel, count, want):
    from qwengpu.api import source_param_names
    assert source_param_names(src, kernel, count) == want


def test_launch_messages_use_given_names():
    with pytest.raises(LaunchError, match=r"argument 0 \(data\) is an integer parameter"):
        Launch.build(exit_program(), 1, 1, [1.0], names=["data"])


ATOMICS = """\
extern "C" __global__ void k(int *o, unsigned *u) {
    __shared__ int s[2];
    int t = threadIdx.x;
    if (t == 0) { s[0] = 5; s[1] = 0; }
    __syncthreads();
    atomicAdd(&o[0], t + 1);        atomicSub(&o[1], t + 1);
    atomicMin(&o[2], 3 - 2 * t);    atomicMax(&o[3], -10 * t);
    atomicAnd(&o[4], ~(1 << t));    atomicOr(&o[5], 16 << t);      atomicXor(&o[6], 3 << t);
    atomicCAS(&o[7], t, 100 + t);   atomicExch(&o[8 + t], 7 * t);
    atomicMin(&u[0], 1u << (31 - t)); atomicMax(&u[1], 0x80000000u + t);
    atomicInc(&u[2], 2u);           atomicDec(&u[3], 10u);
    atomicAdd(&s[0], t);            atomicMax(&s[1], 10 * t);
    __syncthreads();
    if (t == 0) { o[12] = s[0]; o[13] = s[1]; }
}
"""


@pytest.mark.parametrize("frontend", ["clang", "nvrtc"])
def test_prelude_atomics_compute_cuda_results(frontend):
    o = np.array([10, 10, 0, 0, -1, 1, 0, 2, 0, 0, 0, 0, 0, 0], np.int32)
    u = np.array([0xFFFF_FFFF, 0, 0, 1], np.uint32)
    Device(frontend=frontend).compile(ATOMICS).get_function("k")(grid=1, block=4, args=[o, u])
    t = np.arange(4)
    # four threads; every result below is independent of the order the atomics run in
    want_o = [10 + (t + 1).sum(), 10 - (t + 1).sum(), min(0, (3 - 2 * t).min()), max(0, (-10 * t).max()),
              -1 & ~0b1111, 1 | (16 << t).sum(), np.bitwise_xor.reduce(3 << t), 102, *(7 * t), 5 + t.sum(), 30]
    # inc with bound 2 from 0: 1, 2, 0, 1; dec with bound 10 from 1: 0, 10, 9, 8
    want_u = [1 << 28, 0x8000_0003, 1, 8]
    assert o.tolist() == [int(v) for v in want_o]
    assert u.tolist() == want_u
