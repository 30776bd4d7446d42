"""Running acceptance scenarios: mock up, `roller collect` as a user runs it, checks.

Each scenario runs in its own run directory, once per mode of the harness's profile (a
harness run more than one way, e.g. Codex with function tools and in code mode, reports
every scenario for each): the mock model (in this process, so the
number of requests it served is known) on 127.0.0.1, then `python -m roller collect
--harness H --api-base <mock url> --capture-calls --capture-debug full …` as a child
process (the real command, end to end), then `checks.check_run`. Scenarios run
concurrently (`jobs`); each harness run is a few seconds.

Credentials: against the mock, each variable the profile names gets a fresh random
value (so the on-disk search means something); every other provider key of the
caller's environment (`*_API_KEY`, `*_AUTH_TOKEN`, roller's credential list) is removed,
so a real key can never reach the mock. Against a real provider (`api_base`), only the
variables the caller names are passed.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from roller.acceptance.checks import RunEvidence, check_run
from roller.acceptance.profiles import profile_for
from roller.acceptance.scenarios import SCENARIOS, mock_source, scenario
from roller.collect.session import CREDENTIAL_ENV
from roller.errors import UsageError
from roller.harnesses import adapter_for
from roller.harnesses.acceptance import AcceptanceProfile, Scenario
from roller.harnesses.install import find_installed, install
from roller.mock.scenario_files import load_scenario
from roller.mock.server import MockModel

Verdict = Literal["PASS", "FAIL", "NOT_APPLICABLE"]
# Any provider key of the caller's environment, whatever the provider, stays out.
_SECRET_SUFFIXES = ("_API_KEY", "_AUTH_TOKEN")


@dataclass(frozen=True)
class Outcome:
    scenario: str
    verdict: Verdict
    reasons: tuple[str, ...]
    run_dir: Path | None
    seconds: float
    mode: str | None = None  # the profile's mode, when the harness runs several ways

    @property
    def label(self) -> str:
        return f"{self.mode}/{self.scenario}" if self.mode else self.scenario


@dataclass(frozen=True)
class Plan:
    """What to run: a harness, scenarios, where, and against which model."""

    harness: str
    work_dir: Path
    scenarios: tuple[str, ...] = ()  # empty: all
    api_base: str | None = None  # None: the mock
    credential_env: tuple[str, ...] = ()  # real provider only
    harness_version: str | None = None
    model: str | None = None
    jobs: int = 4
    # launch options for every scenario (e.g. Pi's `api`); a scenario's own options win
    options: Mapping[str, str] = field(default_factory=dict)
    modes: tuple[str, ...] = ()  # empty: every mode of the harness's profile


def collect_env(plan: Plan, profile: AcceptanceProfile) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment for `roller collect`, and the credential values in it."""
    names = set(CREDENTIAL_ENV) | set(profile.credential_env) | set(plan.credential_env)
    env = {
        k: v for k, v in os.environ.items() if k not in names and not k.endswith(_SECRET_SUFFIXES)
    }
    if plan.api_base is None:
        given = {k: f"sk-roller-acceptance-{secrets.token_hex(12)}" for k in profile.credential_env}
    else:
        missing = [k for k in plan.credential_env if not os.environ.get(k)]
        if missing:
            raise UsageError(f"credential variable(s) not set: {', '.join(missing)}")
        given = {k: os.environ[k] for k in plan.credential_env}
    env.update(given)
    return env, tuple(given.values())


def _argv(
    plan: Plan, profile: AcceptanceProfile, sc: Scenario, api_base: str, run_dir: Path
) -> list[str]:
    timeout = profile.timeout_s
    argv = [
        sys.executable, "-m", "roller", "collect",
        "--harness", plan.harness,
        "--api-base", api_base,
        "--prompt", sc.prompt,
        *(arg for prompt in sc.follow_up for arg in ("--prompt", prompt)),
        "--run-dir", str(run_dir),
        "--capture-debug", "full",
        "--timeout", str(timeout),
        "--json",
    ]  # fmt: skip
    if sc.capture_calls:
        argv.append("--capture-calls")
    if plan.harness_version:
        argv += ["--harness-version", plan.harness_version]
    model = plan.model or (profile.mock_model if plan.api_base is None else None)
    if model:
        argv += ["--model", model]
    for key, value in sorted({**plan.options, **sc.options}.items()):
        argv += ["--option", f"{key}={value}"]
    return argv


async def _run_one(
    plan: Plan,
    profile: AcceptanceProfile,
    sc: Scenario,
    env: Mapping[str, str],
    creds: tuple[str, ...],
) -> Outcome:
    started = time.monotonic()
    run_dir = plan.work_dir / plan.harness / (profile.mode or "") / sc.name
    if run_dir.exists():
        raise UsageError(f"{run_dir} exists; acceptance runs need a fresh directory")
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    mock: MockModel | None = None
    running = None
    if plan.api_base is None:
        mock = MockModel(load_scenario(mock_source(sc.mock)))
        running = await mock.serve()
        api_base = running.url
    else:
        api_base = plan.api_base
    try:
        proc = await asyncio.create_subprocess_exec(
            *_argv(plan, profile, sc, api_base, run_dir),
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await proc.communicate()
    finally:
        if running is not None:
            await running.close()
    (run_dir.parent / f"{sc.name}.collect.txt").write_bytes(output)
    evidence = RunEvidence(
        harness=plan.harness,
        scenario=sc,
        run_dir=run_dir,
        exit_code=proc.returncode,
        collect_output=output,
        served=mock.requests if mock is not None else None,
        secrets=creds,
        with_mock=mock is not None,
    )
    reasons = await asyncio.to_thread(check_run, evidence)
    verdict: Verdict = "FAIL" if reasons else "PASS"
    seconds = time.monotonic() - started
    return Outcome(sc.name, verdict, tuple(reasons), run_dir, seconds, profile.mode)


def _chosen(plan: Plan, profile: AcceptanceProfile) -> tuple[Scenario, ...]:
    """The scenarios the plan names (all, by default) for one mode: the common ones and
    the harness's own."""
    everything = (*SCENARIOS, *profile.extra_scenarios)
    return tuple(_named(everything, n) for n in plan.scenarios) if plan.scenarios else everything


def _named(scenarios: Sequence[Scenario], name: str) -> Scenario:
    """The scenario called `name`: a common one, or one of the harness's own."""
    for sc in scenarios:
        if sc.name == name:
            return sc
    return scenario(name)  # raises, naming the common scenarios


def ensure_installed(plan: Plan, log: Callable[[str], None]) -> None:
    adapter = adapter_for(plan.harness)
    if adapter.pin.registry == "none":
        return
    version = plan.harness_version or adapter.pin.version
    if find_installed(adapter, version) is None:
        log(f"installing {plan.harness} {version}…")
        install(adapter, version, log=log)


async def run_plan_async(
    plan: Plan, on_outcome: Callable[[Outcome], None] = lambda _o: None
) -> list[Outcome]:
    modes = modes_of(plan)
    env, creds = collect_env(plan, modes[0])
    gate = asyncio.Semaphore(max(1, plan.jobs))

    async def one(profile: AcceptanceProfile, base: Scenario) -> Outcome:
        resolved = profile.resolve(base)
        if isinstance(resolved, str):
            outcome = Outcome(base.name, "NOT_APPLICABLE", (resolved,), None, 0.0, profile.mode)
        else:
            async with gate:
                outcome = await _run_one(plan, profile, resolved, env, creds)
        on_outcome(outcome)
        return outcome

    return list(await asyncio.gather(*(one(m, s) for m in modes for s in _chosen(plan, m))))


def modes_of(plan: Plan) -> tuple[AcceptanceProfile, ...]:
    """The profiles (modes) of the plan's harness to run: all, or those it names."""
    every = profile_for(plan.harness).for_options(plan.options).modes
    if not plan.modes:
        return every
    known = {m.mode: m for m in every if m.mode is not None}
    unknown = [m for m in plan.modes if m not in known]
    if unknown:
        names = ", ".join(known) or "none"
        raise UsageError(f"{plan.harness} has no acceptance mode {unknown[0]!r} (modes: {names})")
    return tuple(known[m] for m in plan.modes)


def run_acceptance(
    plan: Plan,
    on_outcome: Callable[[Outcome], None] = lambda _o: None,
    log: Callable[[str], None] = lambda _m: None,
) -> list[Outcome]:
    """Install the harness if needed, run the scenarios, return one outcome each."""
    ensure_installed(plan, log)
    plan.work_dir.mkdir(parents=True, exist_ok=True)
    return asyncio.run(run_plan_async(plan, on_outcome))


def summary_line(outcome: Outcome) -> str:
    head = f"{outcome.verdict:<14} {outcome.label}"
    if outcome.verdict == "PASS":
        return f"{head} ({outcome.seconds:.1f}s)"
    return f"{head}: " + "; ".join(outcome.reasons)


def failed(outcomes: Sequence[Outcome]) -> bool:
    return any(o.verdict == "FAIL" for o in outcomes)
