"""DeepSeek Harness's native facts: participants, identity, relations, coverage and
lifecycle, derived purely from its session logs and roller's driver record
(`deepseek.sessions`, which gives the files and fields). `read_native(native_dir)` is the
adapter's reader.

Checked against deepseek-harness 0.2.1rc2, profiles `sdk-minimal` and `sdk`, with every
fact below seen in real runs through roller's driver:
- **Participants.** One per session log. The root's header names no `parentSession`
  (the driver's own session id); a child's names its parent, `origin: subagent`,
  `delegationDepth`. A forked child (`subagent_fork`, header `isSeeded`) starts with a
  copy of its parent's completed turns: its events before `session/end-seed
  {inherited: true}` are the parent's (a resumed root writes `session/end-seed {}` where
  its restored history ends: that is not a copy). That copy is the child's `inherited`
  prefix: the wire messages those seeded message events make (consecutive user-side
  events — user messages, tool results — share one Anthropic `user` message), checked
  by finalize against the first request.
- **Identity** (`wire_participant`): every request's `x-deepseek-harness-session-id`
  names the calling agent; a call belongs to the session whose id it is.
- **Relations**, per `subagent`/`subagent_fork` tool call of a parent log: its
  `tool/result` says `started subagent <id>` for exactly one child the parent's
  `subagent/catalog` lists → `spawn` and `launch_acknowledged` (every DeepSeek child runs
  in the background: the result is a launch acknowledgement, never completion); the
  child's last `turn/end` → `child_completed` (`completed`) or `child_failed`; the
  parent's `user/message` whose source is `subagent-settled` from that child (its
  notice) → `result_delivered`, bound to the request that carried it: the parent's
  first accepted request whose log slice reaches the notice's seq (`run_id`
  `<parent>:<throughSeq>`), with the notice's first line as the text that must be in
  that request. A spawn the harness refused (an error result, e.g. depth over
  `maxDepth`) creates no child and is noted in `capabilities.notes`.
- **Coverage** (`per_session_count_and_tool_call_ids`): per session its own
  `assistant/message` events (a fork's inherited ones excluded) and their tool-call ids.
- **Lifecycle**: the driver waits until every child finished and the root took in every
  notice (`settled`); `complete` when it settled and every session's last turn ended
  and every spawned child's notice was delivered; `pending` (those participants) when a
  child or a notice is still open or the driver's wait ran out; `unknown` without the
  driver record or when the logs cannot be read.
- **Subtasks**: the driver record names the profile: `sdk-minimal` has no subagent tools
  (`not_available_in_bundled_profile`), `sdk` has (`supported`).
Problem codes: those of `deepseek.sessions`, and here `unexpected_count` (not one root,
or not the driver's), `unknown_reference` (a child naming a parent without a log, a
spawn result naming a child without one), `disagreement` (a child whose header names
another parent than the log that spawned it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from roller.capture.models import RelationType, SubtaskCapability
from roller.harnesses.base import (
    InheritedContext,
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeProblem,
    NativeRelation,
    ParticipantState,
)
from roller.harnesses.deepseek.facts import Facts, event_evidence, facts_of, inherited_items
from roller.harnesses.deepseek.sessions import (
    DriverRecord,
    read_logs,
    read_record,
)
from roller.harnesses.lineage import chain_depth

COVERAGE: Final = "per_session_count_and_tool_call_ids"
PROFILE_SUBTASKS: Mapping[str, SubtaskCapability] = {
    "sdk-minimal": "not_available_in_bundled_profile",
    "sdk": "supported",
}


def read_native(native_dir: Path) -> NativeCapture:
    """DeepSeek Harness's native facts from `native_dir` (see the module docstring)."""
    problems: list[NativeProblem] = []
    logs = read_logs(native_dir, problems)
    record = read_record(native_dir, problems)
    facts = {log.id: facts_of(log) for log in logs}
    profile, root_id = _driver(record)
    _check_tree(facts, root_id, problems)
    relations = [r for f in facts.values() for r in _relations(f, facts, problems)]
    notes = [f"DeepSeek Harness profile {profile or 'unknown'} (roller's driver record)"]
    notes += [note for f in facts.values() for note in f.refused]
    participants = sorted(
        (_participant(f, facts) for f in facts.values()), key=lambda p: (p.depth, p.key)
    )
    return NativeCapture(
        participants=tuple(participants),
        identity=NativeIdentity(basis="wire_participant", keys={k: (k,) for k in facts}),
        relations=tuple(relations),
        coverage=NativeCoverage(
            basis=COVERAGE,
            counts={k: f.assistant for k, f in facts.items()},
            tool_call_ids={k: f.tool_ids for k, f in facts.items() if f.tool_ids},
            notes=tuple(notes),
        ),
        lifecycle=_lifecycle(facts, record, bool(problems)),
        subtasks=PROFILE_SUBTASKS.get(profile or "", "unknown"),
        problems=tuple(problems),
    )


def _driver(record: DriverRecord) -> tuple[str | None, str | None]:
    started = next((x for x in record.lines if x.get("event") == "driver.started"), {})
    profile, root = started.get("profile"), started.get("session_id")
    return (
        profile if isinstance(profile, str) else None,
        root if isinstance(root, str) else None,
    )


def _check_tree(
    facts: Mapping[str, Facts], root_id: str | None, problems: list[NativeProblem]
) -> None:
    roots = [k for k, f in facts.items() if f.log.parent_id is None]
    if facts and (len(roots) != 1 or (root_id is not None and roots != [root_id])):
        message = f"roots {', '.join(sorted(roots)) or 'none'}; the driver ran {root_id}"
        problems.append(NativeProblem("unexpected_count", message))
    for f in facts.values():
        parent = f.log.parent_id
        if parent is not None and parent not in facts:
            message = f"names parent {parent}, which has no session log"
            problems.append(NativeProblem("unknown_reference", message, f.log.path))


def _state(f: Facts) -> ParticipantState:
    if f.last_end is None:
        return "running"
    return "completed" if f.last_end == "completed" else "failed"


def _participant(f: Facts, facts: Mapping[str, Facts]) -> NativeParticipant:
    log = f.log
    ids = {"session_id": log.id}
    if log.parent_id is not None:
        ids["parent_session_id"] = log.parent_id
    inherited = None
    if log.seeded and f.seed_end is not None and log.parent_id is not None:
        items = inherited_items(log, f.seed_end)
        seed = next(e for e in log.events if e.seq == f.seed_end)
        if items:
            inherited = InheritedContext(log.parent_id, items, (event_evidence(log, seed),))
    return NativeParticipant(
        key=log.id,
        role="root" if log.parent_id is None else "child",
        parent_key=log.parent_id,
        depth=chain_depth(log.id, {k: v.log.parent_id for k, v in facts.items()}),
        native_ids=ids,
        name=f.provider,
        state=_state(f),
        evidence=(event_evidence(log),),
        inherited=inherited,
    )


def _relations(
    parent: Facts, facts: Mapping[str, Facts], problems: list[NativeProblem]
) -> list[NativeRelation]:
    out: list[NativeRelation] = []
    for spawn in parent.spawns:
        child = facts.get(spawn.child)
        base = NativeRelation(
            type="spawn",
            parent_key=parent.log.id,
            child_key=spawn.child,
            tool_call_id=spawn.tool_call_id,
            evidence=spawn.evidence,
        )
        out += [base, _as(base, "launch_acknowledged")]
        if child is None:
            message = f"spawn {spawn.tool_call_id} names child {spawn.child}, which has no log"
            problems.append(NativeProblem("unknown_reference", message, parent.log.path))
            continue
        if child.log.parent_id != parent.log.id:
            message = f"child {spawn.child} names parent {child.log.parent_id}"
            problems.append(NativeProblem("disagreement", message, parent.log.path))
            continue
        if child.last_end is not None:
            kind: RelationType = (
                "child_completed" if child.last_end == "completed" else "child_failed"
            )
            note = None if kind == "child_completed" else f"the child's turn ended {child.last_end}"
            out.append(_as(base, kind, (event_evidence(child.log),), note=note))
        delivered = _delivered(parent, spawn.child)
        if delivered is not None:
            run_id, text, evidence = delivered
            out.append(_as(base, "result_delivered", evidence, run_id=run_id, text=text))
    return out


def _delivered(parent: Facts, child: str) -> tuple[str, str, tuple[NativeEvidence, ...]] | None:
    """`child`'s notice as delivered: the run id of the parent's first accepted request
    whose log slice reaches it, its first text, and where; None when not (yet) sent."""
    notice = parent.notices.get(child)
    if notice is None:
        return None
    seq, text = notice
    through = next((t for t in parent.runs if t >= seq), None)
    if through is None:
        return None
    evidence = (NativeEvidence(path=parent.log.path, ref=f"seq {seq}"),)
    return f"{parent.log.id}:{through}", text, evidence


def _as(
    base: NativeRelation,
    kind: RelationType,
    evidence: tuple[NativeEvidence, ...] | None = None,
    *,
    note: str | None = None,
    run_id: str | None = None,
    text: str | None = None,
) -> NativeRelation:
    return NativeRelation(
        type=kind,
        parent_key=base.parent_key,
        child_key=base.child_key,
        tool_call_id=base.tool_call_id,
        evidence=evidence if evidence is not None else base.evidence,
        note=note,
        target_run_id=run_id,
        delivered_text=text,
    )


def _lifecycle(
    facts: Mapping[str, Facts], record: DriverRecord, unreadable: bool
) -> NativeLifecycle:
    settled = next((x for x in record.lines if x.get("event") == "settled"), None)
    if not record.present or not facts or unreadable:
        return NativeLifecycle(status="unknown")
    pending = {k for k, f in facts.items() if f.last_end is None}
    for f in facts.values():
        for spawn in f.spawns:
            if _delivered(f, spawn.child) is None:
                pending.add(spawn.child)
    if settled is None or settled.get("outcome") != "settled":
        named = settled.get("pending") if settled is not None else None
        pending |= {p for p in named or [] if isinstance(p, str)}
        return NativeLifecycle(status="pending", pending_keys=tuple(sorted(pending & set(facts))))
    if pending:
        return NativeLifecycle(status="pending", pending_keys=tuple(sorted(pending)))
    return NativeLifecycle(status="complete")
