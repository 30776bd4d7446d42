"""The server: routing, error shapes, side endpoints, pacing, disconnects, concurrency."""

from __future__ import annotations

import itertools
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from roller.mock.dialects import DIALECTS
from roller.mock.dialects.openai_chat import ChatDialect
from roller.mock.scenario_files import parse_scenario
from tests.mock.conftest import ServeMock
from tests.mock.http import post_json, request, sse
from tests.mock.scenarios import LONG_TEXT, calls_scenario, text_scenario

ANTHROPIC = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("path", "headers", "check"),
    [
        (
            "/v1/messages",
            {},
            lambda b: b["type"] == "error" and b["error"]["type"] == "invalid_request_error",
        ),
        ("/v1/chat/completions", {}, lambda b: b["error"]["type"] == "invalid_request_error"),
        ("/v1/responses", {}, lambda b: b["error"]["type"] == "invalid_request_error"),
        (
            "/v1beta/models/g:generateContent",
            {},
            lambda b: b["error"]["status"] == "INVALID_ARGUMENT",
        ),
    ],
)
@pytest.mark.parametrize("payload", [b"{not json", b"[1, 2]", b"\xff\xfe", b""])
def test_malformed_bodies_get_a_400_in_the_protocol_shape(
    serve_mock: ServeMock, path: str, headers: dict[str, str], check: Any, payload: bytes
) -> None:
    mock, url = serve_mock()
    status, _, raw = request(url + path, payload, method="POST", headers=headers)
    assert status == 400
    assert check(json.loads(raw))
    assert mock.served[-1].outcome == "bad_request"
    # and the server keeps serving
    assert post_json(url + "/v1/chat/completions", CHAT)[0] == 200


@pytest.mark.parametrize(
    ("path", "headers", "shape"),
    [
        ("/v2/whatever", {"anthropic-version": "2023-06-01"}, "anthropic"),
        ("/v1beta/whatever", {}, "gemini"),
        ("/v1/embeddings", {}, "openai"),
    ],
)
def test_unknown_endpoints_get_a_404_in_the_likely_protocol_shape(
    serve_mock: ServeMock, path: str, headers: dict[str, str], shape: str
) -> None:
    mock, url = serve_mock()
    status, _, raw = request(url + path, b"{}", method="POST", headers=headers)
    body = json.loads(raw)
    assert status == 404
    if shape == "anthropic":
        assert body["error"]["type"] == "not_found_error"
    elif shape == "gemini":
        assert body["error"]["status"] == "NOT_FOUND"
    else:
        assert "message" in body["error"] and "type" not in body
    assert mock.served[-1].outcome == "not_found"


def test_assistants_thread_messages_are_not_answered_as_anthropic(serve_mock: ServeMock) -> None:
    # `/v1/threads/T/messages` ends in `/messages`: the mock used to answer it as a
    # Messages call. It is OpenAI's Assistants API, which the mock does not serve.
    mock, url = serve_mock(text_scenario("hi"))
    status, body = post_json(url + "/v1/threads/thread_1/messages", ANTHROPIC)
    assert status == 404 and "message" in body["error"] and "type" not in body
    assert (mock.served[-1].outcome, mock.served[-1].protocol) == (
        "not_found",
        "openai-chat-completions",
    )


def test_wrong_method_is_405(serve_mock: ServeMock) -> None:
    _, url = serve_mock()
    status, _, raw = request(url + "/v1/messages", method="GET", headers={"anthropic-version": "x"})
    assert status == 405 and json.loads(raw)["type"] == "error"
    status, _, _ = request(url + "/v1/models", b"{}", method="POST")
    assert status == 405


def test_any_base_path_prefix_is_accepted(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario("hi"))
    status, body = post_json(url + "/anthropic/v1/messages", ANTHROPIC)
    assert status == 200 and body["content"][0]["text"] == "hi"
    status, body = post_json(url + "/openai/chat/completions", CHAT)
    assert status == 200 and body["choices"][0]["message"]["content"] == "hi"


def test_anthropic_raw_stream_event_sequence(serve_mock: ServeMock) -> None:
    _, url = serve_mock(calls_scenario())
    body = {
        **ANTHROPIC,
        "stream": True,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
    }
    status, headers, raw = request(url + "/v1/messages?beta=true", json.dumps(body).encode())
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    events = sse(raw)
    names = [name for name, _ in events]
    assert all(json.loads(data)["type"] == name for name, data in events)  # event: matches type
    compressed = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
    assert compressed == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    first_json = json.loads(events[names.index("content_block_start", 4) + 1][1])
    assert first_json["delta"] == {"type": "input_json_delta", "partial_json": ""}
    delta = json.loads(events[-2][1])
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] > 1


def test_chat_raw_stream_ends_with_done(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario())
    body = json.dumps({**CHAT, "stream": True}).encode()
    _, _, raw = request(url + "/v1/chat/completions", body)
    events = sse(raw)
    assert events[-1] == (None, "[DONE]")
    text = "".join(
        json.loads(d)["choices"][0]["delta"].get("content") or "" for _, d in events[:-1]
    )
    assert text == LONG_TEXT


def _arrivals(url: str, path: str, body: dict[str, Any]) -> list[float]:
    """Times at which each SSE event's end arrived on a raw socket."""
    host, port = url.removeprefix("http://").split(":")
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode()
    times: list[float] = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head + payload)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
            times += [time.monotonic()] * (received.count(b"\n\n") - len(times))
    return times


def test_delay_paces_events_and_each_is_sent_before_the_next(serve_mock: ServeMock) -> None:
    _, url = serve_mock(text_scenario(), delay_ms=60)
    start = time.monotonic()
    times = _arrivals(url, "/v1/chat/completions", {**CHAT, "stream": True})
    assert len(times) > 5
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0.045
    # unbuffered: the first event arrived long before the whole stream was written
    assert times[0] - start < times[-1] - start - 0.045 * (len(times) - 2)


def test_scenario_delay_is_the_default_and_zero_means_no_pause(serve_mock: ServeMock) -> None:
    mock, url = serve_mock(text_scenario(delay_ms=40))
    assert mock.delay_ms == 40
    # A scenario pause of 2 s that the override failed to cancel would hold the stream
    # for seconds: a margin no slow host comes near, unlike a bound of one short pause.
    mock, url = serve_mock(text_scenario(delay_ms=2000), delay_ms=0)
    times = _arrivals(url, "/v1/chat/completions", {**CHAT, "stream": True})
    assert len(times) > 2 and times[-1] - times[0] < 1.0


def test_client_disconnect_mid_stream_is_recorded_and_harmless(serve_mock: ServeMock) -> None:
    mock, url = serve_mock(text_scenario(), delay_ms=100)
    host, port = url.removeprefix("http://").split(":")
    payload = json.dumps({**CHAT, "stream": True}).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        assert b"\n\n" in sock.recv(65536) + sock.recv(65536)
    deadline = time.monotonic() + 5
    while not mock.served and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [s.outcome for s in mock.served] == ["client_disconnected"]
    assert post_json(url + "/v1/chat/completions", CHAT)[0] == 200


class _BrokenChat(ChatDialect):
    def render(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")


def test_a_mock_bug_is_a_500_in_the_protocol_shape_and_recorded(
    serve_mock: ServeMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(DIALECTS, "openai-chat-completions", _BrokenChat())
    mock, url = serve_mock()
    status, body = post_json(url + "/v1/chat/completions", CHAT)
    assert status == 500
    assert body["error"]["message"] == "mock model error: RuntimeError: boom"
    assert mock.served[-1].outcome == "mock_error"
    assert post_json(url + "/v1/messages", ANTHROPIC)[0] == 200


def test_concurrent_conversations_are_answered_from_their_own_context(
    serve_mock: ServeMock,
) -> None:
    mock, url = serve_mock("spawn-one")
    task = {"type": "function", "function": {"name": "task", "parameters": {"type": "object"}}}
    root = {**CHAT, "tools": [task]}
    child = {
        **CHAT,
        "messages": [
            {"role": "user", "content": "ROLLER-SUBTASK depth=1 id=a: reply with the word done."}
        ],
        "tools": [task],
    }
    after = {
        **CHAT,
        "tools": [task],
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "task", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "<task_result>done</task_result>"},
        ],
    }
    bodies = [root, child, after] * 20

    def ask(body: dict[str, Any]) -> str:
        status, reply = post_json(url + "/v1/chat/completions", body)
        assert status == 200
        message = reply["choices"][0]["message"]
        return (
            message["tool_calls"][0]["function"]["name"]
            if message.get("tool_calls")
            else message["content"]
        )

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(ask, bodies))
    assert answers == ["task", "done", "done"] * 20
    assert sorted({s.rule for s in mock.served}) == ["child: reply", "root: finish", "root: spawn"]


def test_a_rule_paces_its_own_reply_and_the_others_keep_the_scenario_delay(
    serve_mock: ServeMock,
) -> None:
    scenario = parse_scenario(
        '[[rules]]\nname = "slow"\nuser_text_contains = "slow"\ndelay_ms = 60\ntext = "'
        + LONG_TEXT
        + '"\n[[rules]]\nname = "fast"\ntext = "'
        + LONG_TEXT
        + '"\n',
        "inline",
    )
    _, url = serve_mock(scenario)
    slow = {**CHAT, "stream": True, "messages": [{"role": "user", "content": "slow please"}]}
    times = _arrivals(url, "/v1/chat/completions", slow)
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.045
    times = _arrivals(url, "/v1/chat/completions", {**CHAT, "stream": True})
    assert times[-1] - times[0] < 0.045 * (len(times) - 1)
