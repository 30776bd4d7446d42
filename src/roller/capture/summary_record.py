"""`roller.summary/v1`: `RUN_DIR/summary.json`, what the last `roller collect` of a run
found and did, sample by sample.

A report, not evidence: it is rewritten at the end of every invocation (a run, each
resume) from the attempts on disk and their judgement (docs/collect.md, "Resume"), and
nothing reads it back to decide anything. Same conventions as `roller.capture.models`:
every field described, unknown fields rejected, frozen.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from roller.capture.models import CaptureStatus, ExecutionStatus, Record

SUMMARY_SCHEMA = "roller.summary/v1"

# How one attempt was judged (docs/collect.md): `succeeded` (it validates, execution
# completed, capture complete), `failed` (it validates; anything else), `interrupted`
# (it validates; the harness was killed: timeout, Ctrl-C, roller's death), `invalid`
# (it does not validate, or could not be recovered: kept, never reused).
AttemptOutcome = Literal["succeeded", "failed", "interrupted", "invalid"]
# A sample at the end of the invocation: `succeeded` / `failed` by its latest attempt,
# `not_run` when the run was stopped before it got an attempt.
SampleStatus = Literal["succeeded", "failed", "not_run"]


class AttemptSummary(Record):
    """One attempt of a sample, as judged."""

    attempt: int = Field(description="1-based attempt number (`capture/attempt-NNNN`).")
    outcome: AttemptOutcome = Field(description="How it was judged (docs/collect.md).")
    collected_now: bool = Field(description="Whether this invocation collected it.")
    recovered: bool = Field(
        description="It had no manifest (roller was killed while collecting it) and this "
        "invocation finalized it from its raw/ before judging it."
    )
    execution_status: ExecutionStatus | None = Field(
        description="The manifest's; null when there is no readable manifest."
    )
    capture_status: CaptureStatus | None = Field(
        description="The manifest's; null when there is no readable manifest."
    )
    calls: int = Field(description="Calls in the attempt (0 without a readable manifest).")
    exportable_calls: int = Field(description="Of those, exportable calls.")
    wall_s: float | None = Field(
        description="Harness run time from the manifest (started_at to ended_at)."
    )
    problems: list[str] = Field(
        description="Why it is invalid: each validation problem (`code: where: message`) "
        "or why it could not be recovered; for an interrupted attempt whose runner was "
        "lost (a Ray worker or node died), `lost: REASON`; empty otherwise."
    )


class SampleSummary(Record):
    """One sample: its attempts and where it stands."""

    sample_id: str = Field(description="Sample id (the task's id).")
    status: SampleStatus = Field(description="Where the sample stands.")
    reused: bool = Field(
        description="Its latest attempt was reused as it was (validated, terminal); no "
        "model call was made for it in this invocation."
    )
    attempts: list[AttemptSummary] = Field(description="Every attempt, oldest first.")
    execution_status: ExecutionStatus | None = Field(
        description="The latest attempt's execution status."
    )
    capture_status: CaptureStatus | None = Field(description="The latest attempt's capture status.")
    calls: int = Field(description="Calls of the latest attempt.")
    exportable_calls: int = Field(description="Exportable calls of the latest attempt.")
    wall_s: float = Field(description="Harness run time summed over every attempt.")


class RunSummary(Record):
    """`summary.json`: the run's samples after the latest `roller collect` of it."""

    schema_: Literal["roller.summary/v1"] = Field(alias="schema", description="Record schema.")
    written_at: str = Field(description="When this summary was written (RFC 3339).")
    harness: str = Field(description="Harness name.")
    stopped: bool = Field(description="Whether the invocation was stopped (Ctrl-C).")
    elapsed_s: float = Field(description="Wall time of the invocation that wrote it.")
    samples_total: int = Field(description="Tasks of the run.")
    succeeded: int = Field(description="Samples whose latest attempt succeeded.")
    failed: int = Field(description="Samples whose latest attempt did not succeed.")
    not_run: int = Field(description="Samples without any attempt (the run was stopped).")
    reused: int = Field(description="Samples reused as they were, without a model call.")
    calls: int = Field(description="Calls of the samples' latest attempts.")
    exportable_calls: int = Field(description="Exportable calls of the latest attempts.")
    samples: list[SampleSummary] = Field(description="Every sample, in task order.")
