"""`roller export calls --format openai-messages` over real captures: every protocol's
calls as chat messages with their agent, the per-agent continuity flag, harness-private
fields left out and counted, and the summary line of what was left out and why."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from roller.capture.integrity import validate_attempt
from roller.capture.reader import Capture, read_attempt
from roller.errors import CaptureFormatError
from roller.export import openai_messages
from roller.export.continuity import continuity
from roller.export.omissions import Omissions
from roller.export.openai_messages import message_records
from roller.harnesses import registry
from roller.wire import codec_for
from roller.wire.chat import ChatMessage
from tests.export.real_captures import RealCaptures, first_agent_last
from tests.support.captures import REPO, roller


def test_records_name_participant_role_and_keep_origins(
    real_captures: RealCaptures,
) -> None:
    protocols = set()
    for capture in real_captures.values():
        omissions = Omissions("call")
        records = list(message_records(capture, True, omissions))
        roles = {p.participant_id: p.role for p in capture.manifest.participants}
        # a side request no codec reads (Hermes's `GET /api/v1/models` probe) has no
        # messages to write: it is left out and counted
        readable = [c for c in capture.calls if c.protocol is not None]
        assert omissions.written == len(records) == len(readable)
        for record in records:
            call = next(c for c in capture.calls if c.call_id == record["call_id"])
            protocols.add(record["protocol"])
            if call.participant_id is None:
                assert record["participant"] is None
            else:
                assert record["participant"]["role"] == roles[call.participant_id]
            if call.kind == "generation":
                # A request ends with its newest input (Claude Code's mid-turn notices are
                # `system` items of `messages`), never with the reply, which is apart.
                assert record["messages"] and record["messages"][-1]["role"] != "assistant"
            # The origins kept alongside rebuild the protocol's own items.
            origins = record["origin"]["messages"]
            assert len(origins) == len(record["messages"])
            assert all(
                o.get("content") or o.get("tool_calls") or o.get("reasoning") for o in origins
            )
    assert protocols == {
        "anthropic-messages",
        "openai-chat-completions",
        "openai-responses",
        "gemini",
    }


def test_continuity_marks_where_an_agents_context_is_not_an_extension(
    real_captures: RealCaptures,
) -> None:
    capture = real_captures[("opencode", "parallel")]
    root = next(p for p in capture.manifest.participants if p.role == "root")
    flows = continuity(capture.calls)
    title, first, last = root.call_ids
    # OpenCode's title request comes first; the real conversation does not extend it.
    assert flows[title].break_reason == "first_call"
    assert (flows[first].extends_previous, flows[first].break_reason) == (
        False,
        "not_a_continuation",
    )
    assert (flows[last].extends_previous, flows[last].extends_call_id) == (True, first)
    for p in capture.manifest.participants:
        if p.role == "child":
            assert flows[p.call_ids[0]].break_reason == "first_call"


def test_compaction_breaks_continuity(real_captures: RealCaptures) -> None:
    capture = real_captures[("claude-code", "parallel")]
    root = next(p for p in capture.manifest.participants if p.role == "root")
    calls = {c.call_id: c for c in capture.calls}
    last = calls[root.call_ids[-1]]
    # The harness replaced the history with a summary: same agent, not an extension.
    compacted = last.model_copy(
        update={"context": {**last.context, "messages": [{"role": "user", "content": "summary"}]}}
    )
    flows = continuity([calls[c] if c != last.call_id else compacted for c in root.call_ids])
    assert (flows[last.call_id].extends_previous, flows[last.call_id].break_reason) == (
        False,
        "not_a_continuation",
    )
    assert continuity([calls[c] for c in root.call_ids])[last.call_id].extends_previous


def test_private_fields_are_left_out_and_counted(real_captures: RealCaptures) -> None:
    capture = real_captures[("claude-code", "parallel")]
    bulky = {"session": {"id": "s"}, "events": ["dsh-event-payload"] * 50}
    calls = [
        c.model_copy(
            update={
                "context": {**c.context, "dsh_session_log": bulky, "dsh_plugin_packages": ["p@1"]}
            }
        )
        if c.sequence < 2
        else c
        for c in capture.calls
    ]
    # The fields are DeepSeek Harness's own (its package declares them): a capture of
    # another harness keeps them in `params`, one declared `deepseek` loses them.
    kept = Capture(capture.paths, capture.manifest, calls, capture.relations)
    other = [r for r in message_records(kept, False, Omissions("call")) if r["sequence"] < 2]
    assert [r["left_out"] for r in other] == [[]] * 2
    assert all({"dsh_session_log", "dsh_plugin_packages"} <= set(r["params"]) for r in other)
    harness = capture.manifest.harness.model_copy(update={"name": "deepseek"})
    manifest = capture.manifest.model_copy(update={"harness": harness})
    changed = Capture(capture.paths, manifest, calls, capture.relations)
    omissions = Omissions("call")
    records = list(message_records(changed, False, omissions))
    assert all("dsh-event-payload" not in json.dumps(r) for r in records)
    assert all(not {"dsh_session_log", "dsh_plugin_packages"} & set(r["params"]) for r in records)
    assert [r["left_out"] for r in records if r["sequence"] < 2] == [
        ["dsh_session_log", "dsh_plugin_packages"]
    ] * 2
    assert omissions.stripped == {"dsh_session_log": 2, "dsh_plugin_packages": 2}
    fields = "dsh_plugin_packages from 2, dsh_session_log from 2 call(s)"
    assert f"removed harness-private fields ({fields})" in omissions.summary()
    # The capture itself is untouched: it still holds what was sent.
    assert "dsh_session_log" in changed.calls[0].context


def test_the_docs_list_every_declared_private_field() -> None:
    text = (REPO / "docs" / "exports.md").read_text()
    section = text.split("## What training exports leave out", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))
    declared = {f for h in registry().harnesses for f in h.private_fields}
    assert declared and documented == declared


def test_round_trip_from_an_exported_record(real_captures: RealCaptures) -> None:
    """A JSON line alone (messages + origins) rebuilds the request's items."""
    capture = real_captures[("codex", "v2-fork")]
    for record in message_records(capture, False, Omissions("call")):
        line = json.loads(json.dumps(record))
        views = [
            ChatMessage(
                message=m,
                content_from=tuple(tuple(x) for x in o.get("content", [])),  # type: ignore[misc]
                tool_calls_from=tuple(tuple(x) for x in o.get("tool_calls", [])),  # type: ignore[misc]
                reasoning_from=tuple(tuple(x) for x in o.get("reasoning", [])),  # type: ignore[misc]
                envelopes=tuple((int(k), v) for k, v in o.get("envelopes", {}).items()),
                result_envelope=o.get("result_envelope"),
            )
            for m, o in zip(line["messages"], line["origin"]["messages"], strict=True)
        ]
        call = next(c for c in capture.calls if c.call_id == record["call_id"])
        back = codec_for("openai-responses").chat.restore(views)["input"]
        assert [i.get("call_id") or i.get("role") for i in back] == [
            i.get("call_id") or i.get("role") for i in call.context["input"]
        ]


def test_cli_reports_what_it_left_out(real_captures: RealCaptures, tmp_path: Path) -> None:
    run = real_captures.run("gemini-cli", "killed-child")
    out = tmp_path / "calls.jsonl"
    result = roller("export", "calls", str(run), "--format", "openai-messages", "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = out.read_text().splitlines()
    blocked = [
        json.loads(line) for line in lines if json.loads(line)["export_status"] != "exportable"
    ]
    assert lines and not blocked
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"exported {len(lines)} call(s); left out ")
    assert "blocked:" in line
    plain = roller("export", "calls", str(run))
    assert plain.stderr.strip().splitlines()[-1].split(";")[1:] == line.split(";")[1:]


def _records(capture: Capture, in_sequence: bool) -> tuple[list[dict[str, Any]], str]:
    omissions = Omissions("call")
    records = list(message_records(capture, True, omissions, in_sequence))
    return records, omissions.summary()


def test_calls_in_sequence_are_read_once_with_the_same_records(
    real_captures: RealCaptures, monkeypatch: pytest.MonkeyPatch
) -> None:
    # finalize writes calls.jsonl in sequence order and validation says so; the export
    # then decides each call's continuity as it reads it, never over all calls first
    two_pass = {key: _records(capture, False) for key, capture in real_captures.items()}

    def whole(*args: object) -> None:
        raise AssertionError("continuity over all calls, calls.jsonl read twice")

    monkeypatch.setattr(openai_messages, "continuity", whole)
    flows = 0
    for key, capture in real_captures.items():
        assert validate_attempt(capture.paths).calls_in_sequence, key
        one_pass = _records(capture, True)
        assert one_pass == two_pass[key], key
        flows += sum(r["continuity"] is not None for r in one_pass[0])
    assert flows >= 50


def test_calls_out_of_sequence_are_read_twice_with_the_same_records(
    real_captures: RealCaptures, tmp_path: Path
) -> None:
    checked = 0
    for (harness, name), capture in real_captures.items():
        dest = first_agent_last(capture, tmp_path / f"{harness}-{name}")
        if dest is None:
            continue
        report = validate_attempt(read_attempt(dest).paths)
        assert report.ok and not report.calls_in_sequence, (harness, name, report.problems)
        shuffled = read_attempt(dest)
        records, _ = _records(shuffled, report.calls_in_sequence)
        by_id = {r["call_id"]: r for r in _records(capture, True)[0]}
        assert len(records) == len(by_id)
        for record in records:
            assert record | {"source": None} == by_id[record["call_id"]] | {"source": None}
        # fed as if in sequence, the first call before one already seen is refused
        # rather than given a continuity decided without its earlier calls
        with pytest.raises(CaptureFormatError, match="not in sequence order"):
            _records(shuffled, True)
        if not checked:  # the command takes the two-pass way by itself
            out = tmp_path / f"{harness}-{name}.jsonl"
            result = roller(
                "export", "calls", str(dest), "--format", "openai-messages",
                "--include-blocked", "--out", str(out),
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            lines = [json.loads(line) for line in out.read_text().splitlines()]
            assert [r["call_id"] for r in lines] == [r["call_id"] for r in records]
            assert [r["continuity"] for r in lines] == [r["continuity"] for r in records]
        checked += 1
    assert checked >= 10
