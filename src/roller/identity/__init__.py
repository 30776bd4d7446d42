"""Wire identity: who made a model request, from its headers and body alone.

Pure functions over (declared harness, headers, body); no I/O, no clock, no guessing from
time, text or request order. The precedence, per-harness rules, gating and validation are
documented in docs/identity.md and in the modules:

- `derive` (`roller.identity.derive`): the precedence; returns a `WireIdentity`.
- `body_conversation_id` (`roller.identity.body`): the body-level conversation id.
- `valid_id` (`roller.identity.validation`): what may become a key.
- `roller.identity.gating`: which headers each declared harness is trusted to send.
- `roller.identity.rules`, `.codex`, `.deepseek`: the per-harness rules.
"""

from __future__ import annotations

from roller.identity.body import body_conversation_id
from roller.identity.derive import derive
from roller.identity.gating import ROLLER_AGENT, ROLLER_HEADERS, ROLLER_PARENT_AGENT, ROLLER_SESSION
from roller.identity.harness_names import HARNESS_NAMES, HarnessName, is_harness_name
from roller.identity.validation import MAX_ID_LENGTH, id_problem, valid_id
from roller.identity.wire_identity import (
    BodyConversation,
    BodySource,
    IdentityRule,
    Rejection,
    WireIdentity,
)

__all__ = [
    "HARNESS_NAMES",
    "MAX_ID_LENGTH",
    "ROLLER_AGENT",
    "ROLLER_HEADERS",
    "ROLLER_PARENT_AGENT",
    "ROLLER_SESSION",
    "BodyConversation",
    "BodySource",
    "HarnessName",
    "IdentityRule",
    "Rejection",
    "WireIdentity",
    "body_conversation_id",
    "derive",
    "id_problem",
    "is_harness_name",
    "valid_id",
]
