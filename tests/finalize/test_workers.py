"""Finalize's first pass over several processes writes exactly what one process writes.

`roller.finalize.workers` cuts the calls into blocks and hands all but the first to
worker processes (real ones: `python -m roller.finalize.workers --standby`). Every test
here finalizes the same attempt twice, once per process count, and compares the
published bytes (calls.jsonl, relations.jsonl, manifest.json, raw response bodies): over
recorded fixtures of several harnesses (a block starting inside a conversation, native
tool ids, store identities), a synthetic tape with interleaved conversations, a meta of
the wrong shape and body references that do not resolve, all inside a worker's block,
and workers that fail or cannot start. Workers started on standby before the index
(`Standby`): ready ones are handed the blocks at once, ones that left have their blocks
decoded here, ones not needed are killed. Workers still starting when the first pass
begins: calls are decoded here meanwhile, and the rest cut once they are ready (workers
asked for by `ROLLER_FINALIZE_PROCESSES` are waited for, `AWAIT_SECONDS` at most). A
worker's records are taken while it works, and one that dies midway has only the rest
of its block decoded here (a worker made slow, or made to die, by a `sitecustomize`
module only its process imports).
"""

from __future__ import annotations

import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path

import pytest
from tests.harnesses import throwaway_harness
from tests.harnesses.fixture_capture import fixture_dir, unpacked_copy
from tests.support.tapes import conversations_tape, inputs

from roller.capture.layout import AttemptPaths
from roller.errors import ConfigError
from roller.finalize import attempt, workers
from roller.finalize.attempt import finalize_attempt
from roller.finalize.first_pass import FirstPass, Passed
from roller.finalize.kept_facts import KeptFacts
from roller.finalize.standby import Spare, Standby
from roller.finalize.workers import (
    MAX_PROCESSES,
    PARALLEL_MIN_CALLS,
    PROCESSES_VARIABLE,
    STANDBY_MIN_BYTES,
    TAKEN_SHARE,
    blocks,
    process_count,
    standby,
)
from roller.harnesses.registry import register, unregister

FIXTURES = [
    ("claude-code", "nested-background"),
    ("codex", "v1-nested"),
    ("gemini-cli", "parallel"),
    ("openclaw", "anthropic-nested"),
    ("opencode", "parallel"),
]


def _fixture(harness: str, name: str, dest: Path, retention: str | None = None) -> AttemptPaths:
    paths = AttemptPaths(dest / "attempt-0001")
    src = fixture_dir(harness, name)
    unpacked_copy(src / "tape", paths.tape)
    unpacked_copy(src / "native", paths.native)
    attempt = json.loads((src / "attempt.json").read_text())
    if retention is not None:
        attempt["debug_retention"] = retention
    paths.attempt_inputs.write_text(json.dumps(attempt))
    return paths


def _published(paths: AttemptPaths) -> dict[str, bytes]:
    files = {n: (paths.root / n).read_bytes() for n in ("calls.jsonl", "relations.jsonl")}
    files["manifest.json"] = paths.manifest.read_bytes()
    responses = paths.raw / "responses"
    if responses.is_dir():
        files.update({f"raw/{p.name}": p.read_bytes() for p in sorted(responses.iterdir())})
    return files


class _Taken(logging.Handler):
    """The blocks finalize took from worker processes (its debug log)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.blocks: list[str] = []

        self.left: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "decoded by a worker" in record.getMessage():
            self.blocks.append(record.getMessage())
        if "on standby" in record.getMessage():
            self.left.append(record.getMessage())


def _finalized(
    paths: AttemptPaths,
    processes: int,
    monkeypatch: pytest.MonkeyPatch,
    workers: int = -1,
    taken: _Taken | None = None,
) -> dict[str, bytes]:
    """`paths` finalized by `processes` processes, `workers` of whose blocks (all but the
    first, by default) were taken from a worker process (named in `taken`)."""
    monkeypatch.setenv(PROCESSES_VARIABLE, str(processes))
    logger, taken = logging.getLogger("roller.finalize"), taken or _Taken()
    level = logger.level
    logger.addHandler(taken)
    logger.setLevel(logging.DEBUG)
    try:
        finalize_attempt(paths)
    finally:
        logger.removeHandler(taken)
        logger.setLevel(level)
    assert len(taken.blocks) == (processes - 1 if workers < 0 else workers), taken.blocks
    assert not [p for p in paths.root.iterdir() if p.name.startswith(".finalize-workers-")]
    return _published(paths)


def _both(made: AttemptPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Attempt `made`, copied twice, finalized by one process and by three: equal."""
    published = []
    for processes in (1, 3):
        copy = AttemptPaths(tmp_path / f"processes-{processes}" / made.root.name)
        shutil.copytree(made.root, copy.root)
        published.append(_finalized(copy, processes, monkeypatch))
    assert published[1] == published[0]
    return published[0]


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_fixtures_finalize_alike_in_one_process_and_in_three(
    harness: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published = _both(_fixture(harness, name, tmp_path / "made", "full"), tmp_path, monkeypatch)
    assert published["calls.jsonl"].count(b"\n") >= 3  # every process had calls to decode


def _synthetic(dest: Path) -> AttemptPaths:
    """Three conversations taking turns (each resending its whole transcript), 45
    calls; call 40 (in the last block) has a request meta key of the wrong shape."""
    paths = AttemptPaths(dest / "attempt-0001")
    paths.raw.mkdir(parents=True)
    paths.attempt_inputs.write_text(inputs("generic", "full").model_dump_json(by_alias=True))
    conversations_tape(paths.tape, 3, 15, interleaved=True, misshapen=40)
    return paths


def test_interleaved_conversations_and_a_misshapen_meta_finalize_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published = _both(_synthetic(tmp_path / "made"), tmp_path, monkeypatch)
    manifest = published["manifest.json"].decode()
    assert "'query' has an unexpected shape" in manifest  # reported once, in its place
    assert manifest.count("unexpected shape") == 1
    assert published["relations.jsonl"].count(b"\n") == 3 * 14 * 15 // 2


def _one_and_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[AttemptPaths, dict[str, bytes]]:
    """A copy of the synthetic attempt not finalized yet, and what one process publishes
    for another copy."""
    made = _synthetic(tmp_path / "made")
    one, three = (AttemptPaths(tmp_path / n / made.root.name) for n in ("one", "three"))
    shutil.copytree(made.root, one.root)
    shutil.copytree(made.root, three.root)
    return three, _finalized(one, 1, monkeypatch)


def test_relations_written_beside_the_calls_are_the_bytes_one_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a fresh process, which runs no other thread: relations.jsonl is written by a
    # child forked while the calls are written (roller.capture.beside), as it is by
    # `roller finalize` on a long capture.
    three, by_one = _one_and_a_copy(tmp_path, monkeypatch)
    script = (
        "import logging, sys; from pathlib import Path; "
        "from roller.capture.layout import AttemptPaths; "
        "from roller.finalize.attempt import finalize_attempt; "
        "logging.basicConfig(level=logging.DEBUG, format='%(name)s: %(message)s'); "
        "finalize_attempt(AttemptPaths(Path(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(three.root)],
        env={**os.environ, PROCESSES_VARIABLE: "3"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "roller.capture: relations.jsonl written by a child process" in done.stderr
    assert done.stderr.count("decoded by a worker") == 2
    assert _published(three) == by_one
    assert sorted(p.name for p in three.root.iterdir()) == [
        "calls.jsonl", "manifest.json", "raw", "relations.jsonl"
    ]  # fmt: skip


def _unresolvable(dest: Path, monkeypatch: pytest.MonkeyPatch) -> AttemptPaths:
    """A retained capture finalized once (its tape now holds body references), then its
    calls.jsonl removed: no reference resolves when it is finalized again."""
    paths = _fixture("claude-code", "parallel", dest, "full")
    monkeypatch.setenv(PROCESSES_VARIABLE, "1")
    finalize_attempt(paths)
    paths.calls.unlink()
    return paths


def test_body_references_that_do_not_resolve_are_reported_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published = _both(_unresolvable(tmp_path / "made", monkeypatch), tmp_path, monkeypatch)
    manifest = published["manifest.json"].decode()
    assert manifest.count("cannot be rebuilt") >= 3  # one per referenced body, in order


@pytest.mark.parametrize("executable", ["/bin/false", "/no/such/python"])
def test_a_worker_that_fails_or_cannot_start_has_its_block_decoded_here(
    executable: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    three, by_one = _one_and_a_copy(tmp_path, monkeypatch)
    monkeypatch.setattr(sys, "executable", executable)
    with caplog.at_level(logging.WARNING, logger="roller.finalize"):
        assert _finalized(three, 3, monkeypatch, workers=0) == by_one
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings  # one per worker
    why = "no worker process" if executable.startswith("/no/") else "left before it was ready"
    assert all(why in w and w.endswith("decoding its calls here") for w in warnings), warnings


def test_workers_asked_for_are_waited_for_a_while_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # ROLLER_FINALIZE_PROCESSES has its workers waited for, but not for ever: workers
    # that never say they are ready (a process that sleeps) are warned of after
    # AWAIT_SECONDS, the calls are decoded here meanwhile, and they are killed.
    three, by_one = _one_and_a_copy(tmp_path, monkeypatch)
    sleeper = tmp_path / "sleeper"
    sleeper.write_text("#!/bin/sh\nexec sleep 60\n")
    sleeper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(sleeper))
    monkeypatch.setattr(workers, "AWAIT_SECONDS", 1)
    started = _Started(wait=False)
    monkeypatch.setattr(attempt, "standby", started)
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="roller.finalize"):
        assert _finalized(three, 3, monkeypatch, workers=0) == by_one
    assert 1 <= time.monotonic() - began < 30
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (
        warnings
        == ["finalize: a worker process was not ready after 1 s: decoding calls here until it is"]
        * 2
    )
    assert [p.returncode for p in started.processes] == [-9, -9]  # killed, not waited for


def test_how_many_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROCESSES_VARIABLE, raising=False)
    assert process_count(PARALLEL_MIN_CALLS - 1) == 1
    cpus = len(os.sched_getaffinity(0))
    assert process_count(PARALLEL_MIN_CALLS) == min(cpus, MAX_PROCESSES)
    assert process_count(10, {PROCESSES_VARIABLE: "3"}) == 3
    assert process_count(10**6, {PROCESSES_VARIABLE: "1"}) == 1
    for bad in ("0", "two", "-1", "1.5"):
        with pytest.raises(ConfigError, match=PROCESSES_VARIABLE):
            process_count(10, {PROCESSES_VARIABLE: bad})
    # a harness registered in this process only: a fresh process would not know it
    register(throwaway_harness.HARNESS)
    try:
        assert process_count(10, {PROCESSES_VARIABLE: "3"}) == 1
    finally:
        unregister(throwaway_harness.NAME)
    assert process_count(10, {PROCESSES_VARIABLE: "3"}) == 3


@pytest.mark.parametrize("workers", [0, 1, 2, 3])
def test_blocks_cover_the_calls_in_order(workers: int) -> None:
    for start in (0, 5, 1000):
        for calls in (*range(start, start + 12), start + 45, 2000, 10_000, 100_003):
            spans = blocks(start, calls, workers)
            assert spans[0][0] == start and spans[-1][1] == calls
            assert all(a[1] == b[0] for a, b in pairwise(spans))
            assert all(hi > lo for lo, hi in spans[1:])  # no worker handed nothing
            assert len(spans) == 1 + min(workers, max(0, calls - start - 1))
            sizes = [hi - lo for lo, hi in spans]
            if calls - start >= 100:  # (a few calls round as they fall)
                # this process takes the workers' records too: its own block is smaller
                assert sizes[0] <= min(sizes[1:], default=sizes[0])
            if calls - start >= 10_000 and workers:
                share = sizes[0] / sizes[1]
                assert abs(share - (1 - workers * TAKEN_SHARE)) < 0.001, share


class _Started:
    """`standby` in finalize, its workers waited for until they said they are
    ready (unless not `wait`; then killed, with `leave`); the processes it started
    kept."""

    def __init__(self, leave: bool = False, wait: bool = True) -> None:
        self.leave = leave
        self.wait = wait
        self.processes: list[subprocess.Popen[bytes]] = []

    def __call__(self, root: Path, tape: Path, environ: Mapping[str, str] = os.environ) -> Standby:
        spares = standby(root, tape, environ)
        self.processes += [spare.process for spare in spares.spares]
        if not self.wait:
            return spares
        deadline = time.monotonic() + 120
        while not all(spare.ready() for spare in spares.spares):
            assert time.monotonic() < deadline, "a worker on standby never said it is ready"
            time.sleep(0.02)
        for process in self.processes if self.leave else ():
            process.kill()
            process.wait()
        return spares


@pytest.mark.parametrize("leave", [False, True], ids=["ready", "left"])
def test_workers_on_standby_are_handed_their_blocks_or_left_them_here(
    leave: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    three, by_one = _one_and_a_copy(tmp_path, monkeypatch)
    started, taken = _Started(leave), _Taken()
    monkeypatch.setattr(attempt, "standby", started)
    with caplog.at_level(logging.WARNING, logger="roller.finalize"):
        assert _finalized(three, 3, monkeypatch, 0 if leave else 2, taken) == by_one
    assert len(started.processes) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if leave:  # said ready, then killed: each block decoded here, from its first call
        assert [w.split("failed after ")[1] for w in warnings] == [
            "0 of them (it had left before its job): decoding the rest here"
        ] * 2
        assert all(p.returncode == -9 for p in started.processes)
        return
    # ready before the first call: the blocks are cut at once, 45 calls for 3 processes
    assert not warnings
    assert _spans(taken) == blocks(0, 45, 2)[1:] == [(14, 29), (29, 45)]
    assert all(p.returncode == 0 for p in started.processes)


def _spans(taken: _Taken) -> list[tuple[int, int]]:
    """The blocks taken from workers, as their debug lines name them."""
    found = [m.split("calls ")[1].split(" ")[0].split("-") for m in taken.blocks]
    return [(int(lo), int(hi)) for lo, hi in found]


def test_calls_are_decoded_here_while_the_workers_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not waited for (as without ROLLER_FINALIZE_PROCESSES): this process decodes calls
    # while its workers import finalize, looking at them every CHECK_EVERY calls, and cuts
    # the rest once they are ready. Held at call 3 until they are, it cuts at call 16.
    three, by_one = _one_and_a_copy(tmp_path, monkeypatch)
    spares: list[Spare] = []

    def given(root: Path, tape: Path, environ: Mapping[str, str] = os.environ) -> Standby:
        started = standby(root, tape, environ)
        spares.extend(started.spares)  # (taken from it before call 3)
        return started

    decode = FirstPass.call

    def call(self: FirstPass, n: int, exchange: object) -> Passed:
        deadline = time.monotonic() + 120
        while n == 3 and not all(spare.ready() for spare in spares):
            assert time.monotonic() < deadline, "a worker never said it is ready"
            time.sleep(0.02)
        return decode(self, n, exchange)  # type: ignore[arg-type]

    monkeypatch.setattr(attempt, "standby", given)
    monkeypatch.setattr(attempt, "awaited", lambda: False)
    monkeypatch.setattr(FirstPass, "call", call)
    taken = _Taken()
    assert _finalized(three, 3, monkeypatch, taken=taken) == by_one
    assert workers.CHECK_EVERY == 16
    assert _spans(taken) == blocks(16, 45, 2)[1:] == [(25, 35), (35, 45)]


_HOOK = """
# Imported at the start of every Python process of the test that wrote it: in a finalize
# worker, each call takes ROLLER_TEST_DELAY seconds, progress is said after every call,
# and with ROLLER_TEST_DIE_AFTER the worker exits (code 3) once it decoded that many.
import os, sys, time, warnings
if os.environ.get("ROLLER_TEST_WORKER") and sys.argv[-1:] == ["--standby"]:
    # runpy warns of a module imported before `-m` runs it: here, on purpose
    warnings.filterwarnings("ignore", message=".*found in sys.modules after import")
    from roller.finalize import first_pass, worker_block
    worker_block.PROGRESS_EVERY = 1
    decode, done = first_pass.FirstPass.call, []
    def call(self, n, exchange):
        if len(done) == int(os.environ.get("ROLLER_TEST_DIE_AFTER", -1)):
            os._exit(3)
        time.sleep(float(os.environ["ROLLER_TEST_DELAY"]))
        done.append(n)
        return decode(self, n, exchange)
    first_pass.FirstPass.call = call
"""


def _hooked_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: str) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_HOOK)
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("ROLLER_TEST_WORKER", "1")
    for name, value in settings.items():
        monkeypatch.setenv(f"ROLLER_TEST_{name.upper()}", value)


def test_a_workers_records_are_taken_while_it_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    three, by_one = _one_and_a_copy(tmp_path, monkeypatch)
    _hooked_workers(tmp_path, monkeypatch, delay="0.05")  # 16 calls: 0.8 s each worker
    started = _Started()
    monkeypatch.setattr(attempt, "standby", started)
    running: list[bool] = []  # per record kept, whether the first worker still ran
    keep = KeptFacts.add_values

    def add_values(self: KeptFacts, values: object) -> None:
        running.append(started.processes[0].poll() is None)
        keep(self, values)  # type: ignore[arg-type]

    monkeypatch.setattr(KeptFacts, "add_values", add_values)
    assert _finalized(three, 3, monkeypatch) == by_one
    first = blocks(0, 45, 2)[1][0]
    # its first records were kept while it still decoded the others (0.05 s a call)
    assert running[first : first + 3] == [True] * 3
    assert len(running) == 45 and started.processes[0].returncode == 0


def test_a_worker_that_dies_midway_has_only_the_rest_of_its_block_decoded_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    three, by_one = _one_and_a_copy(tmp_path, monkeypatch)
    _hooked_workers(tmp_path, monkeypatch, delay="0", die_after="5")
    monkeypatch.setattr(attempt, "standby", _Started())
    decoded: list[int] = []
    decode = FirstPass.call

    def call(self: FirstPass, n: int, exchange: object) -> Passed:
        decoded.append(n)
        return decode(self, n, exchange)  # type: ignore[arg-type]

    monkeypatch.setattr(FirstPass, "call", call)
    with caplog.at_level(logging.WARNING, logger="roller.finalize"):
        assert _finalized(three, 3, monkeypatch, workers=0) == by_one
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    spans = blocks(0, 45, 2)
    assert warnings == [
        f"finalize: the worker for calls {lo}-{hi} failed after 5 of them (exit 3: no "
        "output): decoding the rest here"
        for lo, hi in spans[1:]
    ]
    # here: this process's block, then each worker's calls after its first five
    here = [*range(*spans[0]), *(n for lo, hi in spans[1:] for n in range(lo + 5, hi))]
    assert decoded == here


def test_workers_on_standby_not_needed_are_killed(tmp_path: Path) -> None:
    tape = tmp_path / "tape"
    tape.mkdir()
    with standby(tmp_path, tape, {PROCESSES_VARIABLE: "3"}) as spares:
        processes = [spare.process for spare in spares.spares]
        assert len(processes) == 2 and all(p.poll() is None for p in processes)
    assert all(p.returncode is not None for p in processes)  # killed and reaped
    assert spares.take(1) == [] and not spares.spares
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tape"]


def test_how_many_workers_go_on_standby(tmp_path: Path) -> None:
    tape = tmp_path / "tape"
    tape.mkdir()
    segment = tape / "tape-000001.rtape"
    segment.write_bytes(b"x")
    os.truncate(segment, STANDBY_MIN_BYTES - 1)  # sparse: its size is what counts
    settings = ({}, 0), ({PROCESSES_VARIABLE: "1"}, 0), ({PROCESSES_VARIABLE: "2"}, 1)
    for setting, spares in settings:
        with standby(tmp_path, tape, setting) as given:
            assert len(given.spares) == spares, setting
    os.truncate(segment, STANDBY_MIN_BYTES)
    with standby(tmp_path, tape, {}) as given:
        assert len(given.spares) == min(len(os.sched_getaffinity(0)), MAX_PROCESSES) - 1
    with pytest.raises(ConfigError, match=PROCESSES_VARIABLE):
        standby(tmp_path, tape, {PROCESSES_VARIABLE: "none"})
    register(throwaway_harness.HARNESS)  # a fresh process would not know it: no worker
    try:
        with standby(tmp_path, tape, {PROCESSES_VARIABLE: "3"}) as given:
            assert not given.spares
    finally:
        unregister(throwaway_harness.NAME)


def test_a_spare_is_asked_without_waiting_whatever_its_descriptor_number(tmp_path: Path) -> None:
    # A long-running process (a gateway, `roller collect`) may hold a thousand files:
    # `select` fails on a descriptor numbered past 1023, a read that does not block never.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard >= 1200, "this test needs 1,200 open files"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with standby(tmp_path, tmp_path, {PROCESSES_VARIABLE: "3"}) as spares:
            ready, left = spares.spares
            left.process.kill()  # before it imported finalize (~0.4 s): it never says so
            left.process.wait()
            assert ready.process.stdout is not None and ready.process.stdout.fileno() > 1023
            asked = time.monotonic()
            assert not ready.ready()  # still importing finalize: asked, not waited for
            assert time.monotonic() - asked < 0.1
            while not ready.ready():
                assert time.monotonic() - asked < 120, "the spare never said it is ready"
                time.sleep(0.02)
            assert not left.ready()  # the end of its stdout is not a ready
            assert not left.hand(tmp_path / "job", tmp_path / "out")
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
