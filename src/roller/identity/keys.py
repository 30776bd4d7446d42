"""`Keys`: what one identity rule concluded, before evidence and rejections are attached.

Each rule kind (`roller.identity.rules`, `.threads`, `.lineage`) returns a `Keys` or None
("this rule has nothing to say"); `roller.identity.derive` picks one by precedence and
wraps it into a `WireIdentity`. The constructors below are how the rules build a result
(labels such as `agent_id` are added with `dataclasses.replace`), so the invariants of
`WireIdentity` are kept in one place: a root is its own session, a child never names
itself as parent, a parent link needs a known child.
"""

from __future__ import annotations

from dataclasses import dataclass

from roller.identity.wire_identity import IdentityRule


@dataclass(frozen=True, slots=True)
class Keys:
    rule: IdentityRule
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


def root(rule: IdentityRule, session: str) -> Keys:
    """A request the wire says the root made: participant, session and root are one."""
    return Keys(
        rule=rule,
        session_key=session,
        participant_key=session,
        is_child=False,
        session_key_is_root=True,
    )


def child(
    rule: IdentityRule,
    *,
    session: str,
    session_is_root: bool,
    participant: str | None,
    parent: str | None,
) -> Keys:
    """A request the wire says a subagent made.

    `participant` None means the child's own id was lost: the parent link goes with it
    (a link needs both ends). A parent equal to the participant is a bug in the caller,
    who must have rejected it with a reason already; it is dropped here as a last guard.
    """
    if participant is None or parent == participant:
        parent = None
    return Keys(
        rule=rule,
        session_key=session,
        participant_key=participant,
        parent_key=parent,
        is_child=True,
        session_key_is_root=session_is_root,
    )


def unknown_role(
    rule: IdentityRule, session: str, *, session_is_root: bool, participant: str | None = None
) -> Keys:
    """The session is known but the wire does not say whether root or child made the call.

    `participant` is set only where the wire names the caller without naming its role
    (a DeepSeek request whose body lineage was omitted).
    """
    return Keys(
        rule=rule,
        session_key=session,
        participant_key=participant,
        session_key_is_root=session_is_root,
    )
