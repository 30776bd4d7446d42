"""The Claude Code native log reader: a pure function from copied transcripts to facts.

Checked against Claude Code 2.1.332 (`-p --output-format stream-json`), runs on
2026-11-29 against `roller mock-model`; real logs under `tests/data/harnesses/claude-code/`.

Location (copied by the adapter from the scratch HOME into `raw/native/projects/`):
- main transcript `projects/<cwd slug>/<sessionId>.jsonl`;
- one transcript per subagent, flat for every depth,
  `projects/<slug>/<sessionId>/subagents/agent-<agentId>.jsonl`, and beside it
  `agent-<agentId>.meta.json`: `{agentType, description, toolUseId, parentAgentId
  (depth >= 2 only), spawnDepth, requestShape: "background"|"foreground", finished}`.
  `finished: true` is written when the subagent stops; it is absent while it runs.

Shape (one JSON object a line; only these fields are relied on):
- every line: `type`, `sessionId`; subagent lines also `agentId` and `isSidechain: true`.
- `assistant`: `uuid`, `parentUuid`, `message.id` (the provider response id, `msg_…`),
  `message.model`, `message.content[]` (`tool_use` blocks: `id`, `name`, `input`). One
  API response with several content blocks (parallel tool calls) is written as several
  lines with the SAME `message.id` (`apiBlockIndex` 0, 1, …): they are one output.
  Lines with `message.model == "<synthetic>"` or `isApiErrorMessage` are written by
  Claude Code itself and were never an HTTP response.
- `user`: tool results (`message.content[].tool_result.tool_use_id`); on the spawning
  tool call's result line in the MAIN transcript only, `toolUseResult`:
  background `{status: "async_launched", agentId, …}`, foreground
  `{status: "completed", agentId, content, …}`. A subagent's own spawn results carry
  no `toolUseResult`: there meta.json's `toolUseId` and the tool_result line are joined.
- background completion arrives as a task notification, in whichever transcript the
  harness delivered it to (a background grandchild's goes to the root when its spawner
  has already stopped):
  * a `user` line with `origin.kind: "task-notification"` whose `message.content` is
    `<task-notification><task-id>AGENT</task-id><tool-use-id>TOOL</tool-use-id>…
    <status>completed</status>…<result>…</result>…</task-notification>`, or
  * mid-turn, an `attachment` line `{type: "queued_command", commandMode:
    "task-notification", prompt: <the same text>}`.
  On the wire the same text is wrapped in `<system-reminder>[SYSTEM NOTIFICATION …]`
  (a user text block, or a `role: "system"` message mid-turn); the text itself is
  verbatim, so it is what finalize looks for in the answering call's request. The
  answering call is the first assistant line reached from the notification line along
  `parentUuid` links (several notifications chained together share one answer).

Rules kept: identity comes only from `message.id` (the join value) and the transcript
the line is in; nothing is inferred from time, order or text. A fact whose evidence
conflicts is reported in `problems` (the capture becomes partial), never resolved by
picking a side.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roller.harnesses.base import (
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeRelation,
    ParticipantState,
)

ROOT_KEY = "main"
SPAWN_TOOLS = frozenset({"Agent", "Task"})
_AGENT_FILE = re.compile(r"^agent-(?P<id>[A-Za-z0-9_-]+)\.jsonl$")
_TAG = re.compile(r"<(task-id|tool-use-id|status)>([^<]*)</\1>")


@dataclass
class _Transcript:
    """One transcript file, indexed by line uuid and by parent link."""

    key: str
    path: str  # relative to native_dir
    lines: list[dict[str, Any]]
    by_uuid: dict[str, dict[str, Any]] = field(default_factory=dict)
    children: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for line in self.lines:
            uuid = line.get("uuid")
            if isinstance(uuid, str):
                self.by_uuid[uuid] = line
            parent = line.get("parentUuid")
            if isinstance(parent, str):
                self.children.setdefault(parent, []).append(line)


@dataclass(frozen=True)
class _Meta:
    agent_id: str
    path: str
    tool_use_id: str | None
    parent_agent_id: str | None
    depth: int | None
    shape: str | None
    finished: bool
    agent_type: str | None
    description: str | None


@dataclass(frozen=True)
class _Notification:
    receiver: str  # key of the transcript it was delivered to
    path: str
    uuid: str
    text: str
    task_id: str | None
    tool_use_id: str | None
    status: str | None
    answers: frozenset[str]  # response ids of the receiver's output(s) answering it


def _read_jsonl(path: Path, rel: str, problems: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problems.append(f"{rel}: unreadable ({exc.strerror or exc})")
        return out
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            problems.append(f"{rel}:{number}: not a JSON line (torn or corrupt)")
            continue
        if isinstance(value, dict):
            out.append(value)
        else:
            problems.append(f"{rel}:{number}: not a JSON object")
    return out


def _read_meta(path: Path, rel: str, agent_id: str, problems: list[str]) -> _Meta | None:
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        problems.append(f"{rel}: missing: subagent {agent_id} has no metadata")
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{rel}: unreadable metadata ({exc})")
        return None
    if not isinstance(data, dict):
        problems.append(f"{rel}: metadata is not a JSON object")
        return None

    def text(name: str) -> str | None:
        value = data.get(name)
        return value if isinstance(value, str) and value else None

    depth = data.get("spawnDepth")
    return _Meta(
        agent_id=agent_id,
        path=rel,
        tool_use_id=text("toolUseId"),
        parent_agent_id=text("parentAgentId"),
        depth=depth if isinstance(depth, int) and not isinstance(depth, bool) else None,
        shape=text("requestShape"),
        finished=data.get("finished") is True,
        agent_type=text("agentType"),
        description=text("description"),
    )


def _content_blocks(line: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _message_id(line: Mapping[str, Any]) -> str | None:
    """The provider response id of a real assistant output line, else None."""
    if line.get("type") != "assistant" or line.get("isApiErrorMessage"):
        return None
    message = line.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    mid = message.get("id")
    return mid if isinstance(mid, str) and mid else None


def _tool_use(t: _Transcript, tool_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(line, block) for each tool_use block with this id in the transcript."""
    return [
        (line, block)
        for line in t.lines
        if _message_id(line) is not None
        for block in _content_blocks(line)
        if block.get("type") == "tool_use" and block.get("id") == tool_id
    ]


def _tool_results(t: _Transcript, tool_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (line, block)
        for line in t.lines
        if line.get("type") == "user"
        for block in _content_blocks(line)
        if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id
    ]


def _notification_text(line: Mapping[str, Any]) -> str | None:
    """The task-notification text a line delivers, if it is a notification line."""
    if line.get("type") == "user":
        origin = line.get("origin")
        if not (isinstance(origin, dict) and origin.get("kind") == "task-notification"):
            return None
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [b.get("text") for b in content if isinstance(b, dict)]
            joined = "\n".join(t for t in texts if isinstance(t, str))
            return joined or None
        return None
    if line.get("type") == "attachment":
        att = line.get("attachment")
        if (
            isinstance(att, dict)
            and att.get("type") == "queued_command"
            and att.get("commandMode") == "task-notification"
            and isinstance(att.get("prompt"), str)
        ):
            return str(att["prompt"])
    return None


def _notifications(t: _Transcript) -> list[_Notification]:
    out = []
    for line in t.lines:
        text = _notification_text(line)
        uuid = line.get("uuid")
        if text is None or not isinstance(uuid, str):
            continue
        tags: dict[str, str] = {}
        for name, value in _TAG.findall(text):
            tags.setdefault(name, value.strip())
        out.append(
            _Notification(
                receiver=t.key,
                path=t.path,
                uuid=uuid,
                text=text,
                task_id=tags.get("task-id"),
                tool_use_id=tags.get("tool-use-id"),
                status=tags.get("status"),
                answers=frozenset(_answers(t, uuid)),
            )
        )
    return out


def _answers(t: _Transcript, uuid: str) -> set[str]:
    """Response ids of the first assistant outputs reached from a line along parentUuid."""
    found: set[str] = set()
    queue: deque[str] = deque([uuid])
    seen = {uuid}
    while queue:
        for child in t.children.get(queue.popleft(), []):
            mid = _message_id(child)
            if mid is not None:
                found.add(mid)
                continue
            cuuid = child.get("uuid")
            if isinstance(cuuid, str) and cuuid not in seen:
                seen.add(cuuid)
                queue.append(cuuid)
    return found


@dataclass
class _Child:
    """What the logs say about one subagent, gathered before relations are emitted."""

    agent_id: str
    transcript: _Transcript
    meta: _Meta | None
    parent_key: str | None = None
    source: str | None = None  # response id of the output that emitted the spawn
    state: ParticipantState = "unknown"
    delivered: bool = False
    unknown: bool = False


def read_claude_code_logs(native_dir: Path) -> NativeCapture:
    """Read the copied Claude Code transcripts under `native_dir` (see module docstring)."""
    problems: list[str] = []
    projects = native_dir / "projects"
    mains = sorted(projects.glob("*/*.jsonl"))
    if len(mains) != 1:
        problems.append(f"expected one main transcript under projects/*/, found {len(mains)}")
        if not mains:
            return _empty(problems)
    main_path = mains[0]
    session_id = main_path.stem
    rel = main_path.relative_to(native_dir).as_posix()
    transcripts: dict[str, _Transcript] = {
        ROOT_KEY: _Transcript(ROOT_KEY, rel, _read_jsonl(main_path, rel, problems))
    }
    _check_session(transcripts[ROOT_KEY], session_id, None, problems)

    children: dict[str, _Child] = {}
    sub_dir = main_path.parent / session_id / "subagents"
    for path in sorted(sub_dir.glob("agent-*.jsonl")):
        match = _AGENT_FILE.match(path.name)
        if match is None or match["id"] == ROOT_KEY:
            problems.append(f"{path.name}: not a subagent transcript name")
            continue
        agent_id = match["id"]
        trel = path.relative_to(native_dir).as_posix()
        t = _Transcript(agent_id, trel, _read_jsonl(path, trel, problems))
        _check_session(t, session_id, agent_id, problems)
        transcripts[agent_id] = t
        mrel = path.with_name(f"agent-{agent_id}.meta.json").relative_to(native_dir).as_posix()
        meta = _read_meta(native_dir / mrel, mrel, agent_id, problems)
        children[agent_id] = _Child(agent_id, t, meta, unknown=meta is None)

    notifications = [n for t in transcripts.values() for n in _notifications(t)]
    identity, coverage = _outputs(transcripts, problems)
    relations: list[NativeRelation] = []
    for child in children.values():
        relations += _child_relations(child, transcripts, notifications, problems)
    for n in notifications:
        if n.task_id not in children:
            problems.append(
                f"{n.path}: notification {n.uuid} names task {n.task_id}, "
                "which has no subagent transcript"
            )

    participants = [
        NativeParticipant(
            key=ROOT_KEY,
            role="root",
            parent_key=None,
            depth=0,
            native_ids={"session_id": session_id},
            name="main",
            state=_root_state(transcripts[ROOT_KEY]),
            evidence=(NativeEvidence(rel, None),),
        )
    ]
    depths = _depths(children)
    for child in children.values():
        meta = child.meta
        ids = {"session_id": session_id, "agent_id": child.agent_id}
        if meta is not None and meta.tool_use_id:
            ids["tool_use_id"] = meta.tool_use_id
        evidence = [NativeEvidence(child.transcript.path, None)]
        if meta is not None:
            evidence.append(NativeEvidence(meta.path, meta.tool_use_id))
        participants.append(
            NativeParticipant(
                key=child.agent_id,
                role="child",
                parent_key=child.parent_key,
                depth=depths[child.agent_id],
                native_ids=ids,
                name=meta.agent_type if meta is not None else None,
                state=child.state,
                evidence=tuple(evidence),
            )
        )

    aliases = {session_id: ROOT_KEY}
    aliases.update({f"{session_id}:{a}": a for a in children})
    return NativeCapture(
        participants=tuple(participants),
        identity=identity,
        relations=tuple(relations),
        coverage=coverage,
        lifecycle=_lifecycle(children.values()),
        subtasks="supported",
        problems=tuple(problems),
        wire_aliases=aliases,
    )


def _root_state(t: _Transcript) -> ParticipantState:
    """The main thread is done when its last output ended its turn."""
    last = [line for line in t.lines if _message_id(line) is not None]
    if not last:
        return "unknown"
    message = last[-1].get("message")
    stop = message.get("stop_reason") if isinstance(message, dict) else None
    return "completed" if stop == "end_turn" else "unknown"


def _empty(problems: list[str]) -> NativeCapture:
    return NativeCapture(
        participants=(),
        identity=NativeIdentity(basis="response_id", keys={}),
        relations=(),
        coverage=NativeCoverage(basis="per_message_id"),
        lifecycle=NativeLifecycle(status="unknown"),
        subtasks="supported",
        problems=tuple(problems),
    )


def _check_session(
    t: _Transcript, session_id: str, agent_id: str | None, problems: list[str]
) -> None:
    """Every line of a transcript must name its session (and, in a subagent's, its agent)."""
    for line in t.lines:
        sid = line.get("sessionId")
        if sid is not None and sid != session_id:
            problems.append(f"{t.path}: a line names session {sid}, not {session_id}")
            return
        if (
            agent_id is not None
            and line.get("type") in ("user", "assistant")
            and line.get("agentId") != agent_id
        ):
            problems.append(
                f"{t.path}: line {line.get('uuid')} names agent "
                f"{line.get('agentId')}, not {agent_id}"
            )
            return


def _outputs(
    transcripts: Mapping[str, _Transcript], problems: list[str]
) -> tuple[NativeIdentity, NativeCoverage]:
    """message.id -> participant, and the ids each participant's transcript records."""
    owners: dict[str, list[str]] = {}
    ids: dict[str, frozenset[str]] = {}
    for key, t in transcripts.items():
        mine = {mid for line in t.lines if (mid := _message_id(line)) is not None}
        ids[key] = frozenset(mine)
        for mid in mine:
            owners.setdefault(mid, []).append(key)
    for mid, keys in sorted(owners.items()):
        if len(keys) > 1:
            problems.append(f"response id {mid} appears in several transcripts: {', '.join(keys)}")
    identity = NativeIdentity(
        basis="response_id", keys={mid: tuple(keys) for mid, keys in owners.items()}
    )
    coverage = NativeCoverage(
        basis="per_message_id",
        ids=ids,
        notes=(
            "each captured call's provider response id is matched to a native assistant "
            "message.id; parallel tool calls are several lines of one message.id",
        ),
    )
    return identity, coverage


def _owner_of(tool_id: str, transcripts: Mapping[str, _Transcript]) -> list[str]:
    return [key for key, t in transcripts.items() if _tool_use(t, tool_id)]


def _child_relations(
    child: _Child,
    transcripts: Mapping[str, _Transcript],
    notifications: Iterable[_Notification],
    problems: list[str],
) -> list[NativeRelation]:
    meta = child.meta
    aid = child.agent_id
    if meta is None or meta.tool_use_id is None:
        if meta is not None:
            problems.append(f"{meta.path}: no toolUseId; the spawn of {aid} cannot be bound")
        child.unknown = True
        return []
    tool_id = meta.tool_use_id
    meta_ev = NativeEvidence(meta.path, tool_id)

    # The spawner: meta.json names it (parentAgentId, else the main thread); the
    # transcript holding the Agent tool_use must agree.
    named = meta.parent_agent_id or ROOT_KEY
    holders = _owner_of(tool_id, transcripts)
    if holders != [named]:
        problems.append(
            f"{meta.path}: names {named} as spawner of {aid}, but tool call {tool_id} "
            f"is in {', '.join(holders) or 'no transcript'}"
        )
        child.unknown = True
        return []
    if (meta.depth == 1) != (meta.parent_agent_id is None):
        problems.append(f"{meta.path}: spawnDepth {meta.depth} disagrees with parentAgentId")
    child.parent_key = named
    spawner = transcripts[named]
    (use_line, use_block), *_ = _tool_use(spawner, tool_id)
    if use_block.get("name") not in SPAWN_TOOLS:
        problems.append(f"{spawner.path}: {tool_id} is a {use_block.get('name')} call, not Agent")
    source = child.source = _message_id(use_line)
    launch_ev = NativeEvidence(spawner.path, str(use_line.get("uuid")))
    rels = [
        NativeRelation(
            type="spawn",
            parent_key=named,
            child_key=aid,
            tool_call_id=tool_id,
            source_response_id=source,
            evidence=(meta_ev, launch_ev, NativeEvidence(child.transcript.path, None)),
        )
    ]

    results = _tool_results(spawner, tool_id)
    tool_result = results[0] if len(results) == 1 else None
    if len(results) > 1:
        problems.append(f"{spawner.path}: {len(results)} results for tool call {tool_id}")
    recorded = tool_result[0].get("toolUseResult") if tool_result else None
    recorded = recorded if isinstance(recorded, dict) else None
    if recorded is not None and recorded.get("agentId") not in (None, aid):
        problems.append(
            f"{spawner.path}: the result of {tool_id} names agent "
            f"{recorded.get('agentId')}, meta.json names {aid}"
        )
        child.unknown = True
        return rels
    background = meta.shape == "background"
    if recorded is not None and (recorded.get("status") == "async_launched") != background:
        problems.append(
            f"{spawner.path}: result of {tool_id} is {recorded.get('status')}, "
            f"but meta.json says requestShape {meta.shape}"
        )
        child.unknown = True
        return rels

    outcome: str | None = None  # "completed" / "failed" / None (no evidence yet)
    if background:
        if tool_result is not None:
            rels.append(
                NativeRelation(
                    type="launch_acknowledged",
                    parent_key=named,
                    child_key=aid,
                    tool_call_id=tool_id,
                    source_response_id=source,
                    evidence=(NativeEvidence(spawner.path, str(tool_result[0].get("uuid"))),),
                    note=None
                    if recorded
                    else "subagent transcript: no toolUseResult; "
                    "bound by meta.json toolUseId and requestShape",
                )
            )
        outcome, delivered = _notified(child, tool_id, notifications, rels, problems)
        child.delivered = delivered
    elif tool_result is not None:
        line, block = tool_result
        status = recorded.get("status") if recorded is not None else None
        failed = block.get("is_error") is True or status not in (None, "completed")
        outcome = "failed" if failed else "completed"
        ev = NativeEvidence(spawner.path, str(line.get("uuid")))
        rels.append(
            NativeRelation(
                type="result_delivered",
                parent_key=named,
                child_key=aid,
                tool_call_id=tool_id,
                source_response_id=source,
                evidence=(ev, meta_ev),
                note=None
                if recorded
                else "subagent transcript: no toolUseResult; "
                "bound by meta.json toolUseId and the tool_result line",
            )
        )
        rels.append(_outcome(outcome, named, aid, tool_id, (ev, meta_ev)))
        # Delivered means the result reached the model: a later output answers it.
        child.delivered = bool(_answers(spawner, str(line.get("uuid"))))

    if outcome == "completed":
        child.state = "completed"
    elif outcome == "failed":
        child.state = "failed"
    elif meta.finished:
        child.state = "unknown"  # stopped, but no evidence yet of how
    else:
        child.state = "running"
    return rels


def _outcome(
    outcome: str, parent: str, child: str, tool_id: str, ev: tuple[NativeEvidence, ...]
) -> NativeRelation:
    return NativeRelation(
        type="child_completed" if outcome == "completed" else "child_failed",
        parent_key=parent,
        child_key=child,
        tool_call_id=tool_id,
        evidence=ev,
    )


def _notified(
    child: _Child,
    tool_id: str,
    notifications: Iterable[_Notification],
    rels: list[NativeRelation],
    problems: list[str],
) -> tuple[str | None, bool]:
    """Relations for every notification about this child; (latest outcome, delivered).

    Each delegation is judged by its own tool id: a notification for a later delegation
    of the same agent (a resumed child) never completes the original spawn, and back.
    """
    outcome: str | None = None
    delivered_spawn = False
    for n in notifications:
        if n.task_id != child.agent_id:
            continue
        ev = NativeEvidence(n.path, n.uuid)
        if n.tool_use_id is None:
            problems.append(f"{n.path}: notification {n.uuid} names no tool-use-id")
            child.unknown = True
            continue
        answers = n.answers
        target = next(iter(answers)) if len(answers) == 1 else None
        note = None
        if len(answers) > 1:
            note = f"answered by several responses: {', '.join(sorted(answers))}"
        elif not answers:
            note = "no later response of the receiver answers this notification"
        if n.receiver != child.parent_key:
            extra = f"delivered to {n.receiver}, not to the spawner {child.parent_key}"
            note = f"{note}; {extra}" if note else extra
        rels.append(
            NativeRelation(
                type="result_delivered",
                parent_key=n.receiver,
                child_key=child.agent_id,
                tool_call_id=n.tool_use_id,
                source_response_id=child.source if n.tool_use_id == tool_id else None,
                target_response_id=target,
                delivered_text=n.text,
                evidence=(ev,),
                note=note,
            )
        )
        status = "completed" if n.status == "completed" else "failed"
        rels.append(
            _outcome(status, child.parent_key or n.receiver, child.agent_id, n.tool_use_id, (ev,))
        )
        if n.tool_use_id == tool_id:
            outcome = status
            delivered_spawn = delivered_spawn or target is not None
    return outcome, delivered_spawn


def _depths(children: Mapping[str, _Child]) -> dict[str, int]:
    """Depth by following parent links; meta.json's spawnDepth must agree."""
    out: dict[str, int] = {}
    for aid, child in children.items():
        depth, cur, seen = 1, child, {aid}
        while cur.parent_key not in (None, ROOT_KEY):
            parent = children.get(cur.parent_key or "")
            if parent is None or parent.agent_id in seen:
                break
            seen.add(parent.agent_id)
            depth += 1
            cur = parent
        out[aid] = depth
    return out


def _lifecycle(children: Iterable[_Child]) -> NativeLifecycle:
    """`complete` only when every child stopped AND its result reached a later response
    of the agent it was delivered to; `unknown` when a child's evidence is missing or
    conflicting. Execution end and result delivery are checked separately."""
    children = list(children)
    pending = tuple(c.agent_id for c in children if c.state == "running" or not c.delivered)
    if any(c.unknown for c in children):
        return NativeLifecycle(status="unknown", pending_keys=pending)
    if pending:
        return NativeLifecycle(status="pending", pending_keys=pending)
    return NativeLifecycle(status="complete")
