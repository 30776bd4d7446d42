"""Gemini CLI's local telemetry log: the records that name each API response's owner.

Checked against Gemini CLI 0.61.0 (`@google/gemini-cli`), runs on 2026-11-29 against
`roller mock-model`; real files under `tests/data/harnesses/gemini-cli/`.

roller launches the CLI with `telemetry: {enabled: true, target: "local", outfile: F,
logPrompts: true}` and usage statistics off: OpenTelemetry then writes only to the file
`F` (no OTLP exporter, no Clearcut; measured: no connection but the model base URL).
`F` is a stream of pretty-printed JSON values, one after the other (spans, log records,
metric batches, in export order; a process killed mid-export leaves a torn tail).

The only values read are log records (`attributes["event.name"]`):
- `gemini_cli.api_response`, one per completed model call, with
  `prompt_id` — the id of the agent turn the call served: the main session id (or
  `<sessionId>########<n>`) for the root agent, `<agentId>#<turn>` for a subagent,
  whose `agentId` is also its chat file's `sessionId`; the model router's and other
  utility calls carry the prompt id of the turn they serve —,
  `role` (`main`, `subagent`, `utility_router`, …) and, because of `logPrompts`,
  `response_text`: the JSON of the response (one object for `generateContent`, a list
  of chunks for a stream) with its `responseId`. For the main agent the CLI has already
  written the tool-call ids it minted into the `functionCall` parts it logs
  (`<tool>__<raw id>`); a subagent's parts carry none (the executor names them
  `<prompt_id>-<index>`).
- `gemini_cli.agent.finish`: `agent_id`, `agent_name`, `terminate_reason` (`GOAL`, …).

Pure: bytes in, values out; every unreadable part is a `NativeProblem`, never an error:
`not_json` (a torn or corrupt value ends the stream), `missing_field` (an api_response
without `prompt_id` or `response_text`, an agent.finish without its ids).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from roller.harnesses.base import NativeProblem

API_RESPONSE = "gemini_cli.api_response"
AGENT_FINISH = "gemini_cli.agent.finish"


@dataclass(frozen=True)
class FunctionCall:
    """One `functionCall` part of a logged response, in output order."""

    name: str
    id: str | None


@dataclass(frozen=True)
class ApiResponse:
    """One `gemini_cli.api_response` record."""

    prompt_id: str
    role: str | None
    response_ids: tuple[str, ...]  # distinct `responseId`s in its response_text
    function_calls: tuple[FunctionCall, ...]


@dataclass(frozen=True)
class AgentFinish:
    agent_id: str
    agent_name: str | None
    terminate_reason: str


@dataclass(frozen=True)
class Telemetry:
    responses: tuple[ApiResponse, ...]
    finishes: tuple[AgentFinish, ...]


def _values(text: str, name: str, problems: list[NativeProblem]) -> Iterator[Any]:
    """The JSON values of a concatenated stream; a torn or corrupt tail ends it."""
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            message = f"unreadable from character {pos} ({exc.msg})"
            problems.append(NativeProblem("not_json", message, name))
            return
        yield value


def _chunks(response_text: Any) -> list[dict[str, Any]]:
    try:
        parsed = json.loads(response_text) if isinstance(response_text, str) else None
    except json.JSONDecodeError:
        return []
    items = parsed if isinstance(parsed, list) else [parsed]
    return [c for c in items if isinstance(c, dict)]


def _function_calls(chunks: list[dict[str, Any]]) -> tuple[FunctionCall, ...]:
    calls: list[FunctionCall] = []
    for chunk in chunks:
        for candidate in chunk.get("candidates") or []:
            content = candidate.get("content") if isinstance(candidate, dict) else None
            parts = content.get("parts") if isinstance(content, dict) else None
            for part in parts if isinstance(parts, list) else []:
                call = part.get("functionCall") if isinstance(part, dict) else None
                if isinstance(call, dict) and isinstance(call.get("name"), str):
                    cid = call.get("id")
                    calls.append(FunctionCall(call["name"], cid if isinstance(cid, str) else None))
    return tuple(calls)


def _response(
    attrs: dict[str, Any], name: str, problems: list[NativeProblem]
) -> ApiResponse | None:
    prompt_id = attrs.get("prompt_id")
    if not isinstance(prompt_id, str) or not prompt_id:
        message = "an api_response record has no prompt_id"
        problems.append(NativeProblem("missing_field", message, name))
        return None
    text = attrs.get("response_text")
    if not isinstance(text, str):
        message = (
            f"the api_response for prompt {prompt_id} has no response_text "
            "(telemetry.logPrompts off?)"
        )
        problems.append(NativeProblem("missing_field", message, name))
        return None
    chunks = _chunks(text)
    ids: list[str] = []
    for chunk in chunks:
        rid = chunk.get("responseId")
        if isinstance(rid, str) and rid and rid not in ids:
            ids.append(rid)
    role = attrs.get("role")
    return ApiResponse(
        prompt_id=prompt_id,
        role=role if isinstance(role, str) else None,
        response_ids=tuple(ids),
        function_calls=_function_calls(chunks),
    )


def parse_telemetry(text: str, name: str, problems: list[NativeProblem]) -> Telemetry:
    """The api_response and agent.finish records of a telemetry outfile's text."""
    responses: list[ApiResponse] = []
    finishes: list[AgentFinish] = []
    for value in _values(text, name, problems):
        attrs = value.get("attributes") if isinstance(value, dict) else None
        if not isinstance(attrs, dict):
            continue
        event = attrs.get("event.name")
        if event == API_RESPONSE:
            response = _response(attrs, name, problems)
            if response is not None:
                responses.append(response)
        elif event == AGENT_FINISH:
            agent_id, reason = attrs.get("agent_id"), attrs.get("terminate_reason")
            if isinstance(agent_id, str) and isinstance(reason, str):
                agent_name = attrs.get("agent_name")
                finishes.append(
                    AgentFinish(
                        agent_id, agent_name if isinstance(agent_name, str) else None, reason
                    )
                )
            else:
                message = "an agent.finish record lacks agent_id/terminate_reason"
                problems.append(NativeProblem("missing_field", message, name))
    return Telemetry(tuple(responses), tuple(finishes))
