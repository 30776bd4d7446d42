"""The protocol-neutral view of one model request, which scenario rules match against.

Each protocol module of the mock reads its own request shape into a `RequestView`; rules
and reply resolution only ever see this view. Rules kept here:
- The view is derived from the request alone. The mock keeps no per-conversation state, so
  concurrent conversations (a parent and its children) can never confuse each other:
  `turn` is the number of assistant turns already in *this* request's context.
- Text is kept per context entry with its role; system/developer text (top-level or inside
  the message list, as Claude Code sends) is never user text.
- `kind` separates side requests (title generation, JSON-mode calls such as Gemini CLI's
  router) from agent turns, so a scenario's agent rules never answer them by accident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from roller.wire.types import JSONObject, ProtocolName

EntryRole = Literal["system", "user", "assistant", "tool"]
RequestKind = Literal["agent", "title", "json"]

_TITLE_WORD = re.compile(r"\btitle\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """A tool the request offers; `schema` is its parameters' JSON schema ({} when none).
    `via`: the name a code-mode script calls it by, for a tool reached only from inside
    the `exec` tool (`roller.mock.code_mode`); None for a tool the model calls itself.
    `call_type`: the output item a call of it is, when the protocol has a dedicated one
    (Responses `tool_search_call` for a client `tool_search` tool); None: a plain call."""

    name: str
    namespace: str | None = None
    schema: JSONObject = field(default_factory=dict)
    via: str | None = None
    call_type: str | None = None

    @property
    def qualified_name(self) -> str:
        return self.name if self.namespace is None else f"{self.namespace}.{self.name}"

    def answers_to(self, name: str) -> bool:
        """Whether a rule's tool name (`name` or `ns.name`) denotes this tool."""
        return name in (self.name, self.qualified_name)


@dataclass(frozen=True, slots=True)
class ContextCall:
    """A tool call an earlier assistant turn made, as echoed in the request history."""

    id: str | None
    name: str
    namespace: str | None = None
    arguments: Any = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One piece of context. `message_index` is the position of the wire message/item it
    came from (one Anthropic user message can hold several tool results and text)."""

    role: EntryRole
    message_index: int
    text: str = ""
    calls: tuple[ContextCall, ...] = ()
    result_of: str | None = None
    tool_name: str | None = None


@dataclass(frozen=True, slots=True)
class RequestView:
    protocol: ProtocolName
    model: str
    stream: bool
    entries: tuple[Entry, ...] = ()
    tools: tuple[OfferedTool, ...] = ()
    system: str = ""
    # Set when the request asked for JSON output: the schema, or {} when it gave none.
    json_schema: JSONObject | None = None
    include_usage: bool = False
    body_size: int = 0
    # Code mode: namespaces of deferred tools the request names but does not declare yet.
    deferred: tuple[str, ...] = ()

    @property
    def kind(self) -> RequestKind:
        if self.json_schema is not None:
            return "json"
        if not self.tools and (
            _TITLE_WORD.search(self.system_text) or _TITLE_WORD.search(self.last_user_text)
        ):
            return "title"
        return "agent"

    @property
    def system_text(self) -> str:
        texts = [self.system, *(e.text for e in self.entries if e.role == "system")]
        return "\n".join(t for t in texts if t)

    @property
    def turn(self) -> int:
        """Assistant turns already in the context (a run of assistant entries is one turn)."""
        turns = 0
        previous: EntryRole | None = None
        for entry in self.entries:
            if entry.role == "system":
                continue
            if entry.role == "assistant" and previous != "assistant":
                turns += 1
            previous = entry.role
        return turns

    @property
    def last_message_role(self) -> EntryRole | None:
        """Role of the last non-system wire message; one carrying tool results is "tool"."""
        last = [e for e in self.entries if e.role != "system"]
        if not last:
            return None
        index = last[-1].message_index
        roles = {e.role for e in last if e.message_index == index}
        return "tool" if "tool" in roles else last[-1].role

    @property
    def user_texts(self) -> list[str]:
        return [e.text for e in self.entries if e.role == "user" and e.text]

    @property
    def last_user_text(self) -> str:
        texts = self.user_texts
        return texts[-1] if texts else ""

    @property
    def tool_results(self) -> list[Entry]:
        return [e for e in self.entries if e.role == "tool"]

    @property
    def last_tool_result(self) -> str:
        results = self.tool_results
        return results[-1].text if results else ""

    @property
    def context_text(self) -> str:
        """Every text of the request (system, messages, tool results), joined."""
        return "\n".join([self.system, *(e.text for e in self.entries if e.text)])

    @property
    def calls(self) -> list[ContextCall]:
        return [call for e in self.entries for call in e.calls]

    def offered(self, name: str) -> OfferedTool | None:
        return next((tool for tool in self.tools if tool.answers_to(name)), None)

    def result_for(self, call: ContextCall) -> Entry | None:
        """The tool result answering `call`: by id, else (Gemini without ids) by name."""
        for entry in self.tool_results:
            if call.id is not None and entry.result_of == call.id:
                return entry
        if call.id is None:
            return next((e for e in self.tool_results if e.tool_name == call.name), None)
        return None
