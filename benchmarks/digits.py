"""The digit classifier in the model (qwengpu/digits): test images classified by mlp.cu on the
stand-in merged model (fast path, fp32, replay checked), every logit compared bit for bit with
NumPy's reference; prints a line per launch and a JSON summary (accuracy, tokens and seconds an
image, the launch prompt's tokens).

    .venv/bin/python benchmarks/digits.py [--images 50] [--dtype float32|bfloat16]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu import Device, digits  # noqa: E402
from qwengpu.driver import protocol  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=50)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = ap.parse_args()
    train, test = digits.load()
    start = time.perf_counter()
    net = digits.train(train)
    trained = time.perf_counter() - start
    dev = Device("model", dtype=args.dtype, check="replay")
    fn = dev.compile(digits.KERNEL.read_text()).get_function("mlp")
    right = tokens = prompt = 0
    seconds = 0.0
    for first in range(0, args.images, digits.IMAGES_PER_LAUNCH):
        images = test.images[first:min(args.images, first + digits.IMAGES_PER_LAUNCH)]
        logits, result = digits.run_kernel(fn, net, images)
        same = np.array_equal(logits.view(np.uint32), digits.reference_logits(net, images).view(np.uint32))
        if not same:
            sys.exit(f"images {first}..: the model's logits differ from NumPy's")
        labels = test.labels[first:first + len(images)]
        right += int((logits.argmax(1) == labels).sum())
        launch = fn.launch(len(images), max(digits.HIDDEN, digits.CLASSES),
                           [*net.arrays(), images.ravel(), np.zeros(len(images) * digits.CLASSES, np.float32)])
        prompt += len(protocol.prompt(launch))
        tokens += result.tokens
        seconds += result.seconds
        print(f"images {first}-{first + len(images) - 1}: labels {labels.tolist()} predicted "
              f"{logits.argmax(1).tolist()}, {result.tokens:,} tokens, {result.seconds:.1f} s", flush=True)
    n = args.images
    print(json.dumps({"images": n, "dtype": args.dtype, "accuracy": right / n, "identical_to_numpy": True,
                      "generated_tokens_per_image": round(tokens / n), "prompt_tokens_per_image": round(prompt / n),
                      "seconds_per_image": round(seconds / n, 2), "training_seconds": round(trained, 1),
                      "test_accuracy_500_numpy": float((digits.reference_logits(net, test.images).argmax(1)
                                                        == test.labels).mean())}))


if __name__ == "__main__":
    main()
