"""The run and sample records and the inputs of an attempt (`roller.run/v1`,
`roller.sample/v1`, `roller.attempt/v1`): what a collection was asked to do, recorded
before it runs, so finalize can rebuild a capture from raw/ alone."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from roller.capture.models.manifest import (
    HarnessInfo,
)
from roller.capture.models.vocabulary import (
    Record,
    Retention,
    StorageLayout,
    absent,
)


class RunSettings(Record):
    """How every sample of a run is launched: what `roller collect --resume` continues with."""

    model: str | None = Field(description="`--model`; a task's own `model` wins.")
    options: dict[str, str] = Field(
        description="`--option KEY=VALUE`s; a task's own `options` win key by key."
    )
    command: list[str] | None = Field(description="The command after `--` (generic harness).")
    timeout_s: float = Field(description="`--timeout` per harness run (per turn).")
    attempts: int = Field(
        description="`--attempts`: how many attempts a failing sample gets (docs/collect.md)."
    )
    single_agent: bool = Field(
        description="`--single-agent`: the command is declared one agent (generic)."
    )
    redact_headers: list[str] | None = Field(
        default=None,
        exclude_if=absent,
        description="`--redact-header`s: request header names kept off disk beyond the "
        "built-in rules (lower-cased; a resume adds to them, never drops one).",
    )
    redact_query: list[str] | None = Field(
        default=None,
        exclude_if=absent,
        description="`--redact-query`s: query parameter names kept off disk beyond the "
        "built-in rules (lower-cased).",
    )


class RunConfig(Record):
    """`run.json`: how a run was collected. Resume refuses to mix modes."""

    schema_: Literal["roller.run/v1"] = Field(alias="schema", description="Record schema.")
    created_at: str = Field(description="When the run directory was created (RFC 3339).")
    roller_version: str = Field(description="roller version that created the run.")
    harness: str = Field(description="Harness name.")
    harness_version: str | None = Field(description="Harness version requested.")
    api_base: str = Field(description="Upstream: a URL (credentials removed) or `mock:SCENARIO`.")
    capture_calls: bool = Field(description="Whether subagent call capture mode is on.")
    capture_debug: Retention = Field(description="Debug retention policy.")
    settings: RunSettings | None = Field(
        default=None,
        exclude_if=absent,
        description="How samples are launched, so `--resume` needs nothing but the run "
        "directory; absent in run directories written before resume existed.",
    )


class SampleInfo(Record):
    """`sample.json`: the task as given."""

    schema_: Literal["roller.sample/v1"] = Field(alias="schema", description="Record schema.")
    sample_id: str = Field(description="Sample id (directory name).")
    prompt: str | None = Field(description="The prompt given to the harness, if any.")
    command: list[str] | None = Field(description="The command run (generic harness).")
    created_at: str = Field(description="When the sample was created (RFC 3339).")
    follow_up_prompts: list[str] | None = Field(
        default=None,
        exclude_if=absent,
        description="The prompts of the later turns of a multi-turn sample, in order; each "
        "resumes the conversation `prompt` started. Absent for a single prompt.",
    )
    model: str | None = Field(
        default=None,
        exclude_if=absent,
        description="The task's own model (tasks file `model`), over the run's; absent if none.",
    )
    options: dict[str, str] | None = Field(
        default=None,
        exclude_if=absent,
        description="The task's own launch options (tasks file `options`); absent if none.",
    )
    files: str | None = Field(
        default=None,
        exclude_if=absent,
        description="The task's `files` folder as the tasks file named it; its copy is "
        "`RUN_DIR/task-files/<id>/`, copied into the work dir before each attempt.",
    )


class TurnInputs(Record):
    """One turn of a multi-turn attempt, as `roller collect` ran it."""

    turn: int = Field(description="1-based turn number.")
    resumed_root: str | None = Field(
        description="The confirmed native root id this turn resumed; null for turn 1."
    )
    started_ns: int | None = Field(
        description="When roller launched this turn (wall clock ns, the clock of the tape's "
        "frame times); null when the turn did not run."
    )
    ended_ns: int | None = Field(description="When this turn's harness ended (ns).")
    exit_code: int | None = Field(description="Exit code; null when killed or not run.")
    timed_out: bool = Field(description="Whether roller killed this turn at its timeout.")
    launch_error: str | None = Field(description="Why this turn could not be started.")
    not_run: str | None = Field(description="Why this turn did not run, when it did not.")


class AttemptInputs(Record):
    """`raw/attempt.json`: what finalize needs besides the tape and native logs.

    Written when the attempt starts and completed when the harness ends, so
    `roller finalize ATTEMPT_DIR` can re-run finalize byte-identically.
    """

    schema_: Literal["roller.attempt/v1"] = Field(alias="schema", description="Record schema.")
    capture_scope: str = Field(description="Random scope of the attempt, part of every id.")
    sample_id: str = Field(description="Sample id.")
    attempt: int = Field(description="1-based attempt number.")
    harness: HarnessInfo = Field(description="What ran.")
    debug_retention: Retention = Field(description="Retention policy for raw/.")
    started_at: str = Field(description="Harness launch time (RFC 3339).")
    ended_at: str | None = Field(description="Harness end time; null while running.")
    exit_code: int | None = Field(description="Exit code; null when killed or not started.")
    timed_out: bool = Field(description="Whether roller killed the harness at its timeout.")
    launch_error: str | None = Field(description="Why the harness could not be started.")
    turns: list[TurnInputs] | None = Field(
        default=None,
        exclude_if=absent,
        description="Each turn of a multi-turn sample as run; absent for a single prompt. "
        "The fields above then describe the last turn run (times: first start, last end).",
    )
    declared_single_agent: bool | None = Field(
        default=None,
        exclude_if=absent,
        description="True when the user declared the command one agent (`roller collect "
        "--harness generic --single-agent`): calls without x-roller-* identity belong to "
        "one root participant, unless some call's headers declare participants. Absent "
        "otherwise.",
    )
    storage_layout: StorageLayout | None = Field(
        default=None,
        exclude_if=absent,
        description="The layout to publish (`roller collect --storage-layout`); absent: "
        "compact/v2. `roller finalize` re-publishes in it unless told otherwise.",
    )
