"""Wire identity: who made a model request, from its headers and body alone.

A pure engine over harness profiles: `derive(profile, headers, body, roller)`, no I/O, no
clock, no guessing from time, text or request order, and no harness-specific branch or
literal in this package (docstrings name the harness a rule kind was first measured on).
What differs between harnesses is declared as data in each harness package's
`WireProfile` (`roller.harnesses.<name>.profile`) and reaches here through
`roller.harnesses.registry`, which also builds the `Gate` over every registered profile.
The precedence, rule kinds, gating and validation are in docs/identity.md and in:

- `derive` (`roller.identity.derive`): the precedence; returns a `WireIdentity`.
- `WireProfile` (`roller.identity.profile`): what a harness declares.
- rule kinds: `rules.AgentScoped`, `rules.SessionPerAgent`, `rules.SessionHeader`,
  `rules.CallerHeader`, `threads.ThreadSession`, `lineage.BodyLineage`; body ids `body.BodyField`,
  `body.JsonStringField`.
- `Gate` (`roller.identity.gating`): which headers each declared harness is trusted to send.
- `valid_id` (`roller.identity.validation`): what may become a key.
"""

from __future__ import annotations

from roller.identity.body import BodyField, JsonStringField, body_conversation_id
from roller.identity.derive import derive
from roller.identity.gating import (
    REASON_ACCOUNT_SCOPED,
    REASON_INSTALL_SCOPED,
    ROLLER_AGENT,
    ROLLER_HEADERS,
    ROLLER_PARENT_AGENT,
    ROLLER_SESSION,
    Gate,
)
from roller.identity.lineage import BodyLineage
from roller.identity.profile import BodyRule, HeaderRule, WireProfile
from roller.identity.rules import AgentScoped, CallerHeader, SessionHeader, SessionPerAgent
from roller.identity.threads import ThreadSession, TurnMetadata
from roller.identity.validation import MAX_ID_LENGTH, id_problem, valid_id
from roller.identity.wire_identity import (
    BodyConversation,
    BodySource,
    IdentityRule,
    Rejection,
    WireIdentity,
)

__all__ = [
    "MAX_ID_LENGTH",
    "REASON_ACCOUNT_SCOPED",
    "REASON_INSTALL_SCOPED",
    "ROLLER_AGENT",
    "ROLLER_HEADERS",
    "ROLLER_PARENT_AGENT",
    "ROLLER_SESSION",
    "AgentScoped",
    "BodyConversation",
    "BodyField",
    "BodyLineage",
    "BodyRule",
    "BodySource",
    "CallerHeader",
    "Gate",
    "HeaderRule",
    "IdentityRule",
    "JsonStringField",
    "Rejection",
    "SessionHeader",
    "SessionPerAgent",
    "ThreadSession",
    "TurnMetadata",
    "WireIdentity",
    "WireProfile",
    "body_conversation_id",
    "derive",
    "id_problem",
    "valid_id",
]
