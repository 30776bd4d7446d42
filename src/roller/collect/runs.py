"""Run and sample directories: creating them, and refusing to mix collection modes.

`run.json` records how a run is collected: harness, api base, capture mode, debug
retention, and the launch settings `--resume` continues with (model, options, command,
timeout, attempts, single-agent declaration). A later `roller collect` into the same run
directory must ask for the same harness (and version), api base, capture mode and — when
run.json records them — the same single-agent declaration, command, model and options;
anything else is an explicit error before anything runs: resume never mixes samples collected with
and without call capture (or any other difference that changes what a capture holds).
`--timeout`, `--attempts`, `--concurrency`, `--capture-debug` and `--keep-scratch` may
change between invocations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

from roller import __version__
from roller.capture.files import atomic_write
from roller.capture.layout import RunPaths, SamplePaths
from roller.capture.models import Retention, RunConfig, RunSettings, SampleInfo, StorageLayout
from roller.capture.reader import dump_json, read_run_config, read_sample_info
from roller.errors import UsageError


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def public_api_base(api_base: str) -> str:
    """The api base without credentials (user:password@ or query), safe to write down."""
    if api_base.startswith("mock:"):
        return api_base
    parts = urlsplit(api_base)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class RunSpec:
    """How every sample of a run is collected (the run's part of a sample's job)."""

    harness: str
    harness_version: str | None
    api_base: str
    capture_calls: bool
    capture_debug: Retention
    model: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    timeout_s: float = 300.0
    attempts: int = 1
    single_agent: bool = False
    # per attempt (raw/attempt.json, the manifest), not a run setting: layouts may differ
    storage_layout: StorageLayout = "compact/v2"
    # names kept off disk beyond the built-in rules (`roller.proxy.redaction.Redactor`)
    redact_headers: tuple[str, ...] = ()
    redact_query: tuple[str, ...] = ()


def run_config(spec: RunSpec) -> RunConfig:
    return RunConfig(
        schema_="roller.run/v1",
        created_at=now_rfc3339(),
        roller_version=__version__,
        harness=spec.harness,
        harness_version=spec.harness_version,
        api_base=public_api_base(spec.api_base),
        capture_calls=spec.capture_calls,
        capture_debug=spec.capture_debug,
        settings=RunSettings(
            model=spec.model,
            options=dict(spec.options),
            command=list(spec.command) or None,
            timeout_s=spec.timeout_s,
            attempts=spec.attempts,
            single_agent=spec.single_agent,
            redact_headers=list(spec.redact_headers) or None,
            redact_query=list(spec.redact_query) or None,
        ),
    )


# What must be the same for every sample of a run: (what the user is told, the value).
# The settings rows apply only when the existing run.json records settings.
_SAME: tuple[tuple[str, Callable[[RunConfig], object]], ...] = (
    ("capture mode (--capture-calls)", lambda c: c.capture_calls),
    ("harness", lambda c: c.harness),
    ("api base", lambda c: c.api_base),
    ("harness version (--harness-version)", lambda c: c.harness_version),
)
_SAME_SETTINGS: tuple[tuple[str, Callable[[RunSettings], object]], ...] = (
    ("single-agent declaration (--single-agent)", lambda s: s.single_agent),
    ("command", lambda s: s.command),
    ("model (--model)", lambda s: s.model),
    ("launch options (--option)", lambda s: s.options),
)


def mismatches(existing: RunConfig, wanted: RunConfig) -> list[str]:
    """Each way `wanted` would collect differently from the run (pure)."""
    found = [
        f"{name}: run has {get(existing)!r}, asked for {get(wanted)!r}"
        for name, get in _SAME
        if get(existing) != get(wanted)
    ]
    if existing.settings is not None and wanted.settings is not None:
        old, new = existing.settings, wanted.settings
        found += [
            f"{name}: run has {get(old)!r}, asked for {get(new)!r}"
            for name, get in _SAME_SETTINGS
            if get(old) != get(new)
        ]
    return found


def check_run(paths: RunPaths, spec: RunSpec) -> RunConfig | None:
    """The existing `run.json` when it matches `spec`, None when there is none yet.
    Writes nothing; a mismatch is refused."""
    if not paths.run_json.exists():
        return None
    existing = read_run_config(paths.run_json)
    found = mismatches(existing, run_config(spec))
    if found:
        raise UsageError(
            f"{paths.root} was collected differently; resume cannot mix modes — "
            + "; ".join(found)
            + ". Collect into a new --run-dir."
        )
    return existing


def open_run(paths: RunPaths, spec: RunSpec) -> RunConfig:
    """Create `run.json`, or check an existing one matches `spec`."""
    existing = check_run(paths, spec)
    if existing is not None:
        return existing
    wanted = run_config(spec)
    paths.root.mkdir(parents=True, exist_ok=True)
    atomic_write(paths.run_json, dump_json(wanted))
    return wanted


def resumed_spec(config: RunConfig) -> RunSpec:
    """The spec a run was collected with, from its run.json (`--resume DIR`)."""
    settings = config.settings
    if settings is None:
        raise UsageError(
            "run.json records no launch settings (it was written before --resume "
            "existed): run the original roller collect command again with --run-dir"
        )
    return RunSpec(
        harness=config.harness,
        harness_version=config.harness_version,
        api_base=config.api_base,
        capture_calls=config.capture_calls,
        capture_debug=config.capture_debug,
        model=settings.model,
        options=dict(settings.options),
        command=tuple(settings.command or ()),
        timeout_s=settings.timeout_s,
        attempts=settings.attempts,
        single_agent=settings.single_agent,
        redact_headers=tuple(settings.redact_headers or ()),
        redact_query=tuple(settings.redact_query or ()),
    )


def open_sample(
    paths: SamplePaths,
    prompt: str | None,
    command: list[str] | None,
    follow_up_prompts: list[str] | None = None,
    *,
    model: str | None = None,
    options: Mapping[str, str] | None = None,
    files: str | None = None,
    write: bool = True,
) -> SampleInfo:
    """Create `sample.json` (unless `write` is false: only check), or check the existing
    sample is the same task (the same prompts of every turn, or the same command, and
    the same task model, options and files)."""
    info = SampleInfo(
        schema_="roller.sample/v1",
        sample_id=paths.sample_id,
        prompt=prompt,
        command=command,
        created_at=now_rfc3339(),
        follow_up_prompts=follow_up_prompts or None,
        model=model,
        options=dict(options) if options else None,
        files=files,
    )
    if paths.sample_json.exists():
        existing = read_sample_info(paths.sample_json)
        if existing.model_dump(exclude={"created_at"}) != info.model_dump(exclude={"created_at"}):
            raise UsageError(
                f"sample {paths.sample_id} already exists with a different task; "
                "use another --sample-id"
            )
        return existing
    if write:
        paths.root.mkdir(parents=True, exist_ok=True)
        atomic_write(paths.sample_json, dump_json(info))
    return info
