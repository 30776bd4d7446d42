"""roller.capture.reader.CallLines: every record read once without its context, and any
of them read again whole from where its line starts, in either storage layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from roller.capture.call_check import CONTEXT_NOT_READ
from roller.capture.reader import CallLines, iter_calls
from roller.errors import CaptureFormatError
from tests.capture.test_compact_v3 import _published


@pytest.mark.parametrize("layout", ["compact/v2", "compact/v3"])
def test_light_records_and_whole_ones_are_the_calls(tmp_path: Path, layout: str) -> None:
    paths = _published("claude-code", "parallel", tmp_path, layout)
    calls = list(iter_calls(paths))
    lines = CallLines(paths)
    light = list(lines.light())
    assert len(light) == len(calls) > 3
    # where each line starts, read again whole: the record iter_calls gives
    assert lines.whole([at for at, _ in light]) == calls
    assert lines.whole([light[2][0], light[0][0]]) == [calls[2], calls[0]]
    for (_, call), full in zip(light, calls, strict=True):
        skip = {"context", "context_ref"}
        assert call.model_dump(exclude=skip) == full.model_dump(exclude=skip)
        if layout == "compact/v2":  # left unread where it is inline
            assert call.context is (None if full.context is None else CONTEXT_NOT_READ)
            assert call.context_ref is None
        else:  # the line names its stored context; the whole record holds it
            assert call.context is None and full.context_ref is None
            assert (call.context_ref is None) == (full.context is None)
    assert any(full.context is not None for full in calls)


def test_a_line_that_changed_is_an_error(tmp_path: Path) -> None:
    paths = _published("claude-code", "parallel", tmp_path, "compact/v2")
    lines = CallLines(paths)
    last = list(lines.light())[-1][0]
    data = paths.calls.read_bytes()
    paths.calls.write_bytes(data[: last + 10])
    with pytest.raises(CaptureFormatError, match="no whole line at byte"):
        lines.whole([last])
    paths.calls.write_bytes(data[:last] + b'{"schema":"x"}\n')
    with pytest.raises(CaptureFormatError, match="not a valid CallRecord"):
        lines.whole([last])
