"""The checks of one record on its own, as `roller validate` runs them on each record
it reads (`roller.capture.integrity` holds the checks across records and files).

- a call: its participant is in the manifest and agrees with its `identity_status`; its
  capture and export statuses are the rulebook's (`roller.capture.statuses`) for what the
  record says; a retained raw file exists inside the attempt and hashes to `raw_sha256`;
- a relation: its participants and calls exist; an established one whose
  `model_tool_ref` did not match is a contradiction;
- evidence: a retained native file exists inside `native/`; a named call is known.
Each violation is a typed `Problem`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord, RelationStatus
from roller.capture.statuses import StatusInputs, capture_status, export_status


class EvidenceView(Protocol):
    """What a check reads of an `Evidence` (`roller.capture.relation_check` reads
    relations into structs that have it too)."""

    @property
    def source(self) -> str: ...
    @property
    def ref(self) -> str | None: ...
    @property
    def retained(self) -> bool: ...


class ToolRefView(Protocol):
    @property
    def matched(self) -> bool: ...


class RelationView(Protocol):
    """What a check reads of a `RelationRecord`."""

    @property
    def relation_id(self) -> str: ...
    @property
    def status(self) -> RelationStatus: ...
    @property
    def parent_participant_id(self) -> str | None: ...
    @property
    def child_participant_id(self) -> str | None: ...
    @property
    def source_call_id(self) -> str | None: ...
    @property
    def target_call_id(self) -> str | None: ...
    @property
    def model_tool_ref(self) -> ToolRefView | None: ...
    @property
    def evidence(self) -> Sequence[EvidenceView]: ...


@dataclass(frozen=True)
class Problem:
    code: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.where}: {self.message}"


def status_inputs(call: CallRecord) -> StatusInputs:
    return StatusInputs(
        kind=call.kind,
        execution_status=call.execution_status,
        response_capture_status=call.response_capture_status,
        context_parsed=call.context is not None or call.context_bytes == 0,
        output_complete=call.output_complete,
        tool_call_without_identity="tool_call_without_identity" in call.export_blocked_by,
        identity_status=call.identity_status,
        model=call.model,
        response_model=call.response_model,
        error_count=len(call.errors),
    )


def check_call(
    paths: AttemptPaths, participants: set[str], call: CallRecord, real_root: Path | None = None
) -> list[Problem]:
    """`real_root`: the capture's root resolved, when the caller resolved it once for
    every call (resolving it takes a `lstat` per path component)."""
    problems: list[Problem] = []
    where = f"call {call.call_id}"
    if call.participant_id is not None and call.participant_id not in participants:
        problems.append(
            Problem(
                "dangling_participant",
                where,
                f"participant {call.participant_id} is not in the manifest",
            )
        )
    if (call.participant_id is not None) != (call.identity_status == "attributed"):
        problems.append(
            Problem(
                "status_inconsistent",
                where,
                f"identity_status {call.identity_status} with participant_id {call.participant_id}",
            )
        )
    inputs = status_inputs(call)
    if capture_status(inputs) != call.capture_status:
        problems.append(
            Problem(
                "status_inconsistent",
                where,
                f"capture_status {call.capture_status} contradicts the record",
            )
        )
    expected, blockers = export_status(inputs)
    if expected != call.export_status or blockers != call.export_blocked_by:
        problems.append(
            Problem(
                "status_inconsistent",
                where,
                f"export {call.export_status} {call.export_blocked_by}, "
                f"rules say {expected} {blockers}",
            )
        )
    raw = call.response.raw_path
    if raw is not None:
        raw_file = paths.root / raw
        if not inside(paths.root, raw_file, real_root) or not raw_file.is_file():
            problems.append(Problem("missing_file", where, f"raw_path {raw} does not exist"))
        elif call.response.raw_sha256 != hashlib.sha256(raw_file.read_bytes()).hexdigest():
            problems.append(Problem("hash_mismatch", where, f"{raw} does not hash to raw_sha256"))
    return problems


def inside(root: Path, path: Path, real_root: Path | None = None) -> bool:
    """Whether `path`, its symlinks resolved, is under `root` (`real_root`: `root`
    resolved already)."""
    try:
        path.resolve().relative_to(real_root or root.resolve())
    except ValueError:
        return False
    return True


def check_evidence(
    paths: AttemptPaths,
    where: str,
    evidence: Sequence[EvidenceView],
    call_ids: Collection[str] | None,
    known: Collection[str] = (),
) -> list[Problem]:
    """`known`: ids already found in `call_ids` (a relation's source and target, which
    its evidence names again: `in` on a numbered list is a Python call)."""
    problems: list[Problem] = []
    checked: bool | None = None  # whether calls are checked: asked once (`len` may be Python)
    for ev in evidence:
        kind, _, ref = ev.source.partition(":")
        if kind == "native" and ev.retained:
            target = paths.native / ref
            if not inside(paths.native, target) or not target.exists():
                problems.append(
                    Problem(
                        "missing_file", where, f"evidence {ev.source} is marked retained but absent"
                    )
                )
        elif kind == "call" and ref not in known:
            if checked is None:
                checked = bool(call_ids)
            if checked and call_ids is not None and ref not in call_ids:
                problems.append(
                    Problem("dangling_call", where, f"evidence names unknown call {ref}")
                )
    return problems


def check_relation(
    paths: AttemptPaths, participants: set[str], call_ids: Collection[str], rel: RelationView
) -> list[Problem]:
    if _plainly_sound(participants, call_ids, rel):
        return []
    return _relation_problems(paths, participants, call_ids, rel)


def _plainly_sound(participants: set[str], call_ids: Collection[str], rel: RelationView) -> bool:
    """True when `_relation_problems` would find nothing, for the common relation (its
    participants and calls known, its evidence only those calls): ~13 a call, checked
    here in half the time; anything else is left to it."""
    parent, child = rel.parent_participant_id, rel.child_participant_id
    source, target = rel.source_call_id, rel.target_call_id
    ref = rel.model_tool_ref
    if (
        (parent is not None and parent not in participants)
        or (child is not None and child not in participants)
        or source is None
        or target is None
        or (ref is not None and not ref.matched and rel.status == "established")
        or source not in call_ids
        or target not in call_ids
    ):
        return False
    for ev in rel.evidence:
        named = ev.source
        if not named.startswith("call:") or named[5:] not in (source, target):
            return False
    return True


def _relation_problems(
    paths: AttemptPaths, participants: set[str], call_ids: Collection[str], rel: RelationView
) -> list[Problem]:
    problems: list[Problem] = []
    where = f"relation {rel.relation_id}"
    for label, pid in (
        ("parent", rel.parent_participant_id),
        ("child", rel.child_participant_id),
    ):
        if pid is not None and pid not in participants:
            problems.append(
                Problem(
                    "dangling_participant",
                    where,
                    f"{label} participant {pid} is not in the manifest",
                )
            )
    known: set[str] = set()
    for label, cid in (("source", rel.source_call_id), ("target", rel.target_call_id)):
        if cid is None:
            continue
        if cid in call_ids:
            known.add(cid)
        else:
            problems.append(
                Problem("dangling_call", where, f"{label} call {cid} is not in calls.jsonl")
            )
    ref = rel.model_tool_ref
    if rel.status == "established" and ref is not None and not ref.matched:
        problems.append(
            Problem(
                "status_inconsistent", where, "established although model_tool_ref did not match"
            )
        )
    problems += check_evidence(paths, where, rel.evidence, call_ids, known)
    return problems
