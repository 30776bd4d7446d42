"""Finalize tells a reporter where it is, and the long commands draw it on a terminal only.

A synthetic attempt (45 calls, three conversations taking turns) is finalized with a
reporter: its phases come in order (index, decode, write, publish), each counted phase
from 0 to every call, every `EVERY` calls, and the bytes published are those of a
finalize without one. The commands' bar (`roller.cli.bar`) draws each phase and its
counts on a terminal (a rich console forced to be one), nothing elsewhere, and nothing
when the command writes its result on a stdout that is a terminal too. `roller
finalize`, `roller validate` and `roller export calls` through click's runner (not a
terminal) print their own output alone.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from itertools import groupby
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from tests.support.tapes import conversations_tape, inputs

from roller.capture.layout import AttemptPaths
from roller.cli.bar import shown_on
from roller.cli.finalize import drawn
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


_STEPS = [
    Step("index"),
    Step("decode", 0, 45),
    Step("decode", 20, 45),
    Step("decode", 45, 45),
    Step("write", 30, 45),
    Step("publish"),
]


def _drawn(terminal: bool, beside_stdout: bool = False) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100)
    with shown_on(console, beside_stdout=beside_stdout) as bar:
        report = drawn(bar)
        for step in _STEPS:
            report(step)
        bar.phase("counting")
        assert list(bar.counting(range(250))) == list(range(250))
    return out.getvalue()


def test_the_bar_draws_each_phase_on_a_terminal_and_nothing_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _drawn(True)
    for expected in (
        "indexing the tape",
        "0/45 calls",  # a phase is drawn as it starts, its last count at once
        "45/45 calls",
        "writing calls.jsonl",
        "publishing the manifest",
        "250 calls",  # counted as they passed, without a total
    ):
        assert expected in text, expected
    assert _drawn(False) == ""
    # a command writing its result on stdout draws nothing when stdout is a terminal
    monkeypatch.setattr(sys, "stdout", _Terminal())
    assert _drawn(True, beside_stdout=True) == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_commands_off_a_terminal_print_their_own_output_alone(tmp_path: Path) -> None:
    paths = _synthetic(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["finalize", str(paths.root)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"finalized {paths.root}: 45 calls, 315 relations, capture complete"
    ]
    result = runner.invoke(cli, ["validate", str(paths.root)])
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["valid", str(paths.root)]  # (rich wraps a long line)
    out = tmp_path / "calls.jsonl"
    result = runner.invoke(
        cli, ["export", "calls", str(paths.root), "--out", str(out), "--include-blocked"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["exported 45 call(s)"]
    assert len({json.loads(line)["call_id"] for line in out.read_text().splitlines()}) == 45
