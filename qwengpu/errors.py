"""Exceptions. Every message names the problem, and where it applies the
limit and the amount needed."""

class QwenGpuError(Exception):
    """Base class of every error qwengpu raises on bad input."""


class CompileError(QwenGpuError):
    """CUDA did not compile, or its PTX cannot be lowered (message has file:line)."""


class UnsupportedError(CompileError):
    """The PTX uses an instruction or feature the machine does not support."""


class MachineLimitError(QwenGpuError):
    """A kernel or launch exceeds a machine limit; the message names the limit and the amount."""


class LaunchError(QwenGpuError):
    """Bad launch configuration or arguments."""


class ExecutionError(QwenGpuError):
    """A fault while running: bad memory access, deadlocked barrier, step limit."""


class DeadlockError(ExecutionError):
    """A barrier that can never complete."""


class MemoryFault(ExecutionError):
    """An out-of-range or misaligned memory access."""


class QwenGpuWarning(UserWarning):
    """Something that compiles and runs, but likely not as meant (e.g. a warp shuffle by more
    lanes than a 4-lane warp has); the message starts with `FILE:LINE: warning:`."""


def plural(count: int, noun: str, nouns: str | None = None, *, grouped: bool = False) -> str:
    """`1 block`, `2 blocks` (`nouns`: an irregular plural; `grouped`: 1,234 with commas)."""
    number = f"{count:,}" if grouped else f"{count}"
    return f"{number} {noun if count == 1 else nouns or noun + 's'}"


__all__ = ["QwenGpuError", "CompileError", "UnsupportedError", "LaunchError", "ExecutionError",
           "DeadlockError", "MemoryFault", "MachineLimitError", "QwenGpuWarning", "plural"]


class ReplayMismatch(ExecutionError):
    """The model's token stream left the interpreter's (`mismatch` says where and which field)."""

    def __init__(self, message: str, mismatch=None):
        super().__init__(message)
        self.mismatch = mismatch
