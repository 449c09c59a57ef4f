"""Stream compaction keeping positive values in order: ballot + popc ranks in
each warp, shared-memory warp offsets, two barriers per chunk, a chunk loop;
the unused tail of out is untouched."""
import numpy as np

KERNEL = "stream_compact"
FEATURES = ["stream-compaction", "warp-vote", "vote-ballot", "popc", "shared-memory", "barrier", "loop"]

N, BLOCK = 45, 16


def launch():
    rng = np.random.default_rng(503)
    data = rng.integers(-50, 50, N).astype(np.int32)
    data[:4] = [0, -2**31, 2**31 - 1, 1]          # 0 and INT_MIN are dropped
    data[16:20] = -1                               # a warp with no keepers
    out = np.full(N, -7, dtype=np.int32)
    count = np.array([-7], dtype=np.int32)
    return (1,), (BLOCK,), [data, out, count, np.int32(N)]


def reference(data, out, count, n):
    kept = data[:n][data[:n] > 0]
    out = out.copy()
    out[:kept.size] = kept
    return [data, out, np.array([kept.size], dtype=np.int32), None]
