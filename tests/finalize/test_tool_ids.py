"""Tool-call ids: the output's own, or the harness-assigned ones where the names fit.

Over a real Gemini CLI run (its API names no tool-call ids; the CLI assigns them).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.harnesses.fixture_capture import native_copy, tape_of

from roller.finalize.decode import DecodedCall, decode_exchange
from roller.finalize.tool_ids import tool_refs_of
from roller.harnesses import adapter_for
from roller.harnesses.base import AssignedToolId, NativeCapture


def _gemini(tmp_path: Path) -> tuple[list[DecodedCall], NativeCapture]:
    native = adapter_for("gemini-cli").read_native(native_copy("gemini-cli", "parallel", tmp_path))
    assert native is not None
    tape = tape_of("gemini-cli", "parallel", tmp_path)
    calls = [decode_exchange(n, ex, "gemini-cli") for n, ex in enumerate(tape.exchanges)]
    return calls, native


def test_assigned_ids_stand_in_where_the_output_names_none(tmp_path: Path) -> None:
    calls, native = _gemini(tmp_path)
    ids, problems = tool_refs_of(calls, native)
    assert problems == []
    assigned = [
        (c, i) for c, i in zip(calls, ids, strict=True) if c.response_id in native.assigned_tool_ids
    ]
    assert assigned and all(t.id is None for c, _ in assigned for t in c.emitted)
    for call, got in assigned:
        assert got == tuple(a.id for a in native.assigned_tool_ids[call.response_id or ""])
    without = [
        i for c, i in zip(calls, ids, strict=True) if c.response_id not in native.assigned_tool_ids
    ]
    assert all(i == () for i in without)  # no tool calls there, nothing invented


def test_a_list_naming_other_tools_assigns_nothing_and_is_reported(tmp_path: Path) -> None:
    calls, native = _gemini(tmp_path)
    rid = next(iter(native.assigned_tool_ids))
    listed = native.assigned_tool_ids[rid]
    wrong = tuple(AssignedToolId("not_that_tool", a.id) for a in listed)
    ids, problems = tool_refs_of(calls, replace(native, assigned_tool_ids={rid: wrong}))
    (call,) = [c for c in calls if c.response_id == rid]
    assert ids[call.sequence] == tuple(None for _ in call.emitted)
    names = [t.name for t in call.emitted]
    assert problems == [
        f"response {rid}: the native log assigns tool-call ids to "
        f"{['not_that_tool'] * len(listed)}, but the output calls {names}"
    ]
