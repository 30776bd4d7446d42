"""Whole recorded response bodies → `Reassembly`, the part every codec shares.

A codec gets a body exactly as the tape recorded it, with the HTTP status and whether the
response was streamed. This module decides how to read it and never raises:

- 2xx and streamed: SSE, fed event by event to the codec's assembler. A "streamed" body
  that holds no SSE event but parses as JSON (a server that ignored `stream: true`) is
  read as a whole JSON body instead, and `problems` says so.
- 2xx and not streamed: one JSON document, given to the codec's `whole` function. A body
  that is not JSON but holds SSE events is read as a stream, and `problems` says so.
- non-2xx: a JSON error body goes to `error` (the provider's error object: the body's
  `error` member when it has one, else the body), `output` is None, `complete` False.
  A non-JSON error body is reported by its first characters.

`EventLog` is the bookkeeping each assembler keeps: event count, problems, and the
verbatim events it could not merge (`Reassembly.unmerged`). `BodyCodec` is the part of the
`Codec` protocol the codecs share: how a body is read, the `model`/`stream`/`id`
members the three JSON-bodied APIs (Anthropic Messages, Chat Completions, Responses) name
alike (Gemini overrides those from its endpoint and its own field names), the
conversation members, served from the protocol's `Conversation` record, and `chat`, its
`ChatForm` over that conversation (`roller.wire.chat`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from roller.wire.chat import Chat, ChatForm
from roller.wire.history import Conversation
from roller.wire.jsonvalues import (
    as_object,
    as_str,
    describe_error,
    parse_all,
    parse_json,
    text_snippet,
)
from roller.wire.sse import decode_body
from roller.wire.types import (
    History,
    JSONObject,
    Key,
    Parsed,
    Reassembly,
    SSEEvent,
    StreamAssembler,
)

if TYPE_CHECKING:
    from roller.wire.endpoints import Endpoint

WholeBody = Callable[[Any], Reassembly]


class EventLog:
    """Per-stream bookkeeping shared by the assemblers."""

    def __init__(self) -> None:
        self.events = 0
        self.problems: list[str] = []
        self.unmerged: list[JSONObject] = []

    def decode(self, event: SSEEvent, parsed: Parsed | None = None) -> Any:
        """Count the event and parse its data (`parsed`: the caller did). Returns the JSON
        value, or None when the data is not JSON (then the event is kept in `unmerged`
        and a problem recorded)."""
        self.events += 1
        value, err = parse_json(event.data) if parsed is None else parsed
        if err is not None:
            self.keep(event, event.data, f"data is not JSON: {err}")
            return None
        return value

    def decode_object(self, event: SSEEvent, parsed: Parsed | None = None) -> JSONObject | None:
        """`decode`, and a JSON value that is not an object is kept as unmerged too:
        None means the event was recorded and there is nothing to merge."""
        data = self.decode(event, parsed)
        if data is None:
            return None
        obj = as_object(data)
        if obj is None:
            self.keep(event, data, "data is not a JSON object")
        return obj

    def keep(self, event: SSEEvent, data: Any, why: str) -> None:
        """Keep an event verbatim because its content could not be merged."""
        self.unmerged.append({"event": event.event, "data": data, "why": why})
        self.problems.append(f"event {self.events} ({event.event or 'message'}): {why}")

    def note(self, problem: str) -> None:
        self.problems.append(problem)

    def result(
        self,
        output: JSONObject | None,
        *,
        complete: bool,
        reason: str | None,
        error: JSONObject | None = None,
    ) -> Reassembly:
        return Reassembly(
            output=output,
            complete=complete,
            incomplete_reason=None if complete else reason,
            error=error,
            events=self.events,
            problems=tuple(self.problems),
            unmerged=tuple(self.unmerged),
        )


class BodyCodec:
    """Shared `Codec` members. A codec module passes its assembler class and the function
    that reads a whole (non-streamed) body; everything protocol-specific stays there."""

    results_by_message = False  # `Codec.results_by_message`: a codec says so itself

    def __init__(
        self,
        assembler: Callable[[], StreamAssembler],
        whole: WholeBody,
        conversation: Conversation,
        chat: ChatForm,
    ) -> None:
        self._new_assembler = assembler
        self._whole = whole
        self._conversation = conversation
        self.system_field = conversation.system_field
        self.chat = Chat(conversation, chat)

    def assembler(self) -> StreamAssembler:
        return self._new_assembler()

    def reassemble(self, body: bytes, *, streamed: bool, status: int = 200) -> Reassembly:
        return reassemble_body(
            body, streamed=streamed, status=status, assembler=self.assembler, whole=self._whole
        )

    def is_streaming_request(self, request: JSONObject | None, endpoint: Endpoint) -> bool:
        return request is not None and request.get("stream") is True

    def request_model(self, request: JSONObject | None, endpoint: Endpoint) -> str | None:
        return as_str(request.get("model")) if request is not None else None

    def response_model(self, output: JSONObject | None) -> str | None:
        return as_str(output.get("model")) if output is not None else None

    def response_id(self, output: JSONObject | None) -> str | None:
        return as_str(output.get("id")) if output is not None else None

    # The conversation (`roller.wire.history`): served from the protocol's record.
    def history(self, request: Any) -> History | None:
        return self._conversation.history_of(request)

    def system_prompt(self, config: Any) -> Any:
        return self._conversation.system_prompt(config)

    def output_items(self, output: Any) -> list[Any]:
        return self._conversation.output_items(output)

    def item_key(self, item: Any) -> Key:
        return self._conversation.item_key(item)

    def loads_tools(self, item: Any) -> str | None:
        return self._conversation.loads_tools(item)

    def server_state(self, request: Any) -> list[str]:
        if not isinstance(request, dict):
            return []
        return [f for f in self._conversation.server_state_fields if request.get(f)]


def error_object(value: Any) -> JSONObject | None:
    """The provider error object inside an error body: `{"error": {...}}` (OpenAI,
    Anthropic, Gemini), a Gemini stream's `[{"error": {...}}]`, else the body itself."""
    if isinstance(value, list) and value:
        value = value[0]
    obj = as_object(value)
    if obj is None:
        return None
    inner = as_object(obj.get("error"))
    return inner if inner is not None else obj


def reassemble_body(
    body: bytes,
    *,
    streamed: bool,
    status: int,
    assembler: Callable[[], StreamAssembler],
    whole: WholeBody,
) -> Reassembly:
    """Read one recorded body as the module docstring says."""
    ok = 200 <= status < 300
    if not body.strip():
        suffix = "" if ok else f" (HTTP {status})"
        return Reassembly(None, False, f"empty body{suffix}")
    if not ok:
        return _error_body(body, status=status)
    if streamed:
        result = reassemble_stream(body, assembler())
        if result.events == 0:
            value, err = parse_json(body)
            if err is None:
                found = whole(value)
                return replace(
                    found,
                    problems=(
                        "streamed response carried one JSON document, not SSE",
                        *found.problems,
                    ),
                )
        return result
    value, err = parse_json(body)
    if err is None:
        return whole(value)
    streamed_result = reassemble_stream(body, assembler())
    if streamed_result.events > 0:
        return replace(
            streamed_result,
            problems=(
                "non-streamed response carried SSE, read as a stream",
                *streamed_result.problems,
            ),
        )
    return Reassembly(None, False, f"body is not JSON ({err}): {text_snippet(body)!r}")


def reassemble_stream(body: bytes, assembler: StreamAssembler) -> Reassembly:
    """Decode an SSE body and feed every event to `assembler`."""
    events, tail = decode_body(body)
    # every event's data parsed at once: the guard orjson needs runs once over the body
    for event, parsed in zip(events, parse_all([e.data for e in events], body), strict=True):
        assembler.feed(event, parsed)
    result = assembler.finish()
    if tail is None:
        return result
    if len(tail) > 200:
        tail = tail[:200] + "…"
    note = f"body ended inside an unterminated SSE event, discarded: {tail!r}"
    reason = result.incomplete_reason
    if not result.complete:
        reason = f"{reason}; {note}" if reason else note
    return replace(result, incomplete_reason=reason, problems=(*result.problems, note))


def _error_body(body: bytes, *, status: int) -> Reassembly:
    value, err = parse_json(body)
    if err is None:
        error = error_object(value)
        what = describe_error(error) if error is not None else text_snippet(body)
        return Reassembly(None, False, f"HTTP {status}: {what}", error=error)
    return Reassembly(None, False, f"HTTP {status} with a non-JSON body: {text_snippet(body)!r}")
