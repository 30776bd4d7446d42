"""The status stage: per-call statuses, and the capture's verdict (complete? raw/ kept?)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.finalize.synthetic import Exchange, decoded, session

from roller.capture.models import Coverage
from roller.finalize.attribute import attribute
from roller.finalize.status import Verdict, call_statuses, verdict

CHECKED_OK = Coverage(
    basis="per_message_id", checked=True, ok=True, expected=1, found=1, problems=[]
)
MISMATCH = Coverage(
    basis="per_message_id", checked=True, ok=False, expected=2, found=1, problems=["x"]
)
UNCHECKED = Coverage(basis="none", checked=False, ok=True, expected=0, found=0, problems=[])


def test_call_statuses_carry_each_calls_own_errors(tmp_path: Path) -> None:
    calls = decoded(
        tmp_path,
        [Exchange(roller=session("s1")), Exchange(body=b"{not json", roller=session("s1"))],
    )
    good, broken = call_statuses(calls, attribute(calls, None).calls)
    assert (good.capture, good.export, good.errors) == ("complete", "exportable", [])
    assert broken.capture == "partial" and broken.export == "blocked"
    assert [e.code for e in broken.errors] == ["context_not_json"]
    assert broken.blocked  # why it may not be exported is named


def test_an_unattributed_call_is_not_exportable(tmp_path: Path) -> None:
    calls = decoded(tmp_path, [Exchange()])
    (status,) = call_statuses(calls, attribute(calls, None).calls)
    assert status.export == "blocked"


CLEAN: dict[str, Any] = {
    "retention": "on-error",
    "execution": "completed",
    "call_captures": ["complete", "complete"],
    "call_executions": ["completed", "completed"],
    "participant_states": ["completed"],
    "lifecycle": "complete",
    "coverage": CHECKED_OK,
    "errors": False,
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, Verdict(complete=True, retained=False)),
        ({"coverage": UNCHECKED}, Verdict(complete=True, retained=False)),
        ({"lifecycle": "unsupported"}, Verdict(complete=True, retained=False)),
        # partial, so raw/ is kept on error
        ({"errors": True}, Verdict(complete=False, retained=True)),
        ({"call_captures": ["complete", "partial"]}, Verdict(complete=False, retained=True)),
        ({"lifecycle": "pending"}, Verdict(complete=False, retained=True)),
        ({"lifecycle": "unknown"}, Verdict(complete=False, retained=True)),
        # a coverage mismatch is a capture error too; alone it only makes the capture partial
        ({"coverage": MISMATCH}, Verdict(complete=False, retained=False)),
        # complete captures whose run went wrong keep raw/ on error
        ({"execution": "failed"}, Verdict(complete=True, retained=True)),
        ({"call_executions": ["completed", "interrupted"]}, Verdict(complete=True, retained=True)),
        ({"participant_states": ["completed", "failed"]}, Verdict(complete=True, retained=True)),
        # the policy decides alone when it is not on-error
        ({"retention": "full"}, Verdict(complete=True, retained=True)),
        ({"retention": "off", "errors": True}, Verdict(complete=False, retained=False)),
    ],
)
def test_verdict(change: dict[str, Any], expected: Verdict) -> None:
    assert verdict(**{**CLEAN, **change}) == expected
