"""The Codex native reader: copied rollouts and thread index -> `NativeCapture`.

Checked against codex-cli 0.171.0, both multi-agent tool generations (`multi_agent_v1`,
the default, and `collaboration` with `features.multi_agent_v2`); real files under
`tests/data/harnesses/codex/`. Pure: it reads `raw/native/` and returns values.

Inputs (copied by `CodexAdapter.collect_native`):
- `sessions/**/rollout-*.jsonl`, one per thread (shape: `roller.harnesses.codex.rollout`);
- `state_5.sqlite`, the thread index (shape: `roller.harnesses.codex.state`);
- `rollout-trace/*/trace.jsonl`, Codex's rollout traces (shape:
  `roller.harnesses.codex.trace`): which code-mode `exec` call made each nested call.
Participants come from `.lineage`, relations from `.relations` (direct tool calls) and
`.nested` (calls a code-mode script made); this module joins them with identity,
coverage, lifecycle and the main-trajectory bar.

What it asserts, and from which evidence:
- Participants: every thread with a rollout. Root: `thread_source: user` and no parent.
  A child's parent is named three times — `session_meta.parent_thread_id`,
  `session_meta.source.subagent.thread_spawn.parent_thread_id` and the
  `thread_spawn_edges` row — and all that are present must agree.
- Identity (`wire_participant`): a call's `thread-id` header (roller.identity's
  participant key for Codex: the bare thread id) must be a thread with a rollout.
- Coverage (`token_usage_count`): the number of `token_usage_record`s per thread, each
  one model response; their `response_id`s are listed too, so the captured calls of a
  thread must carry exactly those ids. `event_msg/token_count` carries no ids; its count
  is only compared with the records and a difference noted.
- `spawn` + `launch_acknowledged` per `spawn_agent` call whose output names the child
  (v1 `{"agent_id"}`; v2 `{"task_name"}`, the child's agent path), cross-checked with
  the `item_completed` collab item of the same `call_id` and the child's own parent.
  `model_tool_ref` is `(call_id, item id)`: finalize needs both in one output item.
- `result_delivered`: v1 `wait_agent` output naming the child with a final status, and
  v1 `<subagent_notification>` / v2 `FINAL_ANSWER` `agent_message` input items; each is
  bound to the first later response of the parent whose sampling record
  (`sampled_through_sequence`) covers the item, and its text must be in that call. An
  item no later response sampled (recorded after the parent's last response, e.g. a
  second child finishing after `codex exec`'s turn ended) reached no model: no relation.
- `child_completed` / `child_failed`: the child's last own turn ended in
  `task_complete` / `turn_aborted`.
- A warm-forked (v2) child's copied parent history is the parent's: it yields nothing
  for the child and nothing twice for the parent.
- Tools loaded dynamically (`tool_search_call` / `tool_search_output`) or carried by an
  `additional_tools` item (code mode) in the root thread bar the main trajectory (never
  per-call export).
- Code mode: a spawn or v1 wait a script made is bound to its `exec` call by ids only
  (the rollout item's id -> the trace's nested call -> its cell's `exec` call); one no
  trace binds stays an `unknown` spawn (`.nested`).

Disagreeing evidence is a problem (the capture becomes partial); nothing is resolved by
picking a side, and nothing is inferred from time, text or order. Problem codes: those
of `.rollout`, `.state`, `.lineage` and `.relations`, and here `unreadable_file` (a
rollout that cannot be read), `duplicate_id` (two rollouts of one thread) and
`missing_file` (no rollout at all).
"""

from __future__ import annotations

from pathlib import Path

from roller.harnesses.base import (
    NativeCapture,
    NativeCoverage,
    NativeIdentity,
    NativeLifecycle,
    NativeProblem,
)
from roller.harnesses.codex.jsonl import read_text
from roller.harnesses.codex.lineage import check_index, is_root, parents_of, participants
from roller.harnesses.codex.nested import nested_calls, nested_deliveries, nested_spawns
from roller.harnesses.codex.relations import relations, spawns
from roller.harnesses.codex.rollout import Rollout, parse_rollout
from roller.harnesses.codex.state import STATE_DB, read_state_db
from roller.harnesses.codex.trace import read_traces

SESSIONS = "sessions"
COVERAGE_NOTE = (
    "Codex: outputs counted per thread from token_usage_record (one per model response); "
    "weaker than a per-id check, so each record's response_id is also required among the "
    "thread's captured calls; event_msg/token_count carries no ids and is only compared."
)
DYNAMIC_TOOLS_BLOCK = "dynamic_tools_loaded"


def read_native(native_dir: Path) -> NativeCapture:
    """Everything the copied native logs of one attempt say (see the module docstring)."""
    problems: list[NativeProblem] = []
    rollouts = _read_rollouts(native_dir, problems)
    state = read_state_db(native_dir / STATE_DB, problems)
    check_index(rollouts, state, problems)
    parents = parents_of(rollouts, state, problems)
    people = participants(rollouts, parents, state, problems)
    spawned = spawns(rollouts, parents, problems)
    notes: list[str] = []
    nested = nested_calls(rollouts, read_traces(native_dir, problems), problems)
    scripted, unbound = nested_spawns(rollouts, parents, nested, problems, notes)
    found = relations(rollouts, spawned + scripted, state, notes) + unbound
    found += nested_deliveries(rollouts, scripted, nested)
    running = tuple(p.key for p in people if p.state == "running")
    unknown = any(p.state == "unknown" for p in people)
    if not rollouts:
        message = f"no rollout under {SESSIONS}/: no thread to attribute calls to"
        problems.append(NativeProblem("missing_file", message))
    lifecycle = NativeLifecycle(
        status="pending" if running else ("unknown" if unknown or not rollouts else "complete"),
        pending_keys=running,
    )
    return NativeCapture(
        participants=tuple(people),
        identity=NativeIdentity(
            basis="wire_participant", keys={tid: (tid,) for tid in sorted(rollouts)}
        ),
        relations=tuple(found),
        coverage=_coverage(rollouts, notes),
        lifecycle=lifecycle,
        subtasks="supported",
        problems=tuple(problems),
        main_trajectory_blocked_by=_trajectory_blocks(rollouts, parents),
    )


def _read_rollouts(native_dir: Path, problems: list[NativeProblem]) -> dict[str, Rollout]:
    out: dict[str, Rollout] = {}
    root = native_dir / SESSIONS
    files = sorted(root.rglob("*.jsonl")) if root.is_dir() else []
    for path in files:
        rel = path.relative_to(native_dir).as_posix()
        text = read_text(path, rel, problems)
        if text is None:
            continue
        rollout = parse_rollout(text, rel, problems)
        if rollout is None:
            continue
        if rollout.thread_id in out:
            message = f"thread {rollout.thread_id} also has {out[rollout.thread_id].path}"
            problems.append(NativeProblem("duplicate_id", message, rel))
            continue
        out[rollout.thread_id] = rollout
    return out


def _coverage(rollouts: dict[str, Rollout], remarks: list[str]) -> NativeCoverage:
    """Counts and ids per thread; `remarks` (results no model received) ride along as
    notes, the manifest's only place for a native fact that is neither a problem nor a
    relation."""
    notes = [COVERAGE_NOTE, *remarks]
    counts: dict[str, int] = {}
    ids: dict[str, frozenset[str]] = {}
    for tid, r in sorted(rollouts.items()):
        responses = {x.response_id for x in r.responses}
        counts[tid] = len(responses)
        ids[tid] = frozenset(responses)
        if r.token_counts != len(r.responses):
            notes.append(
                f"thread {tid}: {r.token_counts} token_count events, "
                f"{len(r.responses)} token_usage_records"
            )
    return NativeCoverage(basis="token_usage_count", ids=ids, counts=counts, notes=tuple(notes))


def _trajectory_blocks(
    rollouts: dict[str, Rollout], parents: dict[str, str | None]
) -> tuple[str, ...]:
    out: list[str] = []
    for tid, r in sorted(rollouts.items()):
        if is_root(r, parents[tid]) and r.dynamic_tools:
            first, kind = r.dynamic_tools[0]
            out.append(f"{DYNAMIC_TOOLS_BLOCK}: {r.path} #{first} {kind} (root thread {tid})")
    return tuple(out)
