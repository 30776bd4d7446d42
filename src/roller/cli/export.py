"""`roller export calls | trajectory | atif | otel`: captures as training and interop data.

`calls` writes roller's per-call records, OpenAI chat messages (`--format
openai-messages`) or a Parquet table; `trajectory` the main trajectories (JSONL or
Parquet); `atif` one ATIF v1.8 file per attempt; `otel` OTLP JSON lines of GenAI spans.
Every command validates each capture (an invalid one is refused, never half exported):
first, or, for `calls`, `trajectory` and `otel` of a large capture to a file, beside the
export in a child process (`roller.cli.side_validation`). Each ends with one line on
stderr: what it wrote, what it left out and why, which harness-private fields it
removed (`roller.export.omissions`).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import click
from rich.console import Console

from roller.capture.integrity import ValidationReport, validate_attempt
from roller.capture.layout import AttemptPaths, find_attempts
from roller.capture.reader import Capture, read_attempt
from roller.cli.bar import Bar, shown_on
from roller.cli.side_validation import SideValidation, beside, first_problem
from roller.errors import UsageError
from roller.export.atif import atif_document
from roller.export.calls import capture_lines, write_jsonl, write_lines
from roller.export.continuity import OutOfSequence
from roller.export.omissions import Omissions
from roller.export.openai_messages import message_records
from roller.export.otel import traces_text
from roller.export.trajectory import build_trajectory
from roller.export.trajectory_file import serialize

CALL_FORMATS = ("roller", "openai-messages", "parquet")


@click.group("export")
def command() -> None:
    """Export captured data for training and evaluation."""


@command.command("calls")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option(
    "--gateway",
    "gateway_db",
    metavar="DB",
    help="Export a gateway's calls instead: its session store (SQLite file or URL).",
)
@click.option("--account", help="With --gateway: only this account's calls.")
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output JSONL file (default: stdout).",
)
@click.option(
    "--include-blocked",
    is_flag=True,
    help="Also export blocked calls (each says why in export_blocked_by).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(CALL_FORMATS),
    default="roller",
    show_default=True,
    help="roller: the request exactly as sent; openai-messages: OpenAI chat messages + "
    "tools + reply, every protocol normalised; parquet: those as a table (needs --out).",
)
def calls(
    path: Path | None,
    gateway_db: str | None,
    account: str | None,
    out: Path | None,
    include_blocked: bool,
    fmt: str,
) -> None:
    """Export the calls of every capture under PATH (run, sample or attempt), or of a
    gateway (--gateway DB: each call decoded from the tape exchange the database names).

    Each capture is validated; an invalid capture is refused, never half-exported. With
    --out, a large capture (calls.jsonl and relations.jsonl of 64 MiB or more;
    ROLLER_SIDE_VALIDATION_BYTES) is validated by a second process while the export
    writes a temporary file beside the output, which becomes the output only once the
    capture is valid.
    Only `exportable` calls are written unless --include-blocked. The openai-messages and
    parquet formats leave harness-private body fields out and say how many.
    """
    if (path is None) == (gateway_db is None):
        raise UsageError("give either a capture PATH or --gateway DB")
    if gateway_db is not None:
        if fmt != "roller":
            raise UsageError("--gateway exports the roller format only")
        _export_gateway(gateway_db, account, out, include_blocked)
        return
    assert path is not None
    if fmt == "parquet" and out is None:
        raise UsageError("--format parquet needs --out FILE")
    with (
        shown_on(Console(stderr=True), beside_stdout=out is None) as bar,
        _valid_captures(path, out, bar) as (captures, ordered, target),
    ):
        bar.phase("exporting calls")
        omissions = _write_calls(captures, ordered, fmt, target, include_blocked, bar)
        if ordered is None:  # the validation beside is waited for as the block ends
            bar.phase("validating beside the export")
    click.echo(omissions.summary(), err=True)


def _write_calls(
    captures: list[Capture],
    ordered: list[bool] | None,
    fmt: str,
    out: Path | None,
    include_blocked: bool,
    bar: Bar,
) -> Omissions:
    """The calls of `captures` in `fmt` into `out` (stdout when None); `ordered`: whether
    each capture's calls.jsonl is in sequence order (`message_records`). None (not known
    yet: `out` is a file being validated beside) takes them as in order, and writes `out`
    again from the start, reading each twice, at the first call that is not. `bar`
    counts the calls written."""
    if ordered is None:
        try:
            return _write_calls(captures, [True] * len(captures), fmt, out, include_blocked, bar)
        except OutOfSequence:  # (valid when its manifest names it)
            return _write_calls(captures, [False] * len(captures), fmt, out, include_blocked, bar)
    omissions = Omissions("call")
    if fmt == "roller":
        lines = bar.counting(
            line for c in captures for line in capture_lines(c, include_blocked, omissions)
        )
        with _opened(out) as fh:
            omissions.written = write_lines(lines, fh)
        return omissions
    records = bar.counting(
        record
        for capture, in_sequence in zip(captures, ordered, strict=True)
        for record in message_records(capture, include_blocked, omissions, in_sequence)
    )
    if fmt == "parquet":
        assert out is not None
        from roller.export.parquet import write_calls

        write_calls(records, out)
    else:
        with _opened(out) as fh:
            write_jsonl(records, fh)
    return omissions


@contextlib.contextmanager
def _opened(out: Path | None) -> Iterator[IO[bytes]]:
    if out is None:
        yield sys.stdout.buffer
    else:
        with open(out, "wb") as fh:
            yield fh


def _export_gateway(db: str, account: str | None, out: Path | None, include_blocked: bool) -> None:
    from roller.gateway.config import resolve_db
    from roller.gateway.export import Skipped, gateway_records
    from roller.gateway.store import SessionStore, open_engine

    store = SessionStore(open_engine(resolve_db(db, Path.cwd())))
    skipped: list[Skipped] = []
    try:
        records = gateway_records(
            store, account=account, include_blocked=include_blocked, skipped=skipped
        )
        if out is None:
            n = write_jsonl(records, sys.stdout.buffer)
        else:
            with open(out, "wb") as fh:
                n = write_jsonl(records, fh)
    finally:
        store.engine.dispose()
    click.echo(f"exported {n} call(s)", err=True)
    if skipped:
        click.echo(f"skipped {len(skipped)} call(s) whose record could not be built:", err=True)
        for skip in skipped:
            click.echo(
                f"  call {skip.call_id} (exchange {skip.exchange_id}): {skip.reason}", err=True
            )


def _valid_attempts(path: Path) -> list[AttemptPaths]:
    """Every attempt under `path`, each validated: an invalid one is refused, not skipped."""
    return [r.attempt for r in _validated(_attempts(path))]


def _attempts(path: Path) -> list[AttemptPaths]:
    attempts = find_attempts(path)
    if not attempts:
        raise UsageError(f"no capture found under {path}")
    return attempts


def _validated(attempts: list[AttemptPaths]) -> list[ValidationReport]:
    """Each attempt's report (what validation learnt of it); an invalid one is refused."""
    reports = []
    for a in attempts:
        report = validate_attempt(a)
        if not report.ok:
            raise first_problem(str(a.root), report.problems)
        reports.append(report)
    return reports


@command.command("trajectory")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output file (default: stdout; required for parquet).",
)
@click.option(
    "--include-blocked",
    is_flag=True,
    help="Also export blocked trajectories (each says why in export_blocked_by).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("roller", "parquet")),
    default="roller",
    show_default=True,
    help="roller: one roller.trajectory/v1 record a line; parquet: one row per segment, "
    "its conversation as OpenAI chat messages.",
)
def trajectory(path: Path, out: Path | None, include_blocked: bool, fmt: str) -> None:
    """Export the main trajectory (root participant only) of every attempt under PATH
    (run, sample or attempt): one `roller.trajectory/v1` record per attempt and line.

    Rebuilt from each capture, which is validated (an invalid capture is refused; with
    --out, a large capture beside the export, as `roller export calls` says); the result
    is the same record `roller collect` stored under the sample's trajectory/. Only
    exportable trajectories are written unless --include-blocked.
    """
    if fmt == "parquet" and out is None:
        raise UsageError("--format parquet needs --out FILE")
    with (
        shown_on(Console(stderr=True), beside_stdout=out is None) as bar,
        _valid_captures(path, out, bar) as (captures, _, target),
    ):
        bar.phase("building trajectories")
        omissions = _write_trajectories(captures, fmt, target, include_blocked)
    hint = (
        " (--include-blocked to include)"
        if any(k.startswith("blocked:") for k in omissions.left_out)
        else ""
    )
    click.echo(omissions.summary() + hint, err=True)


def _write_trajectories(
    captures: list[Capture], fmt: str, out: Path | None, include_blocked: bool
) -> Omissions:
    records = [build_trajectory(c) for c in captures]
    omissions = Omissions("trajectory")
    chosen = []
    for r in records:
        if include_blocked or r.export_status == "exportable":
            chosen.append(r)
        else:
            omissions.leave_out("blocked:" + ",".join(r.export_blocked_by))
    if fmt == "parquet":
        assert out is not None
        from roller.export.parquet import write_trajectories

        write_trajectories(chosen, out, omissions)
    else:
        lines = "".join(serialize(r) + "\n" for r in chosen)
        if out is None:
            sys.stdout.write(lines)
        else:
            out.write_text(lines, encoding="utf-8")
        omissions.written = len(chosen)
    return omissions


@command.command("atif")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory for the files: <sample>.attempt-NNNN.atif.json.",
)
@click.option(
    "--include-blocked", is_flag=True, help="Also export attempts whose main trajectory is blocked."
)
def atif(path: Path, out: Path, include_blocked: bool) -> None:
    """Export one ATIF v1.8 trajectory per attempt under PATH: the root's steps from the
    main trajectory, every subagent embedded and referenced from the step that spawned
    it (docs/exports.md)."""
    with shown_on(Console(stderr=True)) as bar:
        bar.phase("validating")
        captures = [read_attempt(a) for a in _valid_attempts(path)]
        bar.phase("writing ATIF documents")
        omissions = _write_atif(captures, out, include_blocked)
    click.echo(omissions.summary(), err=True)


def _write_atif(captures: list[Capture], out: Path, include_blocked: bool) -> Omissions:
    omissions = Omissions("ATIF trajectory")
    out.mkdir(parents=True, exist_ok=True)
    for capture in captures:
        doc = atif_document(capture, omissions, include_blocked)
        if doc is None:
            continue
        m = capture.manifest
        target = out / f"{m.sample_id}.attempt-{m.attempt:04d}.atif.json"
        target.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return omissions


@command.command("otel")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Output file, one OTLP JSON line per attempt (default: stdout).",
)
@click.option(
    "--content",
    is_flag=True,
    help="Include message content (gen_ai.input/output.messages, tool arguments and results).",
)
def otel(path: Path, out: Path | None, content: bool) -> None:
    """Export OpenTelemetry GenAI spans (OTLP JSON lines, the file exporter's format) of
    every attempt under PATH: an invoke_agent span per agent, chat spans per call,
    execute_tool spans per tool call, children under their spawning tool's span. Each
    capture is validated (an invalid one is refused; with --out, a large capture beside
    the export, as `roller export calls` says)."""
    with (
        shown_on(Console(stderr=True), beside_stdout=out is None) as bar,
        _valid_captures(path, out, bar) as (captures, _, target),
    ):
        bar.phase("writing spans")
        spans = _write_traces(captures, content, target)
    omissions = Omissions("trace")
    omissions.written = len(captures)
    click.echo(
        omissions.summary()
        + f" with {spans} chat span(s); nothing left out"
        + ("" if content else " but message content (--content to include)"),
        err=True,
    )


def _write_traces(captures: list[Capture], content: bool, out: Path | None) -> int:
    """Each capture's OTLP JSON line into `out` (stdout when None); how many chat spans."""
    with contextlib.ExitStack() as stack:
        sink = sys.stdout if out is None else stack.enter_context(open(out, "w", encoding="utf-8"))
        for capture in captures:  # a line at a time: an attempt's spans are held, not a run's
            for piece in traces_text(capture, content):
                sink.write(piece)
            sink.write("\n")
    return sum(len(c.calls) for c in captures)


@contextlib.contextmanager
def _valid_captures(
    path: Path, out: Path | None, bar: Bar
) -> Iterator[tuple[list[Capture], list[bool] | None, Path | None]]:
    """The captures under `path`, whether each one's calls.jsonl is in sequence order, and
    where to write `out`. Each capture is validated first (an invalid one is refused),
    or, for a large capture to a file, beside the export (`roller.cli.side_validation`):
    the order is then not known yet (None) and the target is a temporary file that
    becomes `out` once every attempt is valid. `bar` shows the validation."""
    attempts = _attempts(path)
    if not beside(attempts, out):
        bar.phase("validating")
        reports = _validated(attempts)
        captures = [read_attempt(r.attempt) for r in reports]
        yield captures, [r.calls_in_sequence for r in reports], out
        return
    assert out is not None
    with SideValidation(path).publishing(out) as target:
        yield [read_attempt(a) for a in attempts], None, target
