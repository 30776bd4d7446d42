"""Gemini codec: streams in the shapes Gemini CLI sees (CRLF SSE, thought signatures,
`invoke_agent` calls), the JSON-array body, errors, tool references, and — there being
no official Python accumulator to compare with — properties over generated streams."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.wire.endpoints import endpoint_for
from roller.wire.gemini import CODEC
from roller.wire.jsonvalues import parse_json
from roller.wire.sse import SSEDecoder
from roller.wire.types import ToolCall, ToolResult, Usage
from tests.wire.settings import BATCH, ORACLE_BATCHES, TIMEOUT
from tests.wire.streams import GeneratedStream, gemini_streams, run_roller


def sse_crlf(*chunks: dict[str, Any]) -> bytes:
    # The Gemini API ends SSE lines with CRLF.
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


def chunk(parts: list[dict[str, Any]], finish: str | None = None, **top: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "modelVersion": "gemini-3.8-flash",
        "responseId": "r-1",
        **top,
    }


USAGE = {
    "promptTokenCount": 900,
    "candidatesTokenCount": 20,
    "thoughtsTokenCount": 7,
    "cachedContentTokenCount": 256,
    "totalTokenCount": 927,
}
CALL = {"name": "invoke_agent", "args": {"agent_name": "generalist", "prompt": "Reply done."}}
STREAM = [
    chunk([{"text": "Let me ", "thought": True}]),
    chunk([{"text": "delegate.", "thought": True}]),
    chunk([{"text": "Delegating "}], usageMetadata={"promptTokenCount": 900}),
    chunk([{"text": "now."}, {"functionCall": CALL, "thoughtSignature": "sig-1"}]),
    chunk([{"text": ""}], "STOP", usageMetadata=USAGE),
]


def test_gemini_cli_turn() -> None:
    result = CODEC.reassemble(sse_crlf(*STREAM), streamed=True)
    assert result.complete
    assert result.output == {
        "modelVersion": "gemini-3.8-flash",
        "responseId": "r-1",
        "usageMetadata": USAGE,
        "candidates": [
            {
                "index": 0,
                "finishReason": "STOP",
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Let me delegate.", "thought": True},
                        {"text": "Delegating now."},
                        {"functionCall": CALL, "thoughtSignature": "sig-1"},
                        {"text": ""},
                    ],
                },
            }
        ],
    }
    assert CODEC.output_tool_calls(result.output) == [
        ToolCall(id=None, name="invoke_agent", arguments=CALL["args"], index=2)
    ]
    assert CODEC.finish_reason(result.output) == "STOP"
    assert CODEC.response_model(result.output) == "gemini-3.8-flash"
    assert CODEC.response_id(result.output) == "r-1"
    assert CODEC.usage(result.output) == Usage(
        input_tokens=900, output_tokens=27, cache_read_tokens=256, total_tokens=927, raw=USAGE
    )


def test_signature_starts_a_new_part() -> None:
    body = sse_crlf(
        chunk([{"text": "a"}]),
        chunk([{"text": "b", "thoughtSignature": "s"}]),
        chunk([{"text": "c"}], "STOP"),
    )
    output = CODEC.reassemble(body, streamed=True).output
    assert output is not None
    assert output["candidates"][0]["content"]["parts"] == [
        {"text": "a"},
        {"text": "bc", "thoughtSignature": "s"},
    ]


def test_truncated_stream() -> None:
    result = CODEC.reassemble(sse_crlf(*STREAM[:3]), streamed=True)
    assert not result.complete
    assert result.incomplete_reason == "stream ended before any candidate had a finishReason"
    assert result.output is not None
    assert result.output["usageMetadata"] == {"promptTokenCount": 900}


def test_json_array_body_of_stream_generate_content() -> None:
    body = json.dumps(STREAM).encode()
    result = CODEC.reassemble(body, streamed=False)
    assert result.complete
    assert result.output == CODEC.reassemble(sse_crlf(*STREAM), streamed=True).output


def test_blocked_prompt_is_complete() -> None:
    body = sse_crlf({"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "g"})
    result = CODEC.reassemble(body, streamed=True)
    assert result.complete
    assert CODEC.finish_reason(result.output) == "SAFETY"


def test_errors() -> None:
    error = {
        "error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}
    }
    mid = CODEC.reassemble(sse_crlf(STREAM[0], error), streamed=True)
    assert not mid.complete
    assert mid.error == error["error"]
    assert mid.incomplete_reason == "error chunk: 429: Resource exhausted"
    listed = CODEC.reassemble(json.dumps([error]).encode(), streamed=False, status=429)
    assert listed.error == error["error"]
    assert listed.incomplete_reason == "HTTP 429: 429: Resource exhausted"


# Gemini CLI request (harness notes): the CLI mints `<tool>_<epoch_ms>_<n>` call ids and
# echoes them in functionCall.id / functionResponse.id, with a skip signature.
REQUEST = {
    "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "Use a subagent"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"id": "invoke_agent_1795974922439_0", **CALL},
                    "thoughtSignature": "skip_thought_signature_validator",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "invoke_agent_1795974922439_0",
                        "name": "invoke_agent",
                        "response": {"output": "Subagent 'generalist' finished.\nResult:\ndone"},
                    }
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": "read_file", "response": {"content": [1, 2]}}}
            ],
        },
    ],
    "tools": [
        {"functionDeclarations": [{"name": "invoke_agent"}, {"name": "read_file"}]},
        {"function_declarations": [{"name": "complete_task"}]},
        {"googleSearch": {}},
    ],
    "generationConfig": {"temperature": 0},
}
PATH = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"


def test_request_tool_references_and_model() -> None:
    assert CODEC.context_tool_calls(REQUEST) == [
        ToolCall(
            id="invoke_agent_1795974922439_0", name="invoke_agent", arguments=CALL["args"], index=1
        )
    ]
    assert CODEC.context_tool_results(REQUEST) == [
        ToolResult(
            id="invoke_agent_1795974922439_0",
            name="invoke_agent",
            text="Subagent 'generalist' finished.\nResult:\ndone",
            message_index=2,
        ),
        ToolResult(id=None, name="read_file", text='{"content":[1,2]}', message_index=3),
    ]
    assert CODEC.context_texts(REQUEST) == [
        "You are Gemini CLI.",
        "Use a subagent",
        "Subagent 'generalist' finished.\nResult:\ndone",
        '{"content":[1,2]}',
    ]
    assert CODEC.offered_tools(REQUEST) == ["invoke_agent", "read_file", "complete_task"]
    assert CODEC.request_model(REQUEST, endpoint_for("POST", PATH)) == "gemini-3.8-flash"
    assert CODEC.is_streaming_request(REQUEST, endpoint_for("POST", PATH))
    generate = endpoint_for("POST", "/v1beta/models/m:generateContent")
    assert not CODEC.is_streaming_request(REQUEST, generate)
    assert CODEC.request_model(None, endpoint_for("POST", "/v1/chat/completions")) is None


# ------------------------------------------------------------ properties


def _delivered(stream: GeneratedStream) -> list[dict[str, Any]]:
    """The chunks that fully arrived, decoded independently of the codec."""
    decoder = SSEDecoder()
    events = [e for c in stream.chunks for e in decoder.feed(c)] + decoder.close()
    return [parse_json(e.data)[0] for e in events]


def _parts(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]


@pytest.mark.timeout(TIMEOUT)
@ORACLE_BATCHES
@given(st.lists(gemini_streams(), min_size=BATCH, max_size=BATCH))
def test_merge_properties(batch: list[GeneratedStream]) -> None:
    for i, stream in enumerate(batch):
        try:
            check_merge(stream)
        except AssertionError as err:
            raise AssertionError(f"stream {i} of the batch: {stream!r}") from err


def check_merge(stream: GeneratedStream) -> None:
    result = run_roller(CODEC, stream.chunks)
    sent = _delivered(stream)
    assert result.events == len(sent)
    assert result.problems == ()
    if not sent:
        assert result.output is None
        assert not result.complete
        return
    assert result.output is not None
    merged = result.output["candidates"][0]["content"]["parts"]
    delivered = _parts(sent)
    for thought in (False, True):
        # Text concatenation equals the sum of the deltas, thoughts and answer apart.
        def text(parts: list[dict[str, Any]], thought: bool = thought) -> str:
            return "".join(
                p["text"] for p in parts if "text" in p and bool(p.get("thought")) == thought
            )

        assert text(merged) == text(delivered)
    # Function calls and signatures are preserved, in order, on the same part.
    assert [p for p in merged if "functionCall" in p] == [
        p for p in delivered if "functionCall" in p
    ]
    assert [p["thoughtSignature"] for p in merged if "thoughtSignature" in p] == [
        p["thoughtSignature"] for p in delivered if "thoughtSignature" in p
    ]
    # No two adjacent parts that could have been joined were left apart.
    for before, after in itertools.pairwise(merged):
        joinable = (
            "text" in before
            and "text" in after
            and after.keys() <= {"text", "thought"}
            and before.keys() <= {"text", "thought", "thoughtSignature"}
            and bool(before.get("thought")) == bool(after.get("thought"))
        )
        assert not joinable
    usages = [c["usageMetadata"] for c in sent if "usageMetadata" in c]
    assert result.output.get("usageMetadata") == (usages[-1] if usages else None)
    finished = "finishReason" in sent[-1]["candidates"][0]
    assert result.complete == finished
    assert CODEC.finish_reason(result.output) == sent[-1]["candidates"][0].get("finishReason")
    assert [c.name for c in CODEC.output_tool_calls(result.output)] == [
        p["functionCall"]["name"] for p in delivered if "functionCall" in p
    ]
