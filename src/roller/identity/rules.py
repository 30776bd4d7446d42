"""Header identity rules of roller itself, Claude Code, OpenCode and Pi.

Each rule reads only its own headers through an `Evidence` (which validates and records
them) and returns `Keys`, or None when its headers say nothing usable. Gating on the
declared harness happens in `roller.identity.derive`; a rule here assumes it may read.

Roller and Claude Code share one scheme (`agent_scoped`): a session id, an agent id on
subagent requests only, and a parent agent id only below depth one. The child's key is
the composite `<session>:<agent>`; its parent is `<session>:<parent agent>`, or the
session root when no parent agent is named (a depth-one child's parent is the main
thread). Claude Code 2.1.332 sends `x-claude-code-session-id` (identical for parent and
every subagent), `x-claude-code-agent-id` (subagents only, `a` + 16 hex) and
`x-claude-code-parent-agent-id` (depth two and deeper).

OpenCode 1.18.33 gives every subagent its own session: `x-session-id` names the caller,
`x-parent-session-id` (children only) its parent. Pi 0.73.1 sends `session_id` on the
Responses API only; it has no in-process subagents.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from roller.identity.evidence import Evidence, Field
from roller.identity.gating import ROLLER_AGENT, ROLLER_HEADERS, ROLLER_PARENT_AGENT, ROLLER_SESSION
from roller.identity.keys import Keys, child, root
from roller.identity.validation import REASON_COMPOSITE_TOO_LONG, compose_key
from roller.identity.wire_identity import IdentityRule

CC_SESSION: Final = "x-claude-code-session-id"
CC_AGENT: Final = "x-claude-code-agent-id"
CC_PARENT_AGENT: Final = "x-claude-code-parent-agent-id"
OC_SESSION: Final = "x-session-id"
OC_PARENT: Final = "x-parent-session-id"
OC_AFFINITY: Final = "x-session-affinity"
PI_SESSION: Final = "session_id"

REASON_SELF_PARENT: Final = "names the caller itself as its parent"
REASON_PARENT_WITHOUT_AGENT: Final = "parent agent id without an agent id"
REASON_NO_SESSION: Final = "no valid session id to scope it"


def agent_scoped(
    ev: Evidence, rule: IdentityRule, session_name: str, agent_name: str, parent_name: str
) -> Keys | None:
    """The session + agent-id scheme shared by roller's headers and Claude Code."""
    session = ev.header_id(session_name)
    agent = ev.header_id(agent_name, agent=True)
    parent = ev.header_id(parent_name, agent=True)
    if session.value is None:
        for name, value in ((agent_name, agent), (parent_name, parent)):
            if value.value is not None:
                ev.reject(name, REASON_NO_SESSION)
        return None
    s = session.value
    if not agent.present:
        if not parent.present:
            return root(rule, s)
        # A parent without the caller's own id: a child we cannot name. Never the root.
        ev.reject(parent_name, REASON_PARENT_WITHOUT_AGENT)
        return child(rule, session=s, session_is_root=True, participant=None, parent=None)
    if agent.value is None:
        return child(rule, session=s, session_is_root=True, participant=None, parent=None)
    participant = compose_key(s, agent.value)
    if participant is None:
        ev.reject(agent_name, REASON_COMPOSITE_TOO_LONG)
    parent_key: str | None = s
    if parent.present:
        parent_key = _parent_agent_key(ev, parent_name, s, agent.value, parent)
    keys = child(rule, session=s, session_is_root=True, participant=participant, parent=parent_key)
    return replace(keys, agent_id=agent.value, parent_agent_id=parent.value)


def _parent_agent_key(
    ev: Evidence, parent_name: str, session: str, agent: str, parent: Field
) -> str | None:
    if parent.value is None:
        return None
    if parent.value == agent:
        ev.reject(parent_name, REASON_SELF_PARENT)
        return None
    key = compose_key(session, parent.value)
    if key is None:
        ev.reject(parent_name, REASON_COMPOSITE_TOO_LONG)
    return key


def roller_rule(ev: Evidence) -> Keys | None:
    """Roller's explicit headers, or None when none of them was sent.

    When any is sent they decide alone: a rejected `x-roller-session-id` yields a result
    with no keys rather than falling through to the harness's own headers, because a
    framework that declared its participants explicitly must not be re-attributed from
    another source behind its back.
    """
    if not any(name in ev.view for name in ROLLER_HEADERS):
        return None
    keys = agent_scoped(ev, "roller-headers", ROLLER_SESSION, ROLLER_AGENT, ROLLER_PARENT_AGENT)
    return keys if keys is not None else Keys(rule="roller-headers")


def claude_code_rule(ev: Evidence, body: object) -> Keys | None:
    return agent_scoped(ev, "claude-code-headers", CC_SESSION, CC_AGENT, CC_PARENT_AGENT)


def opencode_rule(ev: Evidence, body: object) -> Keys | None:
    """OpenCode: the caller is `x-session-id`; a child also names `x-parent-session-id`.

    The root is not on a child's wire, only its parent: the child's `session_key` is the
    parent (not known to be the root; OpenCode 1.18.33 refuses depth two, so in practice
    it is). A child whose parent was rejected keeps only itself as `session_key`.
    """
    own = ev.header_id(OC_SESSION)
    parent = ev.header_id(OC_PARENT)
    ev.header_id(OC_AFFINITY)  # evidence only: always equal to x-session-id when sent
    if not parent.present:
        return root("opencode-headers", own.value) if own.value is not None else None
    parent_key = parent.value
    if parent_key is not None and parent_key == own.value:
        ev.reject(OC_PARENT, REASON_SELF_PARENT)
        parent_key = None
    session = parent_key if parent_key is not None else own.value
    if session is None:
        return None
    return child(
        "opencode-headers",
        session=session,
        session_is_root=False,
        participant=own.value,
        parent=parent_key,
    )


def pi_rule(ev: Evidence, body: object) -> Keys | None:
    """Pi: `session_id` (Responses API only) names the session, which is the caller."""
    session = ev.header_id(PI_SESSION)
    return root("pi-session-header", session.value) if session.value is not None else None
