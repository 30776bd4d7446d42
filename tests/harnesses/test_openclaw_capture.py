"""Finalize over real OpenClaw 2026.9.6 runs (tests/data/harnesses/openclaw/, regenerate.py):
identity by the stored `responseId`, the announce bound by its run id, the tool-id
normalization recorded, and damaged or unfinished stores never attributing wrongly."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord, RelationRecord
from roller.capture.reader import Capture
from roller.capture.trajectory_record import TrajectoryRecord
from roller.export.trajectory import build_trajectory
from roller.finalize.assemble import FinalizedCapture
from roller.finalize.decode import decode_exchange
from roller.finalize.relate import text_in_request
from roller.harnesses.openclaw.masking import masked, unmasked
from roller.harnesses.openclaw.store import zstd
from tests.harnesses.fixture_capture import finalize_fixture, inputs_of, native_copy, tape_of

H = "openclaw"
AGENT_DB = Path("openclaw") / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def _of(done: FinalizedCapture, kind: str) -> list[RelationRecord]:
    return [r for r in done.relations if r.type == kind]


def _children(done: FinalizedCapture) -> dict[str, str]:
    """child participant id -> its session key."""
    return {
        p.participant_id: p.native_ids["session_key"]
        for p in done.manifest.participants
        if p.role == "child"
    }


def _calls(done: FinalizedCapture) -> dict[str, CallRecord]:
    return {c.call_id: c for c in done.calls}


def test_tool_search_single_is_complete_and_bound_by_evidence(tmp_path: Path) -> None:
    done = finalize_fixture(H, "toolsearch-single", tmp_path)
    assert done.manifest.capture_status == "complete", done.manifest.capture_errors
    assert all(c.identity_status == "attributed" for c in done.calls)
    assert all(r.status == "established" for r in done.relations)
    # the spawn went through Tool Search's bridge: the output's tool is `tool_call`
    (spawn,) = _of(done, "spawn")
    calls = _calls(done)
    assert [t.name for t in calls[spawn.source_call_id or ""].tool_refs.emitted] == ["tool_call"]
    # every call carries the run it belongs to; the announce call is its child's announce run
    assert all("run_id" in c.native_identity for c in done.calls)
    (delivered,) = _of(done, "result_delivered")
    (key,) = _children(done).values()
    run = calls[delivered.target_call_id or ""].native_identity["run_id"]
    assert run.startswith(f"announce:v1:{key}:")
    # the rewritten id the later requests carry, recorded with the output it came from
    (mapping,) = done.manifest.tool_id_map or []
    assert (mapping.call_id, mapping.output_id, mapping.seen) == (
        spawn.source_call_id,
        spawn.tool_call_id,
        True,
    )
    assert mapping.context_id == "".join(ch for ch in mapping.output_id if ch.isalnum())
    assert _of(done, "launch_ack_in_context"), "the acknowledgement entered the next input"


def test_each_childs_result_is_bound_to_its_own_announce_run_only(tmp_path: Path) -> None:
    """Two children, two announce runs and a settle turn: each child's result is in the
    context of exactly the call of its own announce run, never the other's or the settle."""
    done = finalize_fixture(H, "responses-parallel", tmp_path)
    assert done.manifest.capture_status == "complete", done.manifest.capture_errors
    calls = _calls(done)
    children = _children(done)
    assert len(children) == 2
    for child, key in children.items():
        bound = {
            r.target_call_id
            for r in _of(done, "result_in_context")
            if r.child_participant_id == child
        }
        announce = {
            c.call_id
            for c in done.calls
            if c.native_identity.get("run_id", "").startswith(f"announce:v1:{key}:")
        }
        assert bound == announce and len(bound) == 1
    # Responses: both halves of each spawn's tool reference matched the output
    assert all(
        r.model_tool_ref is not None and r.model_tool_ref.matched for r in _of(done, "spawn")
    )
    settle = [
        c
        for c in calls.values()
        if c.native_identity.get("run_id", "").startswith("announce:requester-settle:")
    ]
    results = {
        r.target_call_id
        for r in done.relations
        if r.type in ("result_delivered", "result_in_context")
    }
    assert len(settle) == 1 and settle[0].call_id not in results


def test_an_announce_whose_run_id_does_not_bind_gives_no_result_in_context(tmp_path: Path) -> None:
    native = native_copy(H, "direct-single", tmp_path)
    with sqlite3.connect(native / AGENT_DB) as con:
        rows = con.execute(
            "SELECT session_id, seq, event_json FROM transcript_events "
            "WHERE event_json LIKE '%announce:v1:%'"
        ).fetchall()
        assert rows
        for sid, seq, text in rows:
            event = json.loads(text)
            if isinstance(event.get("message"), dict):
                event["message"]["__openclaw"]["runId"] = "some-other-run"
            if isinstance(event.get("data"), dict) and "runId" in event["data"]:
                event["data"]["runId"] = "some-other-run"
            con.execute(
                "UPDATE transcript_events SET event_json = ? WHERE session_id = ? AND seq = ?",
                (json.dumps(event), sid, seq),
            )
    done = finalize_fixture(H, "direct-single", tmp_path, native_dir=native)
    # the announce text is still in the request of the call it reached ...
    (child,) = _children(done).values()
    decoded = [
        decode_exchange(n, ex, H)
        for n, ex in enumerate(tape_of(H, "direct-single", tmp_path).exchanges)
    ]
    assert any(text_in_request(c.texts, f"session_key: {child}") for c in decoded)
    # ... but without its announce run bound, it proves nothing
    assert _of(done, "result_in_context") == []
    (delivered,) = _of(done, "result_delivered")
    assert delivered.status == "unknown" and delivered.target_call_id is None
    assert done.manifest.capture_status == "partial"


def test_an_announce_text_in_a_later_request_of_another_run_gives_no_result_in_context(
    tmp_path: Path,
) -> None:
    """The settle turn's request is made to carry the first child's announce block (the
    real request does not: OpenClaw does not replay it): its run is not that child's
    announce run, so the text binds nothing there."""
    tape = tape_of(H, "responses-parallel", tmp_path)
    bodies = [json.loads(ex.request_body) for ex in tape.exchanges]
    first = finalize_fixture(H, "responses-parallel", tmp_path / "as-run")
    runs = [c.native_identity.get("run_id", "") for c in first.calls]
    announce = next(n for n, r in enumerate(runs) if r.startswith("announce:v1:"))
    settle = next(n for n, r in enumerate(runs) if r.startswith("announce:requester-settle:"))
    assert settle > announce
    block = bodies[announce]["input"][-2]  # the announce user message, then OpenClaw's context
    assert "A background task completed" in json.dumps(block)
    bodies[settle]["input"].insert(-1, block)
    exchanges = list(tape.exchanges)
    exchanges[settle] = replace(exchanges[settle], request_body=json.dumps(bodies[settle]).encode())
    done = finalize_fixture(
        H,
        "responses-parallel",
        tmp_path / "carried",
        tape=replace(tape, exchanges=tuple(exchanges)),
    )
    assert done.manifest.capture_status == "complete", done.manifest.capture_errors
    child_key = runs[announce].removeprefix("announce:v1:").rsplit(":", 1)[0]
    child = next(p for p, k in _children(done).items() if k == child_key)
    settle_call = done.calls[settle]
    decoded = decode_exchange(settle, exchanges[settle], H)
    assert text_in_request(decoded.texts, f"session_key: {child_key}")
    results = {
        r.target_call_id
        for r in done.relations
        if r.type in ("result_delivered", "result_in_context") and r.child_participant_id == child
    }
    assert settle_call.call_id not in results
    bound = [
        r.target_call_id for r in _of(done, "result_in_context") if r.child_participant_id == child
    ]
    assert bound == [done.calls[announce].call_id]


def test_nested_anthropic_reaches_depth_two_with_rewritten_ids(tmp_path: Path) -> None:
    done = finalize_fixture(H, "anthropic-nested", tmp_path)
    assert done.manifest.capture_status == "complete", done.manifest.capture_errors
    assert max(p.depth for p in done.manifest.participants) == 2
    assert len(_of(done, "result_delivered")) == 2
    assert {c.protocol for c in done.calls} == {"anthropic-messages"}
    assert all(m.seen and m.output_id.startswith("toolu_") for m in done.manifest.tool_id_map or [])


def test_a_fork_childs_copied_prefix_is_never_its_own(tmp_path: Path) -> None:
    done = finalize_fixture(H, "fork", tmp_path)
    assert done.manifest.capture_status == "complete", done.manifest.capture_errors
    root = next(p for p in done.manifest.participants if p.role == "root")
    (spawn,) = _of(done, "spawn")
    assert _calls(done)[spawn.source_call_id or ""].participant_id == root.participant_id


def test_a_child_whose_notification_is_pending_is_partial(tmp_path: Path) -> None:
    done = finalize_fixture(H, "announce-pending", tmp_path)
    manifest = done.manifest
    (child,) = _children(done)
    assert manifest.lifecycle is not None and manifest.lifecycle.status == "pending"
    assert manifest.lifecycle.pending_participant_ids == [child]
    assert manifest.capture_status == "partial"
    codes = {e.code for e in manifest.capture_errors}
    assert "native_log_problem" in codes  # the launcher gave up waiting: a drain failure
    assert any("stopped waiting" in e.message for e in manifest.capture_errors)
    # the main turn that succeeded keeps its status
    assert (
        manifest.execution_status == "completed" and inputs_of(H, "announce-pending").exit_code == 0
    )
    spawn_call = _calls(done)[_of(done, "spawn")[0].source_call_id or ""]
    assert spawn_call.execution_status == "completed" and spawn_call.identity_status == "attributed"


def test_a_corrupted_store_leaves_calls_unattributed_never_wrong(tmp_path: Path) -> None:
    native = native_copy(H, "toolsearch-single", tmp_path)
    db = native / AGENT_DB
    db.write_bytes(db.read_bytes()[: 4096 * 3])  # torn: the header says more pages exist
    done = finalize_fixture(H, "toolsearch-single", tmp_path, native_dir=native)
    assert all(c.identity_status == "unattributed" and c.participant_id is None for c in done.calls)
    assert done.manifest.capture_status == "partial"
    assert done.manifest.lifecycle is not None and done.manifest.lifecycle.status == "unknown"


STATE_DB = Path("openclaw") / "state" / "openclaw.sqlite"


def test_a_child_no_registry_row_names_has_an_unknown_lifecycle(tmp_path: Path) -> None:
    native = native_copy(H, "direct-single", tmp_path)
    with sqlite3.connect(native / STATE_DB) as con:
        con.execute("DELETE FROM subagent_runs")
        con.execute("DELETE FROM task_runs WHERE runtime = 'subagent'")
    done = finalize_fixture(H, "direct-single", tmp_path, native_dir=native)
    manifest = done.manifest
    assert manifest.lifecycle is not None and manifest.lifecycle.status == "unknown"
    assert manifest.capture_status == "partial"
    (key,) = _children(done).values()
    assert any(f"names child {key}" in e.message for e in manifest.capture_errors)
    # nobody recorded how the child ended: no completion is claimed
    assert not _of(done, "child_completed") and not _of(done, "child_failed")
    # the transcripts still say who made each call
    assert all(c.identity_status == "attributed" for c in done.calls)


def test_a_registry_naming_another_run_than_the_acceptance_is_unknown(tmp_path: Path) -> None:
    native = native_copy(H, "direct-single", tmp_path)
    with sqlite3.connect(native / STATE_DB) as con:
        for run_id, payload in con.execute("SELECT run_id, payload_json FROM subagent_runs"):
            data = json.loads(payload)
            data["runId"] = data["taskRunId"] = "some-other-run"
            con.execute(
                "UPDATE subagent_runs SET run_id = 'some-other-run', payload_json = ? "
                "WHERE run_id = ?",
                (json.dumps(data), run_id),
            )
        con.execute("UPDATE task_runs SET run_id = 'some-other-run' WHERE runtime = 'subagent'")
    done = finalize_fixture(H, "direct-single", tmp_path, native_dir=native)
    assert done.manifest.lifecycle is not None and done.manifest.lifecycle.status == "unknown"
    assert done.manifest.capture_status == "partial"
    assert any("some-other-run" in e.message for e in done.manifest.capture_errors)
    # a row of another run says nothing about how this child ended
    assert not _of(done, "child_completed") and not _of(done, "child_failed")


def _trajectory(done: FinalizedCapture, tmp_path: Path) -> TrajectoryRecord:
    return build_trajectory(
        Capture(AttemptPaths(tmp_path), done.manifest, done.calls, done.relations)
    )


def test_the_main_trajectory_binds_the_announce_or_is_barred(tmp_path: Path) -> None:
    done = finalize_fixture(H, "direct-single", tmp_path)
    record = _trajectory(done, tmp_path)
    injections = [i for s in record.segments for m in s.messages for i in m.injections]
    (announce,) = [i for i in injections if i.kind == "subagent_announce"]
    (delivered,) = _of(done, "result_delivered")
    assert announce.relation_ids == [delivered.relation_id]
    assert "notification_unbound" not in record.export_blocked_by
    # the announce run no longer binds: the same injected text is not placed, the
    # trajectory says why it may not be exported
    native = native_copy(H, "direct-single", tmp_path / "perturbed")
    with sqlite3.connect(native / AGENT_DB) as con:
        for sid, seq, text in con.execute(
            "SELECT session_id, seq, event_json FROM transcript_events "
            "WHERE event_json LIKE '%announce:v1:%'"
        ).fetchall():
            con.execute(
                "UPDATE transcript_events SET event_json = ? WHERE session_id = ? AND seq = ?",
                (text.replace("announce:v1:", "elsewhere:"), sid, seq),
            )
    unbound = _trajectory(
        finalize_fixture(H, "direct-single", tmp_path, native_dir=native), tmp_path
    )
    assert "notification_unbound" in unbound.export_blocked_by


def test_a_result_steered_into_the_running_turn_is_bound_by_its_notification(
    tmp_path: Path,
) -> None:
    """The child ended while the parent's turn still ran: no announce run, the result was
    a stored message steered into that turn (`announce:v1:…:active-wake`), and the call
    answering it is the one the result was delivered to."""
    done = finalize_fixture(H, "steered-delivery", tmp_path)
    assert done.manifest.capture_status == "complete", done.manifest.capture_errors
    calls = _calls(done)
    (delivered,) = _of(done, "result_delivered")
    assert delivered.status == "established"
    target = calls[delivered.target_call_id or ""]
    (key,) = _children(done).values()
    notification = target.native_identity["notification_id"]
    assert notification.startswith(f"announce:v1:{key}:") and notification.endswith(":active-wake")
    # the call belongs to the parent's own run, not to an announce run
    assert not target.native_identity["run_id"].startswith("announce:")
    assert all(not c.native_identity.get("run_id", "").startswith("announce:") for c in done.calls)


def _renamed(native: Path, old: str, new: str) -> None:
    """Every occurrence of `old` in the copied stores replaced by `new` (same length):
    text columns and the zstd frames of large transcript events."""
    for db in native.rglob("*.sqlite"):
        with sqlite3.connect(db) as con:
            listed = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = [t for (t,) in listed]
            for table in tables:
                for column in [c[1] for c in con.execute(f"PRAGMA table_info('{table}')")]:
                    try:
                        con.execute(
                            f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                            f'WHERE typeof("{column}") = \'text\' AND instr("{column}", ?)',
                            (old, new, old),
                        )
                    except sqlite3.OperationalError:
                        continue  # a full-text index's own tables: not read
            frames = (
                con.execute(
                    "SELECT session_id, seq, event_zstd FROM transcript_events "
                    "WHERE event_zstd IS NOT NULL"
                ).fetchall()
                if "transcript_events" in tables
                else []
            )
            for sid, seq, frame in frames:
                text = zstd.decompress(frame).replace(old.encode(), new.encode())
                con.execute(
                    "UPDATE transcript_events SET event_zstd = ? WHERE session_id = ? AND seq = ?",
                    (zstd.compress(text), sid, seq),
                )


def test_an_announce_run_id_openclaw_stored_masked_is_read_whole(tmp_path: Path) -> None:
    """A child whose session UUID ends in twelve digits has its announce run id stored
    masked by OpenClaw (seen in a real run of `identical-prompts`: `…-723659…6e77`).
    Made here from a real two-child run: one child's UUID renamed so, everywhere in the
    stores, and its announce events' `runId` masked as OpenClaw masks it. Each child's
    result is still bound to its own announce call, by the one run id of the store that
    masks to the stored form; without that, the masked child's delivery is unknown."""
    native = native_copy(H, "responses-parallel", tmp_path)
    with sqlite3.connect(native / "openclaw" / "state" / "openclaw.sqlite") as con:
        keys = [k for (k,) in con.execute("SELECT child_session_key FROM subagent_runs")]
    old_key = sorted(keys)[0]
    new_key = old_key[:-12] + "723659216394"
    _renamed(native, old_key, new_key)
    stored: set[str] = set()
    with sqlite3.connect(native / AGENT_DB) as con:
        rows = con.execute(
            "SELECT session_id, seq, event_json FROM transcript_events WHERE event_json LIKE ?",
            (f'%"runId":"announce:v1:{new_key}:%',),
        ).fetchall()
        for sid, seq, text in rows:
            event = json.loads(text)
            meta = event.get("message", {}).get("__openclaw")
            if isinstance(meta, dict):
                meta["runId"] = masked(meta["runId"])
                stored.add(meta["runId"])
                con.execute(
                    "UPDATE transcript_events SET event_json = ? WHERE session_id = ? AND seq = ?",
                    (json.dumps(event), sid, seq),
                )
    (form,) = stored
    assert form.startswith(f"announce:v1:{new_key[:-6]}") and "…" in form
    done = finalize_fixture(H, "responses-parallel", tmp_path, native_dir=native)
    assert done.manifest.capture_status == "complete", done.manifest.capture_errors
    calls = _calls(done)
    children = _children(done)
    assert sorted(children.values()) == sorted([new_key, *(k for k in keys if k != old_key)])
    for child, key in children.items():
        (delivered,) = [r for r in _of(done, "result_delivered") if r.child_participant_id == child]
        assert delivered.status == "established", delivered.note
        target = calls[delivered.target_call_id or ""]
        run = target.native_identity["run_id"]
        assert run.startswith(f"announce:v1:{key}:") and "…" not in run
        assert target.native_identity["notification_id"] == run
        in_context = {
            r.target_call_id
            for r in _of(done, "result_in_context")
            if r.child_participant_id == child
        }
        assert in_context == {target.call_id}
        assert ("stored masked as" in (delivered.note or "")) == (key == new_key)


def test_the_masking_is_openclaws_and_an_ambiguous_form_names_no_run() -> None:
    full = (
        "announce:v1:agent:main:subagent:bea4bd8b-2bb2-4f79-83a6-723659216394:"
        "7ad09f6a-ecfc-4490-82f8-2bd76a186e77"
    )
    stored = "announce:v1:agent:main:subagent:bea4bd8b-2bb2-4f79-83a6-723659…6e77"  # as seen
    assert masked(full) == stored
    # a UUID whose last group holds a letter is stored whole
    unmasked_form = full.replace("723659216394", "a23659216394")
    assert masked(unmasked_form) == unmasked_form
    other = full.replace("7ad09f6a", "0bd09f6a")  # another run, the same head and tail
    assert unmasked([full]) == {stored: full}
    assert unmasked([full, other]) == {}
    assert unmasked([unmasked_form]) == {}
