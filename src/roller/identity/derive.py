"""`derive`: the wire identity of one model request, by precedence.

Precedence, highest first (docs/identity.md has the full table):
1. Roller's explicit headers `x-roller-session-id`, `x-roller-agent-id`,
   `x-roller-parent-agent-id`, which any agent framework may send to declare its
   participants. When any is present they decide alone (rule `roller-headers`).
2. The declared harness's native headers, each read only when the declared harness is
   the one that sends it (`roller.identity.gating`); other harnesses' headers are
   rejected, never read.
3. A body-level conversation id (`roller.identity.body`) when it is per conversation:
   names the session, never the participant (parent and child share it), except Pi's.
4. Nothing (rule `none`): the caller falls back to source keying on its principal.

Every rule's evidence is collected even when a higher rule wins, so the call record's
`native_identity` shows what the harness itself said next to what was used.
Pure and total: no I/O, and no input (hostile headers, any body) makes it raise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from roller.identity.body import read_body_conversation
from roller.identity.codex import codex_rule
from roller.identity.deepseek import deepseek_rule
from roller.identity.evidence import Evidence, HeaderInput, HeaderView
from roller.identity.gating import (
    INSTALL_SCOPED_HEADERS,
    NATIVE_HEADER_OWNERS,
    REASON_INSTALL_SCOPED,
    trusted,
    untrusted_reason,
)
from roller.identity.harness_names import is_harness_name
from roller.identity.keys import Keys
from roller.identity.rules import claude_code_rule, opencode_rule, pi_rule, roller_rule
from roller.identity.wire_identity import BodyConversation, WireIdentity

Rule = Callable[[Evidence, object], Keys | None]

# Harnesses with a native header rule. The others (gemini-cli, hermes, openclaw, qwen-code,
# generic) send no usable per-conversation header: see docs/identity.md.
NATIVE_RULES: Final[Mapping[str, Rule]] = {
    "claude-code": claude_code_rule,
    "opencode": opencode_rule,
    "codex": codex_rule,
    "deepseek": deepseek_rule,
    "pi": pi_rule,
}

REASON_UNKNOWN_HARNESS: Final = "unknown harness name; only roller headers are read"
REASON_BODY_DIFFERS: Final = "differs from the session the headers name"


def derive(
    harness: str,
    headers: HeaderInput | None,
    body: object = None,
    roller: Mapping[str, str] | None = None,
) -> WireIdentity:
    """The wire identity of one request made under the declared `harness`.

    `headers`: the request headers as a mapping or a sequence of `(name, value)` pairs
    (the tape's form); names are case-insensitive. Roller's `x-roller-*` headers may be
    inside (when called before the proxy strips them) or in `roller`, the lower-cased
    record of those the proxy removed; copies that disagree are rejected as ambiguous.
    `body`: the parsed JSON request body, or None.
    """
    ev = Evidence(HeaderView(headers, roller))
    _gate(harness, ev)
    rule = NATIVE_RULES.get(harness)
    native = rule(ev, body) if rule is not None else None
    conversation = read_body_conversation(harness, body, ev)
    explicit = roller_rule(ev)
    if native is not None and conversation is not None:
        _cross_check(native, conversation, ev)
    keys = explicit or native or _from_body(conversation) or Keys(rule="none")
    return WireIdentity(
        harness=harness,
        session_key=keys.session_key,
        participant_key=keys.participant_key,
        parent_key=keys.parent_key,
        is_child=keys.is_child,
        session_key_is_root=keys.session_key_is_root,
        agent_id=keys.agent_id,
        parent_agent_id=keys.parent_agent_id,
        thread_id=keys.thread_id,
        agent_name=keys.agent_name,
        rule=keys.rule,
        evidence=dict(ev.values),
        rejected=tuple(ev.rejected),
    )


def _gate(harness: str, ev: Evidence) -> None:
    """Reject, without reading, every native header the declared harness does not send."""
    if not is_harness_name(harness):
        ev.reject("harness", REASON_UNKNOWN_HARNESS)
    for name in sorted(ev.view.names()):
        if name in NATIVE_HEADER_OWNERS and not trusted(name, harness):
            ev.reject(name, untrusted_reason(name, harness))
        elif name in INSTALL_SCOPED_HEADERS:
            ev.reject(name, REASON_INSTALL_SCOPED)


def _cross_check(native: Keys, conversation: BodyConversation, ev: Evidence) -> None:
    # The body names the root session; when the headers name it too they must agree.
    # The headers win either way; the disagreement is recorded for whoever audits it.
    if (
        conversation.per_conversation
        and native.session_key_is_root
        and native.session_key is not None
        and conversation.key != native.session_key
    ):
        ev.reject(f"body.{conversation.source}", REASON_BODY_DIFFERS)


def _from_body(conversation: BodyConversation | None) -> Keys | None:
    if conversation is None or not conversation.per_conversation:
        return None
    if conversation.per_participant:
        # Pi: the body id is the session, and a Pi session is one participant.
        return Keys(
            rule="body-conversation-id",
            session_key=conversation.key,
            participant_key=conversation.key,
            is_child=False,
            session_key_is_root=True,
        )
    return Keys(rule="body-conversation-id", session_key=conversation.key, session_key_is_root=True)
