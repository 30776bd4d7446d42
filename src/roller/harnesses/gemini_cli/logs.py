"""The Gemini CLI native log reader: a pure function from copied chats + telemetry to facts.

Checked against Gemini CLI 0.61.0, runs on 2026-11-29 against `roller mock-model`; real
logs under `tests/data/harnesses/gemini-cli/`.

Inputs (copied by the adapter from the scratch HOME into `raw/native/`): the chats
(`tmp/<slug>/chats/…`, shape in `roller.harnesses.gemini_cli.chats`) and `telemetry.log`,
the CLI's own telemetry outfile (shape in `roller.harnesses.gemini_cli.telemetry`).

Facts derived, and the evidence each rests on:
- participants: the main chat is the root (key: its sessionId); every subagent chat and
  every `agentId` a spawn names is a child, whose parent is the chat holding that spawn.
- identity (join on the provider response id): the telemetry's `api_response` records
  name each response's `responseId` and the `prompt_id` of the turn it served; the
  prompt id is the owner's session id, or it followed by `#…<n>`. That is the only join:
  the wire carries no identity at all, and nothing is inferred from time, order, or the
  content of a request. A response whose prompt id names no known participant, or that
  carries no response id, joins nothing (its call stays unattributed).
- assigned tool ids: the ids the CLI gave the tool calls of each output (finalize uses
  them where the HTTP output carries none): the ids the telemetry logged for the main
  agent's calls (prefix removed), and `<prompt_id>-<index>` for a subagent's, each
  only when the owner's chat records that id for that tool.
- relations: `spawn` (the spawn tool call, bound to the response that emitted it),
  `result_delivered` (the tool call's recorded result), `child_completed` /
  `child_failed` (the child's terminate reason: telemetry `agent.finish`, else the
  `Termination Reason:` line the CLI writes into the spawn's result; `GOAL` completes).
- coverage: per response id, every response the telemetry logged for a participant.
Evidence that conflicts or is missing is reported in `problems` (the capture becomes
partial), never resolved by picking a side. Problem codes: those of `.chats` and
`.telemetry`, and here `unreadable_file` / `missing_file` (the telemetry log),
`unexpected_count` (not one main chat, not one spawn per subagent), `missing_file` (a
subagent without its chat), `unknown_reference` (a prompt id naming no chat),
`missing_field` (a response without a responseId), `disagreement` (an agent that
finished twice with different reasons).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from roller.harnesses.base import (
    AssignedToolId,
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeProblem,
    NativeRelation,
    ParticipantState,
    read_native_bytes,
)
from roller.harnesses.gemini_cli.chats import (
    Chat,
    Spawn,
    read_chats,
    result_output,
    spawns_in,
    termination_reason,
    wire_tool_id,
)
from roller.harnesses.gemini_cli.telemetry import ApiResponse, Telemetry, parse_telemetry

TELEMETRY_FILE = "telemetry.log"
# `<key>#<n>` (subagent turn) or `<key>########<n>` (main agent turn)
_PROMPT_TURN = re.compile(r"^(?P<key>.+?)#+\d+$")
COMPLETED_REASON = "GOAL"


def _owner(prompt_id: str, known: Iterable[str]) -> str | None:
    keys = set(known)
    if prompt_id in keys:
        return prompt_id
    match = _PROMPT_TURN.match(prompt_id)
    return match["key"] if match and match["key"] in keys else None


def _read_telemetry(native_dir: Path, problems: list[NativeProblem]) -> Telemetry:
    path = native_dir / TELEMETRY_FILE
    if not path.is_file():
        message = f"{TELEMETRY_FILE} is missing: no call can be joined to a participant"
        problems.append(NativeProblem("missing_file", message))
        return Telemetry((), ())
    raw = read_native_bytes(path, TELEMETRY_FILE, problems)
    if raw is None:
        return Telemetry((), ())
    return parse_telemetry(raw.decode("utf-8", errors="replace"), TELEMETRY_FILE, problems)


def read_native(native_dir: Path) -> NativeCapture:
    problems: list[NativeProblem] = []
    chats = read_chats(native_dir, problems)
    telemetry = _read_telemetry(native_dir, problems)

    roots = [c for c in chats.values() if c.kind == "main"]
    if len(roots) != 1:
        message = f"expected one main chat, found {len(roots)}"
        problems.append(NativeProblem("unexpected_count", message))
    spawns = spawns_in(chats.values())
    child_keys = sorted(
        {c.session_id for c in chats.values() if c.kind == "subagent"}
        | {s.agent_id for s in spawns}
    )
    known = [c.session_id for c in roots] + child_keys

    identity, coverage, assigned, emitted_by = _outputs(telemetry, chats, known, problems)
    finishes = _finishes(telemetry, problems)
    kids = [_child(key, spawns, chats, finishes, emitted_by, problems) for key in child_keys]
    depths = _depths({k.key: k.parent for k in kids})
    participants = [_root_participant(root) for root in roots]
    participants += [_child_participant(k, chats, depths[k.key]) for k in kids]
    lifecycle = _lifecycle({k.key: k.state for k in kids}, {k.key for k in kids if k.delivered})
    if len(roots) == 1:
        participants[0] = _with_root_state(participants[0], roots[0], lifecycle)
    return NativeCapture(
        participants=tuple(participants),
        identity=identity,
        relations=tuple(r for k in kids for r in k.relations),
        coverage=coverage,
        lifecycle=lifecycle,
        subtasks="supported",
        problems=tuple(problems),
        assigned_tool_ids=assigned,
    )


@dataclass(frozen=True)
class _Kid:
    """One subagent as the chats and telemetry describe it."""

    key: str
    spawn: Spawn | None  # the one spawn tool call naming it, if exactly one does
    parent: str | None
    state: ParticipantState
    relations: tuple[NativeRelation, ...]
    delivered: bool  # its result reached the spawner (a result_delivered relation)


def _child(
    key: str,
    spawns: Sequence[Spawn],
    chats: Mapping[str, Chat],
    finishes: Mapping[str, str],
    emitted_by: Mapping[str, str],
    problems: list[NativeProblem],
) -> _Kid:
    spawners = [s for s in spawns if s.agent_id == key]
    if len(spawners) != 1:
        message = f"{len(spawners)} spawn tool calls name it"
        problems.append(NativeProblem("unexpected_count", message, f"subagent {key}"))
    spawn = spawners[0] if len(spawners) == 1 else None
    if key not in chats:
        problems.append(NativeProblem("missing_file", "no chat file", f"subagent {key}"))
    reason, reason_evidence = _terminate_reason(key, spawn, finishes)
    state: ParticipantState = (
        "unknown" if reason is None else "completed" if reason == COMPLETED_REASON else "failed"
    )
    rels = (
        _spawn_relations(spawn, state, reason, reason_evidence, chats, emitted_by)
        if spawn is not None
        else []
    )
    parent = spawn.chat.session_id if spawn is not None else None
    delivered = any(r.type == "result_delivered" for r in rels)
    return _Kid(key, spawn, parent, state, tuple(rels), delivered)


def _root_participant(root: Chat) -> NativeParticipant:
    return NativeParticipant(
        key=root.session_id,
        role="root",
        parent_key=None,
        depth=0,
        native_ids={"session_id": root.session_id},
        name="main",
        state="unknown",
        evidence=(NativeEvidence(root.path, None),),
    )


def _child_participant(kid: _Kid, chats: Mapping[str, Chat], depth: int) -> NativeParticipant:
    evidence = []
    if kid.key in chats:
        evidence.append(NativeEvidence(chats[kid.key].path, None))
    ids = {"agent_id": kid.key}
    spawn = kid.spawn
    if spawn is not None:
        evidence.append(NativeEvidence(spawn.chat.path, spawn.tool_id))
        ids["tool_call_id"] = spawn.tool_id
    args = spawn.call.get("args") if spawn is not None else None
    name = args.get("agent_name") if isinstance(args, dict) else None
    return NativeParticipant(
        key=kid.key,
        role="child",
        parent_key=kid.parent,
        depth=depth,
        native_ids=ids,
        name=name if isinstance(name, str) else None,
        state=kid.state,
        evidence=tuple(evidence),
    )


def _outputs(
    telemetry: Telemetry,
    chats: Mapping[str, Chat],
    known: list[str],
    problems: list[NativeProblem],
) -> tuple[NativeIdentity, NativeCoverage, dict[str, tuple[AssignedToolId, ...]], dict[str, str]]:
    """Join values, coverage ids, assigned tool ids, and native tool id -> response id."""
    keys: dict[str, list[str]] = {}
    ids: dict[str, set[str]] = {}
    assigned: dict[str, tuple[AssignedToolId, ...]] = {}
    emitted_by: dict[str, str] = {}
    for response in telemetry.responses:
        owner = _owner(response.prompt_id, known)
        if owner is None:
            message = (
                f"prompt id {response.prompt_id} names no chat "
                f"(response {', '.join(response.response_ids) or 'without id'})"
            )
            problems.append(NativeProblem("unknown_reference", message, TELEMETRY_FILE))
            continue
        if not response.response_ids:
            message = (
                f"a response of {owner} (prompt {response.prompt_id}) "
                "has no responseId: its call cannot be joined"
            )
            problems.append(NativeProblem("missing_field", message, TELEMETRY_FILE))
            continue
        for rid in response.response_ids:
            owners = keys.setdefault(rid, [])
            if owner not in owners:
                owners.append(owner)
            ids.setdefault(owner, set()).add(rid)
        native_ids = _native_tool_ids(response, chats.get(owner))
        if native_ids is None:
            continue
        pairs = zip(response.function_calls, native_ids, strict=True)
        listed = tuple(AssignedToolId(c.name, wire_tool_id(c.name, n)) for c, n in pairs)
        for rid in response.response_ids:
            assigned[rid] = listed
        for native_id in native_ids:
            emitted_by.setdefault(native_id, response.response_ids[0])
    identity = NativeIdentity(basis="response_id", keys={k: tuple(v) for k, v in keys.items()})
    coverage = NativeCoverage(
        basis="per_response_id",
        ids={k: frozenset(v) for k, v in ids.items()},
        notes=(
            "Gemini CLI: calls are joined by the responseId its telemetry log "
            "(logPrompts) records per api_response with the turn's prompt id",
        ),
    )
    return identity, coverage, assigned, emitted_by


def _native_tool_ids(response: ApiResponse, chat: Chat | None) -> tuple[str, ...] | None:
    """The native ids of a response's tool calls, in output order, when every one is
    known: logged with the call (main agent), or `<prompt_id>-<index>` recorded in the
    owner's chat for that tool (subagent). None when any is not known exactly."""
    if not response.function_calls:
        return None
    recorded = {str(c["id"]): c.get("name") for c in chat.tool_calls()} if chat else {}
    out: list[str] = []
    for index, call in enumerate(response.function_calls):
        if call.id is not None:
            out.append(call.id)
            continue
        candidate = f"{response.prompt_id}-{index}"
        if recorded.get(candidate) != call.name:
            return None
        out.append(candidate)
    return tuple(out)


def _finishes(telemetry: Telemetry, problems: list[NativeProblem]) -> dict[str, str]:
    out: dict[str, str] = {}
    for finish in telemetry.finishes:
        seen = out.setdefault(finish.agent_id, finish.terminate_reason)
        if seen != finish.terminate_reason:
            message = f"agent {finish.agent_id} finished twice ({seen}, {finish.terminate_reason})"
            problems.append(NativeProblem("disagreement", message, TELEMETRY_FILE))
    return out


def _terminate_reason(
    key: str, spawn: Spawn | None, finishes: Mapping[str, str]
) -> tuple[str | None, NativeEvidence | None]:
    if key in finishes:
        return finishes[key], NativeEvidence(TELEMETRY_FILE, f"agent.finish {key}")
    reason = termination_reason(spawn) if spawn is not None else None
    if spawn is not None and reason is not None:
        return reason, NativeEvidence(spawn.chat.path, spawn.tool_id)
    return None, None


def _spawn_relations(
    spawn: Spawn,
    state: ParticipantState,
    reason: str | None,
    reason_evidence: NativeEvidence | None,
    chats: Mapping[str, Chat],
    emitted_by: Mapping[str, str],
) -> list[NativeRelation]:
    parent, child = spawn.chat.session_id, spawn.agent_id
    name = str(spawn.call.get("name") or "")
    tool_call_id = wire_tool_id(name, spawn.tool_id)
    source = emitted_by.get(spawn.tool_id)
    evidence = [NativeEvidence(spawn.chat.path, spawn.tool_id)]
    if source is not None:
        evidence.append(NativeEvidence(TELEMETRY_FILE, f"api_response {source}"))
    out = [
        NativeRelation(
            type="spawn",
            parent_key=parent,
            child_key=child,
            tool_call_id=tool_call_id,
            evidence=tuple(evidence),
            source_response_id=source,
        )
    ]
    if result_output(spawn) is not None:
        out.append(
            NativeRelation(
                type="result_delivered",
                parent_key=parent,
                child_key=child,
                tool_call_id=tool_call_id,
                evidence=(NativeEvidence(spawn.chat.path, spawn.tool_id),),
            )
        )
    if state in ("completed", "failed") and reason_evidence is not None:
        ended = [reason_evidence]
        if child in chats:
            ended.append(NativeEvidence(chats[child].path, None))
        out.append(
            NativeRelation(
                type="child_completed" if state == "completed" else "child_failed",
                parent_key=parent,
                child_key=child,
                tool_call_id=tool_call_id,
                evidence=tuple(ended),
                note=None if state == "completed" else f"terminate reason {reason}",
            )
        )
    return out


def _depths(parents: Mapping[str, str | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key in parents:
        depth, cur, seen = 1, parents[key], {key}
        while cur is not None and cur in parents and cur not in seen:
            seen.add(cur)
            depth += 1
            cur = parents[cur]
        out[key] = depth
    return out


def _lifecycle(states: Mapping[str, ParticipantState], delivered: set[str]) -> NativeLifecycle:
    """`complete` only when every child ended AND its result was recorded as delivered;
    `unknown` when a child's end has no evidence."""
    pending = tuple(k for k, s in states.items() if s == "unknown" or k not in delivered)
    if any(s == "unknown" for s in states.values()):
        return NativeLifecycle(status="unknown", pending_keys=pending)
    if pending:
        return NativeLifecycle(status="pending", pending_keys=pending)
    return NativeLifecycle(status="complete")


def _with_root_state(
    root: NativeParticipant, chat: Chat, lifecycle: NativeLifecycle
) -> NativeParticipant:
    """The main agent is done when its last message is a model reply with no tool call
    left to run and nothing it waits for is pending."""
    last = chat.last_message()
    state: ParticipantState = "unknown"
    if last is not None and last.get("type") == "gemini" and not last.get("toolCalls"):
        state = "completed" if lifecycle.status == "complete" else "running"
    return replace(root, state=state)
