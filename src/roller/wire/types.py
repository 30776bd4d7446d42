"""Protocol-neutral values shared by every codec in `roller.wire`.

These are frozen dataclasses: values in flight, never persisted directly (the persisted
records live in `roller.capture.models`). Each protocol package (`anthropic`,
`openai_chat`, `openai_responses`, `gemini`) exposes one `Codec` object that produces these
values; protocol packages never import each other, only the shared modules `roller.wire`
lists.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from roller.wire.chat import Chat
    from roller.wire.endpoints import Endpoint

ProtocolName = Literal[
    "anthropic-messages",
    "openai-chat-completions",
    "openai-responses",
    "gemini",
]

PROTOCOL_NAMES: tuple[ProtocolName, ...] = (
    "anthropic-messages",
    "openai-chat-completions",
    "openai-responses",
    "gemini",
)

JSONObject = dict[str, Any]
# A JSON document's parse: (value, None), or (None, why it is not JSON).
Parsed = tuple[Any, str | None]

# The comparable projection of one history item (`Codec.item_key`): two items are the
# same message when their keys are equal; None means the item is not compared.
Key = Hashable


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One server-sent event as the WHATWG algorithm dispatches it.

    `event` is None when the stream gave no `event:` field (the spec's default type
    "message"); `data` joins multi-line `data:` fields with "\\n".
    """

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call an output emits (the model asks a tool to run).

    - Anthropic: `tool_use.id`, `name`.
    - Chat Completions: `tool_calls[].id`, `function.name`.
    - Responses: `function_call.call_id` in `id`, the item's own `id` (`fc_…`) in
      `item_id`; `namespace` for namespaced tools (Codex `multi_agent_v1`).
      Both ids are kept: a relation needs both to match (`ref` is `call_id|item_id`).
    - Gemini: `functionCall.id` (often absent on the real API) and `name`.

    `arguments` is the parsed argument object when it parses as JSON, else the raw string.
    `index` is the call's position in its container: the content-block index (Anthropic),
    the `tool_calls[].index` (Chat), the output/input item index (Responses), the part
    index (Gemini). For a call echoed in a request context it is the position of the
    carrying message/item in the context list, like `ToolResult.message_index`.
    """

    id: str | None
    name: str | None
    item_id: str | None = None
    namespace: str | None = None
    arguments: Any = None
    index: int = 0

    @property
    def ref(self) -> str | None:
        """The native tool reference: `call_id|item_id` for Responses, else the id."""
        if self.item_id is not None and self.id is not None:
            return f"{self.id}|{self.item_id}"
        return self.id


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool result carried in a request's context (history sent to the model).

    - Anthropic: `tool_result.tool_use_id` in a user message.
    - Chat Completions: a `role: tool` message's `tool_call_id`.
    - Responses: a `function_call_output` input item's `call_id` (its own `id`, if any,
      in `item_id`).
    - Gemini: `functionResponse.id` / `name`.

    `text` is the result's textual content flattened (text blocks joined with "\\n"),
    used to check that a delivered result really entered the request.
    `message_index` is the position of the carrying message/item in the context list.
    """

    id: str | None
    name: str | None
    text: str
    message_index: int
    item_id: str | None = None
    is_error: bool | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts normalized across protocols; `raw` keeps the provider's own object."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    total_tokens: int | None = None
    raw: JSONObject | None = None


@dataclass(frozen=True, slots=True)
class Reassembly:
    """A response body turned into the protocol's non-streaming response shape.

    `output` is None only when nothing usable arrived (empty body, not JSON, no event,
    or a non-2xx error body, which goes to `error`).
    `complete` is True only when `output` is a whole, normal response of the protocol:
    False when the stream ended before its protocol's terminal event (Anthropic
    `message_stop`, Chat `[DONE]`/finish_reason, Responses `response.completed` /
    `response.incomplete`, Gemini a candidate with `finishReason`), an error arrived (an
    error event, `response.failed`, a non-2xx status, an error object in a 2xx body), or
    the body was not usable; `incomplete_reason` then says which, precisely.
    `error` holds a provider error object (error event or non-2xx JSON body) verbatim.
    `events` counts the SSE events consumed (0 for a non-streamed body).
    `problems` lists non-fatal decoding findings in stream order (e.g. tool input JSON
    that does not parse and was kept as the raw string, an event that is not JSON).
    `unmerged` keeps, verbatim, every stream event whose content could not be folded
    into `output` (unknown event or delta types, deltas for a block that never started):
    `{"event": SSE event name or None, "data": parsed data or raw text, "why": str}`.
    Nothing the provider sent is dropped: it is in `output` or in `unmerged`.
    """

    output: JSONObject | None
    complete: bool
    incomplete_reason: str | None = None
    error: JSONObject | None = None
    events: int = 0
    problems: tuple[str, ...] = ()
    unmerged: tuple[JSONObject, ...] = ()


@dataclass(frozen=True)
class History:
    """A request split into the conversation and its configuration (`Codec.history`)."""

    items: list[Any]  # the protocol's own items, verbatim
    system: Key  # comparable projection of the system prompt (None when absent)
    tools: Any  # the `tools` value verbatim (None when absent)
    config: dict[str, Any]  # the body without the item list and without `tools`


class StreamAssembler(Protocol):
    """Incremental reassembly of one streamed response: feed events, then `finish()`.
    `parsed`, when given, is what `roller.wire.jsonvalues.parse_json(event.data)` gives
    (a caller that parsed a whole stream's events at once: `parse_all`)."""

    def feed(self, event: SSEEvent, parsed: Parsed | None = None) -> None: ...

    def finish(self) -> Reassembly: ...


class Codec(Protocol):
    """Everything roller needs to know about one wire protocol. Pure; no I/O."""

    name: ProtocolName
    # The request field of the system prompt; None when system text is among the items.
    system_field: str | None
    # The conversation as OpenAI chat messages, and back (`roller.wire.chat`).
    chat: Chat
    # Whether `context_tool_results` reads each element of the context's `messages` on
    # its own, a result's `message_index` its position: then the results of a list's
    # first elements are those of the same elements in a longer list (Anthropic).
    results_by_message: bool

    def assembler(self) -> StreamAssembler:
        """A fresh incremental reassembler for one streamed response."""
        ...

    def reassemble(self, body: bytes, *, streamed: bool, status: int = 200) -> Reassembly:
        """Reassemble a whole recorded response body (SSE when `streamed`, else JSON)."""
        ...

    def is_streaming_request(self, request: JSONObject | None, endpoint: Endpoint) -> bool:
        """Whether the request asked for a streamed response (body flag or endpoint)."""
        ...

    def request_model(self, request: JSONObject | None, endpoint: Endpoint) -> str | None:
        """The model the request asked for (Gemini: the one its path names)."""
        ...

    def response_model(self, output: JSONObject | None) -> str | None:
        """The model the provider said it used (None when it did not say)."""
        ...

    def response_id(self, output: JSONObject | None) -> str | None:
        """The provider's response id (`msg_…`, `chatcmpl-…`, `resp_…`, Gemini `responseId`)."""
        ...

    def finish_reason(self, output: JSONObject | None) -> str | None:
        """The protocol's own stop/finish reason string, unnormalized."""
        ...

    def usage(self, output: JSONObject | None) -> Usage | None: ...

    def output_tool_calls(self, output: JSONObject | None) -> list[ToolCall]:
        """Tool calls the output emits, in output order."""
        ...

    def tool_call_marker_without_identity(self, output: JSONObject | None) -> bool:
        """True when the output says it stopped for tool calls but names none with an
        id and name (Chat Completions `finish_reason: tool_calls` with no usable
        `tool_calls`). Such a response is `partial` and blocked from export."""
        ...

    def context_tool_calls(self, request: JSONObject | None) -> list[ToolCall]:
        """Tool calls echoed back in the request history (earlier assistant turns)."""
        ...

    def context_tool_results(self, request: JSONObject | None) -> list[ToolResult]:
        """Tool results the request context carries, in context order."""
        ...

    def context_texts(self, request: JSONObject | None) -> list[str]:
        """Every text fragment of the request's input (messages, blocks, system), in
        order; used to check that an injected notification really entered a request."""
        ...

    def offered_tools(self, request: JSONObject | None) -> list[str]:
        """Names of the tools the request offers (namespaced tools as `ns.name`)."""
        ...

    def json_mode(self, request: Any) -> bool:
        """Whether the request asks for a structured/JSON reply (router and title side
        calls): the protocol's response-format field names a JSON schema or object."""
        ...

    def history(self, request: Any) -> History | None:
        """The request's conversation and configuration (`roller.wire.history`); None
        when it holds no readable item list."""
        ...

    def system_prompt(self, config: Any) -> Any:
        """The system prompt verbatim, from a request body or its `History.config`
        (None when absent, or when the protocol keeps system text among the items)."""
        ...

    def server_state(self, request: Any) -> list[str]:
        """The request's fields that make the provider hold the history instead of the
        request (Responses `previous_response_id`, `conversation`), when set."""
        ...

    def output_items(self, output: Any) -> list[Any]:
        """The response as the history item(s) the protocol would resend; [] when none."""
        ...

    def item_key(self, item: Any) -> Key:
        """What "the same message" means for one history item (None: not compared)."""
        ...

    def loads_tools(self, item: Any) -> str | None:
        """What in this history item loads tool definitions at run time, if anything
        (after it the model sees tools no static `tools` list describes)."""
        ...


@dataclass(frozen=True, slots=True)
class ToolRefs:
    """The tool references of one call: ids its output emits, ids its context carries."""

    emitted: tuple[ToolCall, ...] = field(default_factory=tuple)
    results: tuple[ToolResult, ...] = field(default_factory=tuple)

    @staticmethod
    def of(emitted: Iterable[ToolCall], results: Iterable[ToolResult]) -> ToolRefs:
        return ToolRefs(tuple(emitted), tuple(results))
