"""Connected components of a 14-node path graph with random links, by
synchronous min-label propagation in one 16-thread block, looping until a
round changes nothing (a shared flag, three barriers per round). The
reference simulates the same synchronous rounds to predict their number."""
import numpy as np

KERNEL = "label_propagation"
FEATURES = ["shared", "barrier", "data-dependent-loop", "divergence", "multi-warp"]

N = 14


def launch():
    rng = np.random.default_rng(320)
    label = rng.permutation(1000)[:16].astype(np.int32) - 500
    link = (rng.random(16) < 0.5).astype(np.int32)
    link[1:8], link[8] = 1, 0           # a long component (several rounds), then others
    return (1,), (16,), [label, link, np.zeros(1, np.int32), np.int32(N)]


def reference(label, link, rounds, n):
    cur = label[:n].astype(np.int64)
    big = np.iinfo(np.int64).max
    linked = link[: n - 1].astype(bool)
    count = 0
    while True:
        count += 1
        left = np.concatenate([[big], np.where(linked, cur[:-1], big)])
        right = np.concatenate([np.where(linked, cur[1:], big), [big]])
        new = np.minimum(cur, np.minimum(left, right))
        if np.array_equal(new, cur):
            break
        cur = new
    out = label.copy()
    out[:n] = cur
    return [out, link, np.array([count], np.int32), None]
