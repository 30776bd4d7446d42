"""One collection: proxy (and mock) up, harness launched and drained, capture finalized.

Order, and why:
1. `run.json` / `sample.json` are written or checked first, so a mode mismatch fails
   before anything runs.
2. The attempt's `raw/attempt.json` is written before launch (capture scope, harness,
   start time) and completed after, so a crash still leaves what finalize needs.
3. The mock model (for `mock:SCENARIO`) and the proxy start in this event loop on
   127.0.0.1:0; the harness gets the proxy's URLs and nothing else of the network.
4. After the harness exits, the proxy is drained (exchanges in flight end and are
   recorded) before it stops; then the adapter copies the native logs into raw/native/.
   With follow-up prompts, each later turn resumes the conversation in the same scratch
   dirs and through the same proxy before that (`roller.collect.turns`), so the whole
   conversation is one attempt; the native logs are copied and finalize runs once, after
   the last turn.
5. Finalize runs on what is on disk, exactly as `roller finalize` would; then the
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
from dataclasses import dataclass, field
from pathlib import Path

from roller.capture.files import atomic_write
from roller.capture.layout import AttemptPaths, RunPaths
from roller.capture.models import (
    AttemptInputs,
    HarnessInfo,
    Manifest,
    Retention,
    StorageLayout,
)
from roller.capture.reader import dump_json
from roller.capture.trajectory_record import TrajectoryRecord
from roller.collect.launcher import LaunchResult
from roller.collect.runs import RunSpec, now_rfc3339, open_run, open_sample
from roller.collect.turns import TurnResult, check_turns, run_turns
from roller.errors import UsageError
from roller.export.trajectory_file import write_trajectory
from roller.finalize.assemble import rfc3339
from roller.finalize.attempt import finalize_attempt
from roller.harnesses import adapter_for
from roller.harnesses.base import LaunchRequest, ScratchDirs
from roller.harnesses.install import find_installed, install
from roller.mock.scenario_files import load_scenario
from roller.mock.server import MockModel, RunningMock
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
class CollectRequest:
    run_dir: Path
    harness: str
    api_base: str
    sample_id: str = "sample-0001"
    prompt: str | None = None
    command: tuple[str, ...] = ()
    harness_version: str | None = None
    capture_calls: bool = False
    capture_debug: Retention = "on-error"
    storage_layout: StorageLayout = "compact/v2"
    timeout_s: float = 300.0
    model: str | None = None
    keep_scratch: bool = False
    options: Mapping[str, str] = field(default_factory=dict)
    # Later turns: each resumes the conversation `prompt` started (adapters that can).
    follow_up_prompts: tuple[str, ...] = ()


@dataclass(frozen=True)
class CollectResult:
    attempt: AttemptPaths
    manifest: Manifest
    launch: LaunchResult
    scratch: Path | None
    trajectory: TrajectoryRecord
    turns: tuple[TurnResult, ...] = ()  # every turn asked for (one for a single prompt)


def credentials_for(api_base: str, environ: Mapping[str, str]) -> dict[str, str]:
    if api_base.startswith("mock:"):
        return dict.fromkeys(CREDENTIAL_ENV, MOCK_KEY)
    return {k: environ[k] for k in CREDENTIAL_ENV if environ.get(k)}


def base_urls(proxy_url: str) -> dict[str, str]:
    """Per-SDK base URLs: OpenAI clients expect the `/v1` prefix, the others do not."""
    return {"anthropic": proxy_url, "openai": f"{proxy_url}/v1", "gemini": proxy_url}


async def collect(
    request: CollectRequest,
    progress: Callable[[str], None] = lambda _m: None,
    stop: asyncio.Event | None = None,
) -> CollectResult:
    """Collect one attempt. Setting `stop` ends the harness early; the attempt is still
    drained, finalized and published (its execution then says `interrupted`)."""
    adapter = adapter_for(request.harness)
    if request.capture_calls and not request.api_base:
        raise UsageError("--capture-calls requires an explicit --api-base")
    check_turns(adapter, request.follow_up_prompts)
    # Everything that can be refused is checked before anything is written.
    scenario = (
        load_scenario(request.api_base.removeprefix("mock:"))
        if request.api_base.startswith("mock:")
        else None
    )
    install_dir = None
    version = request.harness_version or (adapter.pin.version or None)
    if adapter.pin.registry != "none":
        found = find_installed(adapter, version)
        if found is None:
            progress(f"installing {adapter.name} {version}…")
            found = install(adapter, version, log=lambda line: progress(f"install: {line[-80:]}"))
        install_dir = found.root

    run = RunPaths(request.run_dir)
    open_run(
        run,
        RunSpec(
            harness=adapter.name,
            harness_version=version,
            api_base=request.api_base,
            capture_calls=request.capture_calls,
            capture_debug=request.capture_debug,
        ),
    )
    sample = run.sample(request.sample_id)
    open_sample(
        sample,
        request.prompt,
        list(request.command) if request.command else None,
        list(request.follow_up_prompts),
    )
    attempt = sample.next_attempt()
    attempt.raw.mkdir(parents=True)
    inputs = AttemptInputs(
        schema_="roller.attempt/v1",
        capture_scope=secrets.token_hex(6),
        sample_id=sample.sample_id,
        attempt=attempt.attempt_number,
        harness=HarnessInfo(name=adapter.name, version=version, profile=adapter.profile),
        debug_retention=request.capture_debug,
        started_at=now_rfc3339(),
        ended_at=None,
        exit_code=None,
        timed_out=False,
        launch_error=None,
        # absent for the default, so attempt.json stays what it always was
        storage_layout=None if request.storage_layout == "compact/v2" else request.storage_layout,
    )
    atomic_write(attempt.attempt_inputs, dump_json(inputs))

    scratch = Path(tempfile.mkdtemp(prefix=f"roller-{adapter.name}-"))
    dirs = ScratchDirs(home=scratch / "home", tmp=scratch / "tmp", work=scratch / "work")
    for d in (dirs.home, dirs.tmp, dirs.work):
        d.mkdir()

    mock: RunningMock | None = None
    if scenario is not None:
        mock = await MockModel(scenario).serve()
        upstream = mock.url
    else:
        upstream = request.api_base
    proxy = ProxyServer(ProxyConfig(tape_dir=attempt.tape, upstreams=Upstreams(default=upstream)))
    multi_turn = bool(request.follow_up_prompts)

    def record(turns: Sequence[TurnResult]) -> None:
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
                "turns": [t.inputs() for t in turns] if multi_turn else None,
            }
        )
        atomic_write(attempt.attempt_inputs, dump_json(done))

    try:
        proxy_url = await proxy.start()
        first = LaunchRequest(
            prompt=request.prompt,
            command=request.command,
            dirs=dirs,
            base_urls=base_urls(proxy_url),
            credentials=credentials_for(request.api_base, os.environ),
            model=request.model,
            capture_calls=request.capture_calls,
            timeout_s=request.timeout_s,
            install_dir=install_dir,
            options=request.options,
        )
        turns = await run_turns(
            adapter,
            first,
            request.follow_up_prompts,
            attempt,
            proxy,
            scratch,
            progress,
            stop,
            on_turn=record,
        )
    finally:
        await proxy.stop()
        if mock is not None:
            await mock.close()

    adapter.collect_native(dirs, attempt.native)
    launch = next(t.launch for t in reversed(turns) if t.launch is not None)
    progress("finalizing the capture…")
    manifest = finalize_attempt(attempt)
    trajectory, _ = write_trajectory(attempt)
    if not request.keep_scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    return CollectResult(
        attempt,
        manifest,
        launch,
        scratch if request.keep_scratch else None,
        trajectory,
        tuple(turns),
    )
