"""The model inside the model: a digit classifier whose inference runs as a CUDA kernel (mlp.cu)
on the machine in the model.

The network is a 64-8-10 multilayer perceptron with ReLU, trained here in NumPy, deterministically
(fixed seed, full-batch gradient descent with momentum, no shuffling), its weights rounded to 4
significant bits so that each costs one token to load (`short_floats`), on the 8x8 handwritten
digits that scikit-learn ships inside its package (`sklearn.datasets.load_digits`: 1,797 images of
pixels 0..16, no download). A seeded permutation splits them: TRAIN_IMAGES to train on, the rest to
test. Its size is set by the machine: the weights (610 words) and a launch's images and logits fit
in global memory's first 1,024 words (isa.LANE_GLOBAL_WORDS: those a warp loads in one pass and the
copy-out carries, so every engine runs it), IMAGES_PER_LAUNCH images a launch, one thread block each.

`reference_logits` computes the logits in NumPy with the kernel's operations in the kernel's order
(an exactly rounded fp32 fma, `fma32`, a step): the model's logits must equal them bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qwengpu import isa
from qwengpu.errors import QwenGpuError

PIXELS, HIDDEN, CLASSES = 64, 8, 10
PIXEL_MAX = 16                          # load_digits' pixels are 0..16; the kernel reads pixel / 16
TRAIN_IMAGES = 1297                     # of 1,797: the other 500 are the test images
SPLIT_SEED = TRAIN_SEED = 0
KERNEL = Path(__file__).with_name("mlp.cu")
WEIGHT_WORDS = HIDDEN * PIXELS + HIDDEN + CLASSES * HIDDEN + CLASSES
IMAGES_PER_LAUNCH = (isa.LANE_GLOBAL_WORDS - WEIGHT_WORDS) // (PIXELS + CLASSES)


@dataclass(frozen=True)
class Network:
    """float32 weights: w1 [HIDDEN, PIXELS], b1 [HIDDEN], w2 [CLASSES, HIDDEN], b2 [CLASSES]."""
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray

    def arrays(self) -> list[np.ndarray]:
        """The kernel's first four arguments: the weight matrices input-major (mlp.cu)."""
        return [np.ascontiguousarray(self.w1.T).ravel(), self.b1, np.ascontiguousarray(self.w2.T).ravel(), self.b2]


@dataclass(frozen=True)
class Digits:
    """Images as the kernel reads them (float32 pixel / 16, exact) and their labels."""
    images: np.ndarray          # [n, PIXELS] float32
    labels: np.ndarray          # [n] int


def load() -> tuple[Digits, Digits]:
    """(train, test) from scikit-learn's copy of the digits (an optional dependency)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise QwenGpuError("the digit classifier needs scikit-learn, whose package holds the digits: "
                           "pip install scikit-learn (or pip install -e '.[digits]')") from None
    data = load_digits()
    images = (data.data / PIXEL_MAX).astype(np.float32)        # k / 16: exact in fp32
    order = np.random.default_rng(SPLIT_SEED).permutation(len(images))
    train, test = order[:TRAIN_IMAGES], order[TRAIN_IMAGES:]
    return Digits(images[train], data.target[train]), Digits(images[test], data.target[test])


def train(data: Digits, epochs: int = 1000, tune: tuple[int, int] = (300, 100)) -> Network:
    """Full-batch gradient descent with momentum on softmax cross-entropy, in float64 from a
    seeded initialisation, for `epochs`; then w1 is made short (`short_floats`) and the rest
    tuned for tune[0] epochs around it, then w2, and the biases tuned for tune[1]. Rounded to
    float32 at the end (the short weights exactly)."""
    rng = np.random.default_rng(TRAIN_SEED)
    params = [rng.normal(0, PIXELS ** -0.5, (HIDDEN, PIXELS)), np.zeros(HIDDEN),
              rng.normal(0, HIDDEN ** -0.5, (CLASSES, HIDDEN)), np.zeros(CLASSES)]
    x, target = data.images.astype(np.float64), np.eye(CLASSES)[data.labels]
    _fit(params, x, target, epochs, frozen=())
    params[0] = short_floats(params[0]).astype(np.float64)
    _fit(params, x, target, tune[0], frozen=(0,))
    params[2] = short_floats(params[2]).astype(np.float64)
    _fit(params, x, target, tune[1], frozen=(0, 2))
    return Network(*(p.astype(np.float32) for p in params))


def _fit(params: list, x: np.ndarray, target: np.ndarray, epochs: int, frozen: tuple,
         rate: float = 0.2, momentum: float = 0.9) -> None:
    """`epochs` steps on params (w1, b1, w2, b2) in place, leaving those indexed by `frozen`."""
    velocity = [np.zeros_like(p) for p in params]
    for _ in range(epochs):
        w1, b1, w2, b2 = params
        z = x @ w1.T + b1
        h = np.maximum(z, 0)
        out = h @ w2.T + b2
        p = np.exp(out - out.max(1, keepdims=True))
        g = (p / p.sum(1, keepdims=True) - target) / len(x)     # d loss / d logits
        gz = (g @ w2) * (z > 0)
        for k, grad in enumerate([gz.T @ x, gz.sum(0), g.T @ h, g.sum(0)]):
            if k not in frozen:
                velocity[k] = momentum * velocity[k] - rate * grad
                params[k] = params[k] + velocity[k]


SHORT_BITS = 3       # fraction bits a weight keeps


def short_floats(w) -> np.ndarray:
    """float32 values rounded (to nearest, ties away) to SHORT_BITS fraction bits: their low 20
    bits are zero, so a loaded weight is written back in one token (docs/machine.md, step 24)
    instead of three."""
    bits = np.asarray(w, np.float32).view(np.uint32).astype(np.uint64)
    low = 23 - SHORT_BITS
    return ((bits + (1 << (low - 1))) & ~np.uint64((1 << low) - 1)).astype(np.uint32).view(np.float32)


def fma32(a, b, c) -> np.ndarray:
    """fp32 fma(a, b, c) rounded once to nearest-even, for finite operands and results. a * b is
    exact in float64; the float64 sum is made round-to-odd from its exact error (TwoSum), and a
    round-to-odd value with 29 more bits than fp32 rounds to fp32 as the exact sum would.
    qwengpu/testing/fpemu.py has a directed-mode fma for the FDIV/FSQRT proofs, but the product
    may not import the test oracles, and it excludes subnormal results."""
    p = np.asarray(a, np.float32).astype(np.float64) * np.asarray(b, np.float32).astype(np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    s = p + c
    back = s - p
    err = (p - (s - back)) + (c - back)
    odd = (s.view(np.int64) & 1) == 1
    toward = np.nextafter(s, np.where(err > 0, np.inf, -np.inf))
    return np.where((err != 0) & ~odd, toward, s).astype(np.float32)


def reference_logits(net: Network, images: np.ndarray) -> np.ndarray:
    """[n, CLASSES] float32 logits, each an fma chain in the kernel's order: b1[j], then pixel 0,
    1, ..., ReLU (fmaxf), then b2[k] and hidden unit 0, 1, ..."""
    hidden = np.broadcast_to(net.b1, (len(images), HIDDEN))
    for i in range(PIXELS):
        hidden = fma32(net.w1[:, i], images[:, i:i + 1], hidden)
    hidden = np.where(hidden > 0, hidden, np.float32(0))      # fmaxf(acc, 0): +0 for -0 too
    logits = np.broadcast_to(net.b2, (len(images), CLASSES))
    for j in range(HIDDEN):
        logits = fma32(net.w2[:, j], hidden[:, j:j + 1], logits)
    return logits


def run_kernel(function, net: Network, images: np.ndarray):
    """One launch of mlp.cu (`function`: the compiled kernel) on up to IMAGES_PER_LAUNCH images:
    (logits [n, CLASSES] float32, the LaunchResult)."""
    n = len(images)
    if not 1 <= n <= IMAGES_PER_LAUNCH:
        raise ValueError(f"a launch classifies 1 to {IMAGES_PER_LAUNCH} images, not {n}")
    logits = np.zeros(n * CLASSES, np.float32)
    result = function(grid=n, block=max(HIDDEN, CLASSES),
                      args=[*net.arrays(), np.ascontiguousarray(images, np.float32).ravel(), logits])
    return logits.reshape(n, CLASSES), result


SHADES = " .:-=+*#%@"


def draw(image: np.ndarray) -> list[str]:
    """An 8x8 image as 8 lines of 16 characters (two a pixel), darker for more ink."""
    levels = np.rint(np.asarray(image, np.float64) * (len(SHADES) - 1)).astype(int).reshape(8, 8)
    return ["".join(SHADES[v] * 2 for v in row) for row in levels]
