"""An attempt roller never published (killed, or failed on) is published by `roller
finalize` as `roller collect --resume` publishes it: the native logs its harness left in
the scratch HOME recorded in raw/scratch.json are taken first, the scratch removed after;
a copy of them cut off midway is not taken for all of them; a published attempt's kept
scratch (`--keep-scratch`) is left alone.

The harness is the test tree's throwaway one, given native logs: a wrapper writes two
log files into its HOME before the agent runs, its adapter copies them out of the
scratch HOME, and its native reader fails while `FAILING` says so (the run then leaves
the attempt as roller leaves one it failed on: raw/ and the scratch kept, no manifest —
what a kill leaves too), its copy while `CUT` says so, after the first file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.harnesses import throwaway_harness as throwaway

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths, RunPaths
from roller.capture.reader import read_manifest
from roller.cli.main import cli
from roller.collect.collection import RunRequest, collect_run
from roller.collect.runs import RunSpec
from roller.collect.scratch import read_scratch_record
from roller.collect.tasks import Task
from roller.harnesses import register, unregister
from roller.harnesses.base import LaunchPlan, LaunchRequest, NativeCapture, ScratchDirs

LOGS = {"session.jsonl": '{"event": "start"}\n', "subagent.jsonl": '{"event": "child"}\n'}
_WRITER = (  # the harness's logs into its HOME, then the agent
    "import os, pathlib, sys\n"
    "home = pathlib.Path(os.environ['HOME']) / 'native'\n"
    "home.mkdir()\n"
    f"for name, text in {LOGS!r}.items(): (home / name).write_text(text)\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)
FAILING = [True]
CUT = [False]
found: list[list[str]] = []  # what the native reader found, each time it read


class _WithNative(throwaway.ThrowawayAdapter):
    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        plan = super().launch_plan(request)
        return dataclasses.replace(plan, argv=(sys.executable, "-c", _WRITER, *plan.argv))

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        dest.mkdir()
        for name in sorted(LOGS):
            shutil.copy(dirs.home / "native" / name, dest / name)
            if CUT[0]:
                raise RuntimeError("cut off")  # as a kill mid-copy leaves it

    def read_native(self, native_dir: Path) -> NativeCapture | None:
        if FAILING[0]:
            raise RuntimeError("boom in the native reader")
        found.append(sorted(p.name for p in native_dir.glob("*")))
        return None


@pytest.fixture(autouse=True)
def harness() -> Iterator[None]:
    register(dataclasses.replace(throwaway.HARNESS, adapter=_WithNative()))
    FAILING[0], CUT[0] = True, False
    found.clear()
    try:
        yield
    finally:
        unregister(throwaway.NAME)


def _collected(tmp_path: Path, keep_scratch: bool = False) -> AttemptPaths:
    spec = RunSpec(
        harness=throwaway.NAME,
        harness_version=None,
        api_base="mock:plain",
        capture_calls=False,
        capture_debug="full",  # raw/ kept: the native logs taken are there to see
        timeout_s=60.0,
    )
    run = RunPaths(tmp_path / "run")
    task = Task("sample-0001", ("Say done.",))
    asyncio.run(collect_run(RunRequest(run.root, spec, task=task, keep_scratch=keep_scratch)))
    return run.sample("sample-0001").attempt(1)


def _finalize(attempt: AttemptPaths) -> None:
    FAILING[0] = CUT[0] = False
    result = CliRunner().invoke(cli, ["finalize", str(attempt.root)])
    assert result.exit_code == 0, result.output
    assert validate_attempt(attempt).ok
    assert read_manifest(attempt).counts.calls >= 1


def _native(attempt: AttemptPaths) -> dict[str, str]:
    return {p.name: p.read_text() for p in attempt.native.glob("*")}


def test_an_unpublished_attempt_gets_the_native_logs_its_scratch_holds(tmp_path: Path) -> None:
    attempt = _collected(tmp_path)
    assert not attempt.manifest.exists()  # roller failed on it: kept as a kill leaves it
    scratch = read_scratch_record(attempt)
    assert scratch is not None
    shutil.rmtree(attempt.native)  # as when roller was killed before it copied them
    _finalize(attempt)
    assert _native(attempt) == LOGS
    assert found == [sorted(LOGS)]  # finalize read them
    assert not scratch[0].exists() and not attempt.scratch_record.exists()


def test_a_copy_cut_off_midway_is_not_taken_for_the_logs(tmp_path: Path) -> None:
    CUT[0] = True
    attempt = _collected(tmp_path)
    assert not attempt.manifest.exists()
    assert not attempt.native.exists()  # not one file of two, which passed for all
    _finalize(attempt)
    assert _native(attempt) == LOGS
    assert found == [sorted(LOGS)]


def test_an_unpublished_attempt_whose_scratch_is_gone_is_published(tmp_path: Path) -> None:
    attempt = _collected(tmp_path)
    scratch = read_scratch_record(attempt)
    assert scratch is not None
    shutil.rmtree(scratch[0])
    shutil.rmtree(attempt.native)
    _finalize(attempt)
    assert found == [[]]
    assert not attempt.scratch_record.exists()


def test_a_published_attempt_keeps_the_scratch_it_was_asked_to_keep(tmp_path: Path) -> None:
    FAILING[0] = False
    attempt = _collected(tmp_path, keep_scratch=True)
    assert attempt.manifest.exists() and _native(attempt) == LOGS
    scratch = read_scratch_record(attempt)
    assert scratch is not None
    try:
        _finalize(attempt)  # re-finalized: the same capture, the scratch untouched
        assert read_scratch_record(attempt) == scratch
    finally:
        shutil.rmtree(scratch[0])
