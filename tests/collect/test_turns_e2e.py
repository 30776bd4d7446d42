"""Multi-turn collection with the real binaries, end to end through `roller collect`.

Claude Code, OpenCode, Codex and DeepSeek Harness (`sdk` profile) each run two turns
against the mock model (`spawn-one`, so the native logs hold a child beside the root:
the resumed conversation must be the root's, confirmed from those logs). Checked: one
capture; both turns recorded; turn 2 resumed the root the native logs name and its calls
belong to that same root participant; turn 2's first request carries turn 1's prompt
and answer (the conversation really resumed); the capture validates. And Claude Code
with a scenario whose shell command writes a second main transcript: the root is no
longer confirmed, so turn 2 does not run and the capture records why.

The runs are started together once per session (a few seconds each against the mock);
the binaries are installed by `roller harness install` when missing, never skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.support.captures import REPO, only_attempt, roller
from tests.support.e2e import installed

from roller.capture.models import CallRecord
from roller.capture.reader import Capture, read_attempt
from roller.harnesses import adapters
from roller.harnesses.base import ResumableAdapter

pytestmark = pytest.mark.e2e

FIRST = "ROLLER-TURN-ONE: use one subagent, then answer."
SECOND = "ROLLER-TURN-TWO: say it once more."
# Every harness that can resume (the registry decides; RESUME_FLAG must name each).
HARNESSES = tuple(a.name for a in adapters() if isinstance(a, ResumableAdapter))
SECOND_ROOT = REPO / "tests" / "data" / "turns" / "second-main-transcript.toml"
# What each harness's resume flag is followed by (checked in the turn's launch.json).
RESUME_FLAG = {
    "claude-code": "--resume",
    "opencode": "--session",
    "codex": "resume",
    "deepseek": "--resume",
}
# What a harness needs to delegate against the mock: Codex a non-catalog model, DeepSeek
# the profile with subagent tools.
EXTRA = {"codex": ("--model", "mock-model"), "deepseek": ("--option", "profile=sdk")}


@dataclass(frozen=True)
class Run:
    run_dir: Path
    done: subprocess.CompletedProcess[str]

    @property
    def capture(self) -> Capture:
        return only_attempt(self.run_dir)


def _args(harness: str, run_dir: Path, api_base: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "roller", "collect", "--harness", harness, *EXTRA.get(harness, ()),
        "--api-base", api_base, "--capture-calls", "--capture-debug", "full",
        "--run-dir", str(run_dir), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    for name in HARNESSES:
        installed(name)
    base = tmp_path_factory.mktemp("turns")
    first_file = base / "prompts.json"
    first_file.write_text(json.dumps([FIRST, SECOND]))
    wanted = {
        name: _args(name, base / name, "mock:spawn-one", "--prompt", FIRST, "--prompt", SECOND)
        for name in HARNESSES
    }
    # The same two turns given as a JSON file; the second root stops after turn 1.
    wanted["second-root"] = _args(
        "claude-code", base / "second-root", f"mock:{SECOND_ROOT}",
        "--prompts-file", str(first_file),
    )  # fmt: skip
    procs = {
        key: subprocess.Popen(
            argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for key, argv in wanted.items()
    }
    out: dict[str, Run] = {}
    try:
        for key, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=400)
            done = subprocess.CompletedProcess(wanted[key], proc.returncode, stdout, stderr)
            out[key] = Run(Path(wanted[key][wanted[key].index("--run-dir") + 1]), done)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    yield out


def _texts(value: Any) -> list[str]:
    """Every text of a message's content (a string, or parts with `text`)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def _conversation(call: CallRecord) -> list[tuple[str, str]]:
    """(role, text) of each message the request sent, for the three protocols here."""
    items = call.context.get("messages") or call.context.get("input") or []
    return [
        (item.get("role", ""), text)
        for item in items
        if isinstance(item, dict)
        for text in _texts(item.get("content"))
    ]


def _answer(call: CallRecord) -> str:
    """The text a call's output answered with."""
    out = call.output or {}
    if "choices" in out:  # Chat Completions
        return str(out["choices"][0]["message"]["content"])
    if "output" in out:  # Responses
        return "".join(
            t for item in out["output"] if item.get("type") == "message"
            for t in _texts(item.get("content"))
        )  # fmt: skip
    return "".join(_texts(out.get("content")))  # Anthropic Messages


@pytest.mark.parametrize("harness", HARNESSES)
def test_two_turns_make_one_capture_whose_second_turn_resumes_the_root(
    runs: dict[str, Run], harness: str
) -> None:
    run = runs[harness]
    assert run.done.returncode == 0, run.done.stderr
    capture = run.capture
    manifest = capture.manifest
    assert (manifest.execution_status, manifest.capture_status) == ("completed", "complete")
    (root,) = [p for p in manifest.participants if p.role == "root"]
    assert [p.role for p in manifest.participants].count("child") == 1
    assert manifest.turns is not None
    one, two = manifest.turns
    assert [(t.turn, t.execution_status, t.exit_code) for t in (one, two)] == [
        (1, "completed", 0),
        (2, "completed", 0),
    ]
    # turn 2 resumed the root the native logs name, never a child
    assert one.resumed_root is None
    assert two.resumed_root is not None and two.resumed_root in root.native_ids.values()
    # every call is in one turn; each turn's root calls belong to the same participant
    calls = {c.call_id: c for c in capture.calls}
    assert sorted(one.call_ids + two.call_ids) == sorted(calls)
    generation = [cid for cid in two.call_ids if calls[cid].kind == "generation"]
    assert generation and all(
        calls[cid].participant_id == root.participant_id for cid in generation
    )
    assert any(calls[cid].participant_id == root.participant_id for cid in one.call_ids)
    # the conversation really resumed: turn 2's first root request carries turn 1
    last_of_one = [calls[cid] for cid in one.call_ids if cid in root.call_ids][-1]
    sent = _conversation(calls[generation[0]])
    assert ("user", FIRST) in sent and ("user", SECOND) in sent
    assert sent.index(("user", FIRST)) < sent.index(("user", SECOND))
    assert ("assistant", _answer(last_of_one)) in sent
    # each turn's own harness run is kept, and turn 2 named the root explicitly
    plans = [
        json.loads((capture.paths.harness_output / f"turn-000{n}" / "launch.json").read_text())
        for n in (1, 2)
    ]
    assert RESUME_FLAG[harness] not in plans[0]["argv"]
    flag = plans[1]["argv"].index(RESUME_FLAG[harness])
    assert two.resumed_root in plans[1]["argv"][flag:]
    assert not {"--continue", "--last", "-c"} & set(plans[1]["argv"])
    sample = json.loads((run.run_dir / "samples" / "sample-0001" / "sample.json").read_text())
    assert (sample["prompt"], sample["follow_up_prompts"]) == (FIRST, [SECOND])
    validated = roller("validate", str(run.run_dir))
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_an_unconfirmed_root_stops_before_the_next_turn_and_keeps_what_ran(
    runs: dict[str, Run],
) -> None:
    run = runs["second-root"]
    assert run.done.returncode == 1, run.done.stderr
    assert "turn 2: not_run" in " ".join(run.done.stderr.split())
    manifest = run.capture.manifest
    assert manifest.turns is not None
    one, two = manifest.turns
    assert (one.execution_status, one.exit_code) == ("completed", 0) and one.call_ids
    assert (two.execution_status, two.call_ids, two.resumed_root) == ("not_run", [], None)
    assert two.problem is not None and "not confirmed" in two.problem
    assert "expected one main transcript" in two.problem
    assert (manifest.execution_status, manifest.capture_status) == ("failed", "partial")
    assert "turn_not_run" in {e.code for e in manifest.capture_errors}
    assert sorted(c.call_id for c in run.capture.calls) == sorted(one.call_ids)
    assert not (run.capture.paths.harness_output / "turn-0002").exists()
    validated = roller("validate", str(run.run_dir))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    # the published capture reads back with its turns
    assert read_attempt(run.capture.paths).manifest.turns == manifest.turns
