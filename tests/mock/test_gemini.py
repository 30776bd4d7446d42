"""Gemini generateContent / streamGenerateContent over raw HTTP, as Gemini CLI sends them."""

from __future__ import annotations

import json
from typing import Any

from tests.mock.conftest import ServeMock
from tests.mock.http import post_json, request, sse
from tests.mock.scenarios import LONG_TEXT, text_scenario

INVOKE = {
    "functionDeclarations": [
        {
            "name": "invoke_agent",
            "parametersJsonSchema": {
                "type": "object",
                "properties": {"agent_name": {"type": "string"}, "prompt": {"type": "string"}},
                "required": ["agent_name", "prompt"],
            },
        }
    ]
}
BODY: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "Use a subagent"}]}]}
MODEL = "/v1beta/models/gemini-3.8-flash"


def test_generate_content_text(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    status, body = post_json(url + MODEL + ":generateContent", BODY)
    assert status == 200
    (candidate,) = body["candidates"]
    assert candidate["content"] == {"role": "model", "parts": [{"text": LONG_TEXT}]}
    assert candidate["finishReason"] == "STOP"
    assert body["modelVersion"] == "gemini-3.8-flash" and body["responseId"]
    usage = body["usageMetadata"]
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"]


def test_function_call_has_no_id_like_the_real_api(serve_mock: ServeMock) -> None:
    _, url = serve_mock("spawn-one")
    status, body = post_json(url + MODEL + ":generateContent", {**BODY, "tools": [INVOKE]})
    assert status == 200
    (part,) = body["candidates"][0]["content"]["parts"]
    assert part["functionCall"]["name"] == "invoke_agent"
    assert part["functionCall"]["args"]["agent_name"] == "generalist"
    assert "id" not in part["functionCall"]


def test_stream_sse_chunks(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    status, headers, raw = request(
        url + MODEL + ":streamGenerateContent?alt=sse", json.dumps(BODY).encode()
    )
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    chunks = [json.loads(data) for name, data in sse(raw)]
    assert len(chunks) > 3
    text = "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert text == LONG_TEXT
    assert [("finishReason" in c["candidates"][0]) for c in chunks] == [False] * (
        len(chunks) - 1
    ) + [True]
    assert "candidatesTokenCount" in chunks[-1]["usageMetadata"]
    assert len({c["responseId"] for c in chunks}) == 1


def test_stream_function_call_in_the_final_chunk(serve_mock: ServeMock) -> None:
    _, url = serve_mock("spawn-one")
    body = json.dumps({**BODY, "tools": [INVOKE]}).encode()
    _, _, raw = request(url + MODEL + ":streamGenerateContent?alt=sse", body)
    (chunk,) = [json.loads(data) for _, data in sse(raw)]
    (part,) = chunk["candidates"][0]["content"]["parts"]
    assert part["functionCall"]["name"] == "invoke_agent"
    assert chunk["candidates"][0]["finishReason"] == "STOP"


def test_stream_without_alt_sse_is_a_json_array(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    status, chunks = post_json(url + MODEL + ":streamGenerateContent", BODY)
    assert status == 200 and isinstance(chunks, list) and len(chunks) > 3


def test_router_json_mode_gets_parseable_schema_json(serve_mock: ServeMock) -> None:
    _, url = serve_mock("spawn-one")
    schema = {
        "type": "object",
        "properties": {
            "complexity_reasoning": {"type": "string"},
            "complexity_score": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        "required": ["complexity_reasoning", "complexity_score"],
    }
    for key in ("responseJsonSchema", "responseSchema"):
        config = {"responseMimeType": "application/json", key: schema}
        status, body = post_json(
            url + "/v1beta/models/gemini-3.5-flash-lite:generateContent",
            {**BODY, "generationConfig": config},
        )
        assert status == 200
        decision = json.loads(body["candidates"][0]["content"]["parts"][0]["text"])
        assert decision == {"complexity_reasoning": "roller", "complexity_score": 1}


def test_count_tokens_and_models(serve_mock: ServeMock) -> None:
    _, url = serve_mock()
    status, counted = post_json(url + MODEL + ":countTokens", BODY)
    assert status == 200 and counted["totalTokens"] > 0
    status, _, raw = request(url + "/v1beta/models")
    assert status == 200
    assert json.loads(raw)["models"][0]["name"] == "models/mock-model"
    status, _, raw = request(url + "/v1beta/models/gemini-x")
    assert json.loads(raw)["name"] == "models/gemini-x"


def test_errors_have_the_gemini_shape(serve_mock: ServeMock) -> None:
    _, url = serve_mock()
    status, body = post_json(url + MODEL + ":generateContent", {"contents": 3})
    assert status == 400
    assert body["error"] == {
        "code": 400,
        "message": "contents is not specified",
        "status": "INVALID_ARGUMENT",
    }
    status, body = post_json(url + MODEL + ":embedContent", BODY)
    assert status == 404 and body["error"]["status"] == "NOT_FOUND"
