"""The sample runner: one attempt of one task, from nothing to a published capture.

`run_attempt(job)` is a function of (task, attempt directory, run spec) to a finished
attempt directory; it decides nothing about resume, retries or refusals (the run
driver, `roller.collect.collection`, and `roller.collect.verdicts` do), so an executor
may run it anywhere the run directory is (docs/collect.md, "Executors").

Order, and why:
1. The attempt's `raw/attempt.json` is written before launch (capture scope, harness,
   start time) and completed after, so a crash still leaves what finalize needs. The
   attempt directory is created exclusively: two runners never share one.
2. Each attempt is isolated: its own scratch HOME/TMPDIR/work dir (the task's files
   copied into the work dir), its own mock model (for `mock:SCENARIO`) and its own
   proxy, both on 127.0.0.1:0 in this event loop; the harness gets the proxy's URLs and
   nothing else of the network, so no call can reach another sample's tape.
3. After the harness exits, the proxy is drained (exchanges in flight end and are
   recorded) before it stops; then the adapter copies the native logs into raw/native/
   (whole or not at all: `roller.collect.scratch.collect_whole`), and the scratch dirs,
   of which nothing else is needed, are removed (unless `--keep-scratch`) before the
   attempt is published: removed after, a kill in the middle of publication left them
   in the temporary directory with the record of them gone with raw/. With follow-up
   prompts, each later turn resumes the conversation in the same scratch dirs and
   through the same proxy before that (`roller.collect.turns`), so the whole
   conversation is one attempt; the native logs are copied and finalize runs once, after
   the last turn.
4. Finalize runs on what is on disk, exactly as `roller finalize` would; then the
   attempt's main trajectory is derived from the published capture and stored under
   `samples/<id>/trajectory/` (derived data, never one of the capture's formal files).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from roller.capture.files import atomic_write
from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs, HarnessInfo, Manifest
from roller.capture.reader import dump_json
from roller.capture.trajectory_record import TrajectoryRecord
from roller.collect.launcher import LaunchResult
from roller.collect.runs import RunSpec, now_rfc3339
from roller.collect.scratch import collect_whole, scratch_removed, write_scratch_record
from roller.collect.tasks import Task
from roller.collect.turns import TurnResult, run_turns
from roller.export.trajectory_file import write_trajectory
from roller.finalize.attempt import finalize_attempt
from roller.finalize.shell import rfc3339
from roller.harnesses import adapter_for, registry
from roller.harnesses.base import LaunchRequest, ScratchDirs
from roller.mock.scenario_files import load_scenario
from roller.mock.server import MockModel, RunningMock
from roller.proxy.redaction import Redactor
from roller.proxy.routing import Upstreams
from roller.proxy.server import ProxyConfig, ProxyServer

# Credentials a harness may need, passed through from the user's environment when the
# api base is a real provider; for `mock:` every one gets a placeholder instead.
CREDENTIAL_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)
MOCK_KEY = "sk-roller-mock-placeholder"


@dataclass(frozen=True)
class AttemptJob:
    """Everything one attempt needs: the task, where it goes, how the run collects."""

    task: Task
    attempt: AttemptPaths
    spec: RunSpec  # harness_version is the version actually run (the pin when not given)
    install_dir: Path | None
    files: Path | None = None  # the task's files snapshot, copied into the work dir
    keep_scratch: bool = False


@dataclass(frozen=True)
class AttemptDone:
    attempt: AttemptPaths
    manifest: Manifest
    launch: LaunchResult
    scratch: Path | None
    trajectory: TrajectoryRecord
    turns: tuple[TurnResult, ...] = ()  # every turn asked for (one for a single prompt)


def credential_names() -> tuple[str, ...]:
    """The provider key variables passed on: the common ones, and every registered
    harness's own (its acceptance profile's `credential_env`, e.g. `DEEPSEEK_API_KEY`)."""
    extra = (
        name
        for h in registry().harnesses
        if h.acceptance is not None
        for name in h.acceptance.credential_env
    )
    return tuple(dict.fromkeys((*CREDENTIAL_ENV, *extra)))


# What a running attempt is doing, and how many model calls its proxy has seen so far.
Report = Callable[[str, int], None]


def credentials_for(api_base: str, environ: Mapping[str, str]) -> dict[str, str]:
    names = credential_names()
    if api_base.startswith("mock:"):
        return dict.fromkeys(names, MOCK_KEY)
    return {k: environ[k] for k in names if environ.get(k)}


def base_urls(proxy_url: str) -> dict[str, str]:
    """Per-SDK base URLs: OpenAI clients expect the `/v1` prefix, the others do not."""
    return {"anthropic": proxy_url, "openai": f"{proxy_url}/v1", "gemini": proxy_url}


def attempt_inputs(job: AttemptJob, profile: str | None) -> AttemptInputs:
    """`raw/attempt.json` as written before launch: a fresh scope, no end yet."""
    return AttemptInputs(
        schema_="roller.attempt/v1",
        capture_scope=secrets.token_hex(6),
        sample_id=job.task.id,
        attempt=job.attempt.attempt_number,
        harness=HarnessInfo(
            name=job.spec.harness, version=job.spec.harness_version, profile=profile
        ),
        debug_retention=job.spec.capture_debug,
        started_at=now_rfc3339(),
        ended_at=None,
        exit_code=None,
        timed_out=False,
        launch_error=None,
        declared_single_agent=True if job.spec.single_agent else None,
        # absent for the default, so attempt.json stays what it always was
        storage_layout=None if job.spec.storage_layout == "compact/v2" else job.spec.storage_layout,
    )


def _scratch(job: AttemptJob) -> tuple[Path, ScratchDirs]:
    """The attempt's own scratch dirs, recorded under raw/ before they are made (a kill
    in between leaves a record of nothing, never a directory nothing records)."""
    name = f"roller-{job.spec.harness}-{secrets.token_hex(6)}"
    scratch = Path(tempfile.gettempdir()) / name
    dirs = ScratchDirs(home=scratch / "home", tmp=scratch / "tmp", work=scratch / "work")
    write_scratch_record(job.attempt, scratch, dirs)
    scratch.mkdir(mode=0o700)  # (as `mkdtemp` makes it: new, the user's alone)
    for d in (dirs.home, dirs.tmp):
        d.mkdir()
    if job.files is not None:
        shutil.copytree(job.files, dirs.work, symlinks=True)
    else:
        dirs.work.mkdir()
    return scratch, dirs


def _record_turns(
    attempt: AttemptPaths, inputs: AttemptInputs, turns: Sequence[TurnResult], multi: bool
) -> None:
    """attempt.json with the turns run so far: started by the first, ended by the last."""
    ran = [t.launch for t in turns if t.launch is not None]
    last = ran[-1]
    done = inputs.model_copy(
        update={
            "started_at": rfc3339(ran[0].started_ns) or inputs.started_at,
            "ended_at": rfc3339(last.ended_ns),
            "exit_code": last.exit_code,
            "timed_out": last.timed_out,
            "launch_error": last.launch_error,
            "turns": [t.inputs() for t in turns] if multi else None,
        }
    )
    atomic_write(attempt.attempt_inputs, dump_json(done))


def claim_attempt(attempt: AttemptPaths, inputs: bytes) -> None:
    """Create the attempt directory with its raw/attempt.json in place, in one rename.

    A kill then leaves no attempt or one whose inputs are whole (so it recovers from
    raw/), never an empty directory that nothing can finalize. The claim is exclusive:
    the rename fails when another runner made the attempt first (its directory holds
    its inputs, so it is not empty), as the directory's creation did before.
    """
    staging = attempt.root.with_name(f".{attempt.root.name}.claim-{secrets.token_hex(6)}")
    try:
        atomic_write(AttemptPaths(staging).attempt_inputs, inputs)
        os.rename(staging, attempt.root)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        raise


async def run_attempt(
    job: AttemptJob,
    report: Report = lambda _m, _n: None,
    stop: asyncio.Event | None = None,
) -> AttemptDone:
    """Collect one attempt. Setting `stop` ends the harness early; the attempt is still
    drained, finalized and published (its execution then says `interrupted`)."""
    adapter = adapter_for(job.spec.harness)
    spec, task, attempt = job.spec, job.task, job.attempt
    inputs = attempt_inputs(job, adapter.profile)
    claim_attempt(attempt, dump_json(inputs))
    scratch, dirs = _scratch(job)
    mock: RunningMock | None = None
    if spec.api_base.startswith("mock:"):
        mock = await MockModel(load_scenario(spec.api_base.removeprefix("mock:"))).serve()
        upstream = mock.url
    else:
        upstream = spec.api_base
    redactor = Redactor(spec.redact_headers, spec.redact_query)
    proxy = ProxyServer(
        ProxyConfig(tape_dir=attempt.tape, upstreams=Upstreams(default=upstream), redactor=redactor)
    )
    follow_ups = task.prompts[1:]

    try:
        proxy_url = await proxy.start()
        turns = await run_turns(
            adapter,
            _first_launch(job, dirs, proxy_url),
            follow_ups,
            attempt,
            proxy,
            scratch,
            lambda text: report(text, proxy.exchanges),
            stop,
            on_turn=lambda turns: _record_turns(attempt, inputs, turns, bool(follow_ups)),
        )
    finally:
        await proxy.stop()
        if mock is not None:
            await mock.close()

    collect_whole(adapter, dirs, attempt.native)
    if not job.keep_scratch:  # (a kill from here on: the recovery finishes the removal)
        scratch_removed(attempt, scratch)
    report("finalizing the capture…", proxy.exchanges)
    return _published(job, scratch, turns)


def _first_launch(job: AttemptJob, dirs: ScratchDirs, proxy_url: str) -> LaunchRequest:
    """The first turn's launch: the task's prompt and options over the run's, every base
    URL pointed at this attempt's proxy."""
    spec, task = job.spec, job.task
    return LaunchRequest(
        prompt=task.prompts[0] if task.prompts else None,
        command=spec.command,
        dirs=dirs,
        base_urls=base_urls(proxy_url),
        credentials=credentials_for(spec.api_base, os.environ),
        model=task.model or spec.model,
        capture_calls=spec.capture_calls,
        timeout_s=spec.timeout_s,
        install_dir=job.install_dir,
        options={**spec.options, **task.options},
    )


def _published(job: AttemptJob, scratch: Path, turns: list[TurnResult]) -> AttemptDone:
    """The attempt finalized and its main trajectory written."""
    attempt = job.attempt
    launch = next(t.launch for t in reversed(turns) if t.launch is not None)
    manifest = finalize_attempt(attempt)
    trajectory, _ = write_trajectory(attempt)
    return AttemptDone(
        attempt,
        manifest,
        launch,
        scratch if job.keep_scratch else None,
        trajectory,
        tuple(turns),
    )
