"""`roller collect` with several prompts: the refusals, before anything is written.

Run in-process through the real entry point (`roller.cli.main.main`), so the exit code
is the one a user gets. None of these launch a harness.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roller.capture.layout import RunPaths
from roller.cli.main import main
from roller.collect.runs import open_sample
from roller.errors import UsageError
from roller.harnesses import adapters
from roller.harnesses.base import ResumableAdapter


def collect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(["collect", *args])
    code = exited.value.code
    return code if isinstance(code, int) else 1, capsys.readouterr().err


def test_only_claude_code_opencode_codex_and_deepseek_can_resume() -> None:
    assert {a.name for a in adapters() if isinstance(a, ResumableAdapter)} == {
        "claude-code",
        "opencode",
        "codex",
        "deepseek",
    }


@pytest.mark.parametrize("harness", ["gemini-cli", "pi", "hermes", "generic"])
def test_a_harness_that_cannot_resume_refuses_a_second_prompt(
    harness: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    command = ["--", "true"] if harness == "generic" else []
    code, err = collect(
        capsys, "--harness", harness, "--prompt", "one", "--prompt", "two",
        "--run-dir", str(run_dir), *command,
    )  # fmt: skip
    assert code == 2
    assert f"--harness {harness} cannot resume a conversation" in err and "got 2" in err
    assert "Traceback" not in err
    assert not run_dir.exists()


def _prompts_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "prompts.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read it"),
        ("one\ntwo\n", "not JSON"),
        ('{"turns": ["a"]}', "expected a JSON list of strings"),
        ("[]", "expected a JSON list of strings"),
        ('["a", 2]', "expected a JSON list of strings"),
        ('["a", "  "]', "prompt 2 is empty"),
    ],
)
def test_a_bad_prompts_file_is_refused(
    content: str | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "missing.json") if content is None else _prompts_file(tmp_path, content)
    run_dir = tmp_path / "run"
    code, err = collect(
        capsys, "--harness", "claude-code", "--prompts-file", path, "--run-dir", str(run_dir)
    )
    assert code == 2 and message in err, err
    assert not run_dir.exists()


def test_prompt_and_prompts_file_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _prompts_file(tmp_path, '["a", "b"]')
    code, err = collect(
        capsys, "--harness", "codex", "--prompt", "a", "--prompts-file", path,
        "--run-dir", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 2 and "not both" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("prompts", "which"), [(("a", " \n"), "prompt 2"), (("  ",), "--prompt")])
def test_an_empty_prompt_is_refused_before_the_run_dir_exists(
    prompts: tuple[str, ...], which: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a for p in prompts for a in ("--prompt", p)]
    code, err = collect(capsys, "--harness", "opencode", *args, "--run-dir", str(tmp_path / "r"))
    assert code == 2 and f"{which} is empty" in err
    assert not (tmp_path / "r").exists()


def test_a_sample_keeps_its_turns_and_refuses_other_ones(tmp_path: Path) -> None:
    sample = RunPaths(tmp_path).sample("s1")
    info = open_sample(sample, "one", None, ["two", "three"])
    assert (info.prompt, info.follow_up_prompts) == ("one", ["two", "three"])
    assert json.loads(sample.sample_json.read_text())["follow_up_prompts"] == ["two", "three"]
    assert open_sample(sample, "one", None, ["two", "three"]) == info  # the same task again
    for follow_ups in (["two"], [], ["three", "two"]):
        with pytest.raises(UsageError, match="different task"):
            open_sample(sample, "one", None, follow_ups)


def test_a_single_prompt_sample_is_written_as_before(tmp_path: Path) -> None:
    sample = RunPaths(tmp_path).sample("s1")
    open_sample(sample, "one", None, [])
    assert set(json.loads(sample.sample_json.read_text())) == {
        "schema", "sample_id", "prompt", "command", "created_at",
    }  # fmt: skip
