"""The acceptance checks: what a finished scenario run must show, as pure functions.

`check_run(evidence) -> list[str]` returns one line per failed expectation (empty: the
run passed). Every check reads the capture through `roller.capture` and the retained
raw material (the run is collected with `--capture-debug full`), and compares it with
something roller did not compute itself wherever one exists: the number of requests
the mock served, the request bytes on the tape, the mock's own markers (`oracle`), the
credential values that were handed to the harness.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from roller.acceptance.oracle import Label, label_of, user_texts
from roller.capture.body_refs import CaptureBodies
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord, ParticipantRecord
from roller.capture.reader import Capture, read_attempt
from roller.capture.tape import read_tape
from roller.errors import RollerError
from roller.harnesses import adapter_for
from roller.harnesses.acceptance import Expect, Scenario
from roller.wire import PROTOCOL_NAMES, codec_for
from roller.wire.types import ProtocolName


@dataclass(frozen=True)
class RunEvidence:
    """Everything one scenario run left behind, for the checks."""

    harness: str
    scenario: Scenario
    run_dir: Path
    exit_code: int | None
    collect_output: bytes  # roller collect's stdout + stderr
    served: int | None  # requests the mock answered; None against a real provider
    secrets: tuple[str, ...]  # credential values handed to the harness
    with_mock: bool


def check_run(ev: RunEvidence) -> list[str]:
    failures: list[str] = []
    failures += _no_secrets(ev)
    if ev.exit_code != 0:
        failures.append(f"roller collect exited {ev.exit_code}")
    attempts = sorted(ev.run_dir.glob("samples/*/capture/attempt-*"))
    if len(attempts) != 1:
        return [*failures, f"expected one attempt under {ev.run_dir}, found {len(attempts)}"]
    paths = AttemptPaths(attempts[0])
    report = validate_attempt(paths)
    if not report.ok:
        failures += [f"validate: {p}" for p in report.problems]
        if report.unreadable:
            return failures
    try:
        capture = read_attempt(paths)
    except RollerError as exc:
        return [*failures, f"capture unreadable: {exc}"]
    expect = ev.scenario.expect
    failures += _manifest(capture, expect)
    failures += _counts(ev, capture)
    failures += _recorded_as_sent(capture)
    failures += _calls(capture)
    failures += _tree(capture, expect, ev.with_mock)
    failures += _relations(capture, expect)
    failures += _tool_results(capture, expect)
    failures += _child_config(capture, expect)
    failures += _forked_child(capture, expect)
    failures += _notification_runs(capture, expect)
    return failures


def _no_secrets(ev: RunEvidence) -> list[str]:
    """No credential value in any file under the run dir, nor in roller's own output."""
    found: list[str] = []
    needles = [s.encode() for s in ev.secrets if s]
    if not needles:
        return []
    places: Iterator[tuple[str, bytes]] = (
        (str(p.relative_to(ev.run_dir)), p.read_bytes())
        for p in sorted(ev.run_dir.rglob("*"))
        if p.is_file() and not p.is_symlink()
    )
    for where, data in [("collect output", ev.collect_output), *places]:
        if any(n in data for n in needles):
            found.append(f"a credential value is on disk: {where}")
    return found


def _manifest(capture: Capture, expect: Expect) -> list[str]:
    m = capture.manifest
    out = []
    if m.execution_status != "completed":
        out.append(f"harness execution_status {m.execution_status} (exit {m.exit_code})")
    if m.capture_status != "complete":
        errors = "; ".join(f"{e.code}: {e.message}" for e in m.capture_errors)
        out.append(f"capture_status {m.capture_status} ({errors})")
    if m.lifecycle is None or m.lifecycle.status != expect.lifecycle:
        status = m.lifecycle.status if m.lifecycle else None
        pending = m.lifecycle.pending_participant_ids if m.lifecycle else []
        out.append(f"lifecycle {status}, expected {expect.lifecycle} (pending: {pending})")
    if m.coverage.checked and not m.coverage.ok:
        out.append("coverage: " + "; ".join(m.coverage.problems))
    for needle in expect.capability_notes:
        if not any(needle in note for note in m.capabilities.notes):
            out.append(f"no capabilities note says {needle!r}")
    return out


def _native_count(paths: AttemptPaths, harness: str) -> int | None:
    """Outputs the native logs record, read again from the retained copy."""
    native = adapter_for(harness).read_native(paths.native)
    if native is None or native.coverage.basis == "none":
        return None
    if native.coverage.ids:
        return len(frozenset().union(*native.coverage.ids.values()))
    return sum(native.coverage.counts.values())


def _counts(ev: RunEvidence, capture: Capture) -> list[str]:
    """Every HTTP call the harness made is a record: mock count = calls = native count."""
    out = []
    calls = len(capture.calls)
    generation = sum(1 for c in capture.calls if c.kind == "generation")
    if ev.served is not None and ev.served != calls:
        out.append(f"the mock served {ev.served} requests, calls.jsonl has {calls}")
    if not capture.paths.native.exists():
        return [*out, "raw/native was not retained; the native count cannot be checked"]
    native = _native_count(capture.paths, ev.harness)
    if native is not None and native != generation:
        out.append(f"the native logs record {native} outputs, calls.jsonl has {generation}")
    if generation == 0:
        out.append("no generation call was captured")
    return out


def _recorded_as_sent(capture: Capture) -> list[str]:
    """Each call's context is the exact request body the proxy forwarded (the tape)."""
    if not capture.paths.tape.exists():
        return ["raw/tape was not retained; contexts cannot be compared with the tape"]
    with CaptureBodies(capture.paths) as bodies:  # bodies the tape references (body_refs)
        tape = {ex.exchange_id: ex for ex in read_tape(capture.paths.tape, bodies).exchanges}
    out = []
    for call in capture.calls:
        ex = tape.get(call.exchange_id)
        if ex is None:
            out.append(f"{call.call_id}: exchange {call.exchange_id} is not on the tape")
            continue
        body = ex.request_body
        if hashlib.sha256(body).hexdigest() != call.context_sha256:
            out.append(f"{call.call_id}: context_sha256 differs from the tape's request body")
        elif body and json.loads(body) != call.context:
            out.append(f"{call.call_id}: context differs from the tape's request body")
    return out


def _calls(capture: Capture) -> list[str]:
    out = []
    for c in capture.calls:
        if c.kind != "generation":
            continue
        if c.identity_status != "attributed":
            out.append(f"{c.call_id} ({c.response_id}): {c.identity_status}: {c.attribution.note}")
        if c.export_status != "exportable":
            out.append(f"{c.call_id}: not exportable ({', '.join(c.export_blocked_by)})")
    return out


def _tree(capture: Capture, expect: Expect, with_mock: bool) -> list[str]:
    """Participants: how many children, how deep, and (against the mock) whether each
    call's participant is the one the mock's markers say it is."""
    out = []
    parts = {p.participant_id: p for p in capture.manifest.participants}
    children = [p for p in parts.values() if p.role == "child"]
    roots = [p for p in parts.values() if p.role == "root"]
    if len(roots) != 1:
        out.append(f"{len(roots)} root participants")
    if len(children) != expect.children:
        out.append(f"{len(children)} child participants, expected {expect.children}")
    depth = max((p.depth for p in parts.values()), default=0)
    if depth != expect.max_depth:
        out.append(f"deepest participant at depth {depth}, expected {expect.max_depth}")
    for p in children:
        if not p.call_ids:
            out.append(f"child {p.participant_id} has no calls")
        parent = parts.get(p.parent_participant_id or "")
        if parent is None or parent.depth != p.depth - 1:
            out.append(f"child {p.participant_id} (depth {p.depth}) has no parent one level up")
    if with_mock:
        out += oracle_failures(capture.calls, parts, expect)
    return out


def oracle_failures(
    calls: Sequence[CallRecord], parts: dict[str, ParticipantRecord], expect: Expect
) -> list[str]:
    """Each generation call's participant against the agent the mock made it for."""
    out = []
    owners: dict[Label, set[str]] = {}
    for c in calls:
        if c.kind != "generation":
            continue
        label = label_of(c.context)
        if label is None:
            out.append(f"{c.call_id}: no user message to tell its agent by")
            continue
        p = parts.get(c.participant_id or "")
        if p is None:
            continue  # reported by _calls
        owners.setdefault(label, set()).add(p.participant_id)
        role = "root" if label.is_root else "child"
        if p.role != role or p.depth != label.depth:
            out.append(
                f"{c.call_id}: the mock made it for {label}, roller attributed it to a "
                f"{p.role} at depth {p.depth}"
            )
    per_label = 2 if expect.identical_children else 1
    for label, pids in owners.items():
        want = 1 if label.is_root else per_label
        if len(pids) != want:
            out.append(f"calls made for {label} belong to {len(pids)} participants, want {want}")
        parent = label.parent
        if parent is None:
            continue
        for pid in pids:
            if parts[pid].parent_participant_id not in owners.get(parent, set()):
                out.append(f"{pid} ({label}) is not the child of the agent {parent}")
    merged = Counter(pid for pids in owners.values() for pid in pids)
    out += [f"{pid} made calls for two different agents" for pid, n in merged.items() if n > 1]
    return out


def _relations(capture: Capture, expect: Expect) -> list[str]:
    out = []
    established = Counter(r.type for r in capture.relations if r.status == "established")
    for r in capture.relations:
        if r.status != "established":
            out.append(f"relation {r.type} {r.tool_call_id} is {r.status}: {r.note}")
    for kind, least in expect.relations.items():
        if established[kind] < least:
            out.append(f"{established[kind]} established {kind}, expected at least {least}")
    for kind in sorted(expect.forbidden_relations):
        if established[kind]:
            out.append(f"{established[kind]} {kind} relation(s), expected none")
    return out


def _root_calls(capture: Capture, role: str = "root") -> list[CallRecord]:
    ids = {p.participant_id for p in capture.manifest.participants if p.role == role}
    return [c for c in capture.calls if c.participant_id in ids and c.kind == "generation"]


def _protocol(call: CallRecord) -> ProtocolName | None:
    return next((n for n in PROTOCOL_NAMES if n == call.protocol), None)


def _tool_results(capture: Capture, expect: Expect) -> list[str]:
    want = expect.root_tool_result
    if want is None:
        return []
    for call in _root_calls(capture):
        protocol = _protocol(call)
        if protocol is None:
            continue
        for result in codec_for(protocol).context_tool_results(call.context):
            if want.contains in result.text and (
                want.error is None or result.is_error in (None, want.error)
            ):
                return []
    return [f"no root call's input carries a tool result with {want.contains!r}"]


def _offered(call: CallRecord) -> frozenset[str]:
    protocol = _protocol(call)
    if protocol is None:
        return frozenset()
    return frozenset(codec_for(protocol).offered_tools(call.context))


def _child_config(capture: Capture, expect: Expect) -> list[str]:
    """A child's request configuration is its own, as sent, never the parent's."""
    if not (
        expect.child_tools is not None or expect.child_tools_differ or expect.child_model_differs
    ):
        return []
    out = []
    roots, children = _root_calls(capture), _root_calls(capture, "child")
    root_tools = {_offered(c) for c in roots}
    root_models = {c.model for c in roots}
    for c in children:
        tools = _offered(c)
        if expect.child_tools is not None and tools != expect.child_tools:
            out.append(
                f"{c.call_id}: child offered {sorted(tools)}, expected {sorted(expect.child_tools)}"
            )
        if expect.child_tools_differ and tools in root_tools:
            out.append(f"{c.call_id}: child offered the same tools as a root call")
        if expect.child_model_differs and c.model in root_models:
            out.append(f"{c.call_id}: child asked for the root's model {c.model}")
    if not children:
        out.append("no child call to check the configuration of")
    return out


def _forked_child(capture: Capture, expect: Expect) -> list[str]:
    """A forked child's first call carries the parent's history as it was copied (here:
    the root's own prompt) and is still the child's call: the copied prefix is recorded
    as sent and never charged to the parent."""
    if not expect.child_forked_from_root:
        return []
    roots, children = _root_calls(capture), _root_calls(capture, "child")
    if not roots or not children:
        return ["no root and child calls to check the fork on"]
    root_texts = user_texts(min(roots, key=lambda c: c.sequence).context) or []
    first = min(children, key=lambda c: c.sequence)
    if not root_texts or root_texts[-1] not in (user_texts(first.context) or []):
        return [f"{first.call_id}: the child's first call does not carry the root's prompt"]
    return []


def _notification_runs(capture: Capture, expect: Expect) -> list[str]:
    """Each call a result was delivered to by notification names the native notification
    it received, with the expected prefix (the harness's own proof of which it was)."""
    prefix = expect.notification_id_prefix
    if prefix is None:
        return []
    calls = {c.call_id: c for c in capture.calls}
    targets = [
        calls[r.target_call_id]
        for r in capture.relations
        if r.type == "result_delivered" and r.status == "established" and r.target_call_id in calls
    ]
    if not targets:
        return ["no result was delivered by notification into a call"]
    return [
        f"{c.call_id}: its native run id {c.native_identity.get('run_id')!r} is not a {prefix}… run"
        for c in targets
        if not c.native_identity.get("run_id", "").startswith(prefix)
    ]
