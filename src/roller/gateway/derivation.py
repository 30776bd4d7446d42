"""Which session row a gateway request belongs to, and which row is its parent.

Pure: a credential (`Client`: principal, account, declared harness) and the request's
`roller.identity.WireIdentity` in, a `SessionPlan` out. The header and body rules live in
`roller.identity` and are not repeated here; this module only maps its keys onto rows.

Precedence (highest first), as `roller.identity.derive` applies it:
1. explicit `X-Roller-Session-Id` (with roller's optional agent ids): source type
   `roller`. Its lineage comes only from roller's own headers: an explicit session never
   gets a parent derived from a harness header or the body.
2. the declared harness's native headers, read only when the credential's harness is
   the one that sends them (gating fails closed to the next step);
3. a per-conversation body id (OpenAI `prompt_cache_key`, Anthropic `metadata.user_id`
   session): it names the conversation only, never a participant;
4. nothing usable: source keying on the principal (`SessionPlan.own` is None), a row per
   (principal, harness) that closes after inactivity. A broken explicit declaration
   (rejected `X-Roller-Session-Id`) lands here too: it is never replaced by another source.

Native and body keys share one source type, the harness name, because they are one key
space: a Claude Code row keyed by `x-claude-code-session-id` is the same row its
`metadata.user_id` session names (the identity rules check that they agree).

A rejected value costs the lineage, never the session: a child whose own id was
rejected is charged to its session's row with `participant_unknown` set; a child whose
parent id was rejected keeps its own row, without a parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from roller.gateway.config import Client
from roller.identity import WireIdentity

SOURCE_TYPE_ROLLER: Final = "roller"
SOURCE_TYPE_SOURCE: Final = "source"
RULE_SOURCE: Final = "source"

Role = Literal["root", "child"]


@dataclass(frozen=True, slots=True)
class SourceKey:
    """A row's key within (account, principal): the key space and the key."""

    source_type: str
    source_id: str


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """What to find or create for one request.

    - `own`: the row the call belongs to; None means source keying on the principal.
    - `parent`: the row that is `own`'s parent, found or created by its source key
      exactly as the parent's own turn would; None when the wire names none.
    - `role`: what the wire says `own` is (None: it does not say).
    - `participant_unknown`: the wire says a participant made the call but its id was
      lost, so `own` is the session, not the participant.
    """

    client: Client
    own: SourceKey | None
    parent: SourceKey | None
    role: Role | None
    rule: str
    participant_unknown: bool = False
    # Hashed once: a plan keys the resolution cache on every request, and the gateway
    # keeps one plan per evidence (`roller.gateway.identities`).
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fields = (self.client, self.own, self.parent, self.role, self.rule)
        object.__setattr__(self, "_hash", hash((*fields, self.participant_unknown)))

    def __hash__(self) -> int:
        return self._hash


def plan_session(client: Client, identity: WireIdentity) -> SessionPlan:
    if identity.session_key is None:
        return SessionPlan(client, None, None, None, RULE_SOURCE)
    space = SOURCE_TYPE_ROLLER if identity.rule == "roller-headers" else client.harness
    participant = identity.participant_key
    role: Role | None = None
    if identity.is_child is True:
        role = "child"
    elif identity.is_child is False:
        role = "root"
    if participant is None:
        # The conversation is known, the participant is not (a body id, or a subagent
        # whose own id was rejected): the call goes to the session's row, and that row
        # is not given a role or a parent on this request's word.
        return SessionPlan(
            client,
            SourceKey(space, identity.session_key),
            None,
            None,
            identity.rule,
            participant_unknown=True,
        )
    parent = None if identity.parent_key is None else SourceKey(space, identity.parent_key)
    return SessionPlan(client, SourceKey(space, participant), parent, role, identity.rule)


def source_key_for_principal(client: Client, generation: int) -> SourceKey:
    """The source-keyed row of a principal's `generation`-th inactivity window.

    Keyed on the declared harness too, so one principal's two harnesses never share a
    row; generations only grow, so a closed row is never reopened.
    """
    return SourceKey(SOURCE_TYPE_SOURCE, f"{client.harness}#{generation}")
