"""The values identity derivation produces: `WireIdentity`, `BodyConversation`, `Rejection`.

Frozen values in flight; the call record persists them through `WireIdentity.native_identity()`.

Invariants every `WireIdentity` keeps (the tests check them on arbitrary input):
- every key (`session_key`, `participant_key`, `parent_key`) is None or a valid id
  (`roller.identity.validation.valid_id`);
- a participant is never its own parent: `parent_key != participant_key`;
- a parent link needs both ends: `parent_key` set implies `participant_key` set;
- a known participant belongs to a known session: `participant_key` set implies
  `session_key` set;
- `is_child` is False only when `participant_key == session_key` (a root is its session);
- `rule == "none"` implies no key at all. The converse does not hold for one rule:
  roller's explicit headers decide alone whenever they are present, so a request whose
  `x-roller-session-id` was rejected comes out as `roller-headers` with no keys (fail
  closed: another source is never substituted for a broken explicit declaration).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

IdentityRule = str
"""A rule name, persisted in every call record's `native_identity.rule`: the engine's own
`roller-headers`, `body-conversation-id` and `none`, or the name a harness profile gives
its native header rule (`<harness>-headers`, …; stable once recorded)."""

BodySource = str
"""The body field a conversation id came from, as a dotted path (`prompt_cache_key`)."""


class Rejection(NamedTuple):
    """A value that was present but not used, and why.

    `field` names where it was found: a lower-cased header name (`x-claude-code-agent-id`),
    a JSON path inside a header (`x-codex-turn-metadata.parent_thread_id`) or a body path
    (`body.dsh_session_log.session.parentSession`). `reason` is a fixed phrase; it never
    repeats the rejected value.
    """

    field: str
    reason: str


@dataclass(frozen=True, slots=True)
class BodyConversation:
    """A conversation id carried in a request body, and what it is worth.

    - `key`: the validated id.
    - `source`: the body field it came from.
    - `per_conversation`: True when the value is stable within one harness conversation and
      differs between conversations, so it may key a session. False when it is shared by
      unrelated runs (a hash of instructions and tools): such a value is evidence only
      and must never key a session.
    - `per_participant`: True when parent and child send different values (a harness
      whose session is one participant). False for every harness with subagents probed:
      the body id is the root's, in child requests too, so it names the conversation and
      never tells a child from its parent.
    """

    key: str
    source: BodySource
    per_conversation: bool
    per_participant: bool


@dataclass(frozen=True, slots=True)
class WireIdentity:
    """Who made one model request, as far as the wire says.

    - `harness`: the declared harness name the rules were gated on (as given).
    - `session_key`: the conversation the request belongs to: the key of the root
      participant when the wire names the root (`session_key_is_root` True); otherwise
      the furthest-up key the wire does name: an OpenCode or DeepSeek child names only
      its immediate parent, so its `session_key` is the parent's key (resolve the root by
      following `parent_key` across requests); a child whose parent was rejected has only
      itself.
    - `session_key_is_root`: whether `session_key` is certainly the root of its tree.
    - `participant_key`: the key of the participant that made this request: the child's
      own key for a child, the session key for a root. None when the request says it is
      a child but its own id was missing or rejected: attributing such a call to the root
      would be a wrong attribution, so it is left unknown.
    - `parent_key`: the participant key of the parent, or None (root, or lineage lost).
      It always equals the `participant_key` the parent's own requests derive.
    - `is_child`: True (the request says it is a subagent's), False (the request says it
      is the root's), None (the wire does not say).
    - `agent_id`, `parent_agent_id`: agent ids inside a session (Claude Code agent ids,
      roller agent ids), validated.
    - `thread_id`, `agent_name`: Codex' requesting thread and its turn-metadata agent name.
    - `run_id`: the harness's own local id of this request, when the wire carries one
      (a DeepSeek Harness log position `<session>:<throughSeq>`, which its native log
      confirms with a `delivery-accepted` event): what a native relation may bind a call by.
    - `rule`: which rule produced the keys (stable names, see `IdentityRule`).
    - `evidence`: the raw values considered (after validation), by field, for the call
      record's `native_identity`. Install-scoped ids are never included.
    - `rejected`: values present but not used, with the reason.
    """

    harness: str
    session_key: str | None = None
    participant_key: str | None = None
    parent_key: str | None = None
    is_child: bool | None = None
    session_key_is_root: bool = False
    agent_id: str | None = None
    parent_agent_id: str | None = None
    thread_id: str | None = None
    agent_name: str | None = None
    run_id: str | None = None
    rule: IdentityRule = "none"
    evidence: Mapping[str, str] = field(default_factory=dict)
    rejected: tuple[Rejection, ...] = ()

    def native_identity(self) -> dict[str, Any]:
        """A JSON-ready dict for the call record's `native_identity` field (`run_id` only
        when the wire carries one, so records of harnesses without it keep their bytes)."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "harness": self.harness,
            "session_key": self.session_key,
            "session_key_is_root": self.session_key_is_root,
            "participant_key": self.participant_key,
            "parent_key": self.parent_key,
            "is_child": self.is_child,
            "agent_id": self.agent_id,
            "parent_agent_id": self.parent_agent_id,
            "thread_id": self.thread_id,
            "agent_name": self.agent_name,
            "evidence": dict(self.evidence),
            "rejected": [[r.field, r.reason] for r in self.rejected],
        }
        if self.run_id is not None:
            out["run_id"] = self.run_id
        return out
