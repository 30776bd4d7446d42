"""The tasks of a run: reading a tasks file, refusing bad lines, the run's snapshot.

A tasks file (`roller collect --tasks FILE`) is JSONL, one task a line (docs/collect.md):
`{"id": …, "prompt": "…"}` or `{"id": …, "turns": ["…", "…"]}`, optionally `"files"` (a
folder, relative to the tasks file, copied into the sample's work dir), `"model"` and
`"options"` (launch options, string values, over the run's `--option`s). Blank lines
are skipped.

Rules kept:
- every line is checked before anything runs, and every bad line is reported with its
  line number and reason (not just the first): an unknown key, a missing or empty
  prompt, both `prompt` and `turns`, an id that is not safe as a directory name or is
  used twice, a `files` folder that does not exist, an option the harness does not
  declare or a value it refuses, several turns for a harness that cannot resume;
- the run keeps its own copy (`RUN_DIR/tasks.jsonl`, byte for byte, and each task's
  folder under `RUN_DIR/task-files/<id>/`), so a resume depends on nothing outside the
  run directory; `--prompt` (one task) appends its line to the same snapshot.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from roller.capture.files import atomic_write
from roller.capture.layout import RunPaths, check_sample_id
from roller.errors import RollerError, UsageError
from roller.harnesses.base import HarnessAdapter, ResumableAdapter
from roller.harnesses.options import resolve_options

_KEYS = frozenset({"id", "prompt", "turns", "files", "model", "options"})
_SHOWN = 20  # bad lines listed in one refusal; the count says how many more


@dataclass(frozen=True)
class Task:
    """One sample to collect, as the tasks file gives it."""

    id: str
    prompts: tuple[str, ...]  # one per turn; () when the command needs none (generic)
    files: str | None = None  # the folder as written in the tasks file
    model: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    line: int | None = None  # where it came from

    def record(self) -> dict[str, object]:
        """The task as one JSON object (the snapshot line of a `--prompt` task)."""
        out: dict[str, object] = {"id": self.id}
        if len(self.prompts) == 1:
            out["prompt"] = self.prompts[0]
        elif self.prompts:
            out["turns"] = list(self.prompts)
        if self.files is not None:
            out["files"] = self.files
        if self.model is not None:
            out["model"] = self.model
        if self.options:
            out["options"] = dict(self.options)
        return out


@dataclass(frozen=True)
class TaskProblem:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def _prompts(obj: Mapping[str, object]) -> tuple[str, ...] | str:
    """The turns of a task line, or why they are not acceptable."""
    if "prompt" in obj and "turns" in obj:
        return 'give "prompt" or "turns", not both'
    if "prompt" in obj:
        prompt = obj["prompt"]
        if not isinstance(prompt, str) or not prompt.strip():
            return '"prompt" must be a non-empty string'
        return (prompt,)
    if "turns" in obj:
        turns = obj["turns"]
        if not isinstance(turns, list) or not turns:
            return '"turns" must be a non-empty list of strings'
        if not all(isinstance(t, str) and t.strip() for t in turns):
            return '"turns" must hold non-empty strings only'
        return tuple(turns)
    return 'needs "prompt" (a string) or "turns" (a list of strings)'


def _task(obj: object, line: int, needs_prompt: bool) -> Task | str:
    if not isinstance(obj, dict):
        return "not a JSON object"
    unknown = sorted(set(obj) - _KEYS)
    if unknown:
        return f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})"
    task_id = obj.get("id")
    if not isinstance(task_id, str):
        return '"id" must be a string'
    try:
        check_sample_id(task_id)
    except UsageError as exc:
        return str(exc)
    prompts: tuple[str, ...] | str = ()
    if needs_prompt or "prompt" in obj or "turns" in obj:
        prompts = _prompts(obj)
    if isinstance(prompts, str):
        return prompts
    files, model, options = obj.get("files"), obj.get("model"), obj.get("options", {})
    if files is not None and (not isinstance(files, str) or not files):
        return '"files" must be a folder path (a string)'
    if model is not None and (not isinstance(model, str) or not model):
        return '"model" must be a non-empty string'
    if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
        return '"options" must be an object of string values'
    return Task(task_id, prompts, files, model, dict(options), line)


def parse_tasks(data: bytes, needs_prompt: bool = True) -> tuple[list[Task], list[TaskProblem]]:
    """The tasks of a tasks file and the problems of its bad lines (pure)."""
    tasks: list[Task] = []
    problems: list[TaskProblem] = []
    first_line: dict[str, int] = {}
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            parsed: object = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(TaskProblem(n, f"not JSON ({exc})"))
            continue
        task = _task(parsed, n, needs_prompt)
        if isinstance(task, str):
            problems.append(TaskProblem(n, task))
        elif task.id in first_line:
            problems.append(
                TaskProblem(n, f"id {task.id!r} is already used on line {first_line[task.id]}")
            )
        else:
            first_line[task.id] = n
            tasks.append(task)
    return tasks, problems


def check_for_harness(
    tasks: Sequence[Task], adapter: HarnessAdapter, run_options: Mapping[str, str]
) -> list[TaskProblem]:
    """What this harness cannot run: several turns without resume, refused options."""
    problems: list[TaskProblem] = []
    for task in tasks:
        line = task.line or 0
        if len(task.prompts) > 1 and not isinstance(adapter, ResumableAdapter):
            problems.append(
                TaskProblem(
                    line,
                    f"{len(task.prompts)} turns, but --harness {adapter.name} cannot resume "
                    "a conversation (one prompt per task)",
                )
            )
        try:
            resolve_options(adapter.name, adapter.options, {**run_options, **task.options})
        except RollerError as exc:
            problems.append(TaskProblem(line, str(exc)))
    return problems


def refuse(where: str, problems: Sequence[TaskProblem]) -> None:
    """Raise the one refusal naming every bad line (the first `_SHOWN` of them)."""
    if not problems:
        return
    shown = "\n  ".join(str(p) for p in problems[:_SHOWN])
    more = f"\n  … and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
    raise UsageError(f"{where}: {len(problems)} bad line(s), nothing was run:\n  {shown}{more}")


def read_tasks_file(path: Path) -> tuple[bytes, list[Task], list[TaskProblem]]:
    """The file's bytes, its tasks and its bad lines; `files` folders are checked to
    exist relative to the file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--tasks {path}: cannot read it ({exc.strerror or exc})") from exc
    tasks, problems = parse_tasks(data)
    for task in tasks:
        if task.files is not None and not files_source(path, task).is_dir():
            problems.append(TaskProblem(task.line or 0, f'"files" {task.files!r} is not a folder'))
    if not tasks and not problems:
        problems.append(TaskProblem(1, "the file holds no task"))
    return data, tasks, problems


def files_source(tasks_file: Path, task: Task) -> Path:
    assert task.files is not None
    return (tasks_file.parent / task.files).resolve()


def snapshot_file(run: RunPaths, data: bytes, tasks: Sequence[Task], tasks_file: Path) -> None:
    """Write the run's snapshot of a tasks file, or check it is the same file."""
    if run.tasks_snapshot.exists():
        if run.tasks_snapshot.read_bytes() != data:
            raise UsageError(
                f"{run.root} was started with other tasks ({run.tasks_snapshot}); "
                f"continue it with --resume {run.root}, or collect into a new --run-dir"
            )
        return
    for task in tasks:
        if task.files is not None:
            dest = run.task_files(task.id)
            shutil.rmtree(dest, ignore_errors=True)  # a half copy from an earlier crash
            shutil.copytree(files_source(tasks_file, task), dest, symlinks=True)
    atomic_write(run.tasks_snapshot, data)


def snapshot_task(run: RunPaths, task: Task) -> None:
    """Add a `--prompt` task to the run's snapshot (once; the same id again must be the
    same task, which `open_sample` checks against sample.json)."""
    existing = run.tasks_snapshot.read_bytes() if run.tasks_snapshot.exists() else b""
    known, _ = parse_tasks(existing, needs_prompt=False)
    if any(t.id == task.id for t in known):
        return
    line = json.dumps(task.record(), ensure_ascii=False).encode() + b"\n"
    atomic_write(run.tasks_snapshot, existing + line)


def read_snapshot(run: RunPaths) -> list[Task]:
    """The tasks of a run, from its own snapshot (for `--resume`)."""
    if not run.tasks_snapshot.exists():
        raise UsageError(
            f"{run.root} has no task snapshot ({run.tasks_snapshot.name}): it was not "
            "collected by this roller, so it cannot be resumed; collect into a new --run-dir"
        )
    tasks, problems = parse_tasks(run.tasks_snapshot.read_bytes(), needs_prompt=False)
    for task in tasks:
        if task.files is not None and not run.task_files(task.id).is_dir():
            problems.append(
                TaskProblem(
                    task.line or 0,
                    f"the snapshot of its files is missing ({run.task_files(task.id)})",
                )
            )
    refuse(str(run.tasks_snapshot), problems)
    return tasks
