"""Run and sample directories: creating them, and refusing to mix collection modes.

`run.json` records how a run is collected (harness, api base, capture mode, debug
retention). A later `roller collect` into the same run directory must ask for the same
harness, api base and capture mode; otherwise it is an explicit error — resume never
mixes samples collected with and without call capture.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

from roller import __version__
from roller.capture.files import atomic_write
from roller.capture.layout import RunPaths, SamplePaths
from roller.capture.models import Retention, RunConfig, SampleInfo
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
    harness: str
    harness_version: str | None
    api_base: str
    capture_calls: bool
    capture_debug: Retention


def open_run(paths: RunPaths, spec: RunSpec) -> RunConfig:
    """Create `run.json`, or check an existing one matches `spec`."""
    wanted = RunConfig(
        schema_="roller.run/v1",
        created_at=now_rfc3339(),
        roller_version=__version__,
        harness=spec.harness,
        harness_version=spec.harness_version,
        api_base=public_api_base(spec.api_base),
        capture_calls=spec.capture_calls,
        capture_debug=spec.capture_debug,
    )
    if not paths.run_json.exists():
        paths.root.mkdir(parents=True, exist_ok=True)
        atomic_write(paths.run_json, dump_json(wanted))
        return wanted
    existing = read_run_config(paths.run_json)
    mismatches = [
        f"{name}: run has {old!r}, asked for {new!r}"
        for name, old, new in (
            ("capture mode (--capture-calls)", existing.capture_calls, wanted.capture_calls),
            ("harness", existing.harness, wanted.harness),
            ("api base", existing.api_base, wanted.api_base),
        )
        if old != new
    ]
    if mismatches:
        raise UsageError(
            f"{paths.root} was collected differently; resume cannot mix modes — "
            + "; ".join(mismatches)
            + ". Collect into a new --run-dir."
        )
    return existing


def open_sample(
    paths: SamplePaths,
    prompt: str | None,
    command: list[str] | None,
    follow_up_prompts: list[str] | None = None,
) -> SampleInfo:
    """Create `sample.json`, or check the existing sample is the same task (the same
    prompts of every turn, or the same command)."""
    follow_ups = follow_up_prompts or None
    if paths.sample_json.exists():
        existing = read_sample_info(paths.sample_json)
        if (existing.prompt, existing.command, existing.follow_up_prompts) != (
            prompt,
            command,
            follow_ups,
        ):
            raise UsageError(
                f"sample {paths.sample_id} already exists with a different task; "
                "use another --sample-id"
            )
        return existing
    info = SampleInfo(
        schema_="roller.sample/v1",
        sample_id=paths.sample_id,
        prompt=prompt,
        command=command,
        created_at=now_rfc3339(),
        follow_up_prompts=follow_ups,
    )
    paths.root.mkdir(parents=True, exist_ok=True)
    atomic_write(paths.sample_json, dump_json(info))
    return info
