"""qwengpu: a 4-lane SIMT GPU compiled into the weights of a Qwen3.5 model."""
from qwengpu.errors import (CompileError, DeadlockError, ExecutionError, LaunchError, MachineLimitError,
                            MemoryFault, QwenGpuError, UnsupportedError)
from qwengpu.api import Device, Function, LaunchResult, Module
from qwengpu.toolchain.frontend import compile_cuda

__all__ = ["CompileError", "DeadlockError", "ExecutionError", "LaunchError", "MachineLimitError",
           "MemoryFault", "QwenGpuError", "UnsupportedError",
           "Device", "Function", "LaunchResult", "Module", "compile_cuda"]
