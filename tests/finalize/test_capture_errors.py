"""The capture-error collector: order kept, `where` rendered as the message's prefix."""

from __future__ import annotations

from roller.capture.models import CaptureErrorRecord
from roller.finalize.capture_errors import CaptureError, CaptureErrors


def test_errors_keep_the_order_they_were_added_in() -> None:
    errors = CaptureErrors()
    assert not errors and errors.records() == []
    errors.extend("tape_problem", ["tape-000001.rtape: torn frame at byte 9"])
    errors.add("native_log_problem", "not JSON", "chats/a.jsonl:3")
    errors.extend("launch_error", [])
    errors.add("unattributed_calls", "1 generation call(s) could not be attributed by evidence")
    assert errors
    assert errors.errors[1] == CaptureError("native_log_problem", "not JSON", "chats/a.jsonl:3")
    assert errors.records() == [
        CaptureErrorRecord(code="tape_problem", message="tape-000001.rtape: torn frame at byte 9"),
        CaptureErrorRecord(code="native_log_problem", message="chats/a.jsonl:3: not JSON"),
        CaptureErrorRecord(
            code="unattributed_calls",
            message="1 generation call(s) could not be attributed by evidence",
        ),
    ]
