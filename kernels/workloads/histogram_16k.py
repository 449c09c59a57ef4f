"""256-bin histogram of 16,384 bytes packed in 4,096 words (global words 0-4095; the bins at
4096-4351): 16 blocks of 16 threads, privatised shared-memory bins (256 words), a grid-stride
loop of four shared atomicAdds a word, and a merge of the non-empty bins with global atomicAdd.
Bytes from a binomial distribution (crowded middle bins, empty tails) plus a run of 0xFF."""
import numpy as np

KERNEL = "histogram_16k"
FEATURES = ["workload", "histogram", "atomics", "atomic-add", "shared-atomics", "shared-memory", "barrier",
            "grid-stride", "loop", "byte-unpack", "multi-block", "multi-warp", "large-memory"]

N_BYTES, GRID, BLOCK = 16384, 16, 16


def launch():
    rng = np.random.default_rng(9106)
    data = rng.binomial(255, 0.4, N_BYTES).astype(np.uint8)
    data[5000:5300] = 0xFF
    d = data.astype(np.uint32)
    words = d[0::4] | d[1::4] << 8 | d[2::4] << 16 | d[3::4] << 24   # byte 0 in the low 8 bits
    bins = np.zeros(256, dtype=np.uint32)
    return (GRID,), (BLOCK,), [words, bins, np.int32(words.size)]


def reference(words, bins, n_words):
    w = words[:n_words]
    data = np.concatenate([(w >> shift) & 0xFF for shift in (0, 8, 16, 24)])
    counts = np.bincount(data, minlength=256)
    return [words, (bins + counts).astype(np.uint32), None]
