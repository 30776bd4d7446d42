"""Body-level conversation ids, per harness, and their place in the precedence."""

from __future__ import annotations

import json
from typing import Any

import pytest

from roller.harnesses import body_conversation as body_conversation_id
from roller.harnesses import identify as derive
from roller.identity import BodyConversation
from roller.identity.derive import REASON_BODY_DIFFERS

from .invariants import assert_invariants, rejected_fields
from .wire_samples import (
    CC_CHILD_A,
    CC_SESSION,
    CX_CHILD,
    CX_ROOT,
    HERMES_BODY,
    HERMES_HEADERS,
    PI_BODY,
    PI_HEADERS,
    PI_SESSION,
    QWEN_HEADERS,
    QWEN_RESPONSES_BODY,
    QWEN_SESSION,
    cc_body,
    cx_body,
    cx_headers,
)


@pytest.mark.parametrize(
    ("harness", "body", "expected"),
    [
        ("claude-code", cc_body(), BodyConversation(CC_SESSION, "metadata.user_id", True, False)),
        ("codex", cx_body(), BodyConversation(CX_ROOT, "prompt_cache_key", True, False)),
        ("pi", PI_BODY, BodyConversation(PI_SESSION, "prompt_cache_key", True, True)),
        (
            "qwen-code",
            QWEN_RESPONSES_BODY,
            BodyConversation(QWEN_SESSION, "prompt_cache_key", True, False),
        ),
        (
            "hermes",
            HERMES_BODY,
            BodyConversation("pck_022f9d1c7b3e4a5f6e7d8c9b", "prompt_cache_key", False, False),
        ),
    ],
)
def test_known_body_ids(harness: str, body: dict[str, Any], expected: BodyConversation) -> None:
    assert body_conversation_id(harness, body) == expected


@pytest.mark.parametrize(
    ("harness", "body"),
    [
        # Generic fields under a harness not known to fill them with a conversation id.
        ("generic", cx_body()),
        ("opencode", cx_body()),
        ("openclaw", cx_body()),
        ("gemini-cli", cc_body()),
        ("pi", cc_body()),  # Pi's Anthropic route sends no metadata; a user_id is not Pi's
        ("deepseek", cc_body()),
        # Malformed or hostile values.
        ("qwen-code", {"prompt_cache_key": QWEN_SESSION}),
        ("qwen-code", {"prompt_cache_key": "qwen-code:../../etc/passwd"}),
        ("codex", {"prompt_cache_key": "a" * 201}),
        ("codex", {"prompt_cache_key": ["x"]}),
        ("claude-code", {"metadata": {"user_id": "user_abc_account__session_def"}}),
        ("claude-code", {"metadata": {"user_id": json.dumps({"session_id": "../x"})}}),
        ("claude-code", {"metadata": {"user_id": json.dumps({"device_id": "d"})}}),
        ("claude-code", {"metadata": {"user_id": {"session_id": CC_SESSION}}}),  # not a string
        ("claude-code", {"metadata": "x"}),
        ("codex", None),
        ("codex", []),
        ("codex", "prompt_cache_key"),
    ],
)
def test_no_body_id(harness: str, body: Any) -> None:
    assert body_conversation_id(harness, body) is None


def test_claude_code_body_session_is_shared_by_parent_and_child() -> None:
    # Without the headers the body names only the conversation: never the child.
    identity = derive("claude-code", {"user-agent": "claude-cli/2.1.332"}, cc_body())
    assert_invariants(identity)
    assert identity.rule == "body-conversation-id"
    assert identity.session_key == CC_SESSION
    assert identity.participant_key is None
    assert identity.is_child is None


def test_codex_body_is_the_root_in_child_requests_too() -> None:
    headers = cx_headers(CX_CHILD, parent=CX_ROOT)
    identity = derive("codex", headers, cx_body())
    assert identity.participant_key == CX_CHILD
    assert identity.evidence["body.prompt_cache_key"] == CX_ROOT
    assert "body.prompt_cache_key" not in rejected_fields(identity)


def test_qwen_code_responses_gets_a_session_but_no_participant() -> None:
    identity = derive("qwen-code", QWEN_HEADERS, QWEN_RESPONSES_BODY)
    assert_invariants(identity)
    assert (identity.rule, identity.session_key, identity.participant_key) == (
        "body-conversation-id",
        QWEN_SESSION,
        None,
    )


def test_pi_body_alone_names_the_session_and_its_only_participant() -> None:
    identity = derive("pi", {}, PI_BODY)
    assert_invariants(identity)
    assert (identity.session_key, identity.participant_key, identity.is_child) == (
        PI_SESSION,
        PI_SESSION,
        False,
    )


def test_hermes_content_hash_never_keys_a_session() -> None:
    identity = derive("hermes", HERMES_HEADERS, HERMES_BODY)
    assert identity.rule == "none"
    assert identity.session_key is None
    assert identity.evidence == {"body.prompt_cache_key": HERMES_BODY["prompt_cache_key"]}


def test_headers_win_over_a_disagreeing_body_and_the_disagreement_is_recorded() -> None:
    identity = derive(
        "claude-code", CC_CHILD_A, cc_body(session="0d7f2c91-aaaa-4bbb-8ccc-123456789abc")
    )
    assert identity.session_key == CC_SESSION
    assert rejected_fields(identity)["body.metadata.user_id"] == REASON_BODY_DIFFERS
    pi = derive("pi", PI_HEADERS, {**PI_BODY, "prompt_cache_key": "other"})
    assert pi.session_key == PI_SESSION
    assert rejected_fields(pi)["body.prompt_cache_key"] == REASON_BODY_DIFFERS
