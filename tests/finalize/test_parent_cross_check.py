"""The parent a call's wire names, cross-checked against the native parent.

Constructed tapes (real TapeWriter and reader, real wire decoding and identity rules) and
constructed `NativeCapture`s, one per harness whose wire names parents: OpenCode
(`x-parent-session-id`), Codex (`x-codex-parent-thread-id`, turn-metadata
`parent_thread_id`), Claude Code (the session at depth one, `<session>:<parent agent>`
deeper, compared through `wire_aliases`). For each: `agree`, `disagree`, `absent`. A
disagreement never moves the call nor rewrites the participant's parent; it is a
`parent_disagreement` capture error, so the capture is partial. The real recordings under
tests/data/harnesses/ all come out `agree`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.harnesses import claude_code_fixtures, opencode_fixtures
from tests.harnesses.codex_data import DATA as CODEX_DATA
from tests.harnesses.codex_data import native as codex_native
from tests.support.tapes import anthropic_reply, inputs, new_tape, write_exchange

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs, CallRecord, ParentCrossCheck
from roller.capture.reader import read_attempt, read_json_model
from roller.capture.tape import read_tape
from roller.capture.writer import publish
from roller.finalize.assemble import FinalizedCapture
from roller.finalize.attempt import finalize_attempt
from roller.finalize.pipeline import build_capture
from roller.harnesses.base import (
    JoinBasis,
    NativeCapture,
    NativeCoverage,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
)
from roller.harnesses.codex.native import read_native

Headers = list[tuple[str, str]]


# -- building blocks ----------------------------------------------------------------------


@dataclass(frozen=True)
class Wire:
    """One protocol as its harness speaks it: endpoint, request body, reply."""

    path: str
    body: dict[str, Any]
    reply: bytes


CHAT = Wire(
    "/v1/chat/completions",
    {"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]},
    json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "mock-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "done"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
    ).encode(),
)


def responses_wire(response_id: str) -> Wire:
    return Wire(
        "/v1/responses",
        {"model": "mock-model", "input": [{"role": "user", "content": "hi"}]},
        json.dumps(
            {
                "id": response_id,
                "object": "response",
                "status": "completed",
                "model": "mock-model",
                "output": [
                    {
                        "type": "message",
                        "id": "msg_" + response_id,
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "done", "annotations": []}],
                    }
                ],
                "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
            }
        ).encode(),
    )


def messages_wire(message_id: str) -> Wire:
    return Wire(
        "/v1/messages",
        {"model": "mock-model", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
        anthropic_reply(message_id),
    )


def participant(key: str, parent: str | None, role: str = "child") -> NativeParticipant:
    return NativeParticipant(
        key=key,
        role="root" if role == "root" else "child",
        parent_key=parent,
        depth=0 if role == "root" else 1,
        native_ids={"id": key},
        state="completed",
    )


def native(
    basis: JoinBasis,
    participants: list[NativeParticipant],
    keys: Mapping[str, str],
    aliases: Mapping[str, str] | None = None,
) -> NativeCapture:
    return NativeCapture(
        participants=tuple(participants),
        identity=NativeIdentity(basis=basis, keys={v: (k,) for v, k in keys.items()}),
        relations=(),
        coverage=NativeCoverage(basis="none"),
        lifecycle=NativeLifecycle(status="complete"),
        subtasks="supported",
        wire_aliases=aliases or {},
    )


def capture(
    tmp_path: Path, harness: str, calls: list[tuple[Headers, Wire]], nc: NativeCapture | None
) -> FinalizedCapture:
    with new_tape(tmp_path / "tape") as tape:
        for headers, wire in calls:
            write_exchange(tape, headers, wire.body, wire.reply, path=wire.path)
    return build_capture(inputs(harness), read_tape(tmp_path / "tape"), nc)


def owner_key(built: FinalizedCapture, call: CallRecord) -> str:
    (p,) = [p for p in built.manifest.participants if p.participant_id == call.participant_id]
    return p.native_ids["id"]


def parent_key(built: FinalizedCapture, key: str) -> str | None:
    by_id = {p.participant_id: p for p in built.manifest.participants}
    (p,) = [p for p in by_id.values() if p.native_ids["id"] == key]
    parent = by_id.get(p.parent_participant_id or "")
    return parent.native_ids["id"] if parent is not None else None


# -- the cases ----------------------------------------------------------------------------

# OpenCode: every session is a participant, keyed by its id; `x-session-id` is the join.
OC_ROOT, OC_CHILD, OC_OTHER = "ses_root01", "ses_child01", "ses_other01"


def opencode(child_parent: str | None = OC_ROOT) -> NativeCapture:
    return native(
        "wire_participant",
        [
            participant(OC_ROOT, None, "root"),
            participant(OC_CHILD, child_parent),
            participant(OC_OTHER, OC_ROOT),
        ],
        {k: k for k in (OC_ROOT, OC_CHILD, OC_OTHER)},
    )


def oc_call(session: str, parent: str | None) -> tuple[Headers, Wire]:
    headers = [("x-session-id", session), ("x-session-affinity", session)]
    if parent is not None:
        headers.append(("x-parent-session-id", parent))
    return headers, CHAT


# Codex: threads are participants; `session-id` is the root thread, `thread-id` the caller.
CX_ROOT = "019a0000-0000-7000-8000-000000000001"
CX_CHILD = "019a0000-0000-7000-8000-000000000002"
CX_OTHER = "019a0000-0000-7000-8000-000000000003"


def codex(child_parent: str | None = CX_ROOT) -> NativeCapture:
    return native(
        "wire_participant",
        [
            participant(CX_ROOT, None, "root"),
            participant(CX_CHILD, child_parent),
            participant(CX_OTHER, CX_ROOT),
        ],
        {k: k for k in (CX_ROOT, CX_CHILD, CX_OTHER)},
    )


def cx_call(
    thread: str, header_parent: str | None, metadata_parent: str | None = None
) -> tuple[Headers, Wire]:
    metadata: dict[str, str] = {"session_id": CX_ROOT, "thread_id": thread}
    headers = [("session-id", CX_ROOT), ("thread-id", thread)]
    if header_parent is not None:
        headers += [("x-codex-parent-thread-id", header_parent)]
    if metadata_parent is not None:
        metadata["parent_thread_id"] = metadata_parent
    if thread != CX_ROOT:
        headers += [("x-openai-subagent", "collab_spawn")]
    headers += [("x-codex-turn-metadata", json.dumps(metadata))]
    return headers, responses_wire("resp_" + thread[-4:])


# Claude Code: `main` and one participant per agent id; the provider message id is the
# join, and the wire's keys are translated through `wire_aliases` (S -> main, S:A -> A).
CC_SESSION = "8e2c0000-0000-4000-8000-00000000cc01"
CC_A1, CC_A2 = "a0123456789abcdef", "afedcba9876543210"
CC_MESSAGE_IDS = {None: "msg_main", CC_A1: "msg_a1", CC_A2: "msg_a2"}


def claude_code(a2_parent: str | None = CC_A1) -> NativeCapture:
    return native(
        "response_id",
        [
            participant("main", None, "root"),
            participant(CC_A1, "main"),
            participant(CC_A2, a2_parent),
        ],
        {CC_MESSAGE_IDS[k]: k or "main" for k in CC_MESSAGE_IDS},
        aliases={CC_SESSION: "main", **{f"{CC_SESSION}:{a}": a for a in (CC_A1, CC_A2)}},
    )


def cc_call(agent: str | None, parent_agent: str | None = None) -> tuple[Headers, Wire]:
    headers = [("x-claude-code-session-id", CC_SESSION)]
    if agent is not None:
        headers.append(("x-claude-code-agent-id", agent))
    if parent_agent is not None:
        headers.append(("x-claude-code-parent-agent-id", parent_agent))
    return headers, messages_wire(CC_MESSAGE_IDS[agent])


@dataclass(frozen=True)
class Case:
    harness: str
    native: NativeCapture
    call: tuple[Headers, Wire]
    owner: str  # the native key the call must stay attributed to
    expected: ParentCrossCheck


CASES: dict[str, Case] = {
    "opencode-agree": Case("opencode", opencode(), oc_call(OC_CHILD, OC_ROOT), OC_CHILD, "agree"),
    "opencode-disagree": Case(
        "opencode", opencode(), oc_call(OC_CHILD, OC_OTHER), OC_CHILD, "disagree"
    ),
    "opencode-absent": Case(
        "opencode", opencode(child_parent=None), oc_call(OC_CHILD, OC_ROOT), OC_CHILD, "absent"
    ),
    "opencode-root-named-a-child": Case(
        "opencode", opencode(), oc_call(OC_ROOT, OC_CHILD), OC_ROOT, "disagree"
    ),
    "codex-agree-header": Case("codex", codex(), cx_call(CX_CHILD, CX_ROOT), CX_CHILD, "agree"),
    "codex-agree-metadata": Case(
        "codex", codex(), cx_call(CX_CHILD, None, metadata_parent=CX_ROOT), CX_CHILD, "agree"
    ),
    "codex-disagree": Case(
        "codex", codex(), cx_call(CX_CHILD, CX_OTHER, CX_OTHER), CX_CHILD, "disagree"
    ),
    "codex-absent": Case(
        "codex", codex(child_parent=None), cx_call(CX_CHILD, CX_ROOT), CX_CHILD, "absent"
    ),
    "claude-code-agree-depth-one": Case(
        "claude-code", claude_code(), cc_call(CC_A1), CC_A1, "agree"
    ),
    "claude-code-agree-depth-two": Case(
        "claude-code", claude_code(), cc_call(CC_A2, CC_A1), CC_A2, "agree"
    ),
    # the wire says depth one (parent: the main thread), meta.json says a1 spawned it
    "claude-code-disagree": Case("claude-code", claude_code(), cc_call(CC_A2), CC_A2, "disagree"),
    "claude-code-disagree-unknown-agent": Case(
        "claude-code", claude_code(), cc_call(CC_A2, "a9999999999999999"), CC_A2, "disagree"
    ),
    "claude-code-absent": Case(
        "claude-code", claude_code(a2_parent=None), cc_call(CC_A2, CC_A1), CC_A2, "absent"
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_the_wire_parent_is_checked_against_the_native_parent(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    built = capture(tmp_path, case.harness, [case.call], case.native)
    (call,) = built.calls
    # The native evidence decides, whatever the wire says about the parent.
    assert call.identity_status == "attributed" and owner_key(built, call) == case.owner
    assert call.attribution.cross_check in ("agree", "not_applicable")
    assert call.attribution.parent_cross_check == case.expected
    native_parent = next(p.parent_key for p in case.native.participants if p.key == case.owner)
    assert parent_key(built, case.owner) == native_parent
    errors = [e for e in built.manifest.capture_errors if e.code == "parent_disagreement"]
    if case.expected == "disagree":
        (error,) = errors
        assert call.call_id in error.message and str(call.participant_id) in error.message
        assert built.manifest.capture_status == "partial"
    else:
        assert errors == [] and built.manifest.capture_status == "complete"
    # The call's own record is not blocked by its parent: export rules are unchanged.
    assert call.export_status == "exportable"


def test_a_disagreement_names_both_parents(tmp_path: Path) -> None:
    built = capture(tmp_path, "opencode", [oc_call(OC_CHILD, OC_OTHER)], opencode())
    pid = {p.native_ids["id"]: p.participant_id for p in built.manifest.participants}
    (error,) = built.manifest.capture_errors
    assert error.message == (
        f"participant {pid[OC_CHILD]} ({OC_CHILD}): 1 call(s) name parent "
        f"{pid[OC_OTHER]} ({OC_OTHER}) on the wire, the native evidence names parent "
        f"{pid[OC_ROOT]} ({OC_ROOT}): {built.calls[0].call_id}"
    )


def test_a_root_named_a_child_and_an_unknown_parent_are_said_so(tmp_path: Path) -> None:
    root = capture(tmp_path / "a", "opencode", [oc_call(OC_ROOT, OC_CHILD)], opencode())
    assert (
        "the native evidence names no parent: it is a root"
        in root.manifest.capture_errors[0].message
    )
    unknown = capture(
        tmp_path / "b", "claude-code", [cc_call(CC_A2, "a9999999999999999")], claude_code()
    )
    assert f"{CC_SESSION}:a9999999999999999, no participant" in (
        unknown.manifest.capture_errors[0].message
    )


def test_one_error_per_participant_and_wire_parent_listing_every_call(tmp_path: Path) -> None:
    calls = [
        oc_call(OC_ROOT, None),
        oc_call(OC_CHILD, OC_OTHER),
        oc_call(OC_CHILD, OC_ROOT),
        oc_call(OC_CHILD, OC_OTHER),
    ]
    built = capture(tmp_path, "opencode", calls, opencode())
    checks = [c.attribution.parent_cross_check for c in built.calls]
    assert checks == [None, "disagree", "agree", "disagree"]
    (error,) = built.manifest.capture_errors
    assert error.code == "parent_disagreement" and "2 call(s)" in error.message
    assert error.message.endswith(f"{built.calls[1].call_id}, {built.calls[3].call_id}")


def test_no_comparison_without_native_evidence_or_a_wire_parent(tmp_path: Path) -> None:
    wire_only = capture(tmp_path / "a", "opencode", [oc_call(OC_CHILD, OC_ROOT)], None)
    assert wire_only.calls[0].attribution.parent_cross_check is None
    roots = capture(tmp_path / "b", "codex", [cx_call(CX_ROOT, None)], codex())
    assert roots.calls[0].attribution.parent_cross_check is None
    unattributed = capture(tmp_path / "c", "opencode", [oc_call("ses_nobody", OC_ROOT)], opencode())
    assert unattributed.calls[0].identity_status == "unattributed"
    assert unattributed.calls[0].attribution.parent_cross_check is None


def test_validate_refuses_a_complete_capture_with_a_disagreeing_parent(tmp_path: Path) -> None:
    built = capture(tmp_path, "opencode", [oc_call(OC_CHILD, OC_OTHER)], opencode())
    forged = built.manifest.model_copy(update={"capture_status": "complete", "capture_errors": []})
    paths = AttemptPaths(tmp_path / "attempt-0001")
    paths.root.mkdir()
    publish(paths, built.calls, built.relations, forged)
    problems = [str(p) for p in validate_attempt(paths).problems]
    assert any("wire parent contradicts the native parent" in p for p in problems), problems


# -- the real recordings ------------------------------------------------------------------


def _children_agree(calls: list[CallRecord], roles: dict[str, str]) -> None:
    child_calls = [c for c in calls if roles.get(c.participant_id or "") == "child"]
    assert child_calls
    assert {c.attribution.parent_cross_check for c in child_calls} == {"agree"}
    assert {c.attribution.parent_cross_check for c in calls if c not in child_calls} == {None}


@pytest.mark.parametrize(
    ("module", "name"),
    [
        pytest.param(opencode_fixtures, n, id=f"opencode-{n}")
        for n in ("single", "parallel", "forced-grandchild", "resume")
    ]
    + [
        pytest.param(claude_code_fixtures, n, id=f"claude-code-{n}")
        for n in ("parallel", "nested-background")
    ],
)
def test_real_child_calls_agree(module: Any, name: str, tmp_path: Path) -> None:
    paths = module.attempt_dir(name, tmp_path)
    finalize_attempt(paths)
    assert validate_attempt(paths).ok
    done = read_attempt(paths)
    _children_agree(done.calls, {p.participant_id: p.role for p in done.manifest.participants})
    assert not [e for e in done.manifest.capture_errors if e.code == "parent_disagreement"]


@pytest.mark.parametrize(
    "name", ["v1-single", "v1-nested", "v1-identical-prompts", "v2-fork", "v2-fork-client-left"]
)
def test_real_codex_child_calls_agree(name: str) -> None:
    built = build_capture(
        read_json_model(CODEX_DATA / name / "attempt.json", AttemptInputs),
        read_tape(CODEX_DATA / name / "tape"),
        read_native(codex_native(name)),
    )
    _children_agree(built.calls, {p.participant_id: p.role for p in built.manifest.participants})
    assert not [e for e in built.manifest.capture_errors if e.code == "parent_disagreement"]
