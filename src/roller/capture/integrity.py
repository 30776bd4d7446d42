"""The checks `roller validate` runs on a published attempt.

A capture is valid when:
- the manifest parses strictly and every formal file of its storage layout matches its
  sha256, size and lines (compact/v3: contexts.blobs too, and every call's context
  rebuilt from it hashes to its `context_sha256`);
- every record parses strictly; ids are unique;
- every call's participant exists and the manifest's `call_ids` agree with the calls;
- every relation's calls and participants exist;
- statuses agree with the rules in `roller.capture.statuses`;
- no reference (raw_path, retained evidence) points at a missing file, and raw bodies
  still hash to what the records say;
- counts, lifecycle and the capture status agree with the records (a call whose wire
  parent contradicts the native one never sits in a complete capture);
- a multi-turn manifest's turns are numbered 1..n, name existing calls, each at most
  once, and an attempt whose turns did not all complete does not say `completed`.
Each violation is a typed `Problem`; nothing is fixed or skipped silently. The checks of
one record on its own are `roller.capture.record_checks`; this module reads the files
once for their records, runs those on each record and holds the checks across records,
while a thread hashes the files against the manifest (10k calls: 6.0 -> 5.5 s). No
check reads a context's value, only whether it is null: call records are read with
their inline contexts left unread (`roller.capture.reader.checked_call`, the same
verdict as a full reading; 10k calls: 5.3 -> 4.4 s).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from roller.capture.call_views import CallViews
from roller.capture.files import describe_file
from roller.capture.layout import LAYOUT_FILES, AttemptPaths
from roller.capture.models import Manifest, RelationRecord
from roller.capture.models.numbered import IdsBuilder, NumberedEvidence, NumberedIds
from roller.capture.reader import iter_calls, iter_jsonl, read_manifest
from roller.capture.record_checks import Problem, check_call, check_evidence, check_relation
from roller.capture.relation_check import checked_relation
from roller.capture.seen_ids import SeenIds
from roller.errors import CaptureFormatError


@dataclass(frozen=True)
class ValidationReport:
    attempt: AttemptPaths
    problems: list[Problem]
    unreadable: bool
    # calls.jsonl holds its calls in sequence order (as finalize writes it), so a reader
    # may take them as they come; False when they are not, or were not all read
    calls_in_sequence: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unreadable


def validate_attempt(paths: AttemptPaths) -> ValidationReport:
    """Every check, reading calls.jsonl and relations.jsonl once each, a record at a time:
    what is kept across records is a few bytes a call (`CallViews`: numbered ids and a
    byte per status) and the relation ids out of their numbered order (`SeenIds`), so
    memory grows by a small index per call and not per relation."""
    try:
        manifest = read_manifest(paths)
    except CaptureFormatError as exc:
        return ValidationReport(
            paths, [Problem("manifest_unreadable", "manifest.json", str(exc))], True
        )
    # The files are hashed beside the record scan (reading and hashing release the GIL);
    # their problems come first, as when they were checked first.
    with ThreadPoolExecutor(1, thread_name_prefix="roller-file-hashes") as pool:
        files = pool.submit(_check_files, paths, manifest)
        problems, calls = _check_records(paths, manifest)
        problems[:0] = files.result()
    return ValidationReport(paths, problems, False, calls is not None and calls.in_sequence)


def _check_records(
    paths: AttemptPaths, manifest: Manifest
) -> tuple[list[Problem], CallViews | None]:
    """Every record check's problems, and what was kept of the calls (None when
    calls.jsonl is absent or does not parse)."""
    problems: list[Problem] = []
    scanned = _scan_calls(paths, manifest, problems)
    calls = scanned[0] if scanned is not None else None
    call_ids = calls.call_ids() if calls is not None else NumberedIds("", array("q"), {})
    relations = _scan_relations(paths, manifest, call_ids, problems)
    if scanned is not None:
        problems += _check_calls(paths, manifest, call_ids, *scanned)
    if relations is not None:
        problems += relations[1]
    if calls is not None and relations is not None:
        problems += _check_manifest_summary(paths, manifest, calls, relations[0])
    if calls is not None:
        problems += _check_turns(manifest, call_ids)
    return problems, calls


def _scan_calls(
    paths: AttemptPaths, manifest: Manifest, problems: list[Problem]
) -> tuple[CallViews, list[Problem]] | None:
    """Each call checked on its own as it is read; None (and `record_invalid`) when a
    record does not parse, as then nothing about the calls can be trusted."""
    if not paths.calls.exists():
        return None
    participants = {p.participant_id for p in manifest.participants}
    views = CallViews()
    own: list[Problem] = []
    real_root = paths.root.resolve()  # (once, not per call holding a raw body)
    try:
        for call in iter_calls(paths, checking=True):
            own += check_call(paths, participants, call, real_root)
            views.add(call)
    except CaptureFormatError as exc:
        problems.append(Problem("record_invalid", paths.calls.name, str(exc)))
        return None
    return views, own


def _scan_relations(
    paths: AttemptPaths, manifest: Manifest, call_ids: Sequence[str], problems: list[Problem]
) -> tuple[int, list[Problem]] | None:
    """Each relation checked as it is read: (how many, their problems); None (and
    `record_invalid`) when a record does not parse."""
    if not paths.relations.exists():
        return None
    participants = {p.participant_id for p in manifest.participants}
    ids = SeenIds(f"rel-{manifest.capture_scope}-")
    count = 0
    own: list[Problem] = []
    try:
        for rel in iter_jsonl(paths.relations, RelationRecord, checked_relation):
            ids.add(rel.relation_id)
            count += 1
            own += check_relation(paths, participants, call_ids, rel)
    except CaptureFormatError as exc:
        problems.append(Problem("record_invalid", paths.relations.name, str(exc)))
        return None
    dups = [
        Problem("duplicate_id", f"relation {dup}", "relation_id appears more than once")
        for dup in ids.duplicates()
    ]
    return count, dups + own


def _check_files(paths: AttemptPaths, manifest: Manifest) -> list[Problem]:
    problems: list[Problem] = []
    formal = LAYOUT_FILES[manifest.storage_layout]
    for name in formal:
        entry = manifest.files.get(name)
        path = paths.root / name
        if entry is None:
            problems.append(
                Problem("file_not_in_manifest", name, "the manifest lists no hash for it")
            )
            continue
        if not path.exists():
            problems.append(Problem("missing_file", name, "listed in the manifest but absent"))
            continue
        found = describe_file(path)  # read in blocks: a formal file may be gigabytes
        if found.sha256 != entry.sha256:
            problems.append(Problem("hash_mismatch", name, "sha256 differs from the manifest"))
        if found.bytes != entry.bytes:
            problems.append(
                Problem("size_mismatch", name, f"{found.bytes} bytes, manifest says {entry.bytes}")
            )
        lines = found.lines
        if lines != entry.lines:
            problems.append(
                Problem(
                    "line_count_mismatch",
                    name,
                    f"{lines} lines, manifest says {entry.lines}",
                )
            )
    for name in manifest.files:
        if name not in formal:
            problems.append(
                Problem(
                    "unexpected_file_entry", name, f"not a formal file of {manifest.storage_layout}"
                )
            )
    return problems


def _check_calls(
    paths: AttemptPaths,
    manifest: Manifest,
    call_ids: NumberedIds,
    calls: CallViews,
    own: list[Problem],
) -> list[Problem]:
    """Duplicate ids, then each call's own problems, then the participants' call lists."""
    problems: list[Problem] = []
    participants = {p.participant_id: p for p in manifest.participants}
    for dup in call_ids.duplicates():
        problems.append(Problem("duplicate_id", f"call {dup}", "call_id appears more than once"))
    problems += own
    by_participant = calls.by_participant()
    for pid, p in participants.items():
        if p.call_ids != by_participant.get(pid, []):
            problems.append(
                Problem(
                    "participant_calls_mismatch",
                    f"participant {pid}",
                    "call_ids differ from the calls attributed to it",
                )
            )
        if p.parent_participant_id is not None and p.parent_participant_id not in participants:
            problems.append(
                Problem(
                    "dangling_participant",
                    f"participant {pid}",
                    f"parent {p.parent_participant_id} is not in the manifest",
                )
            )
        if p.parent_participant_id == pid:
            problems.append(
                Problem("self_parent", f"participant {pid}", "a participant is its own parent")
            )
        # no call is checked here, so a numbered `call:` item gives no problem: only the
        # others are read (making every item makes a record per call)
        ev = p.evidence.unnumbered() if isinstance(p.evidence, NumberedEvidence) else p.evidence
        problems += check_evidence(paths, f"participant {pid}", ev, set())
    return problems


def _check_manifest_summary(
    paths: AttemptPaths, manifest: Manifest, calls: CallViews, relations: int
) -> list[Problem]:
    """The manifest's counts, retention, lifecycle and capture status against the records."""
    problems = _check_counts(manifest, calls, relations)
    if manifest.raw_retained != paths.raw.is_dir():
        problems.append(
            Problem(
                "raw_retention_mismatch",
                "raw/",
                f"raw_retained is {manifest.raw_retained} "
                f"but raw/ {'exists' if paths.raw.is_dir() else 'is absent'}",
            )
        )
    lc = manifest.lifecycle
    if lc is not None and lc.status == "complete" and lc.pending_participant_ids:
        problems.append(
            Problem(
                "status_inconsistent", "manifest lifecycle", "complete with pending participants"
            )
        )
    reasons = _incomplete_reasons(manifest, calls)
    if manifest.capture_status == "complete" and reasons:
        problems.append(
            Problem(
                "status_inconsistent",
                "manifest capture_status",
                "complete although " + ", ".join(reasons),
            )
        )
    return problems


def _check_counts(manifest: Manifest, calls: CallViews, relations: int) -> list[Problem]:
    c = manifest.counts
    actual = {
        "calls": len(calls),
        "generation_calls": calls.count("kind", "generation"),
        "attributed_calls": calls.count("identity_status", "attributed"),
        "unattributed_calls": calls.count("identity_status", "unattributed"),
        "ambiguous_calls": calls.count("identity_status", "ambiguous"),
        "exportable_calls": calls.count("export_status", "exportable"),
        "relations": relations,
        "participants": len(manifest.participants),
    }
    return [
        Problem(
            "count_mismatch",
            f"manifest counts.{key}",
            f"says {getattr(c, key)}, records have {value}",
        )
        for key, value in actual.items()
        if getattr(c, key) != value
    ]


def _incomplete_reasons(manifest: Manifest, calls: CallViews) -> list[str]:
    """Why the capture cannot be `complete`, from the records (empty: nothing against it)."""
    lc = manifest.lifecycle
    reasons = []
    if not calls.all("capture_status", "complete"):
        reasons.append("a call is partial")
    if manifest.coverage.checked and not manifest.coverage.ok:
        reasons.append("the coverage check failed")
    if lc is not None and lc.status in ("pending", "unknown"):
        reasons.append(f"lifecycle is {lc.status}")
    if manifest.capture_errors:
        reasons.append("there are capture errors")
    if calls.any_disagrees():
        reasons.append("a call's wire parent contradicts the native parent")
    return reasons


def _check_turns(manifest: Manifest, known: NumberedIds) -> list[Problem]:
    if manifest.turns is None:
        return []
    problems: list[Problem] = []
    numbers = [t.turn for t in manifest.turns]
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(Problem("turns_inconsistent", "manifest turns", f"numbered {numbers}"))
    listed = IdsBuilder()
    for t in manifest.turns:
        for cid in t.call_ids:
            listed.append(cid)
    for dup in listed.ids().duplicates():
        problems.append(Problem("duplicate_id", f"call {dup}", "listed in two turns"))
    for t in manifest.turns:
        where = f"manifest turn {t.turn}"
        for cid in t.call_ids:
            if cid not in known:
                problems.append(Problem("dangling_call", where, f"call {cid} is not in calls"))
        if t.execution_status == "not_run" and t.call_ids:
            problems.append(Problem("turns_inconsistent", where, "not run, yet it has calls"))
    if manifest.execution_status == "completed" and any(
        t.execution_status != "completed" for t in manifest.turns
    ):
        problems.append(
            Problem(
                "status_inconsistent",
                "manifest execution_status",
                "completed although a turn did not complete",
            )
        )
    return problems
