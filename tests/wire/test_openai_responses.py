"""Responses codec: hand-written streams in the shapes Codex sees (namespaced tools,
reasoning with encrypted content), cut streams rebuilt from deltas, failures, and the
tool references of Codex requests."""

from __future__ import annotations

import json
from typing import Any

from roller.wire.openai_responses import CODEC
from roller.wire.sse import encode_event
from roller.wire.types import SSEEvent, ToolCall, ToolResult, Usage


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(encode_event(SSEEvent(json.dumps(e), event=e["type"])) for e in events)


RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1790000000,
    "status": "in_progress",
    "model": "fake-model",
    "output": [],
    "usage": None,
    "store": False,
    "prompt_cache_key": "0941",
}
REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Spawn a child."}],
    "encrypted_content": "gAAAAB",
}
SPAWN = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "spawn_agent",
    "namespace": "multi_agent_v1",
    "arguments": '{"message":"say hi"}',
    "status": "completed",
}
MESSAGE: dict[str, Any] = {
    "type": "message",
    "id": "msg_1",
    "status": "completed",
    "role": "assistant",
    "content": [
        {
            "type": "output_text",
            "text": "See docs.",
            "annotations": [
                {
                    "type": "url_citation",
                    "url": "https://d",
                    "start_index": 4,
                    "end_index": 8,
                    "title": "d",
                }
            ],
            "logprobs": [],
        }
    ],
}
USAGE = {
    "input_tokens": 500,
    "input_tokens_details": {"cached_tokens": 128},
    "output_tokens": 40,
    "output_tokens_details": {"reasoning_tokens": 16},
    "total_tokens": 540,
}


def ev(kind: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "sequence_number": seq, **fields}


def codex_turn() -> list[dict[str, Any]]:
    added_fc = {**SPAWN, "arguments": "", "status": "in_progress"}
    added_msg = {**MESSAGE, "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    return [
        ev("response.created", 0, response=RESPONSE),
        ev("response.in_progress", 1, response=RESPONSE),
        ev(
            "response.output_item.added",
            2,
            output_index=0,
            item={"type": "reasoning", "id": "rs_1", "summary": []},
        ),
        ev(
            "response.reasoning_summary_part.added",
            3,
            output_index=0,
            item_id="rs_1",
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
        ev(
            "response.reasoning_summary_text.delta",
            4,
            output_index=0,
            item_id="rs_1",
            summary_index=0,
            delta="Spawn a ",
        ),
        ev(
            "response.reasoning_summary_text.delta",
            5,
            output_index=0,
            item_id="rs_1",
            summary_index=0,
            delta="child.",
        ),
        ev("response.output_item.done", 6, output_index=0, item=REASONING),
        ev("response.output_item.added", 7, output_index=1, item=added_msg),
        ev(
            "response.content_part.added",
            8,
            output_index=1,
            item_id="msg_1",
            content_index=0,
            part=part,
        ),
        ev(
            "response.output_text.delta",
            9,
            output_index=1,
            item_id="msg_1",
            content_index=0,
            delta="See ",
            logprobs=[],
        ),
        ev(
            "response.output_text.delta",
            10,
            output_index=1,
            item_id="msg_1",
            content_index=0,
            delta="docs.",
            logprobs=[],
        ),
        ev(
            "response.output_text.annotation.added",
            11,
            output_index=1,
            item_id="msg_1",
            content_index=0,
            annotation_index=0,
            annotation=MESSAGE["content"][0]["annotations"][0],
        ),
        ev("response.output_item.added", 12, output_index=2, item=added_fc),
        ev(
            "response.function_call_arguments.delta",
            13,
            output_index=2,
            item_id="fc_1",
            delta='{"message":',
        ),
        ev(
            "response.function_call_arguments.delta",
            14,
            output_index=2,
            item_id="fc_1",
            delta='"say hi"}',
        ),
        ev("response.output_item.done", 15, output_index=1, item=MESSAGE),
        ev("response.output_item.done", 16, output_index=2, item=SPAWN),
        ev(
            "response.completed",
            17,
            response={
                **RESPONSE,
                "status": "completed",
                "output": [REASONING, MESSAGE, SPAWN],
                "usage": USAGE,
            },
        ),
    ]


def test_completed_response_is_the_output() -> None:
    events = codex_turn()
    result = CODEC.reassemble(sse(*events), streamed=True)
    assert result.complete
    assert result.output == events[-1]["response"]
    assert result.unmerged == ()
    assert result.problems == ()
    calls = CODEC.output_tool_calls(result.output)
    assert calls == [
        ToolCall(
            id="call_1",
            name="spawn_agent",
            item_id="fc_1",
            namespace="multi_agent_v1",
            arguments={"message": "say hi"},
            index=2,
        )
    ]
    assert calls[0].ref == "call_1|fc_1"
    assert CODEC.finish_reason(result.output) == "completed"
    assert CODEC.usage(result.output) == Usage(
        input_tokens=500, output_tokens=40, cache_read_tokens=128, total_tokens=540, raw=USAGE
    )


def test_bare_terminal_response_recovers_items() -> None:
    events = codex_turn()
    events[-1] = ev("response.completed", 17, response={**RESPONSE, "status": "completed"})
    del events[-1]["response"]["output"]
    result = CODEC.reassemble(sse(*events), streamed=True)
    assert result.complete
    assert result.output is not None
    assert result.output["output"] == [REASONING, MESSAGE, SPAWN]
    assert result.problems == ("response.completed had no output; recovered from output_item.done",)


def test_cut_stream_is_rebuilt_from_deltas() -> None:
    result = CODEC.reassemble(sse(*codex_turn()[:14]), streamed=True)
    assert not result.complete
    assert result.incomplete_reason == (
        "stream ended before response.completed (inside output item 2)"
    )
    assert result.output is not None
    assert result.output["id"] == "resp_1"
    assert result.output["output"] == [
        REASONING,
        {**MESSAGE, "status": "in_progress"},  # text and annotation rebuilt from events
        {**SPAWN, "status": "in_progress", "arguments": '{"message":'},
    ]
    assert CODEC.output_tool_calls(result.output)[0].arguments == '{"message":'


def test_unmergeable_events_are_kept_when_the_stream_is_cut() -> None:
    events = codex_turn()[:8]
    strange = ev("response.web_search_call.searching", 8, output_index=1, item_id="msg_1")
    orphan = ev(
        "response.output_text.delta", 9, output_index=7, item_id="x", content_index=0, delta="?"
    )
    result = CODEC.reassemble(sse(*events, strange, orphan), streamed=True)
    assert [u["why"] for u in result.unmerged] == [
        "response.web_search_call.searching has no place in the reassembled output",
        "response.output_text.delta for output index 7, never added",
    ]
    assert result.unmerged[0]["data"] == strange


def test_refusal_and_custom_tool_input_deltas() -> None:
    events = [
        ev("response.created", 0, response=RESPONSE),
        ev(
            "response.output_item.added",
            1,
            output_index=0,
            item={"type": "message", "id": "m", "role": "assistant", "content": []},
        ),
        ev(
            "response.content_part.added",
            2,
            output_index=0,
            content_index=0,
            part={"type": "refusal", "refusal": ""},
        ),
        ev("response.refusal.delta", 3, output_index=0, content_index=0, delta="No"),
        ev("response.refusal.delta", 4, output_index=0, content_index=0, delta="pe"),
        ev(
            "response.output_item.added",
            5,
            output_index=1,
            item={
                "type": "custom_tool_call",
                "id": "ctc_1",
                "call_id": "call_p",
                "name": "apply_patch",
                "input": "",
            },
        ),
        ev("response.custom_tool_call_input.delta", 6, output_index=1, delta="*** Begin"),
    ]
    result = CODEC.reassemble(sse(*events), streamed=True)
    assert result.output is not None
    assert result.output["output"][0]["content"] == [{"type": "refusal", "refusal": "Nope"}]
    assert result.output["output"][1]["input"] == "*** Begin"
    assert CODEC.output_tool_calls(result.output) == [
        ToolCall(id="call_p", name="apply_patch", item_id="ctc_1", arguments="*** Begin", index=1)
    ]


def test_failed_incomplete_and_error_events() -> None:
    failed = {
        **RESPONSE,
        "status": "failed",
        "output": [],
        "error": {"code": "server_error", "message": "The model crashed"},
    }
    result = CODEC.reassemble(
        sse(
            ev("response.created", 0, response=RESPONSE), ev("response.failed", 1, response=failed)
        ),
        streamed=True,
    )
    assert not result.complete
    assert result.output == failed
    assert result.error == {"code": "server_error", "message": "The model crashed"}
    assert result.incomplete_reason == "response.failed: server_error: The model crashed"

    incomplete = {
        **RESPONSE,
        "status": "incomplete",
        "output": [],
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    result = CODEC.reassemble(
        sse(
            ev("response.created", 0, response=RESPONSE),
            ev("response.incomplete", 1, response=incomplete),
        ),
        streamed=True,
    )
    assert result.complete
    assert CODEC.finish_reason(result.output) == "max_output_tokens"

    error = ev("error", 2, code="rate_limit_exceeded", message="Slow down", param=None)
    result = CODEC.reassemble(sse(*codex_turn()[:3], error), streamed=True)
    assert not result.complete
    assert result.error == error
    assert result.incomplete_reason == "error event: rate_limit_exceeded: Slow down"


def test_non_streamed_bodies() -> None:
    done = {**RESPONSE, "status": "completed", "output": [SPAWN], "error": None}
    assert CODEC.reassemble(json.dumps(done).encode(), streamed=False).complete
    background = CODEC.reassemble(
        json.dumps({**RESPONSE, "status": "queued"}).encode(), streamed=False
    )
    assert not background.complete
    assert background.incomplete_reason == "response status queued (background response)"
    err = b'{"error":{"message":"No such model","type":"invalid_request_error","code":null}}'
    result = CODEC.reassemble(err, streamed=True, status=404)
    assert result.incomplete_reason == "HTTP 404: invalid_request_error: No such model"


# A Codex request (harness notes): namespaced tools, echoed function_call with both ids,
# function_call_output with a Codex-minted `fco_` id, a v1 notification, a v2 agent_message.
REQUEST = {
    "model": "fake-model",
    "stream": True,
    "instructions": "You are Codex.",
    "input": [
        {
            "type": "message",
            "id": "msg_u1",
            "role": "developer",
            "content": [{"type": "input_text", "text": "<permissions>"}],
        },
        {"type": "message", "role": "user", "content": "spawn a child"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB"},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "spawn_agent",
            "namespace": "multi_agent_v1",
            "arguments": '{"message":"say hi"}',
        },
        {
            "type": "function_call_output",
            "id": "fco_9",
            "call_id": "call_1",
            "output": '{"agent_id":"0698","nickname":"Halley"}',
        },
        {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "***"},
        {
            "type": "custom_tool_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": "applied"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": '<subagent_notification>{"agent_path":"0698"}</subagent_notification>',
                }
            ],
        },
        {
            "type": "agent_message",
            "author": "<home>",
            "content": [
                {"type": "input_text", "text": "Type: FINAL_ANSWER"},
                {"type": "encrypted_content", "encrypted_content": "task"},
            ],
        },
    ],
    "tools": [
        {"type": "function", "name": "shell"},
        {
            "type": "namespace",
            "name": "multi_agent_v1",
            "tools": [
                {"type": "function", "name": "spawn_agent"},
                {"type": "function", "name": "wait_agent"},
            ],
        },
        {"type": "custom", "name": "apply_patch"},
        {"type": "web_search"},
    ],
}


def test_codex_request_tool_references() -> None:
    assert CODEC.context_tool_calls(REQUEST) == [
        ToolCall(
            id="call_1",
            name="spawn_agent",
            item_id="fc_1",
            namespace="multi_agent_v1",
            arguments={"message": "say hi"},
            index=3,
        ),
        ToolCall(id="call_2", name="apply_patch", arguments="***", index=5),
    ]
    assert CODEC.context_tool_results(REQUEST) == [
        ToolResult(
            id="call_1",
            name=None,
            text='{"agent_id":"0698","nickname":"Halley"}',
            message_index=4,
            item_id="fco_9",
        ),
        ToolResult(id="call_2", name=None, text="applied", message_index=6),
    ]
    assert CODEC.offered_tools(REQUEST) == [
        "shell",
        "multi_agent_v1.spawn_agent",
        "multi_agent_v1.wait_agent",
        "apply_patch",
    ]
    assert CODEC.context_texts(REQUEST) == [
        "You are Codex.",
        "<permissions>",
        "spawn a child",
        '{"agent_id":"0698","nickname":"Halley"}',
        "applied",
        '<subagent_notification>{"agent_path":"0698"}</subagent_notification>',
        "Type: FINAL_ANSWER",
    ]
    assert CODEC.context_texts({"input": "just text"}) == ["just text"]
