"""Claude Code transcripts as indexed values: the parsing half of the native reader.

Checked against Claude Code 2.1.332 (`-p --output-format stream-json`), 2026-11-29.
Pure: files in, values out; nothing here decides identity or relations
(`claude_code.logs` does, from these values).

Location (copied by the adapter from the scratch HOME into `raw/native/projects/`):
- main transcript `projects/<cwd slug>/<sessionId>.jsonl`;
- one transcript per subagent, flat for every depth,
  `projects/<slug>/<sessionId>/subagents/agent-<agentId>.jsonl`, and beside it
  `agent-<agentId>.meta.json`: `{agentType, description, toolUseId, parentAgentId
  (depth >= 2 only), spawnDepth, requestShape: "background"|"foreground", finished}`;
  `finished: true` is written when the subagent stops and is absent while it runs.

Shape (one JSON object a line; only these fields are relied on):
- every line: `type`, `sessionId`; `user`/`assistant` lines of a subagent also `agentId`.
- `assistant`: `uuid`, `parentUuid`, `message.id` (the provider response id, `msg_…`),
  `message.stop_reason`, `message.content[]` (`tool_use`: `id`, `name`). One response
  with several content blocks (parallel tool calls) is written as several lines with
  the SAME `message.id`: one output. A line with `message.model == "<synthetic>"` or
  `isApiErrorMessage` was written by Claude Code itself, never an HTTP response.
- `user`: tool results (`message.content[].tool_result.tool_use_id`, `is_error`); on the
  result line of a spawn in the MAIN transcript only, `toolUseResult`: background
  `{status: "async_launched", agentId}`, foreground `{status: "completed", agentId}`.
- a task notification, in whichever transcript the harness delivered it to: a `user`
  line with `origin.kind: "task-notification"` and `message.content` =
  `<task-notification><task-id>AGENT</task-id><tool-use-id>TOOL</tool-use-id>…
  <status>completed</status>…</task-notification>`, or, mid-turn, an `attachment`
  line `{type: "queued_command", commandMode: "task-notification", prompt: <same text>}`.
  The text reaches the wire verbatim inside a `<system-reminder>` wrapper.
- `parentUuid` links every line to the one before it in its conversation; the output
  answering a line is the first assistant line reached along those links.

Problems (`NativeProblem` codes): `unreadable_file`, `not_json`, `not_an_object` (a
transcript line or a meta.json), `missing_file` (a subagent without its meta.json),
`foreign_record` (a line naming another session or agent), `unexpected_count` (not
exactly one main transcript), `unexpected_record` (a file in `subagents/` that is not
named `agent-<id>.jsonl`).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem, read_native_bytes

Line = dict[str, Any]
ROOT_KEY = "main"
_AGENT_FILE = re.compile(r"^agent-(?P<id>[A-Za-z0-9_-]+)\.jsonl$")
_TAG = re.compile(r"<(task-id|tool-use-id|status)>([^<]*)</\1>")


def message_id(line: Mapping[str, Any]) -> str | None:
    """The provider response id of a real assistant output line, else None."""
    if line.get("type") != "assistant" or line.get("isApiErrorMessage"):
        return None
    message = line.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    mid = message.get("id")
    return mid if isinstance(mid, str) and mid else None


def _blocks(line: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


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
        texts = [b.get("text") for b in _blocks(line)]
        return "\n".join(t for t in texts if isinstance(t, str)) or None
    att = line.get("attachment") if line.get("type") == "attachment" else None
    if (
        isinstance(att, dict)
        and att.get("type") == "queued_command"
        and att.get("commandMode") == "task-notification"
        and isinstance(att.get("prompt"), str)
    ):
        return str(att["prompt"])
    return None


@dataclass(frozen=True)
class Notification:
    """A task notification as delivered: where, its text, and the tags it carries."""

    receiver: str  # key of the transcript it was delivered to
    path: str
    uuid: str
    text: str
    task_id: str | None
    tool_use_id: str | None
    status: str | None
    answers: frozenset[str]  # response ids of the receiver's output(s) answering it


@dataclass
class Transcript:
    """One transcript file (`key`: `main` or the agentId), indexed by parent link."""

    key: str
    path: str  # relative to the native dir
    lines: list[Line]
    children: dict[str, list[Line]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for line in self.lines:
            parent = line.get("parentUuid")
            if isinstance(parent, str):
                self.children.setdefault(parent, []).append(line)

    def outputs(self) -> list[Line]:
        return [line for line in self.lines if message_id(line) is not None]

    def tool_uses(self, tool_id: str) -> list[tuple[Line, dict[str, Any]]]:
        """(line, block) for each tool_use block with this id."""
        return [
            (line, block)
            for line in self.outputs()
            for block in _blocks(line)
            if block.get("type") == "tool_use" and block.get("id") == tool_id
        ]

    def tool_results(self, tool_id: str) -> list[tuple[Line, dict[str, Any]]]:
        return [
            (line, block)
            for line in self.lines
            if line.get("type") == "user"
            for block in _blocks(line)
            if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id
        ]

    def answers(self, uuid: str) -> frozenset[str]:
        """Response ids of the first outputs reached from line `uuid` along parentUuid."""
        found: set[str] = set()
        queue, seen = deque([uuid]), {uuid}
        while queue:
            for child in self.children.get(queue.popleft(), []):
                mid = message_id(child)
                if mid is not None:
                    found.add(mid)
                    continue
                cuuid = child.get("uuid")
                if isinstance(cuuid, str) and cuuid not in seen:
                    seen.add(cuuid)
                    queue.append(cuuid)
        return frozenset(found)

    def notifications(self) -> list[Notification]:
        out = []
        for line in self.lines:
            text = _notification_text(line)
            uuid = line.get("uuid")
            if text is None or not isinstance(uuid, str):
                continue
            tags: dict[str, str] = {}
            for name, value in _TAG.findall(text):
                tags.setdefault(name, value.strip())
            out.append(
                Notification(
                    receiver=self.key,
                    path=self.path,
                    uuid=uuid,
                    text=text,
                    task_id=tags.get("task-id"),
                    tool_use_id=tags.get("tool-use-id"),
                    status=tags.get("status"),
                    answers=self.answers(uuid),
                )
            )
        return out


@dataclass(frozen=True)
class Meta:
    """A subagent's `agent-<id>.meta.json`."""

    agent_id: str
    path: str
    tool_use_id: str | None
    parent_agent_id: str | None
    depth: int | None
    shape: str | None  # requestShape: "background" / "foreground"
    finished: bool
    agent_type: str | None


@dataclass(frozen=True)
class Subagent:
    transcript: Transcript
    meta: Meta | None


@dataclass(frozen=True)
class Session:
    """Everything one `claude -p` session wrote: main transcript and subagents."""

    session_id: str
    main: Transcript
    subagents: Mapping[str, Subagent]  # agentId -> transcript and meta

    def transcripts(self) -> dict[str, Transcript]:
        return {ROOT_KEY: self.main, **{a: s.transcript for a, s in self.subagents.items()}}


def _read_jsonl(path: Path, rel: str, problems: list[NativeProblem]) -> list[Line]:
    out: list[Line] = []
    raw = read_native_bytes(path, rel, problems)
    if raw is None:
        return out
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            where = f"{rel}:{number}"
            problems.append(NativeProblem("not_json", "not a JSON line (torn or corrupt)", where))
            continue
        if isinstance(value, dict):
            out.append(value)
        else:
            problems.append(NativeProblem("not_an_object", "not a JSON object", f"{rel}:{number}"))
    return out


def _read_meta(path: Path, rel: str, agent_id: str, problems: list[NativeProblem]) -> Meta | None:
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        message = f"missing: subagent {agent_id} has no metadata"
        problems.append(NativeProblem("missing_file", message, rel))
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(NativeProblem("unreadable_file", f"unreadable metadata ({exc})", rel))
        return None
    if not isinstance(data, dict):
        problems.append(NativeProblem("not_an_object", "metadata is not a JSON object", rel))
        return None

    def text(name: str) -> str | None:
        value = data.get(name)
        return value if isinstance(value, str) and value else None

    depth = data.get("spawnDepth")
    return Meta(
        agent_id=agent_id,
        path=rel,
        tool_use_id=text("toolUseId"),
        parent_agent_id=text("parentAgentId"),
        depth=depth if isinstance(depth, int) and not isinstance(depth, bool) else None,
        shape=text("requestShape"),
        finished=data.get("finished") is True,
        agent_type=text("agentType"),
    )


def _check_lines(
    t: Transcript, session_id: str, agent_id: str | None, problems: list[NativeProblem]
) -> None:
    """Every line names this session; a subagent's messages name this agent."""
    for line in t.lines:
        sid = line.get("sessionId")
        if sid is not None and sid != session_id:
            message = f"a line names session {sid}, not {session_id}"
            problems.append(NativeProblem("foreign_record", message, t.path))
            return
        if (
            agent_id is not None
            and line.get("type") in ("user", "assistant")
            and line.get("agentId") != agent_id
        ):
            message = f"line {line.get('uuid')} names agent {line.get('agentId')}, not {agent_id}"
            problems.append(NativeProblem("foreign_record", message, t.path))
            return


def load_session(native_dir: Path, problems: list[NativeProblem]) -> Session | None:
    """The session under `native_dir/projects/`, or None when there is no transcript."""
    mains = sorted((native_dir / "projects").glob("*/*.jsonl"))
    if len(mains) != 1:
        message = f"expected one main transcript under projects/*/, found {len(mains)}"
        problems.append(NativeProblem("unexpected_count", message))
        if not mains:
            return None
    main_path = mains[0]
    session_id = main_path.stem
    rel = main_path.relative_to(native_dir).as_posix()
    main = Transcript(ROOT_KEY, rel, _read_jsonl(main_path, rel, problems))
    _check_lines(main, session_id, None, problems)
    subagents: dict[str, Subagent] = {}
    for path in sorted((main_path.parent / session_id / "subagents").glob("agent-*.jsonl")):
        match = _AGENT_FILE.match(path.name)
        if match is None or match["id"] == ROOT_KEY:
            message = "not a subagent transcript name"
            problems.append(NativeProblem("unexpected_record", message, path.name))
            continue
        agent_id = match["id"]
        trel = path.relative_to(native_dir).as_posix()
        transcript = Transcript(agent_id, trel, _read_jsonl(path, trel, problems))
        _check_lines(transcript, session_id, agent_id, problems)
        mpath = path.with_name(f"agent-{agent_id}.meta.json")
        mrel = mpath.relative_to(native_dir).as_posix()
        subagents[agent_id] = Subagent(transcript, _read_meta(mpath, mrel, agent_id, problems))
    return Session(session_id, main, subagents)
