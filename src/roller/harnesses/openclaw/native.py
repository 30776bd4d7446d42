"""OpenClaw's native logs -> `NativeCapture` (checked against 2026.9.6, 2026-12-01).

Where: `raw/native/openclaw/` holds consolidated copies of `~/.openclaw/agents/*/agent/
openclaw-agent.sqlite` and `~/.openclaw/state/openclaw.sqlite` (their tables:
`roller.harnesses.openclaw.store`); `raw/native/openclaw-launch.json` is the launcher's
report (`roller.harnesses.openclaw.gateway`). What is read from them:
- participants: the session tree (`tree`), one per session key, with `session_key` and
  `session_id` as native ids, the agent id as name;
- identity (`response_id`): each own assistant event's `responseId` -> its session key
  (fork copies excluded); `call_native_ids` gives each such response id its native
  `run_id` and, for a call that received a child's notification, its `notification_id`
  (the announce run, or the steered message's `announce:v1:…:active-wake` key); a run
  id OpenClaw stored masked is read back whole first (`masking.unmask_runs`);
  coverage `per_response_id` lists them per participant;
- relations: spawn, launch acknowledgement, child completion, the announce delivery and
  every further call of the same announce run (`delegation`);
- `replayed_tool_ids`: the ids Chat/Messages requests replay tool calls under (`replay`);
- lifecycle (`lifecycle`): `complete` when everything drained, `pending` (the children
  still running or whose notification is still owed) otherwise, `unknown` when the
  stores could not be read or a spawned child's registry row is missing or names another
  run (`missing_record`, `disagreement`);
- main-trajectory bars: an announce run of the root that names no response id.
Problem codes (besides the store's, tree's and replay's): `missing_file` (a store or the
launcher's report absent), `unreadable_file` / `not_json` / `not_an_object` (the
report), `not_drained` (the
launcher gave up waiting, a delivery failed — a notification that never arrives — or the
stores copied after the Gateway stopped are not drained though the launcher saw them so).
Nothing here attributes a call: finalize joins response ids to calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roller.harnesses.base import (
    NativeCapture,
    NativeCoverage,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeProblem,
    read_native_bytes,
)
from roller.harnesses.openclaw import delegation
from roller.harnesses.openclaw.lifecycle import drain_state, registry_gaps
from roller.harnesses.openclaw.masking import unmask_runs
from roller.harnesses.openclaw.replay import replayed_ids
from roller.harnesses.openclaw.store import STATE_DB, Store, read_store
from roller.harnesses.openclaw.tree import NATIVE_ROOT, Tree, session_tree

REPORT = "openclaw-launch.json"


def _participants(tree: Tree) -> tuple[NativeParticipant, ...]:
    return tuple(
        NativeParticipant(
            key=s.key,
            role="root" if s.parent_key is None else "child",
            parent_key=s.parent_key,
            depth=s.depth,
            native_ids={"session_key": s.key, "session_id": s.current_id},
            name=s.agent,
            state=s.state,
            evidence=(s.evidence,),
        )
        for s in tree.sessions.values()
    )


def _identity(tree: Tree) -> tuple[NativeIdentity, NativeCoverage, dict[str, dict[str, str]]]:
    keys: dict[str, list[str]] = {}
    runs: dict[str, set[str | None]] = {}
    ids: dict[str, set[str]] = {}
    for key, e in tree.own_assistant():
        assert e.response_id is not None
        if key not in keys.setdefault(e.response_id, []):
            keys[e.response_id].append(key)
        runs.setdefault(e.response_id, set()).add(e.run_id)
        ids.setdefault(key, set()).add(e.response_id)
    native_ids = {
        rid: {"run_id": run}
        for rid, found in runs.items()
        if len(found) == 1 and len(keys[rid]) == 1
        for run in found
        if run is not None
    }
    identity = NativeIdentity("response_id", {rid: tuple(k) for rid, k in keys.items()})
    coverage = NativeCoverage("per_response_id", ids={k: frozenset(v) for k, v in ids.items()})
    return identity, coverage, native_ids


def _report(native_dir: Path, problems: list[NativeProblem]) -> dict[str, Any]:
    path = native_dir / REPORT
    if not path.is_file():
        problems.append(
            NativeProblem(
                "missing_file", "the launcher's report is absent: the run was cut short", REPORT
            )
        )
        return {}
    raw = read_native_bytes(path, REPORT, problems)
    try:
        data = json.loads(raw or b"")
    except ValueError:
        problems.append(NativeProblem("not_json", "the launcher's report is not JSON", REPORT))
        return {}
    if not isinstance(data, dict):
        problems.append(
            NativeProblem("not_an_object", "the launcher's report is not an object", REPORT)
        )
        return {}
    return data


def _lifecycle(
    store: Store,
    found: list[delegation.Spawn],
    report: dict[str, Any],
    problems: list[NativeProblem],
) -> NativeLifecycle:
    gaps = registry_gaps(
        ((s.child_key, s.run_id) for s in found), store.subagent_runs, store.task_runs
    )
    problems += [NativeProblem(code, text, f"{NATIVE_ROOT}/{STATE_DB}") for code, text in gaps]
    drain = drain_state(
        store.subagent_runs,
        store.task_runs,
        (w.status for w in store.windows),
        store.pending_inputs,
    )
    outcome = report.get("drain")
    if outcome in ("timeout", "error"):
        detail = report.get("drain_error") or f"pending: {report.get('pending_children')}"
        message = (
            f"the launcher stopped waiting for the notifications to drain ({outcome}; {detail})"
        )
        problems.append(NativeProblem("not_drained", message, REPORT))
    elif outcome == "drained" and not drain.drained:
        owed = ", ".join(drain.pending_children) or "a session running or an input pending"
        message = (
            "the launcher saw the run drained, but the stores taken after the Gateway "
            f"stopped still owe work ({owed})"
        )
        problems.append(NativeProblem("not_drained", message, f"{NATIVE_ROOT}/{STATE_DB}"))
    for failure in drain.failures:
        problems.append(NativeProblem("not_drained", failure, f"{NATIVE_ROOT}/{STATE_DB}"))
    if not store.agent_dbs or not store.state_read or gaps:
        return NativeLifecycle("unknown", drain.pending_children)
    return NativeLifecycle("complete" if drain.drained else "pending", drain.pending_children)


def _missing_stores(native_dir: Path, store: Store, problems: list[NativeProblem]) -> None:
    root = native_dir / NATIVE_ROOT
    if not store.agent_dbs and not any(p.code == "unreadable_file" for p in store.problems):
        problems.append(NativeProblem("missing_file", "no agent database was copied", NATIVE_ROOT))
    if not (root / STATE_DB).is_file():
        problems.append(
            NativeProblem(
                "missing_file", "the state database was not copied", f"{NATIVE_ROOT}/{STATE_DB}"
            )
        )


def read_native(native_dir: Path) -> NativeCapture:
    """OpenClaw's stores under `native_dir` as native facts (see the module docstring)."""
    store = unmask_runs(read_store(native_dir / NATIVE_ROOT))
    problems = list(store.problems)
    _missing_stores(native_dir, store, problems)
    tree = session_tree(store, problems)
    identity, coverage, native_ids = _identity(tree)
    found = delegation.spawns(tree)
    for response_id, notification in delegation.notification_ids(tree, found).items():
        if response_id in native_ids:
            native_ids[response_id]["notification_id"] = notification
    roots = {s.key for s in tree.sessions.values() if s.parent_key is None}
    replayed = replayed_ids(tree.own_assistant(), problems)
    lifecycle = _lifecycle(store, found, _report(native_dir, problems), problems)
    return NativeCapture(
        participants=_participants(tree),
        identity=identity,
        relations=tuple(delegation.relations(tree, store, found)),
        coverage=coverage,
        lifecycle=lifecycle,
        subtasks="supported",
        problems=tuple(problems),
        main_trajectory_blocked_by=tuple(delegation.unbound_announces(tree, found, roots)),
        call_native_ids=native_ids,
        replayed_tool_ids=replayed,
    )
