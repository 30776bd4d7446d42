"""Chat Completions codec: hand-written streams in the shapes OpenCode, Qwen Code and
Hermes see, compatible-server quirks, error and truncated bodies, tool references."""

from __future__ import annotations

import json
from typing import Any

from roller.wire.endpoints import endpoint_for
from roller.wire.openai_chat import CODEC, merge_delta
from roller.wire.sse import encode_event
from roller.wire.types import SSEEvent, ToolCall, ToolResult, Usage


def sse(*chunks: dict[str, Any] | str) -> bytes:
    return b"".join(
        encode_event(SSEEvent(c if isinstance(c, str) else json.dumps(c))) for c in chunks
    )


TOP = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1790000000,
    "model": "fake-model",
    "system_fingerprint": "fp_1",
    "service_tier": "default",
}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {**TOP, "choices": [choice], "usage": None, **extra}


USAGE = {
    "prompt_tokens": 900,
    "completion_tokens": 30,
    "total_tokens": 930,
    "prompt_tokens_details": {"cached_tokens": 512},
}

# Two parallel `task` calls (OpenCode), arguments chunked by index.
PARALLEL_TASKS: list[dict[str, Any] | str] = [
    chunk({"role": "assistant", "content": ""}, obfuscation="pad"),
    chunk({"content": "Spawning two."}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "task", "arguments": ""},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"prompt":'}}]}),
    chunk(
        {
            "tool_calls": [
                {"index": 0, "function": {"arguments": '"a"}'}},
                {
                    "index": 1,
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "task", "arguments": '{"prompt":"b"}'},
                },
            ]
        }
    ),
    chunk({}, "tool_calls"),
    {**TOP, "choices": [], "usage": USAGE},
    "[DONE]",
]

EXPECTED = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1790000000,
    "model": "fake-model",
    "system_fingerprint": "fp_1",
    "service_tier": "default",
    "usage": USAGE,
    "choices": [
        {
            "index": 0,
            "logprobs": None,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Spawning two.",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "task", "arguments": '{"prompt":"a"}'},
                    },
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "task", "arguments": '{"prompt":"b"}'},
                    },
                ],
            },
        }
    ],
}


def test_parallel_tool_calls_reassemble() -> None:
    result = CODEC.reassemble(sse(*PARALLEL_TASKS), streamed=True)
    assert result.output == EXPECTED
    assert result.complete
    assert result.problems == ()
    assert CODEC.output_tool_calls(result.output) == [
        ToolCall(id="call_a", name="task", arguments={"prompt": "a"}, index=0),
        ToolCall(id="call_b", name="task", arguments={"prompt": "b"}, index=1),
    ]
    assert CODEC.finish_reason(result.output) == "tool_calls"
    assert CODEC.response_id(result.output) == "chatcmpl-1"
    assert CODEC.usage(result.output) == Usage(
        input_tokens=900, output_tokens=30, cache_read_tokens=512, total_tokens=930, raw=USAGE
    )
    assert not CODEC.tool_call_marker_without_identity(result.output)


def test_cut_before_done_and_finish_reason() -> None:
    result = CODEC.reassemble(sse(*PARALLEL_TASKS[:4]), streamed=True)
    assert not result.complete
    assert result.incomplete_reason == "no [DONE] and no finish_reason"
    assert result.output is not None
    call = result.output["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"prompt":'
    assert CODEC.output_tool_calls(result.output)[0].arguments == '{"prompt":'


def test_finished_without_done_is_complete_and_noted() -> None:
    result = CODEC.reassemble(sse(*PARALLEL_TASKS[:6]), streamed=True)
    assert result.complete
    assert result.problems == ("stream ended without [DONE] after every choice finished",)
    assert result.output is not None
    assert "usage" in result.output and result.output["usage"] is None


def test_tool_calls_marker_without_identity() -> None:
    body = sse(chunk({"role": "assistant", "content": ""}), chunk({}, "tool_calls"), "[DONE]")
    result = CODEC.reassemble(body, streamed=True)
    assert result.complete
    assert CODEC.tool_call_marker_without_identity(result.output)
    nameless = sse(
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    assert CODEC.tool_call_marker_without_identity(CODEC.reassemble(nameless, streamed=True).output)


def test_compatible_server_quirks() -> None:
    # Role and the tool call's id/name resent on every fragment; Azure's empty first
    # chunk with prompt_filter_results; reasoning_content streamed like content.
    body = sse(
        {
            "id": "",
            "object": "",
            "created": 0,
            "model": "",
            "choices": [],
            "prompt_filter_results": [{"prompt_index": 0}],
        },
        chunk({"role": "assistant", "reasoning_content": "think"}),
        chunk({"role": "assistant", "reasoning_content": "ing"}),
        chunk(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"cmd"'},
                    }
                ],
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": ':"ls"}'},
                    }
                ]
            }
        ),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    result = CODEC.reassemble(body, streamed=True)
    assert result.output is not None
    assert result.output["id"] == "chatcmpl-1"
    assert result.output["prompt_filter_results"] == [{"prompt_index": 0}]
    message = result.output["choices"][0]["message"]
    assert message["role"] == "assistant"
    assert message["reasoning_content"] == "thinking"
    assert message["tool_calls"] == [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"cmd":"ls"}'},
        }
    ]


def test_error_chunk_mid_stream() -> None:
    error = {"error": {"message": "upstream overloaded", "type": "server_error", "code": None}}
    result = CODEC.reassemble(sse(*PARALLEL_TASKS[:2], error), streamed=True)
    assert not result.complete
    assert result.error == error["error"]
    assert result.incomplete_reason == "error event: server_error: upstream overloaded"
    assert result.output is not None
    assert result.output["choices"][0]["message"]["content"] == "Spawning two."


def test_logprobs_merge() -> None:
    def lp(token: str) -> dict[str, Any]:
        return {
            "content": [{"token": token, "logprob": -0.5, "bytes": [], "top_logprobs": []}],
            "refusal": None,
        }

    first = chunk({"role": "assistant", "content": ""})
    body = sse(
        first,
        {
            **chunk({"content": "Hi"}),
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "Hi"},
                    "logprobs": lp("Hi"),
                    "finish_reason": None,
                }
            ],
        },
        {
            **chunk({"content": "!"}),
            "choices": [
                {"index": 0, "delta": {"content": "!"}, "logprobs": lp("!"), "finish_reason": None}
            ],
        },
        chunk({}, "stop"),
        "[DONE]",
    )
    result = CODEC.reassemble(body, streamed=True)
    assert result.output is not None
    logprobs = result.output["choices"][0]["logprobs"]
    assert [t["token"] for t in logprobs["content"]] == ["Hi", "!"]
    assert logprobs["refusal"] is None


def test_merge_delta_rules() -> None:
    acc: dict[str, Any] = {}
    merge_delta(acc, {"role": "assistant", "content": "a", "refusal": None, "n": 1})
    merge_delta(acc, {"role": "assistant", "content": "b", "refusal": None, "n": 2, "x": [1]})
    merge_delta(acc, {"content": None, "x": [2], "audio": {"data": "AA"}})
    merge_delta(acc, {"audio": {"data": "BB", "id": "au_1"}})
    assert acc == {
        "role": "assistant",
        "content": "ab",
        "refusal": None,
        "n": 2,
        "x": [1, 2],
        "audio": {"data": "AABB", "id": "au_1"},
    }


def test_non_streamed_and_error_bodies() -> None:
    completion = {**EXPECTED}
    assert CODEC.reassemble(json.dumps(completion).encode(), streamed=False).output == EXPECTED
    bad = b'{"error":{"message":"Invalid model","type":"invalid_request_error","code":"x"}}'
    result = CODEC.reassemble(bad, streamed=False, status=400)
    assert result.output is None
    assert result.error == {
        "message": "Invalid model",
        "type": "invalid_request_error",
        "code": "x",
    }
    assert result.incomplete_reason == "HTTP 400: invalid_request_error: Invalid model"
    assert CODEC.reassemble(b"data: [DONE]\n\n", streamed=True).incomplete_reason == (
        "[DONE] without any chunk"
    )


# OpenCode / Qwen Code request shapes (harness notes).
TASK_RESULT = '<task id="C" state="completed">\n<task_result>\ndone\n</task_result>\n</task>'
REQUEST = {
    "model": "fake-model",
    "stream": True,
    "stream_options": {"include_usage": True},
    "messages": [
        {"role": "system", "content": "You are opencode."},
        {"role": "user", "content": [{"type": "text", "text": "Use a subagent to say hi"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "task", "arguments": '{"prompt":"a"}'},
                },
                {"id": "call_b", "type": "function", "function": {"name": "task", "arguments": ""}},
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "content": TASK_RESULT,
        },
        {
            "role": "tool",
            "tool_call_id": "call_b",
            "name": "task",
            "content": [{"type": "text", "text": "part 1"}, {"type": "text", "text": "part 2"}],
        },
        {"role": "user", "content": "<task-notification><tool-use-id>call_probe_1</tool-use-id>"},
    ],
    "tools": [
        {"type": "function", "function": {"name": "task", "parameters": {}}},
        {"type": "function", "function": {"name": "bash"}},
        {"type": "custom", "custom": {"name": "apply_patch"}},
    ],
    "functions": [{"name": "legacy"}],
}


def test_context_tool_references() -> None:
    assert CODEC.context_tool_calls(REQUEST) == [
        ToolCall(id="call_a", name="task", arguments={"prompt": "a"}, index=2),
        ToolCall(id="call_b", name="task", arguments={}, index=2),
    ]
    assert CODEC.context_tool_results(REQUEST) == [
        ToolResult(
            id="call_a",
            name=None,
            text='<task id="C" state="completed">\n<task_result>\ndone\n</task_result>\n</task>',
            message_index=3,
        ),
        ToolResult(id="call_b", name="task", text="part 1\npart 2", message_index=4),
    ]
    assert CODEC.context_texts(REQUEST) == [
        "You are opencode.",
        "Use a subagent to say hi",
        '<task id="C" state="completed">\n<task_result>\ndone\n</task_result>\n</task>',
        "part 1",
        "part 2",
        "<task-notification><tool-use-id>call_probe_1</tool-use-id>",
    ]
    assert CODEC.offered_tools(REQUEST) == ["task", "bash", "apply_patch", "legacy"]
    endpoint = endpoint_for("POST", "/v1/chat/completions")
    assert CODEC.is_streaming_request(REQUEST, endpoint)
    assert not CODEC.is_streaming_request({"stream": "yes"}, endpoint)
