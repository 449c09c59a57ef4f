"""The project demo: dot([1,2,3],[4,5,6]) = 32 with one 4-thread block, shared
memory and a barrier; the fourth thread is masked off by n."""
import numpy as np

KERNEL = "dot"
FEATURES = ["dot-product", "shared-memory", "barrier", "demo"]


def launch():
    a = np.array([1, 2, 3], dtype=np.int32)
    b = np.array([4, 5, 6], dtype=np.int32)
    out = np.zeros(1, dtype=np.int32)
    return (1,), (4,), [a, b, out, np.int32(3)]


def reference(a, b, out, n):
    return [a, b, np.array([np.dot(a[:n], b[:n])], dtype=np.int32), None]
