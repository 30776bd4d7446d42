"""Gemini CLI's telemetry outfile parser, over the real untrimmed file and damaged copies.

Expected values come from elsewhere than the parser: the response ids from the proxy's
tape of the same run, the record counts from a plain text search of the file.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from roller.harnesses.base import NativeProblem
from roller.harnesses.gemini_cli.telemetry import parse_telemetry

from .fixture_capture import fixture_dir, tape_of


def _full_text() -> str:
    return gzip.decompress(
        (fixture_dir("gemini-cli", "parallel") / "telemetry.full.log.gz").read_bytes()
    ).decode()


def test_real_outfile_yields_every_api_response_with_the_tapes_response_ids(tmp_path: Path) -> None:
    text = _full_text()
    problems: list[NativeProblem] = []
    telemetry = parse_telemetry(text, "telemetry.log", problems)
    assert problems == []
    # the file also holds spans and metric batches; only log records count
    assert '"_spanContext"' in text and '"scopeMetrics"' in text
    assert len(telemetry.responses) == text.count('"event.name": "gemini_cli.api_response"')
    tape = tape_of("gemini-cli", "parallel", tmp_path)
    on_tape = {
        json.loads(m)
        for ex in tape.exchanges
        for m in re.findall(rb'"responseId":\s*("[^"]+")', ex.body)
    }
    logged = {rid for r in telemetry.responses for rid in r.response_ids}
    assert logged == on_tape
    assert all(len(r.response_ids) == 1 for r in telemetry.responses)


def test_prompt_ids_and_roles_are_read_as_written() -> None:
    telemetry = parse_telemetry(_full_text(), "telemetry.log", [])
    roles = sorted({r.role for r in telemetry.responses if r.role})
    assert roles == ["main", "subagent", "utility_router"]
    subagent_prompts = {r.prompt_id for r in telemetry.responses if r.role == "subagent"}
    assert all(re.fullmatch(r"[0-9a-f-]{36}#\d+", p) for p in subagent_prompts)
    assert len({p.split("#")[0] for p in subagent_prompts}) == 2  # two children


def test_main_agent_tool_call_ids_are_logged_with_the_calls_but_not_a_subagents() -> None:
    telemetry = parse_telemetry(_full_text(), "telemetry.log", [])
    main_calls = [c for r in telemetry.responses if r.role == "main" for c in r.function_calls]
    assert [c.name for c in main_calls] == ["invoke_agent", "invoke_agent"]
    assert all(c.id and c.id.startswith("invoke_agent__invoke_agent_") for c in main_calls)
    child_calls = [c for r in telemetry.responses if r.role == "subagent" for c in r.function_calls]
    assert [c.name for c in child_calls] == ["complete_task", "complete_task"]
    assert all(c.id is None for c in child_calls)


def test_agent_finish_records() -> None:
    telemetry = parse_telemetry(_full_text(), "telemetry.log", [])
    assert sorted(f.terminate_reason for f in telemetry.finishes) == ["GOAL", "GOAL"]
    assert {f.agent_name for f in telemetry.finishes} == {"generalist"}


def test_torn_tail_keeps_what_came_before_and_is_a_problem() -> None:
    text = _full_text()
    cut = text.rindex('"event.name": "gemini_cli.api_response"')
    problems: list[NativeProblem] = []
    telemetry = parse_telemetry(text[:cut], "telemetry.log", problems)
    whole = parse_telemetry(text, "telemetry.log", [])
    assert len(telemetry.responses) == len(whole.responses) - 1
    ((code, message, where),) = [(p.code, p.message, p.where) for p in problems]
    assert (code, where) == ("not_json", "telemetry.log")
    assert message.startswith("unreadable from character ")


def test_record_without_response_text_is_a_problem_not_a_guess() -> None:
    record = {
        "attributes": {
            "event.name": "gemini_cli.api_response",
            "prompt_id": "p-1",
            "role": "main",
        }
    }
    problems: list[NativeProblem] = []
    telemetry = parse_telemetry(json.dumps(record, indent=2), "t.log", problems)
    assert telemetry.responses == ()
    (problem,) = problems
    assert (problem.code, problem.where) == ("missing_field", "t.log")
    assert "no response_text" in problem.message


def test_non_streamed_response_text_is_one_object() -> None:
    text = json.dumps({"candidates": [], "responseId": "r-1"})
    record = {
        "attributes": {
            "event.name": "gemini_cli.api_response",
            "prompt_id": "p-1",
            "role": "utility_router",
            "response_text": text,
        }
    }
    telemetry = parse_telemetry(json.dumps(record), "t.log", [])
    assert telemetry.responses[0].response_ids == ("r-1",)
    assert telemetry.responses[0].function_calls == ()
