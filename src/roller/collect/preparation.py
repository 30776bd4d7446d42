"""Preparing a collection run: every refusal before anything is written, then the
judgement of what the run directory holds, the harness install, and the run's files.

Steps 1 and 2 of `roller.collect.collection` (its docstring gives the order and why):
`prepare(request, log) -> Prepared` refuses bad flags, tasks (every bad line, with its
number), a run.json or task snapshot that differs from what is asked, a sample that
exists with another task, and every sample whose stored main trajectory holds subagent
steps, after judging each sample (`roller.collect.verdicts`; an attempt roller was
killed in is recovered from its raw/ first); it installs the harness when missing.
`write_run` then writes run.json, the task snapshot and each sample.json.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from roller.capture.layout import RunPaths
from roller.collect.runs import RunSpec, check_run, open_run, open_sample
from roller.collect.tasks import (
    Task,
    TaskProblem,
    check_for_harness,
    read_snapshot,
    read_tasks_file,
    refuse,
    snapshot_file,
    snapshot_task,
)
from roller.collect.turns import check_turns
from roller.collect.verdicts import SampleVerdict, judge_sample
from roller.errors import UsageError
from roller.harnesses import adapter_for
from roller.harnesses.install import find_installed, install
from roller.harnesses.options import resolve_options
from roller.mock.scenario_files import load_scenario


@dataclass(frozen=True)
class RunRequest:
    """What to collect: the run's spec and where its tasks come from (exactly one of
    `tasks_file`, `task`, or `resume` — the run's own snapshot)."""

    run_dir: Path
    spec: RunSpec
    tasks_file: Path | None = None
    task: Task | None = None
    resume: bool = False
    keep_scratch: bool = False


@dataclass(frozen=True)
class Prepared:
    """What `prepare` found: the run, the spec with the version actually run, the tasks
    and what the run directory holds for each, the installed harness."""

    run: RunPaths
    spec: RunSpec  # with the version actually run
    tasks: tuple[Task, ...]
    verdicts: tuple[SampleVerdict, ...]
    install_dir: Path | None
    tasks_data: bytes | None


def _tasks(request: RunRequest, run: RunPaths) -> tuple[list[Task], bytes | None]:
    adapter = adapter_for(request.spec.harness)
    data: bytes | None = None
    if request.task is not None:
        # One task from flags: refused with the flags' own words, not as a line.
        task = request.task
        check_turns(adapter, task.prompts[1:])
        resolve_options(adapter.name, adapter.options, {**request.spec.options, **task.options})
        return [task], None
    problems: list[TaskProblem] = []
    if request.resume:
        tasks, where = read_snapshot(run), str(run.tasks_snapshot)
    elif request.tasks_file is not None:
        data, tasks, problems = read_tasks_file(request.tasks_file)
        where = f"--tasks {request.tasks_file}"
    else:
        raise UsageError("nothing to collect: give --tasks FILE, --prompt, or --resume DIR")
    problems += check_for_harness(tasks, adapter, request.spec.options)
    refuse(where, sorted(problems, key=lambda p: p.line))
    if data is not None and run.tasks_snapshot.exists() and run.tasks_snapshot.read_bytes() != data:
        raise UsageError(
            f"{run.root} was started with other tasks ({run.tasks_snapshot}); continue it "
            f"with --resume {run.root}, or collect into a new --run-dir"
        )
    return tasks, data


def _check_sample(run: RunPaths, spec: RunSpec, task: Task, write: bool) -> None:
    open_sample(
        run.sample(task.id),
        task.prompts[0] if task.prompts else None,
        list(spec.command) or None,
        list(task.prompts[1:]),
        model=task.model,
        options=task.options,
        files=task.files,
        write=write,
    )


def prepare(request: RunRequest, log: Callable[[str], None]) -> Prepared:
    """Every refusal, then the judgement of what the run holds; writes nothing but the
    recovery of attempts roller was killed in (their own formal files)."""
    run, adapter = RunPaths(request.run_dir), adapter_for(request.spec.harness)
    version = request.spec.harness_version or (adapter.pin.version or None)
    spec = replace(request.spec, harness_version=version)
    check_run(run, spec)  # first: a run collected differently says so before anything else
    if spec.single_agent and not adapter.runs_command:
        raise UsageError(
            f"--single-agent declares your command one agent; --harness {spec.harness} "
            "runs its own agent, whose native logs say who made each call"
        )
    if spec.api_base.startswith("mock:"):
        load_scenario(spec.api_base.removeprefix("mock:"))
    tasks, data = _tasks(request, run)
    for task in tasks:
        _check_sample(run, spec, task, write=False)
    verdicts = tuple(judge_sample(run.sample(t.id)) for t in tasks)
    refusals = [v.refusal for v in verdicts if v.refusal is not None]
    if refusals:
        raise UsageError("\n".join(refusals))
    install_dir = None
    if adapter.pin.registry != "none":
        found = find_installed(adapter, version)
        if found is None:
            log(f"installing {adapter.name} {version}…")
            found = install(adapter, version, log=lambda line: log(f"install: {line[-80:]}"))
        install_dir = found.root
    return Prepared(run, spec, tuple(tasks), verdicts, install_dir, data)


def write_run(prepared: Prepared, request: RunRequest) -> None:
    run = prepared.run
    open_run(run, prepared.spec)
    if prepared.tasks_data is not None and request.tasks_file is not None:
        snapshot_file(run, prepared.tasks_data, prepared.tasks, request.tasks_file)
    elif request.task is not None:
        snapshot_task(run, request.task)
    for task in prepared.tasks:
        _check_sample(run, prepared.spec, task, write=True)
