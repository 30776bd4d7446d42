"""DeepSeek Harness identity over the 0.2.1rc2 requests (runs minimal1, sub2, fork1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from roller.harnesses import identify as derive
from roller.identity import WireIdentity
from roller.identity.gating import REASON_INSTALL_SCOPED
from roller.identity.lineage import REASON_SELF_PARENT, reason_body_mismatch
from roller.identity.validation import REASON_BAD_CHARS, REASON_NOT_STRING

from .invariants import assert_invariants, rejected_fields
from .wire_samples import DS_CHILD, DS_ROOT, DS_USER, ds_body, ds_headers

LOG = "body.dsh_session_log.session"
REASON_BODY_MISMATCH = reason_body_mismatch("x-deepseek-harness-session-id")


def run(headers: Any, body: Any) -> WireIdentity:
    identity = derive("deepseek", headers, body)
    assert_invariants(identity)
    return identity


def test_root_request() -> None:
    identity = run(ds_headers(DS_ROOT), ds_body(DS_ROOT))
    assert identity.rule == "deepseek-headers"
    assert (identity.session_key, identity.participant_key, identity.is_child) == (
        DS_ROOT,
        DS_ROOT,
        False,
    )
    assert identity.session_key_is_root is True
    assert rejected_fields(identity) == {"x-deepseek-harness-user-id": REASON_INSTALL_SCOPED}
    assert DS_USER not in json.dumps(identity.native_identity())


def test_depth_one_child_names_the_root() -> None:
    identity = run(ds_headers(DS_CHILD), ds_body(DS_CHILD, parent=DS_ROOT))
    assert identity.participant_key == DS_CHILD
    assert identity.parent_key == DS_ROOT
    assert identity.session_key == DS_ROOT
    assert identity.session_key_is_root is True  # delegationDepth 1: the parent is the root
    assert identity.is_child is True
    assert identity.evidence[f"{LOG}.parentSession"] == DS_ROOT


def test_deeper_child_names_only_its_parent() -> None:
    grandchild = "9f0e1d2c-3b4a-4596-8877-665544332211"
    identity = run(ds_headers(grandchild), ds_body(grandchild, parent=DS_CHILD, depth=2))
    assert identity.parent_key == DS_CHILD
    assert identity.session_key == DS_CHILD
    assert identity.session_key_is_root is False


def test_omitted_session_log_leaves_the_role_unknown() -> None:
    # The harness omits dsh_session_log when it has no pending events: absence proves nothing.
    identity = run(ds_headers(DS_CHILD), {"model": "deepseek-v4-flash", "messages": []})
    assert identity.participant_key == DS_CHILD
    assert identity.session_key == DS_CHILD
    assert identity.is_child is None
    assert identity.session_key_is_root is False


@pytest.mark.parametrize(
    "body", [None, [], "text", {"dsh_session_log": "x"}, {"dsh_session_log": {"session": 5}}]
)
def test_unusable_bodies_never_raise(body: Any) -> None:
    identity = run(ds_headers(DS_ROOT), body)
    assert identity.participant_key == DS_ROOT
    assert identity.is_child is None


def test_log_of_another_session_is_not_this_callers_lineage() -> None:
    identity = run(ds_headers(DS_CHILD), ds_body(DS_ROOT))
    assert identity.participant_key == DS_CHILD
    assert identity.is_child is None
    assert rejected_fields(identity)[f"{LOG}.id"] == REASON_BODY_MISMATCH


def test_parent_naming_the_caller_itself() -> None:
    identity = run(ds_headers(DS_CHILD), ds_body(DS_CHILD, parent=DS_CHILD))
    assert identity.parent_key is None
    assert identity.is_child is True
    assert identity.session_key == DS_CHILD and identity.session_key_is_root is False
    assert rejected_fields(identity)[f"{LOG}.parentSession"] == REASON_SELF_PARENT


@pytest.mark.parametrize(
    ("value", "reason"), [("../../etc/passwd", REASON_BAD_CHARS), (None, REASON_NOT_STRING)]
)
def test_hostile_parent_costs_the_lineage_only(value: Any, reason: str) -> None:
    body = ds_body(DS_CHILD, parent=DS_ROOT)
    body["dsh_session_log"]["session"]["parentSession"] = value
    identity = run(ds_headers(DS_CHILD), body)
    assert identity.participant_key == DS_CHILD
    assert identity.parent_key is None
    assert identity.is_child is True
    assert rejected_fields(identity)[f"{LOG}.parentSession"] == reason


def test_body_lineage_without_the_header_is_nothing() -> None:
    headers = ds_headers(DS_CHILD)
    del headers["x-deepseek-harness-session-id"]
    identity = run(headers, ds_body(DS_CHILD, parent=DS_ROOT))
    assert identity.rule == "none"


def test_log_without_an_id_is_not_read() -> None:
    body = ds_body(DS_CHILD, parent=DS_ROOT)
    del body["dsh_session_log"]["session"]["id"]
    identity = run(ds_headers(DS_CHILD), body)
    assert identity.participant_key == DS_CHILD
    assert identity.parent_key is None
    assert identity.is_child is None


def test_the_log_position_is_the_request_s_own_id() -> None:
    """`run_id` `<caller>:<throughSeq>`: the id the harness's log confirms with its
    `delivery-accepted` event; evidence, never a key."""
    identity = run(ds_headers(DS_CHILD), ds_body(DS_CHILD, parent=DS_ROOT))
    assert identity.run_id == f"{DS_CHILD}:9"
    assert identity.evidence["body.dsh_session_log.throughSeq"] == "9"
    assert identity.native_identity()["run_id"] == f"{DS_CHILD}:9"


@pytest.mark.parametrize("seq", [-1, "9", 1.5, True, None])
def test_a_position_that_is_not_a_count_gives_no_run_id(seq: Any) -> None:
    body = ds_body(DS_ROOT)
    body["dsh_session_log"]["throughSeq"] = seq
    identity = run(ds_headers(DS_ROOT), body)
    assert identity.run_id is None
    assert identity.participant_key == DS_ROOT  # the caller is still known
    assert rejected_fields(identity)["body.dsh_session_log.throughSeq"] == (
        "not a non-negative integer"
    )


def test_another_session_s_slice_gives_no_run_id() -> None:
    identity = run(ds_headers(DS_CHILD), ds_body(DS_ROOT))
    assert identity.run_id is None
    assert "run_id" not in identity.native_identity()


def test_a_request_without_the_slice_has_no_run_id() -> None:
    body = ds_body(DS_ROOT)
    del body["dsh_session_log"]
    assert run(ds_headers(DS_ROOT), body).run_id is None
