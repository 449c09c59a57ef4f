"""`qgpu eval chat`: does the model use its GPU, and does it get the numbers right?

Two built-in sets, each item with an exact checker:
  normal    everyday numeric questions; right when the answer's last integer is the item's.
            Each item carries an expression of the normal-mode language that computes its
            answer (tests check the two agree); the model is not shown it.
  advanced  kernel-writing tasks; a try is one gpu_cuda call, right when one of the arrays it
            returns equals the item's expected array. first_try: the first call was right;
            within_3_tries: one of the first three was.
Every item starts from a fresh conversation (the system turn alone). On the stand-in (random
weights, ChatSession.is_standin) the run is a smoke test and the report says its scores are
meaningless.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from qwengpu.chat.session import ChatSession, Turn, is_standin
from qwengpu.driver import runtime

STANDIN_NOTE = ("stand-in checkpoint (random weights): it cannot chat, so these scores are meaningless; "
                "the run only shows the eval works end to end")
TURN_TOKENS = {"normal": 1024, "advanced": 3072}     # assistant tokens per item on a real model
STANDIN_TURN_TOKENS = 4                              # ... on the stand-in: a smoke test


@dataclass(frozen=True)
class Question:
    question: str
    answer: int
    expression: str          # the answer in the normal-mode language (checked by the tests)


@dataclass(frozen=True)
class Task:
    prompt: str
    expected: tuple[int, ...]


NORMAL = [
    Question("A box holds 24 eggs. How many eggs are in 17 boxes?", 408, "24 * 17"),
    Question("I bought 3 notebooks at 4 dollars each and 2 pens at 3 dollars each. How many dollars did I spend?",
             18, "3 * 4 + 2 * 3"),
    Question("What is 1234 times 5678?", 7006652, "1234 * 5678"),
    Question("How many seconds are there in a day?", 86400, "24 * 60 * 60"),
    Question("What is the sum of 12, 45, 7, 88, 23 and 61?", 236, "sum([12, 45, 7, 88, 23, 61])"),
    Question("A car drives at 65 km per hour for 7 hours. How many km does it cover?", 455, "65 * 7"),
    Question("1000 dollars are shared equally among 7 people in whole dollars. How many dollars does each get?",
             142, "1000 / 7"),
    Question("1000 dollars are shared equally among 7 people in whole dollars. How many dollars are left over?",
             6, "1000 % 7"),
    Question("What is 2 to the power of 20?", 1048576, "pow(2, 20)"),
    Question("Which is the largest of 314, 271, 1618, 577 and 1414?", 1618, "max([314, 271, 1618, 577, 1414])"),
    Question("Which is the smallest of 42, -17, 8, -3 and 0?", -17, "min([42, -17, 8, -3, 0])"),
    Question("What is the dot product of [3, 1, 4, 1, 5] and [9, 2, 6, 5, 3]?", 73,
             "dot([3, 1, 4, 1, 5], [9, 2, 6, 5, 3])"),
    Question("What is the product of the whole numbers from 1 to 10?", 3628800,
             "product([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])"),
    Question("The temperature rose from -12 degrees to 7 degrees. By how many degrees did it rise?", 19, "7 - -12"),
    Question("A field is 37 m by 52 m. What is its area in square metres?", 1924, "37 * 52"),
    Question("How many minutes are there in a week?", 10080, "7 * 24 * 60"),
    Question("My test scores are 90, 85, 77, 68 and 95. What is their average, rounded down?", 83,
             "sum([90, 85, 77, 68, 95]) / 5"),
    Question("A loaf needs 250 g of flour. How many grams of flour do 13 loaves need?", 3250, "250 * 13"),
    Question("A bus leaves at minute 0 and then every 17 minutes. How many buses leave in the first 300 minutes, "
             "counting the one at minute 0?", 18, "300 / 17 + 1"),
    Question("What is the remainder of 123456789 divided by 97?", 39, "123456789 % 97"),
    Question("How many hours are there in 365 days?", 8760, "365 * 24"),
    Question("Three friends split a bill of 187 dollars, each share rounded up to whole dollars. How many dollars "
             "does each pay?", 63, "(187 + 2) / 3"),
    Question("What is the sum of the squares of 1 to 10?", 385, "dot([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "
             "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10])"),
    Question("What is the sum of the whole numbers from 1 to 100?", 5050, "100 * 101 / 2"),
    Question("A phone plan costs 35 dollars a month plus a one-off fee of 120 dollars. What does it cost over two "
             "years?", 960, "35 * 24 + 120"),
    Question("How many years are there between 1987 and 2026?", 39, "abs(1987 - 2026)"),
]

ADVANCED = [
    Task("Write a CUDA kernel that squares every element of the array [3, -1, 4, 1, 5, 9, -2, 6] into an "
         "output array, and run it on the GPU.", (9, 1, 16, 1, 25, 81, 4, 36)),
    Task("Write a CUDA kernel that reverses the array [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] into an output array, and "
         "run it on the GPU.", (10, 9, 8, 7, 6, 5, 4, 3, 2, 1)),
    Task("Write a CUDA kernel that computes the inclusive prefix sums of [5, 3, 8, 1, 9, 2, 7, 4], and run it on "
         "the GPU.", (5, 8, 16, 17, 26, 28, 35, 39)),
    Task("Write a CUDA kernel that computes the dot product of [1, 2, 3, 4, 5, 6, 7, 8] and "
         "[8, 7, 6, 5, 4, 3, 2, 1] into a one-element output array, and run it on the GPU.", (120,)),
    Task("Write a CUDA kernel that counts how often each of the values 0, 1, 2, 3 occurs in "
         "[0, 1, 2, 3, 1, 2, 3, 3, 3, 0, 2, 1] into a 4-element histogram, and run it on the GPU.", (2, 3, 3, 4)),
    Task("Write a CUDA kernel that multiplies the 3x3 matrix [[1, 2, 3], [4, 5, 6], [7, 8, 9]] (row-major) by "
         "the vector [1, 0, -1], and run it on the GPU.", (-2, -2, -2)),
]

_INTEGER = re.compile(r"-?\d+(?:,\d{3})*(?!\d)")
_ARRAY_LINE = re.compile(r"^\w+ = \[([^\]]*)\]$", re.M)


def final_integer(text: str) -> int | None:
    """The last integer an answer states (thousands separators allowed: 7,006,652)."""
    found = _INTEGER.findall(text)
    return int(found[-1].replace(",", "")) if found else None


def returned_arrays(response: str) -> list[tuple[int, ...]]:
    """The arrays a gpu_cuda response lists ("y = [1, 2]" lines)."""
    return [tuple(int(v) for v in m[1].split(",") if v.strip()) for m in _ARRAY_LINE.finditer(response)]


def score_normal(item: Question, turn: Turn) -> dict:
    return {"used_gpu": any(c.call.name == "gpu_eval" for c in turn.calls),
            "correct": final_integer(turn.answer) == item.answer}


def score_advanced(item: Task, turn: Turn) -> dict:
    tries = [c for c in turn.calls if c.call.name == "gpu_cuda"]
    right = [i + 1 for i, c in enumerate(tries) if item.expected in returned_arrays(c.response)]
    return {"tries": len(tries), "right_at": right[0] if right else None,
            "first_try": right[:1] == [1], "within_3_tries": bool(right) and right[0] <= 3}


def run_eval(model: str | Path, *, max_tokens: int | None = None, launch_max_tokens: int | None = None,
             on_item: Callable[[str, int, dict], None] | None = None, sets=None) -> dict:
    """Both sets on the merged checkpoint `model`: the summary {"normal": {"n", "used_gpu",
    "correct"}, "advanced": {"n", "first_try", "within_3_tries"}}, with "model", "standin", "note"
    (the stand-in's) and "items" (per mode, per item what happened).
    `max_tokens`: assistant tokens per item (default TURN_TOKENS, on the stand-in
    STANDIN_TURN_TOKENS); `on_item(mode, index, record)` after each item; `sets` replaces
    (NORMAL, ADVANCED)."""
    standin = is_standin(runtime.load_config(model))
    items = {}
    limits = {} if launch_max_tokens is None else {"launch_max_tokens": launch_max_tokens}
    for mode, questions in zip(("normal", "advanced"), sets or (NORMAL, ADVANCED)):
        cap = max_tokens or (STANDIN_TURN_TOKENS if standin else TURN_TOKENS[mode])
        session = ChatSession(model, mode, max_tokens=cap, **limits) if questions else None
        items[mode] = [_run_item(session, mode, i, item, on_item) for i, item in enumerate(questions)]
    return {**summary(items), "model": str(model), "standin": standin,
            **({"note": STANDIN_NOTE} if standin else {}), "items": items}


def _run_item(session: ChatSession, mode: str, index: int, item, on_item) -> dict:
    session.reset()                    # a fresh conversation
    turn = session.ask(item.question if mode == "normal" else item.prompt)
    score = score_normal(item, turn) if mode == "normal" else score_advanced(item, turn)
    record = {**asdict(item), **score, "tokens": turn.tokens, "launch_tokens": sum(c.tokens for c in turn.calls),
              "seconds": round(turn.seconds, 3), "reply": turn.answer, "stopped": turn.stopped}
    if on_item:
        on_item(mode, index, record)
    return record


def summary(items: dict) -> dict:
    normal, advanced = items["normal"], items["advanced"]
    return {"normal": {"n": len(normal), "used_gpu": sum(r["used_gpu"] for r in normal),
                       "correct": sum(r["correct"] for r in normal)},
            "advanced": {"n": len(advanced), "first_try": sum(r["first_try"] for r in advanced),
                         "within_3_tries": sum(r["within_3_tries"] for r in advanced)}}
