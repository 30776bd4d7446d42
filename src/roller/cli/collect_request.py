"""The flags of `roller collect` as the run they ask for: a `RunRequest` for a new run
(`--prompt`, `--prompts-file`, `--tasks`, a command) or for the rest of one (`--resume
DIR`, whose run.json settings are kept and only widened), refusing what cannot go
together with a `UsageError` that names the flags.

The harness-kept flag aliases come from the registry (`collect_aliases`); the click
options themselves live in `roller.cli.collect`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import get_args

from roller.capture.layout import RunPaths
from roller.capture.models import STORAGE_LAYOUTS, Retention, StorageLayout
from roller.capture.reader import read_run_config
from roller.collect.collection import RunRequest
from roller.collect.runs import RunSpec, resumed_spec
from roller.collect.tasks import Task
from roller.errors import UsageError
from roller.harnesses import adapter_for, registry

DEFAULT_API_BASE = "mock:plain"
DEFAULT_SAMPLE_ID = "sample-0001"
DEFAULT_TIMEOUT_S = 300.0
ALIASES = "roller.collect.aliases"  # the click context meta key of the aliases given


def aliases() -> list[tuple[str, str, str]]:
    """(alias, the flag it stands for, the harness that keeps it), from the registry."""
    return [
        (alias, canonical, h.name)
        for h in registry().harnesses
        for alias, canonical in h.collect_aliases.items()
    ]


def str_flag(value: object) -> str | None:
    assert value is None or isinstance(value, str)
    return value


def _path(value: object) -> Path | None:
    assert value is None or isinstance(value, Path)
    return value


def _retention(value: object) -> Retention | None:
    for choice in get_args(Retention):
        if value == choice:
            return choice  # type: ignore[no-any-return]  # a Literal member
    return None


def _layout(value: object) -> StorageLayout | None:
    return next((layout for layout in STORAGE_LAYOUTS if value == layout), None)


def _strings(value: object) -> tuple[str, ...]:
    assert isinstance(value, tuple)
    return tuple(str(v) for v in value)


def _parse_options(items: tuple[str, ...]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--option expects KEY=VALUE, got {item!r}")
        parsed[key] = value
    return parsed


def run_request(flags: dict[str, object], given_aliases: list[str]) -> tuple[RunRequest, bool]:
    """The run the flags ask for, and whether it is one task (`--prompt` or a command)."""
    resume_dir = _path(flags["resume_dir"])
    harness = str_flag(flags["harness"])
    options = _parse_options(_strings(flags["options"]))
    command_args = _strings(flags["command"])
    base: RunSpec | None = None
    if resume_dir is not None:
        base = _resumed(resume_dir, flags)
        harness = harness or base.harness
    elif harness is None:
        raise UsageError("--harness is required (or --resume DIR to continue a run)")
    capture_calls = _capture_calls(harness, given_aliases, bool(flags["capture_calls"]))
    api_base = str_flag(flags["api_base"])
    if capture_calls and api_base is None and resume_dir is None:
        raise UsageError("--capture-calls requires an explicit --api-base (URL or mock:SCENARIO)")
    if resume_dir is not None:
        assert base is not None
        spec = _resumed_spec(
            base,
            flags,
            harness=harness,
            api_base=api_base,
            capture_calls=capture_calls,
            options=options,
            command=command_args,
        )
        return RunRequest(
            resume_dir, spec, resume=True, keep_scratch=bool(flags["keep_scratch"])
        ), False
    timeout, attempts = flags["timeout_s"], flags["attempts"]
    spec = RunSpec(
        harness=harness,
        harness_version=str_flag(flags["harness_version"]),
        api_base=api_base or DEFAULT_API_BASE,
        capture_calls=capture_calls,
        capture_debug=_retention(flags["capture_debug"]) or "on-error",
        storage_layout=_layout(flags["storage_layout"]) or "compact/v2",
        model=str_flag(flags["model"]),
        options=options,
        command=command_args,
        timeout_s=float(timeout) if isinstance(timeout, float) else DEFAULT_TIMEOUT_S,
        attempts=attempts if isinstance(attempts, int) else 1,
        single_agent=bool(flags["single_agent"]),
        redact_headers=_union((), _strings(flags["redact_headers"])),
        redact_query=_union((), _strings(flags["redact_query"])),
    )
    return _new_run(flags, spec)


def _capture_calls(harness: str, given_aliases: list[str], asked: bool) -> bool:
    """`--capture-calls`, also asked for by a harness's original flag name for it (which
    only that harness accepts)."""
    for alias, canonical, owner in aliases():
        if alias in given_aliases:
            if harness != owner:
                raise UsageError(
                    f"{alias} is the original name of {canonical} for --harness {owner}; "
                    f"with --harness {harness} use {canonical}"
                )
            asked = True
    return asked


def _resumed_spec(
    base: RunSpec,
    flags: dict[str, object],
    *,
    harness: str,
    api_base: str | None,
    capture_calls: bool,
    options: dict[str, str],
    command: tuple[str, ...],
) -> RunSpec:
    """A resumed run's spec: the run's own, with what the flags give over it."""
    timeout, attempts = flags["timeout_s"], flags["attempts"]
    return replace(
        base,
        harness=harness,
        api_base=api_base or base.api_base,
        capture_calls=capture_calls or base.capture_calls,
        single_agent=bool(flags["single_agent"]) or base.single_agent,
        model=str_flag(flags["model"]) or base.model,
        options=options or base.options,
        command=command or base.command,
        harness_version=str_flag(flags["harness_version"]) or base.harness_version,
        capture_debug=_retention(flags["capture_debug"]) or base.capture_debug,
        storage_layout=_layout(flags["storage_layout"]) or base.storage_layout,
        timeout_s=float(timeout) if isinstance(timeout, float) else base.timeout_s,
        attempts=attempts if isinstance(attempts, int) else base.attempts,
        # more redaction is always safe: a resume adds names, never drops the run's
        redact_headers=_union(base.redact_headers, _strings(flags["redact_headers"])),
        redact_query=_union(base.redact_query, _strings(flags["redact_query"])),
    )


def _union(kept: tuple[str, ...], added: tuple[str, ...]) -> tuple[str, ...]:
    """Names to redact, lower-cased, each once, in a stable order."""
    return tuple(sorted({n.lower() for n in (*kept, *added)}))


def _resumed(resume_dir: Path, flags: dict[str, object]) -> RunSpec:
    clashing = [
        flag
        for flag, key in (
            ("--run-dir", "run_dir"),
            ("--tasks", "tasks_file"),
            ("--prompt", "prompts"),
            ("--prompts-file", "prompts_file"),
            ("--sample-id", "sample_id"),
        )
        if flags[key]
    ]
    if clashing:
        raise UsageError(
            f"--resume {resume_dir} continues the run from its run.json and task snapshot; "
            f"it takes no {', '.join(clashing)}"
        )
    run = RunPaths(resume_dir)
    if not run.run_json.exists():
        raise UsageError(f"--resume {resume_dir}: no run.json there, so it is not a run directory")
    return resumed_spec(read_run_config(run.run_json))


def _new_run(flags: dict[str, object], spec: RunSpec) -> tuple[RunRequest, bool]:
    run_dir = _path(flags["run_dir"])
    if run_dir is None:
        raise UsageError("--run-dir is required (the directory the run is collected into)")
    runs_command = adapter_for(spec.harness).runs_command
    if runs_command and not spec.command:
        raise UsageError(f"--harness {spec.harness} needs the command to run after `--`")
    if not runs_command and spec.command:
        raise UsageError(
            f"--harness {spec.harness} runs the harness itself; pass --prompt, not a command"
        )
    keep = bool(flags["keep_scratch"])
    tasks_file = _path(flags["tasks_file"])
    if tasks_file is not None:
        given = [f for f, k in (("--prompt", "prompts"), ("--prompts-file", "prompts_file"),
                                ("--sample-id", "sample_id")) if flags[k]]  # fmt: skip
        if given:
            raise UsageError(f"--tasks gives every sample its task; it takes no {', '.join(given)}")
        return RunRequest(run_dir, spec, tasks_file=tasks_file, keep_scratch=keep), False
    turns = read_prompts(_strings(flags["prompts"]), _path(flags["prompts_file"]))
    if not runs_command and not turns:
        raise UsageError(f"--harness {spec.harness} needs --prompt (or --tasks FILE)")
    task = Task(str_flag(flags["sample_id"]) or DEFAULT_SAMPLE_ID, turns)
    return RunRequest(run_dir, spec, task=task, keep_scratch=keep), True


def read_prompts(prompts: tuple[str, ...], prompts_file: Path | None) -> tuple[str, ...]:
    """The prompt of each turn, from --prompt (repeated) or --prompts-file (a JSON list).

    An empty prompt is refused here, before anything is written (a headless harness has
    nothing to do with it); `()` means none was given.
    """
    if prompts_file is not None:
        if prompts:
            raise UsageError("give the turns with --prompt or with --prompts-file, not both")
        where = f"--prompts-file {prompts_file}"
        try:
            data = json.loads(prompts_file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"{where}: cannot read it ({exc.strerror or exc})") from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{where}: not JSON ({exc})") from exc
        if not (isinstance(data, list) and data and all(isinstance(x, str) for x in data)):
            raise UsageError(f"{where}: expected a JSON list of strings, one prompt per turn")
        prompts = tuple(data)
    for n, prompt in enumerate(prompts, 1):
        if not prompt.strip():
            which = f"prompt {n}" if len(prompts) > 1 else "--prompt"
            raise UsageError(f"{which} is empty")
    return prompts
