"""Body-level conversation id kinds: a plain (optionally prefixed) field, and an id inside a
JSON object carried as a string.

The gateway's third identity source, after roller's explicit headers and the harness's
native headers. Like the headers it is gated on the declared harness (a profile names
its body field; other harnesses' fields are never read), because the fields are generic:
`prompt_cache_key` is an ordinary OpenAI Responses field any client may fill with
anything, and Anthropic `metadata.user_id` is free text for most clients.

What a kind says about its value (declared per harness, measured; docs/identity.md):
- `per_conversation`: stable within one conversation and different between
  conversations, so it may key a session. A value shared by unrelated runs (a hash of
  instructions and tools) is evidence only and never keys anything.
- `per_participant`: parent and child send different values (true only for a harness
  whose session is one participant).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from roller.identity.evidence import BodyPath, Evidence, HeaderView, dig, parse_json_object
from roller.identity.profile import WireProfile
from roller.identity.wire_identity import BodyConversation

REASON_USER_ID_NOT_JSON: Final = "not a JSON object string"


def reason_not_prefixed(prefix: str) -> str:
    return f"not of the form {prefix}<session id>"


@dataclass(frozen=True, slots=True)
class BodyField:
    """A plain body field; with `prefix`, the key is the part after it (required)."""

    path: tuple[str, ...]
    per_conversation: bool = True
    per_participant: bool = False
    prefix: str | None = None

    def body_paths(self) -> tuple[BodyPath, ...]:
        return (self.path,)

    def read(self, body: object, ev: Evidence) -> BodyConversation | None:
        present, value = dig(body, *self.path)
        if not present:
            return None
        source = ".".join(self.path)
        if self.prefix is not None:
            if not isinstance(value, str) or not value.startswith(self.prefix):
                ev.reject(f"body.{source}", reason_not_prefixed(self.prefix))
                return None
            value = value[len(self.prefix) :]
        key = ev.check(f"body.{source}", value).value
        if key is None:
            return None
        return BodyConversation(
            key=key,
            source=source,
            per_conversation=self.per_conversation,
            per_participant=self.per_participant,
        )


@dataclass(frozen=True, slots=True)
class JsonStringField:
    """A body field holding a JSON object as a string; the session id is its `key`.

    `scoped`: keys of that object that are install- or account-scoped (key, reason): noted
    as rejected when set, never read. Names the conversation, never the participant.
    """

    path: tuple[str, ...]
    key: str
    scoped: tuple[tuple[str, str], ...] = ()

    def body_paths(self) -> tuple[BodyPath, ...]:
        return (self.path,)

    def read(self, body: object, ev: Evidence) -> BodyConversation | None:
        present, text = dig(body, *self.path)
        if not present:
            return None
        source = ".".join(self.path)
        field = f"body.{source}"
        parsed = parse_json_object(text) if isinstance(text, str) else None
        if parsed is None:
            ev.reject(field, REASON_USER_ID_NOT_JSON)
            return None
        for scoped, reason in self.scoped:
            if parsed.get(scoped):
                ev.reject(f"{field}.{scoped}", reason)
        if self.key not in parsed:
            return None
        key = ev.check(f"{field}.{self.key}", parsed[self.key]).value
        if key is None:
            return None
        return BodyConversation(
            key=key, source=source, per_conversation=True, per_participant=False
        )


def body_conversation_id(profile: WireProfile, body: object) -> BodyConversation | None:
    """The conversation id `body` carries for the harness `profile` describes, or None.

    Pure and total: any `body` (parsed JSON or anything else) is accepted. Use the result
    as a session key only when `per_conversation` is True.
    """
    return read_body_conversation(profile, body, Evidence(HeaderView(None)))


def read_body_conversation(
    profile: WireProfile, body: object, ev: Evidence
) -> BodyConversation | None:
    """`body_conversation_id`, recording evidence and rejections into `ev`."""
    return profile.body.read(body, ev) if profile.body is not None else None
