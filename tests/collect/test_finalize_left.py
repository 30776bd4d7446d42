"""An attempt roller never published (killed, or failed on) is published by `roller
finalize` as `roller collect --resume` publishes it; the scratch dirs are removed as
soon as the native logs are in raw/, so that a kill after that leaves nothing in the
temporary directory and loses nothing.

- killed before (or while) the native logs were copied: the logs are taken from the
  scratch HOME recorded in raw/scratch.json, whole (a copy cut off midway is not taken
  for all of them), and the scratch is removed once the attempt is published; a
  scratch that is gone leaves the attempt without them;
- failed after the copy (in finalize): the logs are in raw/, the scratch is gone;
- a published attempt's kept scratch (`--keep-scratch`) is left alone.

The harness is the test tree's throwaway one, given native logs: a wrapper writes two
log files into its HOME before the agent runs, its adapter copies them out of the
scratch HOME and fails after `CUT` of them when that is set (an exception there leaves
what a kill leaves), and its native reader fails while `FAILING` says so.
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
from tests.support.temp_dirs import roller_temp_dirs

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
SCRATCH = f"roller-{throwaway.NAME}-"  # its attempts' scratch dirs' names begin so
FAILING = [False]
CUT: list[int | None] = [None]  # files copied before the copy fails (None: it does not)
found: list[list[str]] = []  # what the native reader found, each time it read


class _WithNative(throwaway.ThrowawayAdapter):
    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        plan = super().launch_plan(request)
        return dataclasses.replace(plan, argv=(sys.executable, "-c", _WRITER, *plan.argv))

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        dest.mkdir()
        for n, name in enumerate(sorted(LOGS)):
            if n == CUT[0]:
                raise RuntimeError("cut off")  # as a kill mid-copy leaves it
            shutil.copy(dirs.home / "native" / name, dest / name)

    def read_native(self, native_dir: Path) -> NativeCapture | None:
        if FAILING[0]:
            raise RuntimeError("boom in the native reader")
        found.append(sorted(p.name for p in native_dir.glob("*")))
        return None


@pytest.fixture(autouse=True)
def harness() -> Iterator[None]:
    register(dataclasses.replace(throwaway.HARNESS, adapter=_WithNative()))
    FAILING[0], CUT[0] = False, None
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
    FAILING[0], CUT[0] = False, None
    result = CliRunner().invoke(cli, ["finalize", str(attempt.root)])
    assert result.exit_code == 0, result.output
    assert validate_attempt(attempt).ok
    assert read_manifest(attempt).counts.calls >= 1


def _native(attempt: AttemptPaths) -> dict[str, str]:
    return {p.name: p.read_text() for p in attempt.native.glob("*")}


@pytest.mark.parametrize("cut", [0, 1], ids=["before-the-copy", "mid-copy"])
def test_a_copy_cut_off_is_taken_again_whole_from_the_scratch(tmp_path: Path, cut: int) -> None:
    CUT[0] = cut
    attempt = _collected(tmp_path)
    assert not attempt.manifest.exists()  # roller failed on it: kept as a kill leaves it
    assert not attempt.native.exists()  # not one file of two, which passed for all
    scratch = read_scratch_record(attempt)
    assert scratch is not None
    _finalize(attempt)
    assert _native(attempt) == LOGS
    assert found == [sorted(LOGS)]  # finalize read them
    assert not scratch[0].exists() and not attempt.scratch_record.exists()


def test_an_unpublished_attempt_whose_scratch_is_gone_is_published(tmp_path: Path) -> None:
    CUT[0] = 0
    attempt = _collected(tmp_path)
    scratch = read_scratch_record(attempt)
    assert scratch is not None
    shutil.rmtree(scratch[0])
    _finalize(attempt)
    assert found == [[]]
    assert not attempt.scratch_record.exists()


def test_once_the_logs_are_in_raw_the_scratch_is_gone(tmp_path: Path) -> None:
    FAILING[0] = True  # publication fails after the copy: what a kill there leaves
    before = roller_temp_dirs(SCRATCH)
    attempt = _collected(tmp_path)
    assert not attempt.manifest.exists()
    assert _native(attempt) == LOGS
    assert not attempt.scratch_record.exists() and roller_temp_dirs(SCRATCH) == before
    _finalize(attempt)
    assert found == [sorted(LOGS)]


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
