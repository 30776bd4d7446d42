"""Who may leave a note for whom, and who may see which tree: the scope checks, pure.

`note_allowed(author, target, grant, lineage)`:
- `author`, `target`: the two sessions (id and account);
- `grant`: the account's explicit grant from the configuration, or None (the default);
- `lineage`: the target's known ancestors, nearest first, or None when its lineage is
  unknown (no parent on record: every Gemini CLI, generic or otherwise source-keyed
  session, a root, or a child whose parent id was rejected; or a chain that loops).

Rules kept (seed 001, "Fallback when the parent cannot be derived"):
- Never across accounts, whatever the grant.
- The default scope is the author's own descendants: allowed only when the author is in
  the target's ancestor chain. A session is not its own descendant.
- Lineage None means "outside the author's subtree": denied. Unknown lineage never
  widens the scope; it is treated exactly as an unrelated session.
- A wider scope comes only from an explicit per-account grant (`scope = "account"`: any
  session of the same account), off by default.

`tree_visible(caller, target, grant, lineage)`: a caller (None when its own session is
unknown: it made no model request) sees the tree of its own session and of its
descendants, or any tree of its account with an account grant; never another
principal's by default, never across accounts. Seeing is the note scope plus oneself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from roller.gateway.config import GrantScope

Verdict = Literal["self", "descendant", "grant:account", "denied"]


@dataclass(frozen=True, slots=True)
class SessionRef:
    id: str
    account: str


@dataclass(frozen=True, slots=True)
class ScopeDecision:
    allowed: bool
    reason: Verdict
    detail: str


def note_allowed(
    author: SessionRef,
    target: SessionRef,
    grant: GrantScope | None,
    lineage: Sequence[str] | None,
) -> ScopeDecision:
    if author.account != target.account:
        return ScopeDecision(False, "denied", "the target is in another account")
    if lineage is not None and author.id in lineage and author.id != target.id:
        return ScopeDecision(True, "descendant", "the target is the author's descendant")
    if grant == "account":
        return ScopeDecision(True, "grant:account", "the account grants notes to any session")
    if lineage is None:
        return ScopeDecision(
            False,
            "denied",
            "the target's lineage is unknown, so it is outside the author's subtree",
        )
    return ScopeDecision(False, "denied", "the target is not the author's descendant")


def tree_visible(
    caller: SessionRef | None,
    target: SessionRef,
    grant: GrantScope | None,
    lineage: Sequence[str] | None,
) -> ScopeDecision:
    if caller is not None and caller.account == target.account and caller.id == target.id:
        return ScopeDecision(True, "self", "the caller's own session")
    if caller is None:
        if grant == "account":
            return ScopeDecision(True, "grant:account", "the account grants every tree")
        return ScopeDecision(False, "denied", "the calling session is unknown")
    return note_allowed(caller, target, grant, lineage)
