"""Scenarios: ordered rules that decide the mock model's reply to each request.

A scenario is a small TOML file (format reference: docs/mock.md). Rules kept here:
- Rules are tried in file order; the first whose matchers all hold *and* whose tool calls
  all resolve on this request wins. So "spawn" on a harness without a spawn tool simply
  falls through to the next rule, and one scenario serves every harness. A code-mode
  request may name deferred tool namespaces it does not declare yet: the first rule
  whose matchers hold but whose calls do not resolve then gets a lookup of them instead
  (`roller.mock.code_mode`); with the declarations in the next request's history the
  rule resolves, or falls through as before.
- A rule answers agent turns unless it names another `kind`; side requests (title
  generation, JSON mode) that no rule claims get a built-in answer: a short title, or an
  object filled from the requested schema. An agent turn no rule claims gets
  `default_text`. Every request therefore gets a reply; none is an error.
- Matching reads only the request (`RequestView`), never earlier requests, so concurrent
  conversations are answered independently and deterministically.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roller.mock.arguments import fill
from roller.mock.reply import Reply
from roller.mock.request_view import RequestKind, RequestView
from roller.mock.roles import (
    CallSpec,
    authored_user_texts,
    calls_of,
    pending_agent_ids,
    resolve_call,
)

DEFAULT_TEXT = "done"
DEFAULT_TITLE = "Roller mock session"


@dataclass(frozen=True, slots=True)
class Match:
    """The matchers of one rule; every one given must hold. String lists mean "any of"."""

    kind: RequestKind = "agent"
    protocol: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    turn_min: int | None = None
    turn_max: int | None = None
    tools_offered_any: tuple[str, ...] = ()
    tools_offered_all: tuple[str, ...] = ()
    tools_offered_none: tuple[str, ...] = ()
    last_message_role: str | None = None
    system_contains: tuple[str, ...] = ()
    user_text_contains: tuple[str, ...] = ()
    last_user_text_contains: tuple[str, ...] = ()
    tool_result_contains: tuple[str, ...] = ()
    last_tool_result_contains: tuple[str, ...] = ()
    context_contains: tuple[str, ...] = ()
    not_context_contains: tuple[str, ...] = ()
    called: frozenset[str] = frozenset()
    not_called: frozenset[str] = frozenset()
    # an earlier tool call's arguments (as JSON text) contain / no earlier call's contain
    # one of these: tells a level's own calls from those a forked context copied
    called_with: tuple[str, ...] = ()
    not_called_with: tuple[str, ...] = ()
    # some / no spawned child is still unreported (`roles.pending_agent_ids`: Codex v1)
    children_pending: bool | None = None

    def holds(self, view: RequestView) -> bool:
        if view.kind != self.kind:
            return False
        if self.protocol and view.protocol not in self.protocol:
            return False
        if self.model and not any(fnmatch.fnmatchcase(view.model, p) for p in self.model):
            return False
        turn = view.turn
        if self.turn_min is not None and turn < self.turn_min:
            return False
        if self.turn_max is not None and turn > self.turn_max:
            return False
        if self.tools_offered_any and not any(view.offered(n) for n in self.tools_offered_any):
            return False
        if not all(view.offered(n) for n in self.tools_offered_all):
            return False
        if any(view.offered(n) for n in self.tools_offered_none):
            return False
        if self.last_message_role is not None and view.last_message_role != self.last_message_role:
            return False
        # Haystacks are built only for the matchers a rule uses: contexts can be large.
        texts: list[tuple[tuple[str, ...], Callable[[], list[str]]]] = [
            (self.system_contains, lambda: [view.system_text]),
            (self.user_text_contains, lambda: authored_user_texts(view)),
            (self.last_user_text_contains, lambda: authored_user_texts(view)[-1:]),
            (self.tool_result_contains, lambda: [e.text for e in view.tool_results]),
            (self.last_tool_result_contains, lambda: [view.last_tool_result]),
            (self.context_contains, lambda: [view.context_text]),
            (self.called_with, lambda: _call_texts(view)),
        ]
        for needles, haystacks in texts:
            if needles and not any(n in h for h in haystacks() for n in needles):
                return False
        if self.not_called_with and any(
            n in h for h in _call_texts(view) for n in self.not_called_with
        ):
            return False
        if any(n in view.context_text for n in self.not_context_contains):
            return False
        if self.children_pending is not None and self.children_pending != bool(
            pending_agent_ids(view)
        ):
            return False
        if self.called and not calls_of(view, self.called):
            return False
        return not (self.not_called and calls_of(view, self.not_called))


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    match: Match
    text: str | None = None
    calls: tuple[CallSpec, ...] = ()
    json: Mapping[str, Any] | None = None
    # this rule's own pause between streamed events (None: the scenario's `delay_ms`)
    delay_ms: int | None = None

    def reply(self, view: RequestView) -> Reply | None:
        """This rule's reply to `view`, or None when a tool call it makes isn't offered."""
        resolved = []
        for spec in self.calls:
            call = resolve_call(spec, view)
            if call is None:
                return None
            resolved.append(call)
        if self.json is not None:
            return Reply(text=_json_text(view, self.json))
        return Reply(text=self.text or "", tool_calls=tuple(resolved))


@dataclass(frozen=True, slots=True)
class Decision:
    """The reply chosen for one request and the rule that chose it (for logs and tests)."""

    rule: str
    reply: Reply
    delay_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    source: str
    rules: tuple[Rule, ...]
    models: tuple[str, ...] = ("mock-model",)
    delay_ms: int = 0
    default_text: str = DEFAULT_TEXT
    title_text: str = DEFAULT_TITLE

    def respond(self, view: RequestView) -> Decision:
        for rule in self.rules:
            if rule.match.holds(view):
                reply = rule.reply(view)
                if reply is not None:
                    return Decision(rule.name, reply, rule.delay_ms)
                if view.deferred:
                    return Decision(f"{rule.name}: look up tools", Reply(lookups=view.deferred))
        kind = view.kind
        if kind == "json":
            return Decision("default:json", Reply(text=_json_text(view, {})))
        if kind == "title":
            return Decision("default:title", Reply(text=self.title_text))
        return Decision("default:agent", Reply(text=self.default_text))


def _call_texts(view: RequestView) -> list[str]:
    return [json.dumps(c.arguments, ensure_ascii=False) for c in view.calls]


def _json_text(view: RequestView, given: Mapping[str, Any]) -> str:
    """A JSON document for a JSON-mode request: the schema filled, `given` laid over it."""
    value = fill(view.json_schema or {}, all_properties=True)
    if isinstance(value, dict):
        value.update(given)
    elif given or value is None:
        value = dict(given)
    return json.dumps(value, ensure_ascii=False)
