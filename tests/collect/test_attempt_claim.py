"""An attempt is claimed with its inputs in place: the directory appears, by one rename,
already holding raw/attempt.json. A roller killed while it claims leaves no attempt or a
whole one — never an empty attempt directory that cannot be finalized (the e2e kill -9
test once caught one judged invalid: "no raw/attempt.json")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roller.capture.layout import SamplePaths
from roller.collect.session import claim_attempt


def test_the_attempt_appears_with_its_inputs_and_nothing_else_is_left(tmp_path: Path) -> None:
    sample = SamplePaths(tmp_path / "samples" / "s1")
    attempt = sample.next_attempt()
    claim_attempt(attempt, b'{"x": 1}\n')
    assert json.loads(attempt.attempt_inputs.read_bytes()) == {"x": 1}
    assert [p.name for p in sample.capture.iterdir()] == [attempt.root.name]  # no staging
    assert sample.next_attempt().attempt_number == attempt.attempt_number + 1


def test_a_claimed_attempt_cannot_be_claimed_again(tmp_path: Path) -> None:
    sample = SamplePaths(tmp_path / "samples" / "s1")
    attempt = sample.next_attempt()
    claim_attempt(attempt, b"{}\n")
    with pytest.raises(OSError):
        claim_attempt(attempt, b'{"other": true}\n')  # another runner's claim fails
    assert attempt.attempt_inputs.read_bytes() == b"{}\n"  # the first claim stands
    assert [p.name for p in sample.capture.iterdir()] == [attempt.root.name]
