"""The digit classifier (qwengpu/digits): its fp32 fma against MPFR, its training, and its kernel's
logits bit for bit against the NumPy reference on the interpreter (test images) and on the model
(one image, CI's share; benchmarks/digits.py runs 50)."""
import gmpy2
import numpy as np
import pytest

from qwengpu import Device, digits

FP32 = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True, round=gmpy2.RoundToNearest)


def mpfr_fma(a: float, b: float, c: float) -> np.float32:
    return np.float32(float(FP32.fma(gmpy2.mpfr(float(a)), gmpy2.mpfr(float(b)), gmpy2.mpfr(float(c)))))


def test_fma32_is_mpfrs_fma():
    """Random finite operands of many magnitudes, products that nearly cancel the addend or sit
    near an fp32 tie, subnormal results, and a case where a float64 sum rounds twice."""
    rng = np.random.default_rng(7)
    n = 4000
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)).astype(np.float32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)).astype(np.float32)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-120, 120, n)).astype(np.float32)
    c[: n // 4] = -(a[: n // 4].astype(np.float64) * b[: n // 4]).astype(np.float32)      # near cancellation
    c[n // 4: n // 2] = (a[n // 4: n // 2].astype(np.float64) * b[n // 4: n // 2]
                         * (1 + 2.0 ** -25)).astype(np.float32)                          # near ties
    tiny = slice(n // 2, n // 2 + 200)
    a[tiny], b[tiny] = a[tiny] * np.float32(2.0 ** -60), b[tiny] * np.float32(2.0 ** -40)  # subnormal products
    # double rounding: (1 + 2^-12)^2 + 2^-80 = 1 + 2^-11 + 2^-24 + 2^-80 lies just past the fp32 tie
    # 1 + 2^-11 + 2^-24; its float64 sum is the tie, which rounds to even (down), the exact sum up
    a = np.append(a, np.float32(1 + 2.0 ** -12))
    b = np.append(b, np.float32(1 + 2.0 ** -12))
    c = np.append(c, np.float32(2.0 ** -80))
    got = digits.fma32(a, b, c)
    want = np.array([mpfr_fma(x, y, z) for x, y, z in zip(a, b, c)], np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.fixture(scope="module")
def data():
    train, test = digits.load()
    return train, test, digits.train(train)


def test_the_training_is_deterministic_and_the_network_classifies(data):
    train, test, net = data
    again = digits.train(train)
    assert all(np.array_equal(x.view(np.uint32), y.view(np.uint32)) for x, y in zip(net.arrays(), again.arrays()))
    assert (len(train.images), len(test.images)) == (digits.TRAIN_IMAGES, 1797 - digits.TRAIN_IMAGES)
    accuracy = (digits.reference_logits(net, test.images).argmax(1) == test.labels).mean()
    assert accuracy >= 0.9


def test_the_weights_and_a_launch_fit_global_memory():
    from qwengpu import isa
    assert digits.IMAGES_PER_LAUNCH >= 1
    assert digits.IMAGES_PER_LAUNCH == 5              # (1024 - 610) // 74: the lane words, as before pages
    assert digits.WEIGHT_WORDS + digits.IMAGES_PER_LAUNCH * (digits.PIXELS + digits.CLASSES) <= isa.LANE_GLOBAL_WORDS


def check_launch(dev: Device, net, images: np.ndarray):
    fn = dev.compile(digits.KERNEL.read_text()).get_function("mlp")
    logits, result = digits.run_kernel(fn, net, images)
    want = digits.reference_logits(net, images)
    assert np.array_equal(logits.view(np.uint32), want.view(np.uint32))
    return result


def test_the_kernel_gives_numpys_logits_on_the_interpreter(data):
    _, test, net = data
    for start in range(0, 20, digits.IMAGES_PER_LAUNCH):
        check_launch(Device("interp"), net, test.images[start:start + digits.IMAGES_PER_LAUNCH])


def test_a_launch_takes_one_to_images_per_launch_images(data):
    _, test, net = data
    fn = Device("interp").compile(digits.KERNEL.read_text()).get_function("mlp")
    with pytest.raises(ValueError, match="1 to"):
        digits.run_kernel(fn, net, test.images[:digits.IMAGES_PER_LAUNCH + 1])


def test_one_image_in_the_model(data):
    from qwengpu.model.merge import default_merged_model
    _, test, net = data
    default_merged_model()
    result = check_launch(Device("model", check="replay"), net, test.images[:1])
    assert 0 < result.tokens < 20_000
