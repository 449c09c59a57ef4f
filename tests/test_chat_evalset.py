"""The chat eval's sets and checkers (qwengpu/chat/evalset.py), without a model."""
import pytest

from qwengpu import Device
from qwengpu.chat.evalset import (ADVANCED, NORMAL, Question, Task, final_integer, returned_arrays,
                                  score_advanced, score_normal, summary)
from qwengpu.chat.expr import evaluate_on
from qwengpu.chat.session import GpuCall, Turn
from qwengpu.chat.tools import ToolCall


def test_the_sets_are_large_enough_and_distinct():
    assert len(NORMAL) >= 24 and len(ADVANCED) >= 5
    assert len({q.question for q in NORMAL}) == len(NORMAL) and len({t.prompt for t in ADVANCED}) == len(ADVANCED)


@pytest.mark.parametrize("item", NORMAL, ids=lambda q: q.expression)
def test_each_answer_is_what_its_expression_computes(item):
    # the answers are written by hand; the GPU (interpreter) computes the expressions
    assert evaluate_on(Device("interp", print_output=False), item.expression).value == item.answer


@pytest.mark.parametrize("text, want", [
    ("It is 7,006,652.", 7006652), ("-17 is the smallest", -17), ("17 boxes: 408 eggs", 408),
    ("No number here.", None), ("1,2,3 then 12", 12)])
def test_the_final_integer_of_an_answer(text, want):
    assert final_integer(text) == want


def test_returned_arrays_are_read_from_a_gpu_cuda_response():
    assert returned_arrays("x = [1, -2]\ny = []\nprintf output:\nhello") == [(1, -2), ()]


def gpu(name, response):
    return GpuCall(ToolCall(name, {}), response)


def test_scores():
    q = Question("?", 42, "6 * 7")
    assert score_normal(q, Turn("?", answer="So 42.", calls=[gpu("gpu_eval", "42")])) == {"used_gpu": True, "correct": True}
    assert score_normal(q, Turn("?", answer="43")) == {"used_gpu": False, "correct": False}
    t = Task("?", (1, 4))
    wrong, right = gpu("gpu_cuda", "x = [1, 2]\ny = [0, 0]"), gpu("gpu_cuda", "x = [1, 2]\ny = [1, 4]")
    assert score_advanced(t, Turn("?", calls=[right])) == {"tries": 1, "right_at": 1, "first_try": True,
                                                          "within_3_tries": True}
    late = score_advanced(t, Turn("?", calls=[wrong, gpu("gpu_cuda", "error: x"), wrong, right]))
    assert (late["right_at"], late["first_try"], late["within_3_tries"]) == (4, False, False)
    items = {"normal": [{"used_gpu": True, "correct": False}, {"used_gpu": True, "correct": True}],
             "advanced": [{"first_try": False, "within_3_tries": True}]}
    assert summary(items) == {"normal": {"n": 2, "used_gpu": 2, "correct": 1},
                              "advanced": {"n": 1, "first_try": 0, "within_3_tries": 1}}
