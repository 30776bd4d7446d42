"""Fail-closed gating: a native header is read only under the harness that sends it."""

from __future__ import annotations

import pytest

from roller.harnesses import harness_names, registry
from roller.harnesses import identify as derive
from roller.identity.gating import REASON_INSTALL_SCOPED, REASON_UNKNOWN_HARNESS

from .invariants import assert_invariants, rejected_fields
from .wire_samples import (
    CC_A,
    CC_PARENT,
    CC_SESSION,
    GEMINI_BODY,
    GEMINI_HEADERS,
    OC_CHILD,
    OC_P,
    OPENCLAW_HEADERS,
    PI_SESSION,
)

HARNESS_NAMES = harness_names()
NATIVE_HEADER_OWNERS = registry().gate.owners
VALUE = "ses_f599e0060ffe4gLnO1q69ZcNFw"

UNDECLARED = [
    (harness, header)
    for harness in (*HARNESS_NAMES, "no-such-harness")
    for header, owners in NATIVE_HEADER_OWNERS.items()
    if harness not in owners
]


@pytest.mark.parametrize(("harness", "header"), UNDECLARED)
def test_a_native_header_under_another_harness_is_rejected_unread(
    harness: str, header: str
) -> None:
    identity = derive(harness, {header: VALUE})
    assert_invariants(identity)
    assert identity.rule == "none"
    assert identity.session_key is None
    assert header not in identity.evidence
    reason = rejected_fields(identity)[header]
    assert reason.startswith("header of ") and "not trusted for declared harness" in reason


@pytest.mark.parametrize(
    ("harness", "headers", "header"),
    [
        ("codex", {"x-parent-session-id": OC_P}, "x-parent-session-id"),
        ("gemini-cli", {"x-session-id": VALUE}, "x-session-id"),
        ("generic", {"x-claude-code-agent-id": CC_A}, "x-claude-code-agent-id"),
        ("claude-code", {**CC_PARENT, "session-id": "forged"}, "session-id"),
        ("opencode", {**OC_CHILD, "session_id": "forged"}, "session_id"),
        ("pi", {"session_id": PI_SESSION, "x-session-id": "forged"}, "x-session-id"),
    ],
)
def test_undeclared_generic_headers_do_not_change_the_identity(
    harness: str, headers: dict[str, str], header: str
) -> None:
    identity = derive(harness, headers)
    assert_invariants(identity)
    assert "forged" not in (identity.session_key, identity.participant_key, identity.parent_key)
    assert "not trusted for declared harness " + harness in rejected_fields(identity)[header]


def test_codex_sending_an_opencode_parent_keeps_its_own_identity() -> None:
    identity = derive("codex", {"session-id": "s1", "thread-id": "t1", "x-parent-session-id": "p1"})
    assert (identity.session_key, identity.participant_key, identity.parent_key) == (
        "s1",
        "t1",
        None,
    )


def test_claude_code_headers_under_generic_give_nothing() -> None:
    identity = derive("generic", CC_PARENT)
    assert identity.rule == "none"
    assert rejected_fields(identity)["x-claude-code-session-id"].endswith(
        "declared harness generic"
    )


@pytest.mark.parametrize("harness", ["gemini-cli", "hermes", "openclaw", "qwen-code", "generic"])
def test_harnesses_without_native_identity_read_nothing(harness: str) -> None:
    identity = derive(harness, {**GEMINI_HEADERS, **OPENCLAW_HEADERS}, GEMINI_BODY)
    assert_invariants(identity)
    assert identity.rule == "none"
    assert identity.evidence == {}


def test_gemini_install_id_is_never_a_key() -> None:
    identity = derive("gemini-cli", GEMINI_HEADERS, GEMINI_BODY)
    assert identity.session_key is None
    assert rejected_fields(identity) == {"x-gemini-api-privileged-user-id": REASON_INSTALL_SCOPED}
    assert GEMINI_HEADERS["x-gemini-api-privileged-user-id"] not in repr(identity)


def test_unknown_harness_reads_roller_headers_only() -> None:
    identity = derive("Claude-Code", {**CC_PARENT, "x-roller-session-id": "r1"})
    assert identity.rule == "roller-headers"
    assert identity.session_key == "r1"
    reasons = rejected_fields(identity)
    assert reasons["harness"] == REASON_UNKNOWN_HARNESS
    assert "x-claude-code-session-id" in reasons
    assert CC_SESSION not in identity.evidence.values()


def test_reasons_never_echo_a_hostile_harness_name() -> None:
    name = "evil\nname" * 20
    identity = derive(name, {"x-session-id": VALUE})
    assert all(name not in r.reason for r in identity.rejected)
