"""The note scope check as a pure function: own descendants by default, lineage None is
outside the subtree, wider only through an explicit per-account grant."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from roller.gateway.scope import SessionRef, note_allowed

A = SessionRef("author", "acme")


def ref(session_id: str, account: str = "acme") -> SessionRef:
    return SessionRef(session_id, account)


def test_own_child_and_deeper_descendants_are_allowed() -> None:
    assert note_allowed(A, ref("child"), None, ("author", "root")).reason == "descendant"
    assert note_allowed(A, ref("grandchild"), None, ("child", "author")).allowed


def test_sibling_parent_unrelated_and_self_are_denied() -> None:
    assert not note_allowed(A, ref("sibling"), None, ("root",)).allowed
    assert not note_allowed(A, ref("root"), None, None).allowed  # the parent: a root
    assert not note_allowed(A, ref("parent"), None, ("grandparent",)).allowed
    assert not note_allowed(A, ref("unrelated"), None, ("other-root",)).allowed
    assert not note_allowed(A, ref("author"), None, ("root",)).allowed


def test_lineage_none_is_outside_the_subtree_for_every_harness_that_gives_none() -> None:
    # Gemini CLI, generic and every other source-keyed session: no lineage, ever.
    decision = note_allowed(A, ref("gemini-session"), None, None)
    assert not decision.allowed and "unknown" in decision.detail


def test_an_account_grant_widens_the_scope_within_the_account_only() -> None:
    assert note_allowed(A, ref("unrelated"), "account", None).reason == "grant:account"
    assert note_allowed(A, ref("sibling"), "account", ("root",)).allowed
    assert not note_allowed(A, ref("x", "globex"), "account", ("author",)).allowed


@given(
    lineage=st.none() | st.lists(st.text(min_size=1, max_size=5), max_size=40).map(tuple),
    target=st.text(min_size=1, max_size=5),
    same_account=st.booleans(),
)
def test_allowed_without_grant_only_when_the_author_is_an_ancestor(
    lineage: tuple[str, ...] | None, target: str, same_account: bool
) -> None:
    decision = note_allowed(A, ref(target, "acme" if same_account else "globex"), None, lineage)
    expected = same_account and lineage is not None and "author" in lineage and target != "author"
    assert decision.allowed is expected
