"""`roller export calls|trajectory|otel --out` validates a large capture in a child
process beside the export (`roller.cli.side_validation`): the same output and the same refusals as
validating first, the output written only once every attempt is valid, nothing left
behind. `ROLLER_SIDE_VALIDATION_BYTES` sets how large a capture must be: 0 takes every
capture beside, a huge value none."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from roller.capture.layout import find_attempts
from roller.cli import export as export_cli
from roller.cli import side_validation
from roller.cli.side_validation import BYTES_VARIABLE, SIDE_VALIDATION_BYTES, beside
from tests.export.real_captures import RealCaptures, first_agent_last
from tests.support.captures import roller

BESIDE = {**os.environ, BYTES_VARIABLE: "0"}
FIRST = {**os.environ, BYTES_VARIABLE: str(1 << 60)}


# each command that validates beside, as (command, its options)
COMMANDS = {
    "calls-roller": ("calls", "--format", "roller", "--include-blocked"),
    "calls-openai-messages": ("calls", "--format", "openai-messages", "--include-blocked"),
    "calls-parquet": ("calls", "--format", "parquet", "--include-blocked"),
    "trajectory-roller": ("trajectory", "--include-blocked"),
    "trajectory-parquet": ("trajectory", "--format", "parquet", "--include-blocked"),
    "otel": ("otel", "--content"),
}


def _export(
    path: Path, fmt: str, out: Path, env: dict[str, str], command: str = ""
) -> tuple[int, str, bytes]:
    name, *options = COMMANDS[command or f"calls-{fmt}"]
    result = roller("export", name, str(path), *options, "--out", str(out), env=env)
    written = out.read_bytes() if out.exists() else b""
    return result.returncode, result.stderr.strip().splitlines()[-1], written


def _left_behind(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".partial")]


@pytest.mark.parametrize(
    ("harness", "name", "command"),
    [
        *(("claude-code", "parallel", command) for command in COMMANDS),
        ("codex", "v2-fork", "calls-openai-messages"),
        ("gemini-cli", "parallel", "calls-openai-messages"),
    ],
)
def test_a_capture_exports_the_same_beside_as_first(
    real_captures: RealCaptures, tmp_path: Path, harness: str, name: str, command: str
) -> None:
    run = real_captures.run(harness, name)
    beside_ = _export(run, "", tmp_path / "beside.out", BESIDE, command)
    first = _export(run, "", tmp_path / "first.out", FIRST, command)
    assert beside_[0] == 0, beside_[1]
    assert beside_ == first
    assert beside_[1].startswith("exported ") and len(beside_[2]) > 1_000
    assert _left_behind(tmp_path) == []


def _tampered(real_captures: RealCaptures, dest: Path, how: str) -> Path:
    run = real_captures.run("claude-code", "parallel")
    shutil.copytree(run, dest)
    (attempt,) = find_attempts(dest)
    data = bytearray(attempt.calls.read_bytes())
    if how == "text":  # a byte of a string changed: every line still parses
        at = data.index(b'"text":"') + len(b'"text":"')
        data[at] = ord("Z") if data[at] != ord("Z") else ord("Y")
    else:  # a line cut short: the export cannot read it
        at = data.index(b"\n") // 2
        data[at:] = b"\n"
    attempt.calls.write_bytes(bytes(data))
    return dest


@pytest.mark.parametrize(
    ("how", "command"),
    [
        ("text", "calls-openai-messages"),
        ("cut", "calls-openai-messages"),
        ("cut", "trajectory-roller"),
        ("cut", "otel"),
    ],
)
def test_an_invalid_capture_is_refused_and_its_output_untouched(
    real_captures: RealCaptures, tmp_path: Path, how: str, command: str
) -> None:
    run = _tampered(real_captures, tmp_path / "run", how)
    out = tmp_path / "out" / "calls.jsonl"
    out.parent.mkdir()
    for env in (BESIDE, FIRST):
        out.write_bytes(b"what was there before\n")
        code, said, written = _export(run, "", out, env, command)
        assert code == 1, said  # IntegrityError's exit status
        assert "does not validate (hash_mismatch: calls.jsonl" in said, said
        assert said.endswith("run `roller validate`"), said
        assert written == b"what was there before\n"
        assert _left_behind(out.parent) == []


def test_calls_out_of_sequence_are_read_twice_beside(
    real_captures: RealCaptures, tmp_path: Path
) -> None:
    moved = first_agent_last(real_captures["claude-code", "parallel"], tmp_path / "moved")
    assert moved is not None
    beside_ = _export(moved, "openai-messages", tmp_path / "beside.jsonl", BESIDE)
    first = _export(moved, "openai-messages", tmp_path / "first.jsonl", FIRST)
    assert beside_[0] == 0, beside_[1]
    assert beside_ == first


def test_only_a_large_capture_exported_to_a_file_is_validated_beside(
    real_captures: RealCaptures, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [real_captures.run("claude-code", name) for name in ("parallel", "killed-child")]
    attempts = [a for run in runs for a in find_attempts(run)]
    held = sum(f.stat().st_size for a in attempts for f in (a.calls, a.relations))
    assert 0 < held < SIDE_VALIDATION_BYTES  # the checked-in captures are small
    monkeypatch.delenv(BYTES_VARIABLE, raising=False)
    assert not beside(attempts, tmp_path / "out")
    monkeypatch.setenv(BYTES_VARIABLE, str(held))
    assert beside(attempts, tmp_path / "out")
    assert not beside(attempts, None)  # stdout: nothing to withhold, validated first
    monkeypatch.setenv(BYTES_VARIABLE, str(held + 1))
    assert not beside(attempts, tmp_path / "out")


def test_the_child_validates_while_the_export_runs(
    real_captures: RealCaptures, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[Path] = []

    class Counted(side_validation.SideValidation):
        def __init__(self, path: Path) -> None:
            started.append(path)
            super().__init__(path)

    monkeypatch.setattr(export_cli, "SideValidation", Counted)
    run = real_captures.run("claude-code", "parallel")
    out = tmp_path / "calls.jsonl"
    args = ["calls", str(run), "--format", "openai-messages", "--out", str(out)]
    monkeypatch.setenv(BYTES_VARIABLE, "0")
    result = CliRunner().invoke(export_cli.command, args)
    assert result.exit_code == 0, result.output
    assert started == [run]
    assert out.read_bytes() == _export(run, "openai-messages", tmp_path / "first", FIRST)[2]
    monkeypatch.delenv(BYTES_VARIABLE)
    assert CliRunner().invoke(export_cli.command, args).exit_code == 0
    assert started == [run]  # a small capture: validated first, in process
