"""atomicSub on int and unsigned words: four accounts, signed balances cross
zero and unsigned ones wrap below zero; multi-block, order independent."""
import numpy as np

KERNEL = "atomic_sub"
FEATURES = ["atomics", "atomic-sub", "global-memory", "unsigned", "multi-block", "wraparound", "c++-kernel"]

N, GRID, BLOCK = 40, 3, 16


def launch():
    rng = np.random.default_rng(403)
    amount = rng.integers(-20, 100, N).astype(np.int32)
    balance = np.array([500, 0, -2**31 + 100, 2**31 - 1], dtype=np.int32)
    ubalance = np.array([500, 0, 100, 2**32 - 1], dtype=np.uint32)
    return (GRID,), (BLOCK,), [amount, balance, ubalance, np.int32(N)]


def reference(amount, balance, ubalance, n):
    drawn = np.zeros(4, dtype=np.int64)
    np.add.at(drawn, np.arange(n) % 4, amount[:n].astype(np.int64))
    signed = (balance.astype(np.int64) - drawn).astype(np.int32)
    unsigned = ((ubalance.astype(np.int64) - drawn) % 2**32).astype(np.uint32)
    return [amount, signed, unsigned, None]
