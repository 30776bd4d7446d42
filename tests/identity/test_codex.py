"""Codex header identity over the 0.171.0 request sequence (run B-v1-wait and deeper)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from roller.harnesses import identify as derive
from roller.identity import WireIdentity
from roller.identity.evidence import REASON_JSON_TOO_LARGE, REASON_NOT_JSON_OBJECT
from roller.identity.gating import REASON_INSTALL_SCOPED
from roller.identity.threads import REASON_ROOT_WITH_PARENT, REASON_SELF_PARENT
from roller.identity.validation import REASON_BAD_CHARS

from .invariants import assert_invariants, rejected_fields
from .wire_samples import (
    CX_CHILD,
    CX_CHILD_HEADERS,
    CX_GRANDCHILD,
    CX_INSTALLATION,
    CX_PARENT,
    CX_ROOT,
    cx_body,
    cx_headers,
    cx_metadata,
)

META = "x-codex-turn-metadata"


def run(headers: Any, body: Any = None) -> WireIdentity:
    identity = derive("codex", headers, body)
    assert_invariants(identity)
    return identity


def test_root_thread() -> None:
    identity = run(CX_PARENT, cx_body())
    assert identity.rule == "codex-headers"
    assert (identity.session_key, identity.participant_key, identity.parent_key) == (
        CX_ROOT,
        CX_ROOT,
        None,
    )
    assert identity.is_child is False and identity.session_key_is_root is True
    assert identity.thread_id == CX_ROOT
    assert identity.agent_name == "<home>"
    assert rejected_fields(identity) == {f"{META}.installation_id": REASON_INSTALL_SCOPED}


def test_child_thread_names_the_root_as_parent() -> None:
    identity = run(CX_CHILD_HEADERS, cx_body())  # prompt_cache_key is the root's, in children too
    assert identity.session_key == CX_ROOT
    assert identity.participant_key == CX_CHILD
    assert identity.parent_key == CX_ROOT  # the parent is the session itself at depth one
    assert identity.is_child is True
    assert identity.thread_id == CX_CHILD
    assert identity.evidence["x-openai-subagent"] == "collab_spawn"
    assert identity.evidence["x-codex-parent-thread-id"] == CX_ROOT
    assert identity.evidence[f"{META}.parent_thread_id"] == CX_ROOT
    assert rejected_fields(identity) == {f"{META}.installation_id": REASON_INSTALL_SCOPED}


def test_grandchild_names_its_own_parent_thread() -> None:
    identity = run(cx_headers(CX_GRANDCHILD, parent=CX_CHILD))
    assert identity.participant_key == CX_GRANDCHILD
    assert identity.parent_key == CX_CHILD
    assert identity.session_key == CX_ROOT


def test_installation_id_is_never_a_key_or_evidence() -> None:
    for headers in (CX_PARENT, CX_CHILD_HEADERS):
        identity = run(headers)
        assert CX_INSTALLATION not in json.dumps(identity.native_identity())


@pytest.mark.parametrize("source", ["header", "metadata"])
def test_either_parent_source_alone_is_enough(source: str) -> None:
    headers = dict(CX_CHILD_HEADERS)
    if source == "header":
        headers[META] = cx_metadata(CX_CHILD)  # metadata without parent_thread_id
    else:
        del headers["x-codex-parent-thread-id"]
    identity = run(headers)
    assert identity.parent_key == CX_ROOT


def test_conflicting_parent_sources_cost_the_lineage_only() -> None:
    headers = {**CX_CHILD_HEADERS, "x-codex-parent-thread-id": CX_GRANDCHILD}
    identity = run(headers)
    assert identity.session_key == CX_ROOT
    assert identity.participant_key == CX_CHILD
    assert identity.parent_key is None
    assert identity.is_child is True
    assert (
        rejected_fields(identity)[f"{META}.parent_thread_id"]
        == "conflicts with x-codex-parent-thread-id"
    )


def test_child_without_any_parent_is_not_assumed_to_hang_off_the_root() -> None:
    headers = {**CX_CHILD_HEADERS, META: cx_metadata(CX_CHILD)}
    del headers["x-codex-parent-thread-id"]
    identity = run(headers)
    assert identity.participant_key == CX_CHILD
    assert identity.parent_key is None
    assert identity.is_child is True


def test_root_thread_claiming_a_parent_is_refused() -> None:
    headers = {**CX_PARENT, "x-codex-parent-thread-id": CX_CHILD}
    identity = run(headers)
    assert identity.is_child is False
    assert identity.parent_key is None
    assert rejected_fields(identity)["x-codex-parent-thread-id"] == REASON_ROOT_WITH_PARENT


def test_child_thread_naming_itself_as_parent() -> None:
    identity = run(cx_headers(CX_CHILD, parent=CX_CHILD))
    assert identity.participant_key == CX_CHILD
    assert identity.parent_key is None
    reasons = rejected_fields(identity)
    assert reasons["x-codex-parent-thread-id"] == REASON_SELF_PARENT
    assert reasons[f"{META}.parent_thread_id"] == REASON_SELF_PARENT


def test_session_header_and_metadata_disagree_costs_the_identity() -> None:
    headers = {**CX_PARENT, "session-id": CX_CHILD}
    identity = run(headers)
    assert identity.rule == "none"
    assert rejected_fields(identity)[f"{META}.session_id"] == "conflicts with session-id"


def test_thread_header_and_metadata_disagree_leaves_the_caller_unknown() -> None:
    headers = {**CX_CHILD_HEADERS, "thread-id": CX_GRANDCHILD}
    identity = run(headers)
    assert identity.session_key == CX_ROOT
    assert identity.participant_key is None
    assert identity.is_child is True  # a parent was named, so not the root
    assert identity.thread_id is None


def test_hostile_thread_id() -> None:
    headers = {
        **CX_PARENT,
        "thread-id": "../../etc/passwd",
        META: json.dumps({"session_id": CX_ROOT}),
    }
    identity = run(headers)
    assert identity.session_key == CX_ROOT
    assert identity.participant_key is None
    assert identity.is_child is None
    assert rejected_fields(identity)["thread-id"] == REASON_BAD_CHARS


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ("not json", REASON_NOT_JSON_OBJECT),
        ("[1, 2]", REASON_NOT_JSON_OBJECT),
        ("[" * 100_000, REASON_JSON_TOO_LARGE),
        ("[" * 50_000 + "]" * 50_000, REASON_JSON_TOO_LARGE),
        # Under the size cap but nested deeper than the parser's recursion limit.
        ('{"a":' * 10_000 + "1" + "}" * 10_000, REASON_NOT_JSON_OBJECT),
        ('"' + "x" * 70_000 + '"', REASON_JSON_TOO_LARGE),
    ],
)
def test_unusable_turn_metadata_falls_back_to_the_headers(metadata: str, reason: str) -> None:
    identity = run({**CX_CHILD_HEADERS, META: metadata})
    assert identity.participant_key == CX_CHILD
    assert identity.parent_key == CX_ROOT
    assert rejected_fields(identity) == {META: reason}


def test_turn_metadata_with_hostile_agent_name_is_not_kept() -> None:
    metadata = json.loads(cx_metadata(CX_ROOT))
    metadata["agent_name"] = "x\n" * 10
    identity = run({**CX_PARENT, META: json.dumps(metadata)})
    assert identity.agent_name is None
    assert rejected_fields(identity)[f"{META}.agent_name"] == "not printable"
    assert identity.participant_key == CX_ROOT
