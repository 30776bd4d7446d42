"""The summary line under the call tree: counts read as English, whatever they are."""

from __future__ import annotations

from typing import Any

from roller.view.render import summary_line


def _summary(**counts: int) -> dict[str, Any]:
    return {
        "harness": "opencode",
        "harness_version": "1.18.33",
        "sample_id": "sample-0001",
        "attempt": 1,
        "exportable_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "execution_status": "completed",
        "capture_status": "complete",
        "lifecycle": None,
        "unattributed_calls": 0,
        "ambiguous_calls": 0,
        "capture_errors": [],
        **counts,
    }


def test_one_of_each_is_singular() -> None:
    line = summary_line(_summary(calls=1, participants=1, relations=1))
    assert "· 1 call · 1 participant · 1 relation ·" in line


def test_none_and_several_are_plural() -> None:
    line = summary_line(_summary(calls=3, participants=2, relations=0))
    assert "· 3 calls · 2 participants · 0 relations ·" in line
