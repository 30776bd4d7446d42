"""Header rule kinds: agent-scoped (roller's own headers use it too), a session per agent,
and a single session header.

Each kind is a frozen record a harness profile parametrizes with its header names
(`roller.harnesses.<name>.profile`); `read` reads only those headers through an
`Evidence` (which validates and records them) and returns `Keys`, or None when they say
nothing usable. Gating on the declared harness happens in `roller.identity.derive`; a
rule here assumes it may read.

- `AgentScoped`: a session id on every request, an agent id on subagent requests only,
  and a parent agent id only below depth one. The child's key is the composite
  `<session>:<agent>`; its parent is `<session>:<parent agent>`, or the session root when
  no parent agent is named (a depth-one child's parent is the main thread). Roller's
  explicit `x-roller-*` headers are this kind (`roller_rule`).
- `SessionPerAgent`: every agent is its own session. One header names the caller, another
  (children only) its parent; the root is not on a child's wire, only its parent, so a
  child's `session_key` is the parent (not known to be the root). Headers listed in
  `evidence` are recorded, never used.
- `SessionHeader`: one header names the session, which is the caller (a harness with no
  in-process subagents).
- `CallerHeader`: one header names the caller, and nothing on the wire says whether it is
  the root or a child (the header roller's own Hermes plugin adds: each agent's own
  session id, parents named only in the native store). The caller is the participant;
  its role and parent are left to native evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from roller.identity.evidence import BodyPath, Evidence, Field
from roller.identity.gating import ROLLER_AGENT, ROLLER_HEADERS, ROLLER_PARENT_AGENT, ROLLER_SESSION
from roller.identity.keys import Keys, child, root, unknown_role
from roller.identity.validation import REASON_COMPOSITE_TOO_LONG, compose_key
from roller.identity.wire_identity import IdentityRule

REASON_SELF_PARENT: Final = "names the caller itself as its parent"
REASON_PARENT_WITHOUT_AGENT: Final = "parent agent id without an agent id"
REASON_NO_SESSION: Final = "no valid session id to scope it"


@dataclass(frozen=True, slots=True)
class AgentScoped:
    """Session + agent id + parent agent id (see the module docstring)."""

    name: IdentityRule
    session: str
    agent: str
    parent: str

    def headers(self) -> tuple[str, ...]:
        return (self.session, self.agent, self.parent)

    def body_paths(self) -> tuple[BodyPath, ...]:
        return ()  # headers only

    def read(self, ev: Evidence, body: object) -> Keys | None:
        session = ev.header_id(self.session)
        agent = ev.header_id(self.agent, agent=True)
        parent = ev.header_id(self.parent, agent=True)
        if session.value is None:
            for name, value in ((self.agent, agent), (self.parent, parent)):
                if value.value is not None:
                    ev.reject(name, REASON_NO_SESSION)
            return None
        s = session.value
        if not agent.present:
            if not parent.present:
                return root(self.name, s)
            # A parent without the caller's own id: a child we cannot name. Never the root.
            ev.reject(self.parent, REASON_PARENT_WITHOUT_AGENT)
            return child(self.name, session=s, session_is_root=True, participant=None, parent=None)
        if agent.value is None:
            return child(self.name, session=s, session_is_root=True, participant=None, parent=None)
        participant = compose_key(s, agent.value)
        if participant is None:
            ev.reject(self.agent, REASON_COMPOSITE_TOO_LONG)
        parent_key: str | None = s
        if parent.present:
            parent_key = self._parent_key(ev, s, agent.value, parent)
        keys = child(
            self.name, session=s, session_is_root=True, participant=participant, parent=parent_key
        )
        return replace(keys, agent_id=agent.value, parent_agent_id=parent.value)

    def _parent_key(self, ev: Evidence, session: str, agent: str, parent: Field) -> str | None:
        if parent.value is None:
            return None
        if parent.value == agent:
            ev.reject(self.parent, REASON_SELF_PARENT)
            return None
        key = compose_key(session, parent.value)
        if key is None:
            ev.reject(self.parent, REASON_COMPOSITE_TOO_LONG)
        return key


ROLLER_RULE: Final = AgentScoped(
    "roller-headers", ROLLER_SESSION, ROLLER_AGENT, ROLLER_PARENT_AGENT
)


def roller_rule(ev: Evidence) -> Keys | None:
    """Roller's explicit headers, or None when none of them was sent.

    When any is sent they decide alone: a rejected `x-roller-session-id` yields a result
    with no keys rather than falling through to the harness's own headers, because a
    framework that declared its participants explicitly must not be re-attributed from
    another source behind its back.
    """
    if not any(name in ev.view for name in ROLLER_HEADERS):
        return None
    keys = ROLLER_RULE.read(ev, None)
    return keys if keys is not None else Keys(rule=ROLLER_RULE.name)


@dataclass(frozen=True, slots=True)
class SessionPerAgent:
    """The caller's own session + its parent's session (see the module docstring)."""

    name: IdentityRule
    own: str
    parent: str
    evidence: tuple[str, ...] = ()

    def headers(self) -> tuple[str, ...]:
        return (self.own, self.parent, *self.evidence)

    def body_paths(self) -> tuple[BodyPath, ...]:
        return ()  # headers only

    def read(self, ev: Evidence, body: object) -> Keys | None:
        own = ev.header_id(self.own)
        parent = ev.header_id(self.parent)
        for name in self.evidence:
            ev.header_id(name)  # evidence only
        if not parent.present:
            return root(self.name, own.value) if own.value is not None else None
        parent_key = parent.value
        if parent_key is not None and parent_key == own.value:
            ev.reject(self.parent, REASON_SELF_PARENT)
            parent_key = None
        session = parent_key if parent_key is not None else own.value
        if session is None:
            return None
        return child(
            self.name,
            session=session,
            session_is_root=False,
            participant=own.value,
            parent=parent_key,
        )


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """One header names the session, which is the caller."""

    name: IdentityRule
    header: str

    def headers(self) -> tuple[str, ...]:
        return (self.header,)

    def body_paths(self) -> tuple[BodyPath, ...]:
        return ()  # headers only

    def read(self, ev: Evidence, body: object) -> Keys | None:
        session = ev.header_id(self.header)
        return root(self.name, session.value) if session.value is not None else None


@dataclass(frozen=True, slots=True)
class CallerHeader:
    """One header names the caller; its role is not on the wire."""

    name: IdentityRule
    header: str

    def headers(self) -> tuple[str, ...]:
        return (self.header,)

    def body_paths(self) -> tuple[BodyPath, ...]:
        return ()  # headers only

    def read(self, ev: Evidence, body: object) -> Keys | None:
        caller = ev.header_id(self.header).value
        if caller is None:
            return None
        return unknown_role(self.name, caller, session_is_root=False, participant=caller)
