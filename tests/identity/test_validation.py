from __future__ import annotations

import pytest

from roller.identity.validation import (
    MAX_ID_LENGTH,
    REASON_BAD_CHARS,
    REASON_COLON_IN_AGENT,
    REASON_DOTS_ONLY,
    REASON_EMPTY,
    REASON_NOT_PRINTABLE,
    REASON_NOT_STRING,
    REASON_TOO_LONG,
    agent_id_problem,
    compose_key,
    id_problem,
    label_problem,
    valid_id,
)

from .wire_samples import CC_A, CC_SESSION, CX_ROOT, DS_ROOT, OC_C, PI_SESSION

REAL_IDS = [
    CC_SESSION,
    CC_A,
    OC_C,
    CX_ROOT,
    DS_ROOT,
    PI_SESSION,
    "session-0b8f3c1e-4d2a-4f6b-9c7d-8e1f2a3b4c5d",  # DeepSeek headless
    f"{CC_SESSION}:{CC_A}",  # a composite key is itself a valid id
    "a.b_c-d:e",
    "x" * MAX_ID_LENGTH,
]


@pytest.mark.parametrize("value", REAL_IDS)
def test_real_ids_pass_unchanged(value: str) -> None:
    assert id_problem(value) is None
    assert valid_id(value) is value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("../../etc/passwd", REASON_BAD_CHARS),
        ("..", REASON_DOTS_ONLY),
        (".", REASON_DOTS_ONLY),
        ("....", REASON_DOTS_ONLY),
        ("x" * (MAX_ID_LENGTH + 1), REASON_TOO_LONG),
        ("x" * 1_000_000, REASON_TOO_LONG),
        ("", REASON_EMPTY),
        (" ", REASON_BAD_CHARS),
        ("   ", REASON_BAD_CHARS),
        (" abc", REASON_BAD_CHARS),
        ("abc ", REASON_BAD_CHARS),
        ("\tabc", REASON_BAD_CHARS),
        ("a\x00b", REASON_BAD_CHARS),
        ("\x00", REASON_BAD_CHARS),
        (
            "abc\n",
            REASON_BAD_CHARS,
        ),  # `$` would match before a trailing newline; fullmatch does not
        ("a\nb", REASON_BAD_CHARS),
        ("a\r\nx-roller-session-id: evil", REASON_BAD_CHARS),
        ("ses_\u0430bc", REASON_BAD_CHARS),  # Cyrillic а looks like Latin a
        ("\uff11\uff12\uff13", REASON_BAD_CHARS),  # fullwidth digits
        ("\u0663", REASON_BAD_CHARS),  # Arabic-Indic digit three: a digit, not ASCII
        ("a\uff1ab", REASON_BAD_CHARS),  # fullwidth colon
        ("a\u200bb", REASON_BAD_CHARS),  # zero-width space
        ("a b", REASON_BAD_CHARS),
        ("a,b", REASON_BAD_CHARS),  # two header copies folded into one line
        ("a/b", REASON_BAD_CHARS),
        ("%2e%2e", REASON_BAD_CHARS),
        (None, REASON_NOT_STRING),
        (123, REASON_NOT_STRING),
        (b"abc", REASON_NOT_STRING),
        (["abc"], REASON_NOT_STRING),
    ],
)
def test_hostile_values_are_rejected_with_reason(value: object, reason: str) -> None:
    assert id_problem(value) == reason
    assert valid_id(value) is None


def test_boundary_is_exactly_two_hundred() -> None:
    assert valid_id("a" * 200) == "a" * 200
    assert valid_id("a" * 201) is None


def test_agent_ids_may_not_contain_a_colon() -> None:
    assert agent_id_problem(CC_A) is None
    assert agent_id_problem("a:b") == REASON_COLON_IN_AGENT
    assert agent_id_problem("../x") == REASON_BAD_CHARS


def test_composite_keys_split_one_way() -> None:
    # With colon-free agents, (session "x", agent "y:z") cannot be formed, so the key
    # "x:y:z" has exactly one reading: session "x:y", agent "z".
    assert agent_id_problem("y:z") is not None
    assert compose_key("x:y", "z") == "x:y:z"


def test_composite_key_never_exceeds_the_limit() -> None:
    assert compose_key("s" * 100, "a" * 99) == "s" * 100 + ":" + "a" * 99
    assert compose_key("s" * 100, "a" * 100) is None
    assert compose_key("s" * 200, "a") is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("<home>", None),
        ("/root/task1/task_3", None),
        ("", REASON_EMPTY),
        ("x" * 201, REASON_TOO_LONG),
        ("a\nb", REASON_NOT_PRINTABLE),
        ("a\x00", REASON_NOT_PRINTABLE),
        (7, REASON_NOT_STRING),
    ],
)
def test_labels(value: object, reason: str | None) -> None:
    assert label_problem(value) == reason
