"""Gemini CLI chat files: parsing one chat, and the spawn tool calls chats hold.

Checked against Gemini CLI 0.61.0, runs on 2026-11-29 against `roller mock-model`; real
chats under `tests/data/harnesses/gemini-cli/`.

Location (copied by the adapter from the scratch HOME into `raw/native/`):
- `tmp/<project slug>/chats/session-<YYYY-MM-DDTHH-MM>-<sessionId[:8]>.jsonl`: the main
  chat (header `kind: "main"`);
- `tmp/<slug>/chats/<mainSessionId>/<agentId>.jsonl`: one chat per subagent (header
  `kind: "subagent"`, `sessionId` = the executor's `agentId`). The folder is named after
  the MAIN session at every depth (the executor always passes it on), so it is not the
  parent link; the child header names no parent.

Shape (one JSON value a line; only these fields are relied on): a header
`{sessionId, projectHash, startTime, kind, …}`; message records `{id, type: "user" |
"gemini" | …, toolCalls[]}` — a `gemini` message is written twice with the same `id`,
first without and then with its `toolCalls`; the later copy wins —; metadata patches
`{"$set": {…}}` (`messages` replaces the list). `toolCalls[]`: `{id, name, args,
result[{functionResponse{id, name, response}}], status}`, and on the spawn tool
(`invoke_agent`) `agentId` = the child's `sessionId`: the parent -> child link. The
spawn's result output is the CLI's fixed text `Subagent '<name>' finished.\nTermination
Reason: <REASON>\nResult: …`. Native tool-call ids are `<tool>__<wire id>` for the main
agent (the wire carries the id without the prefix) and `<agentId>#<turn>-<index>` for a
subagent (as on the wire). A rewound message (`$rewindTo`) still happened: every
message ever written counts. Pure; what cannot be read is a `NativeProblem`:
`unreadable_file`, `not_json`, `not_an_object` (a line), `missing_header` (no chat
header), `duplicate_id` (two files for one session).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roller.harnesses.base import NativeProblem, read_native_bytes

CHATS_GLOB = "tmp/*/chats/**/*.jsonl"
_TERMINATION = re.compile(r"^Termination Reason: (?P<reason>\S+)\s*$", re.MULTILINE)


@dataclass
class Chat:
    path: str  # relative to native_dir
    session_id: str
    kind: str
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def tool_calls(self) -> Iterable[dict[str, Any]]:
        for message in self.messages.values():
            if message.get("type") != "gemini":
                continue
            for call in message.get("toolCalls") or []:
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    yield call

    def last_message(self) -> dict[str, Any] | None:
        return next(reversed(self.messages.values()), None)


@dataclass(frozen=True)
class Spawn:
    chat: Chat
    call: dict[str, Any]

    @property
    def tool_id(self) -> str:
        return str(self.call["id"])

    @property
    def agent_id(self) -> str:
        return str(self.call["agentId"])


def wire_tool_id(name: str, native_id: str) -> str:
    """The id the wire carries for a native tool-call id (`<tool>__` prefix removed)."""
    prefix = f"{name}__"
    return native_id[len(prefix) :] if native_id.startswith(prefix) else native_id


def read_chat(path: Path, rel: str, problems: list[NativeProblem]) -> Chat | None:
    header: dict[str, Any] | None = None
    messages: dict[str, dict[str, Any]] = {}
    raw = read_native_bytes(path, rel, problems)
    if raw is None:
        return None
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            problems.append(NativeProblem("not_json", "not JSON", f"{rel}:{n}"))
            continue
        if not isinstance(record, dict):
            problems.append(NativeProblem("not_an_object", "not a JSON object", f"{rel}:{n}"))
            continue
        if isinstance(record.get("sessionId"), str) and "projectHash" in record:
            header = header or record
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict):
            for message in record["$set"].get("messages") or []:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    messages.setdefault(message["id"], message)
    if header is None:
        problems.append(NativeProblem("missing_header", "no chat header (sessionId, kind)", rel))
        return None
    return Chat(rel, header["sessionId"], str(header.get("kind")), messages)


def read_chats(native_dir: Path, problems: list[NativeProblem]) -> dict[str, Chat]:
    """Every chat under `native_dir`, by session id; a second file for one session is a
    problem (the first, in path order, is kept)."""
    chats: dict[str, Chat] = {}
    for path in sorted(native_dir.glob(CHATS_GLOB)):
        rel = path.relative_to(native_dir).as_posix()
        chat = read_chat(path, rel, problems)
        if chat is None:
            continue
        if chat.session_id in chats:
            message = f"session {chat.session_id} also has {chats[chat.session_id].path}"
            problems.append(NativeProblem("duplicate_id", message, rel))
            continue
        chats[chat.session_id] = chat
    return chats


def spawns_in(chats: Iterable[Chat]) -> list[Spawn]:
    """The tool calls that started a subagent: those carrying an `agentId`."""
    return [
        Spawn(chat, call)
        for chat in chats
        for call in chat.tool_calls()
        if isinstance(call.get("agentId"), str) and call["agentId"]
    ]


def result_output(spawn: Spawn) -> str | None:
    """The spawn's recorded result text (the functionResponse answering its id)."""
    for item in spawn.call.get("result") or []:
        response = item.get("functionResponse") if isinstance(item, dict) else None
        if isinstance(response, dict) and response.get("id") == spawn.tool_id:
            body = response.get("response")
            output = body.get("output") if isinstance(body, dict) else None
            return output if isinstance(output, str) else json.dumps(body, sort_keys=True)
    return None


def termination_reason(spawn: Spawn) -> str | None:
    """The `Termination Reason:` the CLI wrote into the spawn's result, if any."""
    output = result_output(spawn)
    match = _TERMINATION.search(output) if output is not None else None
    return match["reason"] if match is not None else None
