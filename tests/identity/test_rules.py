"""Roller, Claude Code, OpenCode and Pi header rules, over header sets from the probes."""

from __future__ import annotations

from typing import Any

import pytest

from roller.harnesses import identify as derive
from roller.identity import WireIdentity
from roller.identity.rules import REASON_NO_SESSION, REASON_PARENT_WITHOUT_AGENT, REASON_SELF_PARENT
from roller.identity.validation import (
    REASON_BAD_CHARS,
    REASON_COLON_IN_AGENT,
    REASON_COMPOSITE_TOO_LONG,
    REASON_TOO_LONG,
)

from .invariants import assert_invariants, rejected_fields
from .wire_samples import (
    CC_A,
    CC_B,
    CC_C,
    CC_CHILD_A,
    CC_CHILD_B,
    CC_CHILD_C,
    CC_PARENT,
    CC_SESSION,
    OC_C,
    OC_CHILD,
    OC_COMMON,
    OC_P,
    OC_PARENT,
    PI_BODY,
    PI_HEADERS,
    PI_SESSION,
    cc_body,
    set_header,
)

S = CC_SESSION


def run(harness: str, headers: Any, body: Any = None, roller: Any = None) -> WireIdentity:
    identity = derive(harness, headers, body, roller)
    assert_invariants(identity)
    return identity


# --- Claude Code --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "participant", "parent", "is_child", "agent", "parent_agent"),
    [
        (CC_PARENT, S, None, False, None, None),
        (CC_CHILD_A, f"{S}:{CC_A}", S, True, CC_A, None),
        (CC_CHILD_B, f"{S}:{CC_B}", f"{S}:{CC_A}", True, CC_B, CC_A),
        (CC_CHILD_C, f"{S}:{CC_C}", f"{S}:{CC_B}", True, CC_C, CC_B),
    ],
    ids=["parent", "child-depth1", "child-depth2", "child-depth3"],
)
def test_claude_code_observed_requests(
    headers: dict[str, str],
    participant: str,
    parent: str | None,
    is_child: bool,
    agent: str | None,
    parent_agent: str | None,
) -> None:
    identity = run("claude-code", headers, cc_body())
    assert identity.rule == "claude-code-headers"
    assert identity.session_key == S
    assert identity.session_key_is_root is True
    assert identity.participant_key == participant
    assert identity.parent_key == parent
    assert identity.is_child is is_child
    assert identity.agent_id == agent
    assert identity.parent_agent_id == parent_agent
    assert identity.evidence["x-claude-code-session-id"] == S
    assert identity.rejected == (
        ("body.metadata.user_id.device_id", "install-scoped id, never a session key"),
    )


@pytest.mark.parametrize(
    ("agent_value", "reason"),
    [
        ("../../etc/passwd", REASON_BAD_CHARS),
        ("a" * 201, REASON_TOO_LONG),
        ("", "empty"),
        ("   ", REASON_BAD_CHARS),
        ("a1e37403\x00a36fc420c", REASON_BAD_CHARS),
        ("a1e37403a36fc420c\n", REASON_BAD_CHARS),
        ("a1e37403\u043036fc420c", REASON_BAD_CHARS),
        ("x:y", REASON_COLON_IN_AGENT),
    ],
)
def test_claude_code_bad_agent_id_costs_the_lineage_not_the_session(
    agent_value: str, reason: str
) -> None:
    identity = run("claude-code", set_header(CC_PARENT, "x-claude-code-agent-id", agent_value))
    assert identity.session_key == S
    # A subagent's call must never be charged to the root: participant unknown, not S.
    assert identity.participant_key is None
    assert identity.is_child is True
    assert identity.parent_key is None
    assert rejected_fields(identity) == {"x-claude-code-agent-id": reason}
    assert "x-claude-code-agent-id" not in identity.evidence
    for rejection in identity.rejected:
        assert agent_value not in rejection.reason or not agent_value.strip()


def test_claude_code_bad_parent_agent_keeps_the_child() -> None:
    identity = run(
        "claude-code", set_header(CC_CHILD_A, "x-claude-code-parent-agent-id", "../../etc/passwd")
    )
    assert identity.participant_key == f"{S}:{CC_A}"
    assert identity.parent_key is None  # lineage lost, never guessed as the root
    assert identity.is_child is True
    assert rejected_fields(identity) == {"x-claude-code-parent-agent-id": REASON_BAD_CHARS}


def test_claude_code_agent_naming_itself_as_parent() -> None:
    identity = run("claude-code", set_header(CC_CHILD_A, "x-claude-code-parent-agent-id", CC_A))
    assert identity.participant_key == f"{S}:{CC_A}"
    assert identity.parent_key is None
    assert rejected_fields(identity) == {"x-claude-code-parent-agent-id": REASON_SELF_PARENT}


def test_claude_code_parent_agent_without_agent_is_an_unnamed_child() -> None:
    identity = run("claude-code", set_header(CC_PARENT, "x-claude-code-parent-agent-id", CC_A))
    assert identity.session_key == S
    assert identity.participant_key is None
    assert identity.is_child is True
    assert rejected_fields(identity) == {
        "x-claude-code-parent-agent-id": REASON_PARENT_WITHOUT_AGENT
    }


def test_claude_code_composite_key_over_the_limit_is_not_truncated() -> None:
    long_session = "s" * 190
    identity = run(
        "claude-code",
        {"x-claude-code-session-id": long_session, "x-claude-code-agent-id": CC_A},
    )
    assert identity.session_key == long_session
    assert identity.participant_key is None
    assert identity.is_child is True
    assert rejected_fields(identity) == {"x-claude-code-agent-id": REASON_COMPOSITE_TOO_LONG}


def test_claude_code_bad_session_falls_back_to_the_body_session() -> None:
    headers = set_header(CC_CHILD_A, "x-claude-code-session-id", "../../etc/passwd")
    identity = run("claude-code", headers, cc_body())
    assert identity.rule == "body-conversation-id"
    assert identity.session_key == S
    assert identity.participant_key is None  # the body is shared by parent and child
    assert identity.is_child is None
    reasons = rejected_fields(identity)
    assert reasons["x-claude-code-session-id"] == REASON_BAD_CHARS
    assert reasons["x-claude-code-agent-id"] == REASON_NO_SESSION


def test_claude_code_bad_session_and_no_body_gives_nothing() -> None:
    identity = run("claude-code", set_header(CC_PARENT, "x-claude-code-session-id", "a" * 201))
    assert identity.rule == "none"
    assert identity.session_key is None
    assert rejected_fields(identity) == {"x-claude-code-session-id": REASON_TOO_LONG}


def test_header_names_are_case_insensitive_and_duplicates_conflict() -> None:
    # CC_PARENT spells the header `X-Claude-Code-Session-Id`; a second, lower-case copy
    # with another value is the same header sent twice: ambiguous, never first-wins.
    identity = run("claude-code", {**CC_PARENT, "x-claude-code-session-id": "other-session"})
    assert identity.rule == "none"
    assert rejected_fields(identity) == {"x-claude-code-session-id": "conflicting duplicate values"}
    same = run("claude-code", {**CC_PARENT, "x-claude-code-session-id": S})
    assert same.session_key == S and same.rejected == ()


# --- OpenCode -----------------------------------------------------------------------------


def test_opencode_parent_and_child() -> None:
    parent = run("opencode", OC_PARENT)
    assert (parent.rule, parent.session_key, parent.participant_key, parent.parent_key) == (
        "opencode-headers",
        OC_P,
        OC_P,
        None,
    )
    assert parent.is_child is False and parent.session_key_is_root is True
    child = run("opencode", OC_CHILD)
    assert child.participant_key == OC_C
    assert child.parent_key == OC_P
    assert child.is_child is True
    # The child names only its parent: that is its session key, not known to be the root.
    assert child.session_key == OC_P
    assert child.session_key_is_root is False
    assert child.evidence == {
        "x-session-id": OC_C,
        "x-parent-session-id": OC_P,
        "x-session-affinity": OC_C,
    }
    assert child.rejected == ()


def test_opencode_session_naming_itself_as_parent() -> None:
    identity = run("opencode", set_header(OC_PARENT, "x-parent-session-id", OC_P))
    assert identity.participant_key == OC_P
    assert identity.parent_key is None
    assert identity.is_child is True
    assert identity.session_key == OC_P and identity.session_key_is_root is False
    assert rejected_fields(identity) == {"x-parent-session-id": REASON_SELF_PARENT}


def test_opencode_bad_parent_keeps_the_child_as_its_own_session() -> None:
    identity = run("opencode", set_header(OC_CHILD, "x-parent-session-id", "../../etc/passwd"))
    assert identity.participant_key == OC_C
    assert identity.parent_key is None
    assert identity.is_child is True
    assert identity.session_key == OC_C and identity.session_key_is_root is False


def test_opencode_bad_own_id_keeps_the_parent_session() -> None:
    identity = run(
        "opencode", {**OC_CHILD, "x-session-id": "ses_\x00", "x-session-affinity": "ses_\x00"}
    )
    assert identity.session_key == OC_P
    assert identity.participant_key is None
    assert identity.parent_key is None
    assert identity.is_child is True


def test_opencode_without_headers_gives_nothing() -> None:
    identity = run("opencode", OC_COMMON)
    assert identity.rule == "none"
    assert identity.rejected == ()


# --- Pi -----------------------------------------------------------------------------------


def test_pi_responses_session_header() -> None:
    identity = run("pi", PI_HEADERS, PI_BODY)
    assert identity.rule == "pi-session-header"
    assert (identity.session_key, identity.participant_key, identity.is_child) == (
        PI_SESSION,
        PI_SESSION,
        False,
    )
    assert identity.evidence == {"session_id": PI_SESSION, "body.prompt_cache_key": PI_SESSION}
    assert identity.rejected == ()


def test_pi_chat_completions_sends_nothing() -> None:
    identity = run("pi", {"user-agent": "OpenAI/JS 6.26.0"}, {"model": "m", "messages": []})
    assert identity.rule == "none"


# --- Roller's explicit headers -------------------------------------------------------------


def test_roller_session_only_is_a_root() -> None:
    identity = run("generic", {"x-roller-session-id": "run-7"})
    assert identity.rule == "roller-headers"
    assert (identity.session_key, identity.participant_key, identity.is_child) == (
        "run-7",
        "run-7",
        False,
    )


def test_roller_agent_and_parent() -> None:
    headers = {"X-Roller-Session-Id": "run-7", "X-Roller-Agent-Id": "worker-2"}
    child = run("generic", headers)
    assert (child.participant_key, child.parent_key, child.is_child) == (
        "run-7:worker-2",
        "run-7",
        True,
    )
    grandchild = run(
        "generic", {**headers, "X-Roller-Agent-Id": "sub-1", "X-Roller-Parent-Agent-Id": "worker-2"}
    )
    assert grandchild.parent_key == child.participant_key


def test_roller_headers_override_native_headers() -> None:
    roller = {"x-roller-session-id": "fw-session", "x-roller-agent-id": "planner"}
    identity = run("claude-code", CC_CHILD_B, cc_body(), roller=roller)
    assert identity.rule == "roller-headers"
    assert identity.session_key == "fw-session"
    assert identity.participant_key == "fw-session:planner"
    assert identity.parent_key == "fw-session"
    # What the harness itself said is still on record.
    assert identity.evidence["x-claude-code-agent-id"] == CC_B
    assert identity.evidence["x-roller-agent-id"] == "planner"


def test_roller_headers_inside_headers_or_as_the_removed_record_agree() -> None:
    inside = run("codex", {"x-roller-session-id": "r1", "x-roller-agent-id": "a"})
    removed = run("codex", {}, roller={"x-roller-session-id": "r1", "x-roller-agent-id": "a"})
    both = run(
        "codex",
        {"x-roller-session-id": "r1"},
        roller={"x-roller-session-id": "r1", "x-roller-agent-id": "a"},
    )
    assert inside.participant_key == removed.participant_key == both.participant_key == "r1:a"


def test_roller_copies_that_disagree_are_ambiguous() -> None:
    identity = run("generic", {"x-roller-session-id": "r1"}, roller={"x-roller-session-id": "r2"})
    assert identity.rule == "roller-headers"
    assert identity.session_key is None
    assert rejected_fields(identity) == {"x-roller-session-id": "conflicting duplicate values"}


def test_broken_roller_session_fails_closed_instead_of_using_native_headers() -> None:
    identity = run(
        "claude-code",
        {**CC_CHILD_A, "x-roller-session-id": "../../etc/passwd", "x-roller-agent-id": "w"},
    )
    assert identity.rule == "roller-headers"
    assert (identity.session_key, identity.participant_key, identity.parent_key) == (
        None,
        None,
        None,
    )
    reasons = rejected_fields(identity)
    assert reasons["x-roller-session-id"] == REASON_BAD_CHARS
    assert reasons["x-roller-agent-id"] == REASON_NO_SESSION


def test_roller_bad_agent_keeps_the_roller_session() -> None:
    identity = run("generic", {"x-roller-session-id": "r1", "x-roller-agent-id": "a/b"})
    assert identity.session_key == "r1"
    assert identity.participant_key is None
    assert identity.is_child is True
