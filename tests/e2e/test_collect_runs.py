"""Issue 12's run, end to end with the real Claude Code 2.1.332: 20 delegating samples at
concurrency 4 against one mock model the test owns (`spawn-one`: each sample's root
delegates to one subagent), `kill -9` of `roller collect` halfway, then `--resume`.

It shows: no harness process (nor its supervisor, nor anything in its process group)
outlives the kill; every sample published before the kill is reused as it is (the same
bytes, no new attempt); the attempts in flight are recovered from raw/ and kept; the
model calls the resume makes — counted by the mock — are exactly the calls of the
attempts it collects for the unfinished samples; and the run ends with 20 succeeded
samples and a summary. Claude Code is the cheapest real delegating harness (one sample is
4 calls, a few seconds). The run also uses the seed's original flag name,
`--claude-capture-calls`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roller.capture.layout import RunPaths
from roller.capture.reader import read_json_model, read_run_config
from roller.capture.summary_record import RunSummary
from tests.collect.runs_support import counting_mock
from tests.collect.test_launcher import _alive
from tests.support.captures import REPO, roller
from tests.support.e2e import installed, without_provider_keys
from tests.support.temp_dirs import roller_temp_dirs

pytestmark = pytest.mark.e2e

SAMPLES, CONCURRENCY, HALF = 20, 4, 10


def _published(run: RunPaths) -> dict[str, bytes]:
    """Sample id -> manifest bytes, for every sample with a published attempt."""
    return {
        s.sample_id: s.attempts()[-1].manifest.read_bytes()
        for s in run.all_samples()
        if s.attempts() and s.attempts()[-1].manifest.exists()
    }


def _in_flight(run: RunPaths) -> list[dict[str, int]]:
    """The process records of attempts that have a running harness and no manifest."""
    return [
        json.loads(record.read_text())
        for record in run.samples.glob("*/capture/attempt-*/raw/harness/process.json")
        if not (record.parents[2] / "manifest.json").exists()
    ]


def _group_members(pgids: set[int]) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[2]) in pgids and fields[0] != b"Z":
            members.append(int(entry.name))
    return members


@pytest.mark.timeout(1200)
def test_twenty_delegating_samples_killed_halfway_then_resumed(tmp_path: Path) -> None:
    installed("claude-code")
    env = {**without_provider_keys(), "ANTHROPIC_API_KEY": "sk-test-placeholder"}
    env["PYTHONPATH"] = str(REPO / "src")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": f"s{n:02d}", "prompt": f"Use a subagent to say hi ({n})"}) + "\n"
            for n in range(SAMPLES)
        )
    )
    run = RunPaths(tmp_path / "run")
    scratch_before = roller_temp_dirs("roller-claude-code-")
    with counting_mock("spawn-one") as mock:
        started = time.monotonic()
        collecting = subprocess.Popen(
            [
                sys.executable, "-m", "roller", "collect", "--harness", "claude-code",
                "--api-base", mock.url, "--claude-capture-calls", "--tasks", str(tasks),
                "--run-dir", str(run.root), "--concurrency", str(CONCURRENCY),
                "--timeout", "180",
            ],
            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 900
        while len(_published(run)) < HALF or not _in_flight(run):
            assert collecting.poll() is None, "roller collect ended before the kill"
            assert time.monotonic() < deadline, "the run never got halfway"
            time.sleep(0.2)
        collecting.send_signal(signal.SIGKILL)
        collecting.wait()
        first_run_s = time.monotonic() - started
        assert read_run_config(run.run_json).capture_calls is True  # the alias

        # Nothing of any harness survives roller: not the harness, its supervisor, or
        # anything left in its process group.
        records = [
            json.loads(p.read_text())
            for p in run.samples.glob("*/capture/attempt-*/raw/harness/process.json")
        ]
        in_flight = _in_flight(run)
        assert in_flight
        pids = {r[k] for r in records for k in ("pid", "supervisor_pid")}
        pgids = {r["pgid"] for r in records}
        wait_until = time.monotonic() + 15
        while time.monotonic() < wait_until and (
            any(_alive(p) for p in pids) or _group_members(pgids)
        ):
            time.sleep(0.2)
        assert [p for p in pids if _alive(p)] == []
        assert _group_members(pgids) == []

        published = _published(run)
        unfinished = {f"s{n:02d}" for n in range(SAMPLES)} - set(published)
        # attempts begun and not published (some had not launched their harness yet)
        cut = [a for s in run.all_samples() for a in s.attempts() if not a.manifest.exists()]
        settled = mock.requests
        time.sleep(1.0)  # a request cut off by the kill is counted when the mock sees it end
        assert mock.requests == settled
        before_resume = mock.requests

        resumed_at = time.monotonic()
        done = roller(
            "collect", "--resume", str(run.root), "--concurrency", str(CONCURRENCY),
            env=env, timeout=900,
        )  # fmt: skip
        resume_s = time.monotonic() - resumed_at
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        resume_calls = mock.requests - before_resume

    summary = read_json_model(run.summary, RunSummary)
    assert (summary.samples_total, summary.succeeded) == (SAMPLES, SAMPLES)
    by_id = {s.sample_id: s for s in summary.samples}
    # Every sample published before the kill is reused, byte for byte, with no new attempt.
    for sid, manifest in published.items():
        s = by_id[sid]
        assert s.reused and [a.collected_now for a in s.attempts] == [False], sid
        assert run.sample(sid).attempts()[-1].manifest.read_bytes() == manifest
    # An attempt the kill cut short is kept and recovered from raw/: reused when that gives
    # a complete capture (the harness had finished, only publishing was cut), else the
    # sample is collected again. Nothing else is collected.
    recovered = {s.sample_id: s.attempts[-1] for s in summary.samples if s.reused}
    recovered = {sid: a for sid, a in recovered.items() if a.recovered}
    assert all(a.outcome == "succeeded" for a in recovered.values())
    collected = {sid for sid, s in by_id.items() if any(a.collected_now for a in s.attempts)}
    assert collected == unfinished - set(recovered)
    cut_short = [a for s in summary.samples for a in s.attempts if a.recovered]
    assert len(cut_short) == len(cut) >= len(in_flight)
    assert all(
        a.outcome in ("interrupted", "invalid", "failed")
        for s in summary.samples
        for a in s.attempts
        if a.recovered and s.sample_id in collected
    )
    # The resume's model calls are exactly those of the attempts it collected.
    new_calls = sum(a.calls for s in summary.samples for a in s.attempts if a.collected_now)
    assert resume_calls == new_calls > 0
    assert roller("validate", str(run.root)).returncode == 0
    # and nothing of the run is left in the temporary directory: a scratch is removed
    # once its native logs are in raw/, or by the recovery of its attempt
    assert roller_temp_dirs("roller-claude-code-") <= scratch_before
    print(
        f"\nfirst run (to the kill): {first_run_s:.1f}s, {len(published)} published; "
        f"resume: {resume_s:.1f}s, {len(unfinished)} samples, {resume_calls} calls"
    )
