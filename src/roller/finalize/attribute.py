"""Attribution: which participant made each call, from evidence only.

Rules kept (`docs/protocol.md`, Boundaries; seed 000 "Identity evidence"):
- With native evidence (an adapter's `NativeCapture`), a call belongs to the native
  participant its join value maps to: the provider response id (Claude Code: equals a
  native assistant `message.id`), or the wire participant key confirmed by the native
  log (OpenCode: `x-session-id` equals a native session id). No match -> `unattributed`;
  several -> `ambiguous`. Wire headers are cross-checked: when they name a different
  participant than the native evidence, the call is `ambiguous`, never attributed to
  either side on the wire's word alone.
- Parents are cross-checked too: when an attributed call's wire identity names a parent
  (OpenCode `x-parent-session-id`, Codex `x-codex-parent-thread-id` / turn metadata,
  Claude Code's session or parent agent), it is compared with the native parent of the
  participant the call was attributed to (through `wire_aliases` where the key spaces
  differ) and the outcome recorded as `parent_cross_check`. The native side stays the
  basis: a disagreement never moves the call nor rewrites a parent; it is reported
  (`parent_disagreements`, a capture error), so the capture cannot pass as complete.
- Without native evidence (generic harness), the wire identity alone decides; a call
  with no identity evidence is `unattributed`. Participants exist only where evidence
  names them (a call's own key, or a parent key a child's headers name).
- The user's declaration that the command is one agent (`--single-agent`) is evidence
  too: when no call's headers declare a participant, every call belongs to one root
  (basis `declared:single_agent`); when any does, the headers decide as above and the
  declaration is reported as overridden, never merged with them.
- Never from time, text or request order.

The attribute stage of finalize: decoded calls (and the adapter's `NativeCapture`) in,
an `AttributionResult` out — per call its participant key and identity status, and the
participants as drafts (ids are assigned by `roller.finalize.ids`). Its capture errors:
`unattributed_calls` and `parent_disagreements`.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal

from roller.capture.models import Attribution, IdentityStatus, ParentCrossCheck
from roller.finalize.call_facts import CallFacts
from roller.finalize.kept_facts import response_ids_of, sequences_of, shared_of
from roller.harnesses.base import (
    InheritedContext,
    NativeCapture,
    NativeEvidence,
    NativeParticipant,
    ParticipantState,
)
from roller.identity import WireIdentity


@dataclass(frozen=True)
class ParentClaim:
    """The parent a call's wire names: as derived from the wire (`wire_key`, e.g. Claude
    Code's `S:P`) and in the adapter's native key space (`native_key`)."""

    wire_key: str
    native_key: str


@dataclass(frozen=True)
class CallAttribution:
    participant_key: str | None
    status: IdentityStatus
    attribution: Attribution
    parent_claim: ParentClaim | None = None


@dataclass(frozen=True)
class ParticipantDraft:
    """A participant before ids are assigned: keyed by its native or wire key."""

    key: str
    role: Literal["root", "child"]
    parent_key: str | None
    depth: int
    native_ids: dict[str, str]
    name: str | None
    state: ParticipantState
    evidence: tuple[NativeEvidence, ...] = ()
    call_evidence: Sequence[int] = field(default=())  # an `array` where made per call
    inherited: InheritedContext | None = None
    declared: bool = False  # known from the user's single-agent declaration


# How the single-agent declaration fared: the calls' owner, or overridden by headers.
Declaration = Literal["applied", "overridden"]
DECLARED_ROOT = "declared-single-agent"


@dataclass(frozen=True)
class AttributionResult:
    calls: list[CallAttribution]
    participants: list[ParticipantDraft]
    declaration: Declaration | None = None

    @cached_property  # asked per participant: made once
    def owners(self) -> list[str | None]:
        """Per call, the key of the participant it belongs to (None when not attributed)."""
        return [a.participant_key for a in self.calls]


def attribute(
    calls: Sequence[CallFacts], native: NativeCapture | None, single_agent: bool = False
) -> AttributionResult:
    if native is not None:
        return _attribute_by_native(calls, native)
    if not single_agent:
        return _attribute_by_wire(calls)
    if any(s.identity.participant_key is not None for s in shared_of(calls)):
        return replace(_attribute_by_wire(calls), declaration="overridden")
    return _attribute_declared(calls)


def _attribute_declared(calls: Sequence[CallFacts]) -> AttributionResult:
    """Every call to the one root the user declared (no header named anyone)."""
    owned = CallAttribution(
        DECLARED_ROOT,
        "attributed",
        Attribution(
            basis="declared:single_agent",
            key=None,
            wire_participant_key=None,
            cross_check="not_applicable",
            note=None,
        ),
    )
    root = ParticipantDraft(
        key=DECLARED_ROOT,
        role="root",
        parent_key=None,
        depth=0,
        native_ids={},
        name=None,
        state="unknown",
        call_evidence=array("q", sequences_of(calls)),
        declared=True,
    )
    return AttributionResult([owned] * len(calls), [root] if calls else [], "applied")


def _join_value(response_id: str | None, ident: WireIdentity, native: NativeCapture) -> str | None:
    if native.identity.basis == "response_id":
        return response_id
    return ident.participant_key


def _attribute_by_native(calls: Sequence[CallFacts], native: NativeCapture) -> AttributionResult:
    basis = f"native:{native.identity.basis}"
    by_key = {p.key: p for p in native.participants}
    result: list[CallAttribution] = []
    for response_id, facts in zip(response_ids_of(calls), shared_of(calls), strict=True):
        ident = facts.identity
        wire_key = ident.participant_key
        value = _join_value(response_id, ident, native)
        matches = native.identity.keys.get(value, ()) if value is not None else ()
        if not matches:
            what = "response id" if native.identity.basis == "response_id" else "session key"
            note = (
                f"no native record carries {what} {value}"
                if value is not None
                else f"the call has no {what} to join on"
            )
            result.append(_unattributed(basis, value, wire_key, note))
            continue
        if len(matches) > 1:
            note = f"{value} maps to several native participants: {', '.join(sorted(matches))}"
            result.append(_ambiguous(basis, value, wire_key, "not_applicable", note))
            continue
        owner = matches[0]
        cross: Literal["agree", "disagree", "absent", "not_applicable"]
        if native.identity.basis == "wire_participant":
            cross = "not_applicable"
        elif wire_key is None or wire_key not in native.wire_aliases:
            cross = "absent"
        else:
            cross = "agree" if native.wire_aliases[wire_key] == owner else "disagree"
        if cross == "disagree":
            note = (
                f"native evidence names {owner} but the wire headers name "
                f"{native.wire_aliases[wire_key or '']}"
            )
            result.append(_ambiguous(basis, value, wire_key, "disagree", note))
            continue
        parent_check, claim = _parent_check(
            ident.parent_key, by_key.get(owner), native.wire_aliases
        )
        result.append(
            CallAttribution(
                owner,
                "attributed",
                Attribution(
                    basis=basis,
                    key=value,
                    wire_participant_key=wire_key,
                    cross_check=cross,
                    note=None,
                    parent_cross_check=parent_check,
                ),
                claim,
            )
        )
    participants = [_draft_from_native(p) for p in native.participants]
    return AttributionResult(result, participants)


def _parent_check(
    wire_parent: str | None,
    participant: NativeParticipant | None,
    aliases: Mapping[str, str],
) -> tuple[ParentCrossCheck | None, ParentClaim | None]:
    """The wire's parent for this call against its participant's native parent.

    A wire key the adapter aliases (Claude Code: `S` -> main, `S:A` -> A) is compared in
    native keys; any other is compared as it is (OpenCode session ids and Codex thread
    ids are the native keys). A native root has no parent, so a wire parent contradicts
    it; a child whose native parent is unknown leaves nothing to compare with.
    """
    if wire_parent is None or participant is None:
        return None, None
    claim = ParentClaim(wire_parent, aliases.get(wire_parent, wire_parent))
    if participant.parent_key is not None:
        return ("agree" if claim.native_key == participant.parent_key else "disagree"), claim
    return ("disagree" if participant.role == "root" else "absent"), claim


def unattributed_calls(calls: Sequence[CallFacts], result: AttributionResult) -> list[str]:
    """The message for generation calls no evidence attributes; none when every one is."""
    unattributed = sum(
        1
        for s, a in zip(shared_of(calls), result.calls, strict=True)
        if s.kind == "generation" and a.status != "attributed"
    )
    if not unattributed:
        return []
    return [f"{unattributed} generation call(s) could not be attributed by evidence"]


def parent_disagreements(
    result: AttributionResult, call_ids: Sequence[str], pids: Mapping[str, str]
) -> list[str]:
    """One message per participant and wire parent whose calls disagree with the native
    parent, naming the calls; in call order, so re-finalizing gives the same text."""
    groups: dict[tuple[str, ParentClaim], list[str]] = {}
    for cid, a in zip(call_ids, result.calls, strict=True):
        if (
            a.attribution.parent_cross_check == "disagree"
            and a.participant_key is not None
            and a.parent_claim is not None
        ):
            groups.setdefault((a.participant_key, a.parent_claim), []).append(cid)
    drafts = {d.key: d for d in result.participants}
    out = []
    for (owner, claim), cids in groups.items():
        native_parent = drafts[owner].parent_key
        named = pids.get(claim.native_key)
        wire = f"{named} ({claim.wire_key})" if named else f"{claim.wire_key}, no participant"
        native = (
            f"parent {pids.get(native_parent, native_parent)} ({native_parent})"
            if native_parent is not None
            else "no parent: it is a root"
        )
        out.append(
            f"participant {pids[owner]} ({owner}): {len(cids)} call(s) name parent {wire} "
            f"on the wire, the native evidence names {native}: {', '.join(cids)}"
        )
    return out


def _ambiguous(
    basis: str,
    key: str | None,
    wire_key: str | None,
    cross: Literal["disagree", "not_applicable"],
    note: str,
) -> CallAttribution:
    return CallAttribution(
        None,
        "ambiguous",
        Attribution(
            basis=basis, key=key, wire_participant_key=wire_key, cross_check=cross, note=note
        ),
    )


def _unattributed(basis: str, key: str | None, wire_key: str | None, note: str) -> CallAttribution:
    return CallAttribution(
        None,
        "unattributed",
        Attribution(
            basis=basis, key=key, wire_participant_key=wire_key, cross_check="absent", note=note
        ),
    )


def _draft_from_native(p: NativeParticipant) -> ParticipantDraft:
    return ParticipantDraft(
        key=p.key,
        role=p.role,
        parent_key=p.parent_key,
        depth=p.depth,
        native_ids=dict(p.native_ids),
        name=p.name,
        state=p.state,
        evidence=p.evidence,
        inherited=p.inherited,
    )


@dataclass
class _WireParticipant:
    is_child: bool | None
    parent: str | None
    ids: dict[str, str]
    calls: array[int]  # its calls' sequence numbers (8 bytes each, no int object)


def _attribute_by_wire(calls: Sequence[CallFacts]) -> AttributionResult:
    result: list[CallAttribution] = []
    seen: dict[str, _WireParticipant] = {}
    shared: dict[tuple[str, str], CallAttribution] = {}
    for sequence, facts in zip(sequences_of(calls), shared_of(calls), strict=True):
        ident = facts.identity
        key = ident.participant_key
        basis = f"wire:{ident.rule}"
        if key is None:
            note = "no identity evidence on the wire"
            if ident.rejected:
                note += " (rejected: " + "; ".join(f"{f}: {r}" for f, r in ident.rejected) + ")"
            result.append(_unattributed(basis, None, None, note))
            continue
        same = shared.get((key, basis))
        if same is None:  # one frozen value per participant and rule, not one per call
            same = shared[key, basis] = CallAttribution(
                key,
                "attributed",
                Attribution(
                    basis=basis,
                    key=key,
                    wire_participant_key=key,
                    cross_check="not_applicable",
                    note=None,
                ),
            )
        result.append(same)
        entry = seen.setdefault(key, _WireParticipant(ident.is_child, None, {}, array("q")))
        entry.calls.append(sequence)
        entry.ids.update(ident.evidence)
        if entry.is_child is None:
            entry.is_child = ident.is_child
        if entry.parent is None and ident.parent_key is not None and ident.parent_key != key:
            entry.parent = ident.parent_key
        if ident.parent_key is not None and ident.parent_key not in seen:
            # A parent named by a child's headers exists even if it made no call yet.
            # It is the root when the wire says the session key is the root and names it;
            # a parent that is not the session key is some child; otherwise unknown.
            parent_is_child: bool | None = None
            if ident.parent_key != ident.session_key and ident.session_key is not None:
                parent_is_child = ident.session_key_is_root
            elif ident.session_key_is_root:
                parent_is_child = False
            seen[ident.parent_key] = _WireParticipant(parent_is_child, None, {}, array("q"))
    participants = [
        ParticipantDraft(
            key=key,
            role="child" if (entry.is_child or entry.parent is not None) else "root",
            parent_key=entry.parent,
            depth=0,
            native_ids=dict(entry.ids),
            name=None,
            state="unknown",
            call_evidence=entry.calls,
        )
        for key, entry in seen.items()
    ]
    return AttributionResult(result, _with_depths(participants))


def _with_depths(participants: list[ParticipantDraft]) -> list[ParticipantDraft]:
    """Depth from the parent chain; a chain that loops or leaves the set stops counting."""
    by_key = {p.key: p for p in participants}
    out = []
    for p in participants:
        depth, cur, seen = 0, p, {p.key}
        while (
            cur.parent_key is not None and cur.parent_key in by_key and cur.parent_key not in seen
        ):
            depth += 1
            seen.add(cur.parent_key)
            cur = by_key[cur.parent_key]
        if p.role == "child" and depth == 0:
            depth = 1  # a child whose parent is not known still sits below some root
        out.append(replace(p, depth=depth))
    return out
