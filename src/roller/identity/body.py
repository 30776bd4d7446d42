"""Conversation ids carried in a request body, per harness.

The gateway's third identity source, after roller's explicit headers and the harness's
native headers: a body-level conversation id. Like the headers it is gated on the
declared harness, because the fields are generic: `prompt_cache_key` is an ordinary
OpenAI Responses field any client may fill with anything (Hermes fills it with a hash of
its instructions and tools, identical across unrelated runs), and Anthropic
`metadata.user_id` is free text for most clients.

What each harness puts there (measured, see docs/identity.md):
- Claude Code (2.1.332): `metadata.user_id` is a JSON *string*
  `{"device_id": …, "account_uuid": …, "session_id": <session uuid>}`. The session is the
  same for the parent and every subagent: per conversation, not per participant.
  `device_id` is install-scoped and `account_uuid` account-scoped: never keys.
- Codex (0.171.0): `prompt_cache_key` is the root session id, in child requests too.
- Pi (0.73.1, Responses API only): `prompt_cache_key` equals the `session_id` header. Pi has
  no in-process subagents; an extension's child is a separate process with its own id.
- Qwen Code (0.24.4, Responses API only): `prompt_cache_key` is `qwen-code:<sessionId>`,
  the same for parent and child; the key is the part after the prefix.
- Hermes (0.19.0, Responses API only): `prompt_cache_key` is `pck_<hash>` of instructions and
  tools: shared by unrelated runs, so `per_conversation` is False and it never keys anything.
- OpenCode, Gemini CLI, OpenClaw, DeepSeek, generic: nothing read. (DeepSeek's body
  `dsh_session_log` is lineage evidence for its header rule, not a conversation id; it is
  omitted when the harness has no pending events.)
"""

from __future__ import annotations

from typing import Final

from roller.identity.evidence import Evidence, HeaderView, dig, parse_json_object
from roller.identity.wire_identity import BodyConversation

QWEN_PREFIX: Final = "qwen-code:"
REASON_NOT_QWEN_FORM: Final = "not of the form qwen-code:<session id>"
REASON_USER_ID_NOT_JSON: Final = "not a JSON object string"

_CACHE_KEY_FIELD: Final = "body.prompt_cache_key"
_USER_ID_FIELD: Final = "body.metadata.user_id"


def body_conversation_id(harness: str, body: object) -> BodyConversation | None:
    """The conversation id `body` carries for the declared `harness`, or None.

    Pure and total: any `body` (parsed JSON or anything else) is accepted. Use the result
    as a session key only when `per_conversation` is True.
    """
    return read_body_conversation(harness, body, Evidence(HeaderView(None)))


def read_body_conversation(harness: str, body: object, ev: Evidence) -> BodyConversation | None:
    """`body_conversation_id`, recording evidence and rejections into `ev`."""
    if harness == "claude-code":
        return _claude_code(body, ev)
    if harness in ("codex", "pi", "qwen-code", "hermes"):
        present, value = dig(body, "prompt_cache_key")
        if not present:
            return None
        if harness == "qwen-code":
            if not isinstance(value, str) or not value.startswith(QWEN_PREFIX):
                ev.reject(_CACHE_KEY_FIELD, REASON_NOT_QWEN_FORM)
                return None
            value = value[len(QWEN_PREFIX) :]
        key = ev.check(_CACHE_KEY_FIELD, value).value
        if key is None:
            return None
        return BodyConversation(
            key=key,
            source="prompt_cache_key",
            per_conversation=harness != "hermes",
            per_participant=harness == "pi",
        )
    return None


def _claude_code(body: object, ev: Evidence) -> BodyConversation | None:
    present, user_id = dig(body, "metadata", "user_id")
    if not present:
        return None
    parsed = parse_json_object(user_id) if isinstance(user_id, str) else None
    if parsed is None:
        ev.reject(_USER_ID_FIELD, REASON_USER_ID_NOT_JSON)
        return None
    for scoped, reason in (
        ("device_id", "install-scoped id, never a session key"),
        ("account_uuid", "account-scoped id, never a session key"),
    ):
        if parsed.get(scoped):
            ev.reject(f"{_USER_ID_FIELD}.{scoped}", reason)
    if "session_id" not in parsed:
        return None
    key = ev.check(f"{_USER_ID_FIELD}.session_id", parsed["session_id"]).value
    if key is None:
        return None
    return BodyConversation(
        key=key, source="metadata.user_id", per_conversation=True, per_participant=False
    )
