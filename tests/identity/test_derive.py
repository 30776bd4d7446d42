"""Precedence, cross-request key agreement, input shapes, and properties over any input."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict

from roller.harnesses import harness_names, registry
from roller.harnesses import identify as derive
from roller.identity import ROLLER_HEADERS, WireIdentity, valid_id

from .invariants import assert_invariants, rejected_fields
from .wire_samples import (
    CC_CHILD_A,
    CC_CHILD_B,
    CC_CHILD_C,
    CC_PARENT,
    CC_SESSION,
    CX_CHILD,
    CX_GRANDCHILD,
    CX_ROOT,
    DS_CHILD,
    DS_ROOT,
    OC_CHILD,
    OC_PARENT,
    cc_body,
    cx_body,
    cx_headers,
    ds_body,
    ds_headers,
)

HARNESS_NAMES = harness_names()
NATIVE_HEADER_OWNERS = registry().gate.owners
INSTALL_SCOPED_HEADERS = registry().gate.install_scoped


def run(harness: str, headers: Any, body: Any = None, roller: Any = None) -> WireIdentity:
    identity = derive(harness, headers, body, roller)
    assert_invariants(identity)
    return identity


# --- precedence ------------------------------------------------------------------------


def test_precedence_roller_then_native_then_body_then_nothing() -> None:
    roller = {"x-roller-session-id": "fw"}
    assert run("claude-code", CC_CHILD_A, cc_body(), roller).rule == "roller-headers"
    assert run("claude-code", CC_CHILD_A, cc_body()).rule == "claude-code-headers"
    assert run("claude-code", {}, cc_body()).rule == "body-conversation-id"
    assert run("claude-code", {}, {}).rule == "none"


# --- child before parent: keys agree across separate derivations --------------------------

CHAINS: list[tuple[str, list[tuple[dict[str, str], Any]]]] = [
    # (harness, [deepest request first, ..., root request last])
    (
        "claude-code",
        [
            (CC_CHILD_C, cc_body()),
            (CC_CHILD_B, cc_body()),
            (CC_CHILD_A, cc_body()),
            (CC_PARENT, cc_body()),
        ],
    ),
    ("opencode", [(OC_CHILD, None), (OC_PARENT, None)]),
    (
        "codex",
        [
            (cx_headers(CX_GRANDCHILD, parent=CX_CHILD), cx_body()),
            (cx_headers(CX_CHILD, parent=CX_ROOT), cx_body()),
            (cx_headers(CX_ROOT), cx_body()),
        ],
    ),
    (
        "deepseek",
        [
            (ds_headers(DS_CHILD), ds_body(DS_CHILD, parent=DS_ROOT)),
            (ds_headers(DS_ROOT), ds_body(DS_ROOT)),
        ],
    ),
    (
        "generic",
        [
            (
                {
                    "x-roller-session-id": "r",
                    "x-roller-agent-id": "b",
                    "x-roller-parent-agent-id": "a",
                },
                None,
            ),
            ({"x-roller-session-id": "r", "x-roller-agent-id": "a"}, None),
            ({"x-roller-session-id": "r"}, None),
        ],
    ),
]


@pytest.mark.parametrize(("harness", "chain"), CHAINS, ids=[c[0] for c in CHAINS])
def test_child_derived_before_its_parent_names_the_parents_own_key(
    harness: str, chain: list[tuple[dict[str, str], Any]]
) -> None:
    derived = [run(harness, headers, body) for headers, body in chain]  # child first
    for child, parent in itertools.pairwise(derived):
        assert child.is_child is True
        assert child.parent_key is not None
        assert child.parent_key == parent.participant_key
        assert child.participant_key != parent.participant_key
    root = derived[-1]
    assert root.is_child is False and root.parent_key is None
    assert root.participant_key == root.session_key


def test_a_session_is_never_its_own_parent() -> None:
    cases = [
        ("claude-code", {**CC_CHILD_A, "x-claude-code-parent-agent-id": "a1e37403a36fc420c"}),
        ("opencode", {"x-session-id": "ses_1", "x-parent-session-id": "ses_1"}),
        ("codex", cx_headers(CX_CHILD, parent=CX_CHILD)),
        (
            "generic",
            {"x-roller-session-id": "r", "x-roller-agent-id": "a", "x-roller-parent-agent-id": "a"},
        ),
    ]
    for harness, headers in cases:
        identity = run(harness, headers)
        assert identity.parent_key is None, harness
        assert any("itself" in r.reason for r in identity.rejected), harness


# --- header input shapes --------------------------------------------------------------------


def test_mapping_pairs_tape_lists_and_multidicts_agree() -> None:
    pairs = list(CC_CHILD_B.items())
    as_dict = run("claude-code", CC_CHILD_B)
    as_pairs = run("claude-code", pairs)
    as_tape = run(
        "claude-code", json.loads(json.dumps(pairs))
    )  # the tape stores [name, value] lists
    as_multidict = run("claude-code", CIMultiDict(pairs))
    assert as_dict == as_pairs == as_tape == as_multidict
    assert as_dict.participant_key == f"{CC_SESSION}:a48fe9b1db3fc6abc"


def test_repeated_header_in_a_multidict_is_ambiguous() -> None:
    headers = CIMultiDict(CC_CHILD_A)
    headers.add("X-Claude-Code-Agent-Id", "a0000000000000000")
    identity = run("claude-code", headers)
    assert identity.participant_key is None
    assert identity.session_key == CC_SESSION
    assert rejected_fields(identity) == {"x-claude-code-agent-id": "conflicting duplicate values"}


def test_repeated_header_with_the_same_value_counts_once() -> None:
    identity = run(
        "claude-code", [*CC_CHILD_A.items(), ("x-claude-code-agent-id", "a1e37403a36fc420c")]
    )
    assert identity.participant_key == f"{CC_SESSION}:a1e37403a36fc420c"
    assert identity.rejected == ()


def test_malformed_header_entries_are_rejections_not_errors() -> None:
    identity = run(
        "opencode",
        [
            ("x-session-id", "ses_1"),
            (b"x-parent-session-id", "ses_0"),
            ("only-one",),
            42,
            ("x", 1, 2),
        ],
    )
    assert identity.participant_key == "ses_1"
    assert identity.is_child is False
    assert [r.field for r in identity.rejected] == ["(header)"] * 4


def test_non_string_values_are_rejected() -> None:
    identity = run("opencode", [("x-session-id", b"ses_1")])
    assert identity.rule == "none"
    assert rejected_fields(identity) == {"x-session-id": "not a string"}


def test_native_identity_is_plain_json() -> None:
    record = run("codex", cx_headers(CX_CHILD, parent=CX_ROOT), cx_body()).native_identity()
    assert json.loads(json.dumps(record)) == record
    assert record["rule"] == "codex-headers"
    assert record["participant_key"] == CX_CHILD


# --- properties over arbitrary input ---------------------------------------------------------


def json_text(value: Any) -> str:
    # Values may be bytes (hostile); a harness would have sent some text for them.
    return json.dumps(value, default=repr)


IDENTITY_HEADERS = sorted({*NATIVE_HEADER_OWNERS, *INSTALL_SCOPED_HEADERS, *ROLLER_HEADERS})
valid_ids = st.from_regex(r"[A-Za-z0-9_.\-]{1,24}", fullmatch=True).filter(
    lambda v: valid_id(v) is not None
)
hostile = st.sampled_from(
    [
        "../../etc/passwd",
        "a" * 201,
        "a" * 200,
        "",
        " ",
        "\x00",
        "a\nb",
        "ses_\u0430",
        "..",
        "a:b",
        "x" * 300,
    ]
)
# A small pool makes equal values (thread == session, parent == self) common.
few_ids = st.sampled_from(["s1", "s2", "a1", "a2", "t1"])
values = st.one_of(
    few_ids,
    valid_ids,
    hostile,
    st.text(max_size=60),
    st.integers(),
    st.none(),
    st.binary(max_size=8),
)


def own_headers(harness: str) -> list[str]:
    return sorted(name for name, owners in NATIVE_HEADER_OWNERS.items() if harness in owners)


def header_lists(harness: str) -> st.SearchStrategy[list[tuple[Any, Any]]]:
    # Mostly the declared harness's own headers, so its rule really runs; the rest are
    # other harnesses' headers, roller's, install ids, upper-case spellings and noise.
    names = st.one_of(
        st.sampled_from(own_headers(harness) or IDENTITY_HEADERS),
        st.sampled_from(own_headers(harness) or IDENTITY_HEADERS),
        st.sampled_from(IDENTITY_HEADERS),
        st.sampled_from(IDENTITY_HEADERS).map(str.upper),
        st.text(max_size=20),
    )
    return st.lists(st.tuples(names, values), min_size=1, max_size=10)


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30), valid_ids)
json_any = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=10,
)
turn_metadata = st.fixed_dictionaries(
    {},
    optional={
        "session_id": values,
        "thread_id": values,
        "parent_thread_id": values,
        "agent_name": values,
        "installation_id": values,
    },
).map(json_text)
bodies = st.one_of(
    json_any,
    st.fixed_dictionaries(
        {},
        optional={
            "prompt_cache_key": st.one_of(values, valid_ids.map(lambda v: f"qwen-code:{v}")),
            "metadata": st.fixed_dictionaries(
                {},
                optional={
                    "user_id": st.one_of(
                        values,
                        st.dictionaries(st.sampled_from(["session_id", "device_id"]), values).map(
                            json_text
                        ),
                    )
                },
            ),
            "dsh_session_log": st.fixed_dictionaries(
                {},
                optional={
                    "session": st.fixed_dictionaries(
                        {},
                        optional={
                            "id": values,
                            "parentSession": values,
                            "origin": st.sampled_from(["subagent", "user", None]),
                            "delegationDepth": st.one_of(
                                st.integers(-1, 3), st.booleans(), st.none()
                            ),
                        },
                    )
                },
            ),
        },
    ),
)
harnesses = st.one_of(
    st.sampled_from(HARNESS_NAMES), st.sampled_from(HARNESS_NAMES), st.text(max_size=12)
)
# Present in about one request in four, so the harness rules decide the rest.
roller_records = st.tuples(
    st.integers(0, 3),
    st.dictionaries(st.sampled_from(ROLLER_HEADERS), st.one_of(few_ids, valid_ids, hostile)),
).map(lambda pair: pair[1] if pair[0] == 0 else None)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    harness=harnesses,
    metadata=st.one_of(st.none(), turn_metadata),
    body=bodies,
    roller=roller_records,
)
def test_any_input_derives_without_raising_and_keeps_the_invariants(
    data: st.DataObject,
    harness: str,
    metadata: str | None,
    body: Any,
    roller: dict[str, str] | None,
) -> None:
    headers = data.draw(header_lists(harness))
    if metadata is not None:
        headers = [*headers, ("x-codex-turn-metadata", metadata)]
    identity = derive(harness, headers, body, roller)
    assert_invariants(identity)
    for value in identity.evidence.values():
        # Evidence holds validated values only (labels may be any printable short text).
        assert len(value) <= 200 and value.isprintable()


@settings(max_examples=100, deadline=None)
@given(session=valid_ids, agents=st.lists(valid_ids, min_size=2, max_size=5, unique=True))
def test_claude_code_chains_of_any_ids_link_up(session: str, agents: list[str]) -> None:
    # agents[0] is spawned by the main thread, each next one by the previous.
    root = run("claude-code", {"x-claude-code-session-id": session})
    previous = root
    for depth, agent in enumerate(agents):
        headers = {"x-claude-code-session-id": session, "x-claude-code-agent-id": agent}
        if depth:
            headers["x-claude-code-parent-agent-id"] = agents[depth - 1]
        identity = run("claude-code", headers)
        assert identity.parent_key == previous.participant_key
        assert valid_id(identity.participant_key) is not None
        previous = identity


# Well-formed requests: each of the harness's own identity fields present or not, with
# values from a small pool, so every branch of every rule (root, child, self-parent,
# conflicts, missing parts) is reached.
NATIVE_FIELDS = {
    "claude-code": [
        "x-claude-code-session-id",
        "x-claude-code-agent-id",
        "x-claude-code-parent-agent-id",
    ],
    "opencode": ["x-session-id", "x-parent-session-id"],
    "codex": ["session-id", "thread-id", "x-codex-parent-thread-id"],
    "deepseek": ["x-deepseek-harness-session-id"],
    "pi": ["session_id"],
    "generic": list(ROLLER_HEADERS),
}


@settings(max_examples=200, deadline=None)
@given(data=st.data(), harness=st.sampled_from(sorted(NATIVE_FIELDS)))
def test_well_formed_requests_keep_the_invariants(data: st.DataObject, harness: str) -> None:
    pool = st.sampled_from(["s1", "s2", "a1", "a2"])
    headers = {name: data.draw(pool) for name in NATIVE_FIELDS[harness] if data.draw(st.booleans())}
    metadata = data.draw(
        st.fixed_dictionaries(
            {}, optional={k: pool for k in ("session_id", "thread_id", "parent_thread_id")}
        )
    )
    if harness == "codex" and metadata:
        headers["x-codex-turn-metadata"] = json.dumps(metadata)
    session_log = data.draw(
        st.fixed_dictionaries(
            {},
            optional={"id": pool, "parentSession": pool, "delegationDepth": st.integers(0, 2)},
        )
    )
    body = {"dsh_session_log": {"session": session_log}, "prompt_cache_key": data.draw(pool)}
    identity = run(harness, headers, body)
    if identity.participant_key is not None and identity.rule != "body-conversation-id":
        # A named participant is always one of the ids the request itself carried.
        carried = set(headers.values()) | set(metadata.values())
        assert identity.participant_key in carried or ":" in identity.participant_key
