"""Finalize tells a reporter where it is, and `roller finalize` draws it on a terminal only.

A synthetic attempt (45 calls, three conversations taking turns) is finalized with a
reporter: its phases come in order (index, decode, write, publish), each counted phase
from 0 to every call, every `EVERY` calls, and the bytes published are those of a
finalize without one. The CLI's display draws each phase and its counts on a terminal
(a rich console forced to be one) and nothing elsewhere: `roller finalize` through
click's runner (not a terminal) prints its result lines alone.
"""

from __future__ import annotations

import io
import shutil
from itertools import groupby
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from tests.support.tapes import conversations_tape, inputs

from roller.capture.layout import AttemptPaths
from roller.cli.finalize import shown
from roller.cli.main import cli
from roller.finalize import progress
from roller.finalize.attempt import finalize_attempt
from roller.finalize.progress import Step


def _synthetic(dest: Path) -> AttemptPaths:
    paths = AttemptPaths(dest / "attempt-0001")
    paths.raw.mkdir(parents=True)
    paths.attempt_inputs.write_text(inputs("generic", "full").model_dump_json(by_alias=True))
    conversations_tape(paths.tape, 3, 15, interleaved=True)
    return paths


def _published(paths: AttemptPaths) -> dict[str, bytes]:
    names = ("calls.jsonl", "relations.jsonl", "manifest.json")
    return {n: (paths.root / n).read_bytes() for n in names}


def test_finalize_reports_its_phases_in_order_and_counts_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _synthetic(tmp_path / "made")
    told, quiet = (AttemptPaths(tmp_path / n / made.root.name) for n in ("told", "quiet"))
    shutil.copytree(made.root, told.root)
    shutil.copytree(made.root, quiet.root)
    monkeypatch.setattr(progress, "EVERY", 10)
    steps: list[Step] = []
    finalize_attempt(told, progress=steps.append)
    finalize_attempt(quiet)
    assert _published(told) == _published(quiet)
    assert [phase for phase, _ in groupby(s.phase for s in steps)] == [
        "index", "decode", "write", "publish"
    ]  # fmt: skip
    for phase in ("decode", "write"):
        counted = [(s.done, s.total) for s in steps if s.phase == phase]
        assert counted == [(n, 45) for n in (0, 10, 20, 30, 40, 45)], phase


def _drawn(terminal: bool, steps: list[Step]) -> tuple[bool, str]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100)
    with shown(console) as report:
        for step in steps if report is not None else ():
            report(step)
    return report is not None, out.getvalue()


def test_the_display_draws_each_phase_on_a_terminal_and_nothing_elsewhere() -> None:
    steps = [
        Step("index"),
        Step("decode", 0, 45),
        Step("decode", 20, 45),
        Step("decode", 45, 45),
        Step("write", 30, 45),
        Step("publish"),
    ]
    drawn, text = _drawn(True, steps)
    assert drawn
    for expected in ("indexing the tape", "20/45 calls", "45/45 calls", "writing calls.jsonl"):
        assert expected in text, expected
    assert "publishing the manifest" in text
    drawn, text = _drawn(False, steps)
    assert not drawn and text == ""


def test_roller_finalize_off_a_terminal_prints_its_result_alone(tmp_path: Path) -> None:
    paths = _synthetic(tmp_path)
    result = CliRunner().invoke(cli, ["finalize", str(paths.root)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"finalized {paths.root}: 45 calls, 315 relations, capture complete"
    ]
