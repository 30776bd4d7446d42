"""Roller's own failure on an attempt (here: a harness's native-log reader that raises, so
finalize does) does not end the run or lose the attempt: the run finishes and writes its
summary, the attempt is judged invalid with the error, the error and its traceback are
recorded beside the capture, raw/ is kept — and `roller finalize` publishes the attempt
once the reader is fixed."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.harnesses import throwaway_harness as throwaway

from roller.capture.integrity import validate_attempt
from roller.capture.layout import RunPaths
from roller.collect.collection import RunRequest, collect_run
from roller.collect.runs import RunSpec
from roller.collect.scratch import read_scratch_record
from roller.collect.tasks import Task
from roller.finalize.attempt import finalize_attempt
from roller.harnesses import register, unregister
from roller.harnesses.base import NativeCapture


class _BrokenReader(throwaway.ThrowawayAdapter):
    def read_native(self, native_dir: Path) -> NativeCapture | None:
        raise RuntimeError("boom in the native reader")


@pytest.fixture
def broken() -> Iterator[None]:
    register(dataclasses.replace(throwaway.HARNESS, adapter=_BrokenReader()))
    try:
        yield
    finally:
        unregister(throwaway.NAME)


def test_the_run_goes_on_and_the_attempt_is_kept_with_why(broken: None, tmp_path: Path) -> None:
    spec = RunSpec(
        harness=throwaway.NAME,
        harness_version=None,
        api_base="mock:plain",
        capture_calls=False,
        capture_debug="on-error",
        timeout_s=60.0,
    )
    run = RunPaths(tmp_path / "run")
    request = RunRequest(run.root, spec, task=Task("sample-0001", ("Say done.",)))
    result = asyncio.run(collect_run(request))  # no exception out of the run

    (sample,) = result.samples
    assert sample.status == "failed" and sample.last is None
    verdict = sample.verdict.latest
    assert verdict is not None and verdict.outcome == "invalid"
    assert "RuntimeError: boom in the native reader" in " ".join(verdict.problems)
    summary = json.loads(run.summary.read_text())
    assert [s["status"] for s in summary["samples"]] == ["failed"]

    failure = json.loads(run.sample("sample-0001").failure_file(1).read_text())
    assert failure["reason"] == "RuntimeError: boom in the native reader"
    assert "read_native" in "".join(failure["traceback"])
    attempt = verdict.attempt
    assert not attempt.manifest.exists() and attempt.tape.exists()  # raw/ kept as it was
    # its native logs were in raw/ before finalize ran: its scratch was removed then
    assert read_scratch_record(attempt) is None and not attempt.scratch_record.exists()

    # the bug fixed, the kept attempt is published from its raw/ like any other
    unregister(throwaway.NAME)
    register(throwaway.HARNESS)
    manifest = finalize_attempt(attempt)
    assert manifest.counts.calls >= 1 and validate_attempt(attempt).ok
