"""Anthropic Messages codec: hand-written streams in the shapes Claude Code sees, error
and truncated bodies, and the tool references of requests and outputs."""

from __future__ import annotations

import json
from typing import Any

from roller.wire.anthropic import CODEC
from roller.wire.endpoints import endpoint_for
from roller.wire.sse import encode_event
from roller.wire.types import SSEEvent, ToolCall, ToolResult, Usage


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(encode_event(SSEEvent(json.dumps(e), event=e["type"])) for e in events)


START = {
    "type": "message_start",
    "message": {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-opus-5-5",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 2000,
            "output_tokens": 1,
            "service_tier": "standard",
        },
    },
}


def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


AGENT_CALL = [
    start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    delta(0, {"type": "thinking_delta", "thinking": "Need a "}),
    delta(0, {"type": "thinking_delta", "thinking": "subagent."}),
    delta(0, {"type": "signature_delta", "signature": "EqQBCkYIBx"}),
    stop(0),
    {"type": "ping"},
    start(1, {"type": "text", "text": ""}),
    delta(1, {"type": "text_delta", "text": "Launching "}),
    delta(1, {"type": "text_delta", "text": "an agent."}),
    delta(
        1,
        {
            "type": "citations_delta",
            "citation": {"type": "char_location", "cited_text": "x", "document_index": 0},
        },
    ),
    stop(1),
    start(2, {"type": "tool_use", "id": "toolu_01A", "name": "Agent", "input": {}}),
    delta(2, {"type": "input_json_delta", "partial_json": ""}),
    delta(2, {"type": "input_json_delta", "partial_json": '{"description": "say hi", '}),
    delta(2, {"type": "input_json_delta", "partial_json": '"prompt": "Say hi ✓"}'}),
    stop(2),
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 87, "cache_read_input_tokens": None},
    },
    {"type": "message_stop"},
]

EXPECTED_MESSAGE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-5-5",
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 12,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 2000,  # a null in message_delta keeps the start value
        "output_tokens": 87,
        "service_tier": "standard",
    },
    "content": [
        {"type": "thinking", "thinking": "Need a subagent.", "signature": "EqQBCkYIBx"},
        {
            "type": "text",
            "text": "Launching an agent.",
            "citations": [{"type": "char_location", "cited_text": "x", "document_index": 0}],
        },
        {
            "type": "tool_use",
            "id": "toolu_01A",
            "name": "Agent",
            "input": {"description": "say hi", "prompt": "Say hi ✓"},
        },
    ],
}


def test_claude_code_turn_reassembles_to_the_message_shape() -> None:
    result = CODEC.reassemble(sse(START, *AGENT_CALL), streamed=True)
    assert result.output == EXPECTED_MESSAGE
    assert result.complete
    assert result.incomplete_reason is None
    assert result.events == len(AGENT_CALL) + 1
    assert result.problems == ()
    assert result.unmerged == ()
    assert CODEC.output_tool_calls(result.output) == [
        ToolCall(
            id="toolu_01A",
            name="Agent",
            arguments={"description": "say hi", "prompt": "Say hi ✓"},
            index=2,
        )
    ]
    assert CODEC.response_id(result.output) == "msg_01"
    assert CODEC.response_model(result.output) == "claude-opus-5-5"
    assert CODEC.finish_reason(result.output) == "tool_use"
    assert CODEC.usage(result.output) == Usage(
        input_tokens=12,
        output_tokens=87,
        cache_read_tokens=2000,
        cache_write_tokens=100,
        raw=EXPECTED_MESSAGE["usage"],  # type: ignore[arg-type]
    )
    assert not CODEC.tool_call_marker_without_identity(result.output)


def test_stream_cut_inside_tool_input_is_incomplete_with_raw_input() -> None:
    body = sse(START, *AGENT_CALL[:14])  # up to the first half of the tool input
    result = CODEC.reassemble(body, streamed=True)
    assert not result.complete
    assert result.incomplete_reason == "stream ended before message_stop (inside content block 2)"
    assert result.output is not None
    tool = result.output["content"][2]
    assert tool["input"] == '{"description": "say hi", '
    assert result.problems == (
        "content block 2 (tool_use toolu_01A): input JSON does not parse (Expecting property"
        " name enclosed in double quotes: line 1 column 27 (char 26), block not finished);"
        " kept the raw string",
    )
    assert result.output["stop_reason"] is None


def test_stream_cut_inside_an_event_names_the_discarded_tail() -> None:
    body = sse(START, *AGENT_CALL)
    result = CODEC.reassemble(body[:-5], streamed=True)  # message_stop's data line cut
    assert not result.complete
    assert result.incomplete_reason == (
        "stream ended before message_stop; body ended inside an unterminated SSE event,"
        ' discarded: \'event: message_stop\\ndata: {"type": "message_sto\''
    )


def test_error_event_mid_stream() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result = CODEC.reassemble(sse(START, *AGENT_CALL[:8], error), streamed=True)
    assert not result.complete
    assert result.incomplete_reason == "error event: overloaded_error: Overloaded"
    assert result.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert result.output is not None
    assert result.output["content"][1]["text"] == "Launching "


def test_unknown_event_and_delta_types_are_kept_not_dropped() -> None:
    future_event = {"type": "message_annotation", "payload": {"x": 1}}
    future_delta = delta(0, {"type": "sparkle_delta", "sparkle": "✨"})
    body = sse(
        START,
        start(0, {"type": "sparkle", "sparkle": ""}),
        future_delta,
        stop(0),
        future_event,
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "message_stop"},
    )
    result = CODEC.reassemble(body, streamed=True)
    assert result.complete
    assert result.output is not None
    assert result.output["content"] == [{"type": "sparkle", "sparkle": ""}]
    assert result.unmerged == (
        {
            "event": "content_block_delta",
            "data": future_delta,
            "why": "sparkle_delta delta does not fit a sparkle block",
        },
        {
            "event": "message_annotation",
            "data": future_event,
            "why": "unknown event type 'message_annotation'",
        },
    )
    assert len(result.problems) == 2


def test_tool_input_that_never_parses_is_kept_raw_and_reported() -> None:
    body = sse(
        START,
        start(0, {"type": "tool_use", "id": "toolu_X", "name": "Bash", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"command": ls}'}),
        stop(0),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    )
    result = CODEC.reassemble(body, streamed=True)
    assert result.complete
    assert result.output is not None
    assert result.output["content"][0]["input"] == '{"command": ls}'
    assert len(result.problems) == 1
    assert "input JSON does not parse" in result.problems[0]
    assert CODEC.output_tool_calls(result.output)[0].arguments == '{"command": ls}'


def test_non_streamed_message_body() -> None:
    body = json.dumps(EXPECTED_MESSAGE).encode()
    result = CODEC.reassemble(body, streamed=False)
    assert result.output == EXPECTED_MESSAGE
    assert result.complete
    assert result.events == 0


def test_http_error_body() -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    result = CODEC.reassemble(body, streamed=True, status=529)
    assert result.output is None
    assert not result.complete
    assert result.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert result.incomplete_reason == "HTTP 529: overloaded_error: Overloaded"


def test_error_object_in_a_200_body() -> None:
    body = b'{"type":"error","error":{"type":"api_error","message":"boom"}}'
    result = CODEC.reassemble(body, streamed=False)
    assert result.output is None
    assert result.error == {"type": "api_error", "message": "boom"}
    assert result.incomplete_reason == "error body: api_error: boom"


def test_garbage_and_empty_bodies() -> None:
    result = CODEC.reassemble(b"<html>bad gateway</html>", streamed=False)
    assert result.output is None
    assert not result.complete
    assert result.incomplete_reason is not None
    assert result.incomplete_reason.startswith("body is not JSON")
    assert CODEC.reassemble(b"", streamed=True).incomplete_reason == "empty body"
    assert CODEC.reassemble(b"", streamed=True, status=502).incomplete_reason == (
        "empty body (HTTP 502)"
    )
    html = CODEC.reassemble(b"<html>", streamed=True, status=502)
    assert html.incomplete_reason == "HTTP 502 with a non-JSON body: '<html>'"


def test_streamed_request_answered_with_json() -> None:
    result = CODEC.reassemble(json.dumps(EXPECTED_MESSAGE).encode(), streamed=True)
    assert result.output == EXPECTED_MESSAGE
    assert result.complete
    assert result.problems == ("streamed response carried one JSON document, not SSE",)


def test_events_before_message_start_are_kept() -> None:
    result = CODEC.reassemble(sse(*AGENT_CALL[:2]), streamed=True)
    assert result.output is None
    assert result.incomplete_reason == "stream ended before message_start"
    assert [u["why"] for u in result.unmerged] == [
        "content_block_start before message_start",
        "content_block_delta before message_start",
    ]


def test_marker_without_identity() -> None:
    output: dict[str, Any] = {
        "stop_reason": "tool_use",
        "content": [{"type": "text", "text": "calling"}],
    }
    assert CODEC.tool_call_marker_without_identity(output)
    output["content"].append({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}})
    assert not CODEC.tool_call_marker_without_identity(output)


# Claude Code request shape (harness notes): system blocks, `role: system` messages, a
# background Agent launch acknowledged in a tool_result, the notification as a text block.
REQUEST = {
    "model": "claude-opus-5-5",
    "stream": True,
    "max_tokens": 128000,
    "system": [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.8a4;"},
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
    ],
    "messages": [
        {"role": "user", "content": "Use a subagent to say hi"},
        {"role": "system", "content": "<env>linux</env>"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Launching."},
                {"type": "tool_use", "id": "toolu_01A", "name": "Agent", "input": {"prompt": "hi"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A",
                    "content": "Async agent launched successfully. agentId: a0123456789abcdef",
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Waiting."}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02B",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "line one"},
                        {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                        {"type": "text", "text": "line two"},
                    ],
                },
                {
                    "type": "text",
                    "text": "<system-reminder> [SYSTEM NOTIFICATION - NOT USER INPUT]",
                },
            ],
        },
    ],
    "tools": [{"name": "Agent", "input_schema": {}}, {"name": "Bash"}, {"type": "web_search"}],
}


def test_context_tool_references() -> None:
    assert CODEC.context_tool_calls(REQUEST) == [
        ToolCall(id="toolu_01A", name="Agent", arguments={"prompt": "hi"}, index=2)
    ]
    assert CODEC.context_tool_results(REQUEST) == [
        ToolResult(
            id="toolu_01A",
            name=None,
            text="Async agent launched successfully. agentId: a0123456789abcdef",
            message_index=3,
        ),
        ToolResult(
            id="toolu_02B", name=None, text="line one\nline two", message_index=5, is_error=True
        ),
    ]


def test_context_texts_and_offered_tools() -> None:
    assert CODEC.context_texts(REQUEST) == [
        "x-anthropic-billing-header: cc_version=2.1.332.8a4;",
        "You are Claude Code.",
        "Use a subagent to say hi",
        "<env>linux</env>",
        "Launching.",
        "Async agent launched successfully. agentId: a0123456789abcdef",
        "Waiting.",
        "line one\nline two",
        "<system-reminder> [SYSTEM NOTIFICATION - NOT USER INPUT]",
    ]
    assert CODEC.offered_tools(REQUEST) == ["Agent", "Bash"]
    endpoint = endpoint_for("POST", "/v1/messages?beta=true")
    assert CODEC.is_streaming_request(REQUEST, endpoint)
    assert CODEC.request_model(REQUEST, endpoint) == "claude-opus-5-5"


def test_request_accessors_tolerate_any_shape() -> None:
    odd: dict[str, Any] = {"messages": [1, None, {"content": 5}, {"content": [7, None]}]}
    assert CODEC.context_tool_calls(odd) == []
    assert CODEC.context_tool_results(odd) == []
    assert CODEC.context_texts(odd) == []
    assert CODEC.offered_tools({"tools": "nope"}) == []
    assert CODEC.context_texts(None) == []
    assert CODEC.usage({"usage": []}) is None
    assert CODEC.output_tool_calls({"content": "text"}) == []
