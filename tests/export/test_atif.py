"""`roller export atif` over real captures with subagents (Claude Code, OpenCode, Codex,
Gemini CLI, Pi): every file validates with the `atif` package (ATIF v1.8's Pydantic
models, the oracle) and keeps the RFC's rules, checked here too: sequential step ids,
every `source_call_id` naming a tool call of its step, every subagent ref resolving to
an embedded trajectory; root steps hold no child message; a fork child's inherited
prefix is copied context."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import atif
import pytest

from roller.export.atif import atif_document
from roller.export.omissions import Omissions
from roller.export.openai_messages import request_view
from roller.export.trajectory import build_trajectory
from tests.export.real_captures import ALL, RealCaptures
from tests.support.captures import roller


def _rfc_problems(doc: dict[str, Any], path: str = "root") -> list[str]:
    """The RFC's rules, checked on the JSON itself (not through the package)."""
    problems = []
    ids = [s["step_id"] for s in doc["steps"]]
    if ids != list(range(1, len(ids) + 1)):
        problems.append(f"{path}: step ids {ids} are not sequential from 1")
    embedded = {t["trajectory_id"] for t in doc.get("subagent_trajectories") or []}
    if len(embedded) != len(doc.get("subagent_trajectories") or []):
        problems.append(f"{path}: duplicate trajectory ids")
    for step in doc["steps"]:
        calls = {c["tool_call_id"] for c in step.get("tool_calls") or []}
        for result in (step.get("observation") or {}).get("results", []):
            if result.get("source_call_id") is not None and result["source_call_id"] not in calls:
                problems.append(
                    f"{path}: step {step['step_id']} observes unknown {result['source_call_id']}"
                )
            for ref in result.get("subagent_trajectory_ref") or []:
                if ref.get("trajectory_id") not in embedded:
                    problems.append(f"{path}: ref {ref} resolves to nothing")
        if step["source"] != "agent" and (
            {"tool_calls", "metrics", "model_name", "reasoning_content"} & set(step)
        ):
            problems.append(f"{path}: agent-only field on a {step['source']} step")
    for sub in doc.get("subagent_trajectories") or []:
        problems.extend(_rfc_problems(sub, f"{path}/{sub['trajectory_id']}"))
    return problems


def _documents(real_captures: RealCaptures) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for key, capture in real_captures.items():
        doc = atif_document(capture, Omissions("t"), include_blocked=True)
        if doc is not None:
            out[key] = doc
    return out


def test_every_real_capture_validates_with_atif(real_captures: RealCaptures) -> None:
    docs = _documents(real_captures)
    # no built trajectory: gemini-cli/killed-child, and openclaw/announce-pending (its
    # announce call was cut off before OpenClaw stored it, so it stays unattributed)
    assert len(docs) >= len(ALL) - 2
    for key, doc in docs.items():
        trajectory = atif.Trajectory.model_validate(json.loads(json.dumps(doc)))
        assert trajectory.schema_version == "ATIF-v1.8", key
        assert _rfc_problems(doc) == [], key
        capture = real_captures[key]
        children = [p for p in capture.manifest.participants if p.role == "child"]
        embedded = []
        stack = list(doc.get("subagent_trajectories") or [])
        while stack:
            sub = stack.pop()
            embedded.append(sub["trajectory_id"])
            stack.extend(sub.get("subagent_trajectories") or [])
        assert sorted(embedded) == sorted(p.participant_id for p in children), key


@pytest.mark.parametrize(
    ("harness", "name"),
    [
        ("claude-code", "parallel"),
        ("claude-code", "nested-background"),
        ("opencode", "parallel"),
        ("opencode", "forced-grandchild"),
        ("codex", "v1-nested"),
        ("codex", "v2-fork"),
    ],
)
def test_subagents_are_referenced_from_their_spawning_step(
    real_captures: RealCaptures, harness: str, name: str
) -> None:
    capture = real_captures[(harness, name)]
    doc = atif_document(capture, Omissions("t"))
    assert doc is not None
    calls = {c.call_id: c for c in capture.calls}
    participants = {p.participant_id: p for p in capture.manifest.participants}
    spawns = {
        r.child_participant_id: r
        for r in capture.relations
        if r.type == "spawn" and r.status == "established"
    }

    def check(document: dict[str, Any]) -> int:
        owner = participants[document["trajectory_id"]]
        refs = 0
        for step in document["steps"]:
            if (
                step["source"] == "agent"
                and "call_id" in step["extra"]
                and step.get("llm_call_count") == 1
            ):
                # one step per model call, each the participant's own
                assert calls[step["extra"]["call_id"]].participant_id == owner.participant_id
            for result in (step.get("observation") or {}).get("results", []):
                for ref in result.get("subagent_trajectory_ref") or []:
                    spawn = spawns[ref["trajectory_id"]]
                    assert step["extra"]["call_id"] == spawn.source_call_id
                    assert result["source_call_id"] == (
                        spawn.model_tool_ref.call_id if spawn.model_tool_ref else spawn.tool_call_id
                    )
                    refs += 1
        return refs + sum(check(s) for s in document.get("subagent_trajectories") or [])

    assert check(doc) == len([p for p in participants.values() if p.role == "child"])
    own = [
        c
        for c in capture.calls
        if c.participant_id == doc["trajectory_id"] and c.kind == "generation"
    ]
    assert len([s for s in doc["steps"] if s.get("llm_call_count") == 1]) == len(own)


@pytest.mark.parametrize(
    ("harness", "name"),
    [
        ("claude-code", "parallel"),
        ("opencode", "parallel"),
        ("codex", "v1-single"),
        ("codex", "v2-fork"),
    ],
)
def test_root_steps_hold_no_child_message(
    real_captures: RealCaptures, harness: str, name: str
) -> None:
    capture = real_captures[(harness, name)]
    doc = atif_document(capture, Omissions("t"))
    assert doc is not None
    root = doc["trajectory_id"]
    owner = {c.call_id: c.participant_id for c in capture.calls}
    assert any(c.participant_id not in (root, None) for c in capture.calls)
    steps = [s for s in doc["steps"] if "call_id" in s.get("extra", {})]
    assert steps
    # Every root step comes from a root call's input or output: none is a child's.
    assert {owner[s["extra"]["call_id"]] for s in steps} == {root}


def test_fork_child_inherits_copied_context(real_captures: RealCaptures) -> None:
    capture = real_captures[("codex", "v2-fork")]
    doc = atif_document(capture, Omissions("t"))
    assert doc is not None
    (child,) = doc["subagent_trajectories"]
    copied = [s for s in child["steps"] if s.get("is_copied_context")]
    own = [s for s in child["steps"] if not s.get("is_copied_context")]
    # The warm fork copies the parent's history up to and including its spawn call.
    assert copied and copied == child["steps"][: len(copied)]
    assert any(s["source"] == "agent" and s.get("tool_calls") for s in copied)
    assert all(s.get("llm_call_count") != 1 for s in copied)
    assert [s for s in own if s.get("llm_call_count") == 1]
    # A v1 child starts fresh: sharing the parent's developer prompts is not a copy.
    v1 = atif_document(real_captures[("codex", "v1-single")], Omissions("t"))
    assert v1 is not None
    assert not any(s.get("is_copied_context") for s in v1["subagent_trajectories"][0]["steps"])


def test_tools_metrics_and_timestamps_come_from_the_requests(
    real_captures: RealCaptures,
) -> None:
    capture = real_captures[("claude-code", "parallel")]
    doc = atif_document(capture, Omissions("t"))
    assert doc is not None
    calls = {c.call_id: c for c in capture.calls}
    root_first = calls[
        next(p for p in capture.manifest.participants if p.role == "root").call_ids[0]
    ]
    view = request_view(root_first)
    assert view is not None
    assert doc["agent"]["tool_definitions"] == list(view.tools) and view.tools
    for step in doc["steps"]:
        if step.get("llm_call_count") != 1:
            continue
        usage = calls[step["extra"]["call_id"]].usage
        assert usage is not None
        # Anthropic's input_tokens exclude cache reads and writes; ATIF's prompt tokens don't.
        assert step["metrics"]["prompt_tokens"] == (usage.input_tokens or 0) + (
            usage.cache_read_tokens or 0
        ) + (usage.cache_write_tokens or 0)
        assert step["metrics"]["cached_tokens"] == usage.cache_read_tokens
        if usage.cache_write_tokens is not None:
            assert step["metrics"]["extra"]["cache_creation_tokens"] == usage.cache_write_tokens
        assert step["timestamp"] == calls[step["extra"]["call_id"]].request.received_at
    assert doc["final_metrics"]["total_steps"] == len(doc["steps"])


def test_cli_writes_one_file_per_attempt_and_says_what_it_left_out(
    real_captures: RealCaptures, tmp_path: Path
) -> None:
    good = real_captures.run("opencode", "parallel")
    unbuilt = real_captures.run("gemini-cli", "killed-child")
    out = tmp_path / "atif"
    for run, line in [
        (good, "exported 1 ATIF trajectory(s)"),
        (unbuilt, "exported 0 ATIF trajectory(s); left out 1 (1 not_built:unattributed_calls)"),
    ]:
        result = roller("export", "atif", str(run), "-o", str(out))
        assert result.returncode == 0, result.stderr
        assert result.stderr.strip().splitlines()[-1] == line
    (written,) = out.glob("*.atif.json")
    atif.Trajectory.model_validate_json(written.read_text())


def test_calls_are_read_once_more_whatever_the_number_of_agents(
    real_captures: RealCaptures, monkeypatch: pytest.MonkeyPatch
) -> None:
    # For the main trajectory, then once for every agent's steps (without contexts; a
    # subagent's calls are read again by where their lines are): read whole again per
    # agent (its segments, its spawning parent's calls), 30 agents over 1k calls took
    # 100 s where this takes 7.
    from roller.capture import reader

    reads = {"n": 0}
    iter_calls = reader.iter_calls

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads["n"] += 1
        return iter_calls(*args, **kwargs)

    monkeypatch.setattr(reader, "iter_calls", counted)
    light = reader.CallLines.light

    def counted_light(self: reader.CallLines) -> Any:
        reads["n"] += 1
        return light(self)

    monkeypatch.setattr(reader.CallLines, "light", counted_light)
    many = 0
    for capture in real_captures.values():
        agents = len(capture.manifest.participants)
        reads["n"] = 0
        build_trajectory(capture)
        main = reads["n"]
        reads["n"] = 0
        doc = atif_document(capture, Omissions("t"), include_blocked=True)
        if doc is not None and agents > 2:
            assert reads["n"] == main + 1, (capture.paths, main, reads["n"])
            many += 1
    assert many >= 5
