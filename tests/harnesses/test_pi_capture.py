"""Finalize over real Pi 0.73.1 runs (tape + session file), one per API roller configures.

Every call is attributed by the provider response id the session file records; where
the wire carries the session id too (Responses API only) it must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .fixture_capture import finalize_fixture, native_copy, tape_of

FIXTURES = {
    "responses-tool-error": "openai-responses",
    "completions-tool-error": "openai-chat-completions",
    "anthropic-tool-error": "anthropic-messages",
    "responses-plain": "openai-responses",
}


@pytest.mark.parametrize("name", FIXTURES)
def test_every_call_attributed_to_the_one_root(name: str, tmp_path: Path) -> None:
    capture = finalize_fixture("pi", name, tmp_path)
    manifest = capture.manifest
    assert manifest.capture_status == "complete", manifest.capture_errors
    assert manifest.capabilities.subtasks == "not_available_in_bundled_profile"
    assert manifest.capabilities.native_output_coverage == "per_session_assistant_count"
    assert manifest.coverage.checked and manifest.coverage.ok
    (root,) = manifest.participants
    assert root.role == "root"
    assert [c.call_id for c in capture.calls] == root.call_ids
    for call in capture.calls:
        assert call.protocol == FIXTURES[name]
        assert call.identity_status == "attributed"
        assert call.attribution.basis == "native:response_id"
        assert call.export_status == "exportable"
    assert not [r for r in capture.relations if r.type not in ("result_in_context",)]


@pytest.mark.parametrize("name", FIXTURES)
def test_the_wire_session_id_cross_checks_where_it_exists(name: str, tmp_path: Path) -> None:
    capture = finalize_fixture("pi", name, tmp_path)
    (root,) = capture.manifest.participants
    for call in capture.calls:
        headers = {k.lower(): v for k, v in call.request.headers}
        if FIXTURES[name] == "openai-responses":
            assert headers["session_id"] == root.native_ids["session_id"]
            assert call.attribution.wire_participant_key == headers["session_id"]
            assert call.attribution.cross_check == "agree"
        else:
            assert "session_id" not in headers
            assert call.attribution.cross_check == "absent"


@pytest.mark.parametrize(
    "name", ["responses-tool-error", "completions-tool-error", "anthropic-tool-error"]
)
def test_the_failing_command_result_enters_the_next_call(name: str, tmp_path: Path) -> None:
    capture = finalize_fixture("pi", name, tmp_path)
    first, second = capture.calls
    (rel,) = capture.relations
    assert (rel.type, rel.source_call_id, rel.target_call_id) == (
        "result_in_context",
        first.call_id,
        second.call_id,
    )
    (result,) = second.tool_refs.results
    assert result.is_error in (True, None)  # Chat Completions carries no error flag


def test_a_call_the_session_does_not_record_is_unattributed(tmp_path: Path) -> None:
    """Remove the session's record of the last response: that call loses its owner, the
    wire's session id notwithstanding, and the capture is partial."""
    native = native_copy("pi", "responses-tool-error", tmp_path)
    (path,) = native.glob("sessions/*/*.jsonl")
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    capture = finalize_fixture("pi", "responses-tool-error", tmp_path, native)
    first, second = capture.calls
    assert first.identity_status == "attributed"
    assert second.identity_status == "unattributed" and second.participant_id is None
    assert capture.manifest.capture_status == "partial"
    assert len(tape_of("pi", "responses-tool-error", tmp_path / "t").exchanges) == 2
