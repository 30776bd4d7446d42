"""Reading a tasks file (pure) and the run's task snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roller.capture.layout import RunPaths
from roller.collect.tasks import (
    Task,
    check_for_harness,
    parse_tasks,
    read_snapshot,
    refuse,
    snapshot_task,
)
from roller.errors import UsageError
from roller.harnesses import adapter_for


def test_good_lines_become_tasks_and_blank_lines_are_skipped() -> None:
    data = (
        b'{"id": "a", "prompt": "one"}\n\n   \n'
        b'{"id": "b", "turns": ["x", "y"], "model": "m", "options": {"k": "v"}, "files": "d"}\n'
    )
    tasks, problems = parse_tasks(data)
    assert problems == []
    assert tasks == [
        Task("a", ("one",), line=1),
        Task("b", ("x", "y"), files="d", model="m", options={"k": "v"}, line=4),
    ]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("[1, 2]", "not a JSON object"),
        ('{"id": 7, "prompt": "x"}', '"id" must be a string'),
        ('{"id": "a", "prompt": ""}', '"prompt" must be a non-empty string'),
        ('{"id": "a", "turns": []}', '"turns" must be a non-empty list of strings'),
        ('{"id": "a", "turns": ["x", " "]}', '"turns" must hold non-empty strings only'),
        ('{"id": "a", "prompt": "x", "model": ""}', '"model" must be a non-empty string'),
        ('{"id": "a", "prompt": "x", "options": {"k": 1}}', '"options" must be an object'),
        ('{"id": "a", "prompt": "x", "files": 3}', '"files" must be a folder path (a string)'),
        ('{"id": ".", "prompt": "x"}', "invalid sample id '.'"),
    ],
)  # fmt: skip
def test_each_bad_line_says_why(line: str, reason: str) -> None:
    tasks, problems = parse_tasks(f'{{"id": "ok", "prompt": "x"}}\n{line}\n'.encode())
    assert [t.id for t in tasks] == ["ok"]
    assert [p.line for p in problems] == [2]
    assert problems[0].reason.startswith(reason), problems[0].reason


def test_the_harness_checks_turns_and_options() -> None:
    tasks, _ = parse_tasks(
        b'{"id": "a", "turns": ["x", "y"]}\n{"id": "b", "prompt": "x", "options": {"nope": "1"}}\n'
    )
    problems = check_for_harness(tasks, adapter_for("pi"), {})
    assert [p.line for p in problems] == [1, 2]
    assert "cannot resume a conversation" in problems[0].reason
    assert "nope" in problems[1].reason
    assert check_for_harness(tasks[:1], adapter_for("claude-code"), {}) == []


def test_one_refusal_lists_every_bad_line() -> None:
    _, problems = parse_tasks(b"{\n" * 25)
    with pytest.raises(UsageError) as refused:
        refuse("--tasks t.jsonl", problems)
    text = str(refused.value)
    assert text.startswith("--tasks t.jsonl: 25 bad line(s), nothing was run:")
    assert "line 20: not JSON" in text and "line 21" not in text and "… and 5 more" in text


def test_prompt_tasks_are_appended_to_the_snapshot_once(tmp_path: Path) -> None:
    run = RunPaths(tmp_path)
    first = Task("s1", ("hello",), model="m")
    snapshot_task(run, first)
    snapshot_task(run, first)
    snapshot_task(run, Task("s2", ()))  # a command-only task (generic) has no prompt
    lines = [json.loads(x) for x in run.tasks_snapshot.read_text().splitlines()]
    assert lines == [{"id": "s1", "prompt": "hello", "model": "m"}, {"id": "s2"}]
    assert [t.id for t in read_snapshot(run)] == ["s1", "s2"]


def test_a_run_without_a_snapshot_cannot_be_resumed(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="has no task snapshot"):
        read_snapshot(RunPaths(tmp_path))
