"""The Pi native log reader: a pure function from copied session files to facts.

Checked against Pi 0.73.1 (`@mariozechner/pi-coding-agent`), runs on 2026-11-29 against
`roller mock-model` with each of the three APIs roller configures
(`openai-responses`, `openai-completions`, `anthropic-messages`); real logs under
`tests/data/harnesses/pi/`.

Location (copied by the adapter into `raw/native/sessions/`):
`sessions/--<cwd with / replaced by ->--/<ISO time>_<sessionId>.jsonl`, one file per
session; the session id is a UUIDv7.

Shape (session format version 3, one JSON object a line; only these fields are relied
on): line 1 `{"type": "session", "version": 3, "id": <sessionId>, "cwd", …}`; then
entries `{type, id, parentId, …}` forming a tree. `type: "message"` entries carry
`message.role` (`user`, `assistant`, `toolResult`, …); an assistant message has
`responseId` (the provider's `resp_…` / `chatcmpl-…` / `msg_…` id, for all three APIs),
`api`, `model`, `stopReason` (`stop`, `toolUse`, `length`, `error`, `aborted`) and
`content[]` (`toolCall` blocks `{id, name, arguments}`; Responses ids are
`<call_id>|<item_id>`). Pi writes an assistant message for a failed call too
(`stopReason: "error"`), without a response id.

Facts: one root participant per session file (roller's Pi profile runs without
extensions, so nothing spawns a subagent: `subtasks = not_available_in_bundled_profile`,
no relations). Identity: a call's provider response id equals an assistant
`responseId` of exactly one session. The wire's own identity — `session_id` header, sent
only by the Responses API, equal to the session id — is a cross-check
(`wire_aliases`), never the join. Coverage: the number of completed assistant messages
(`stopReason` neither `error` nor `aborted`) per session, compared with the completed
calls attributed to it.

Problem codes: `unreadable_file`, `not_json`, `not_an_object` (a line),
`unsupported` (a session format version other than 3), `missing_header` (no session
line), `duplicate_id` (one session in two files), `missing_field` (a completed
assistant message without `responseId`), `unexpected_count` (not one session file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roller.harnesses.base import (
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeProblem,
    ParticipantState,
    read_native_bytes,
)

SESSIONS_GLOB = "sessions/**/*.jsonl"
SESSION_VERSION = 3
# A stop reason that means the HTTP call did not complete (no provider output).
UNFINISHED = frozenset({"error", "aborted"})


def _assistants(
    path: Path, rel: str, problems: list[NativeProblem]
) -> tuple[str | None, list[dict[str, Any]]]:
    """The session id from the header line, and the assistant messages in file order."""
    session_id: str | None = None
    out: list[dict[str, Any]] = []
    raw = read_native_bytes(path, rel, problems)
    if raw is None:
        return None, out
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            problems.append(NativeProblem("not_json", "not JSON", f"{rel}:{n}"))
            continue
        if not isinstance(entry, dict):
            problems.append(NativeProblem("not_an_object", "not a JSON object", f"{rel}:{n}"))
            continue
        if entry.get("type") == "session":
            if entry.get("version") != SESSION_VERSION:
                why = f"session format version {entry.get('version')}, not 3"
                problems.append(NativeProblem("unsupported", why, rel))
            sid = entry.get("id")
            session_id = sid if isinstance(sid, str) and sid else session_id
            continue
        message = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "assistant"
        ):
            out.append(message)
    if session_id is None:
        problems.append(NativeProblem("missing_header", "no session header", rel))
    return session_id, out


def _state(assistants: list[dict[str, Any]]) -> ParticipantState:
    if not assistants:
        return "unknown"
    stop = assistants[-1].get("stopReason")
    if stop == "stop":
        return "completed"
    return "failed" if stop in UNFINISHED else "unknown"


def _join_responses(
    session_id: str,
    assistants: list[dict[str, Any]],
    rel: str,
    keys: dict[str, list[str]],
    problems: list[NativeProblem],
) -> int:
    """The session's completed assistant messages, each joined to the session by its
    `responseId` in `keys`; how many completed."""
    completed = 0
    for message in assistants:
        if message.get("stopReason") in UNFINISHED:
            continue
        completed += 1
        rid = message.get("responseId")
        if not isinstance(rid, str) or not rid:
            why = "a completed assistant message has no responseId"
            problems.append(NativeProblem("missing_field", why, rel))
            continue
        owners = keys.setdefault(rid, [])
        if session_id not in owners:
            owners.append(session_id)
    return completed


def read_native(native_dir: Path) -> NativeCapture:
    problems: list[NativeProblem] = []
    participants: list[NativeParticipant] = []
    keys: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for path in sorted(native_dir.glob(SESSIONS_GLOB)):
        rel = path.relative_to(native_dir).as_posix()
        session_id, assistants = _assistants(path, rel, problems)
        if session_id is None:
            continue
        if any(p.key == session_id for p in participants):
            why = f"session {session_id} appears in two files"
            problems.append(NativeProblem("duplicate_id", why, rel))
            continue
        counts[session_id] = _join_responses(session_id, assistants, rel, keys, problems)
        participants.append(
            NativeParticipant(
                key=session_id,
                role="root",
                parent_key=None,
                depth=0,
                native_ids={"session_id": session_id},
                name="main",
                state=_state(assistants),
                evidence=(NativeEvidence(rel, None),),
            )
        )
    if len(participants) != 1:
        why = f"expected one session file, found {len(participants)}"
        problems.append(NativeProblem("unexpected_count", why))
    return NativeCapture(
        participants=tuple(participants),
        identity=NativeIdentity(basis="response_id", keys={k: tuple(v) for k, v in keys.items()}),
        relations=(),
        coverage=NativeCoverage(
            basis="per_session_assistant_count",
            counts=counts,
            notes=(
                "Pi: calls are joined by the assistant responseId in the session file; "
                "coverage counts completed assistant messages per session",
            ),
        ),
        lifecycle=NativeLifecycle(status="complete"),
        subtasks="not_available_in_bundled_profile",
        problems=tuple(problems),
        # The Responses API's `session_id` header is the session id itself.
        wire_aliases={p.key: p.key for p in participants},
    )
