"""qwengpu: a 4-lane SIMT GPU compiled into the weights of a Qwen3.5 model."""
from qwengpu.errors import (CompileError, DeadlockError, ExecutionError, LaunchError, MachineLimitError,
                            MemoryFault, QwenGpuError, UnsupportedError)

__all__ = ["CompileError", "DeadlockError", "ExecutionError", "LaunchError", "MachineLimitError",
           "MemoryFault", "QwenGpuError", "UnsupportedError"]
