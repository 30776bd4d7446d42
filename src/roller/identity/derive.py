"""`derive`: the wire identity of one model request, by precedence, over a harness profile.

Precedence, highest first (docs/identity.md has the full table):
1. Roller's explicit headers `x-roller-session-id`, `x-roller-agent-id`,
   `x-roller-parent-agent-id`, which any agent framework may send to declare its
   participants. When any is present they decide alone (rule `roller-headers`).
2. The declared harness's native header rule (`WireProfile.rule`), its headers read only
   when the declared harness is the one that sends them (`roller.identity.gating.Gate`);
   other harnesses' headers are rejected, never read.
3. A body-level conversation id (`WireProfile.body`) when it is per conversation: names
   the session, never the participant (parent and child share it), unless the profile
   says the value is per participant.
4. Nothing (rule `none`): the caller falls back to source keying on its principal.

Every rule's evidence is collected even when a higher rule wins, so the call record's
`native_identity` shows what the harness itself said next to what was used.
Pure and total: no I/O, and no input (hostile headers, any body) makes it raise. No
harness is named here: what differs between harnesses is the profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from roller.identity.body import read_body_conversation
from roller.identity.evidence import Evidence, HeaderInput, HeaderView
from roller.identity.gating import Gate
from roller.identity.keys import Keys
from roller.identity.profile import WireProfile
from roller.identity.rules import roller_rule
from roller.identity.wire_identity import BodyConversation, WireIdentity

REASON_BODY_DIFFERS: Final = "differs from the session the headers name"


def derive(
    profile: WireProfile,
    headers: HeaderInput | None,
    body: object = None,
    roller: Mapping[str, str] | None = None,
    *,
    gate: Gate | None = None,
) -> WireIdentity:
    """The wire identity of one request made under the harness `profile` describes.

    `headers`: the request headers as a mapping or a sequence of `(name, value)` pairs
    (the tape's form); names are case-insensitive. Roller's `x-roller-*` headers may be
    inside (when called before the proxy strips them) or in `roller`, the lower-cased
    record of those the proxy removed; copies that disagree are rejected as ambiguous.
    `body`: the parsed JSON request body, or None.
    `gate`: the trust table of every registered harness (`roller.harnesses.registry`
    passes its own), so other harnesses' headers are rejected by name; without it only
    this profile is known.
    """
    gate = gate if gate is not None else Gate.of((profile,))
    ev = Evidence(HeaderView(headers, roller))
    gate.check(profile.harness, ev)
    native = profile.rule.read(ev, body) if profile.rule is not None else None
    conversation = read_body_conversation(profile, body, ev)
    explicit = roller_rule(ev)
    if native is not None and conversation is not None:
        _cross_check(native, conversation, ev)
    keys = explicit or native or _from_body(conversation) or Keys(rule="none")
    return WireIdentity(
        harness=profile.harness,
        session_key=keys.session_key,
        participant_key=keys.participant_key,
        parent_key=keys.parent_key,
        is_child=keys.is_child,
        session_key_is_root=keys.session_key_is_root,
        agent_id=keys.agent_id,
        parent_agent_id=keys.parent_agent_id,
        thread_id=keys.thread_id,
        agent_name=keys.agent_name,
        run_id=keys.run_id,
        rule=keys.rule,
        evidence=dict(ev.values),
        rejected=tuple(ev.rejected),
    )


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
        # A harness whose session is one participant: the body id is both.
        return Keys(
            rule="body-conversation-id",
            session_key=conversation.key,
            participant_key=conversation.key,
            is_child=False,
            session_key_is_root=True,
        )
    return Keys(rule="body-conversation-id", session_key=conversation.key, session_key_is_root=True)
