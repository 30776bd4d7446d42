"""`longest_run`: the largest k a monotone test holds for, whatever the answer's place."""

from __future__ import annotations

from roller.capture.shared_run import longest_run


def test_every_answer_is_found_and_zero_is_never_asked() -> None:
    for count in range(8):
        for answer in range(count + 1):
            asked: list[int] = []

            def holds(k: int, answer: int = answer, asked: list[int] = asked) -> bool:
                asked.append(k)
                return k <= answer

            assert longest_run(count, holds) == answer, (count, answer)
            assert 0 not in asked and all(0 < k <= count for k in asked)


def test_the_usual_answers_take_one_or_two_questions() -> None:
    asked: list[int] = []
    assert longest_run(100, lambda k: asked.append(k) is None) == 100
    assert asked == [100]
    asked.clear()
    assert longest_run(100, lambda k: asked.append(k) is None and k < 100) == 99
    assert asked == [100, 99]
