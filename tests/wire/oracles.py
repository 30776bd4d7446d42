"""The official SDKs' own stream accumulators, driven over SSE bytes, as test oracles.

Each oracle runs the SDK's SSE decoder over the same byte chunks roller gets, builds the
events the way the SDK's `Stream` does (`construct_type` of the SDK event type, skipping
what `Stream.__stream__` skips) and folds them with the SDK's accumulator:

- Anthropic 2.14.0: `anthropic.lib.streaming._beta_messages.accumulate_event` (the
  beta accumulator, a superset of the plain one; Claude Code calls `?beta=true`).
- OpenAI 3.57.0 Chat: `openai.lib.streaming.chat.ChatCompletionStreamState`
  (`handle_chunk`, then its `current_completion_snapshot`).
- OpenAI 3.57.0 Responses: `openai.lib.streaming.responses.ResponseStreamState`
  (`handle_event`; the final response is the one it builds from `response.completed`).

tests/wire/test_sdk_clients.py checks on a real loopback server that these drivers give
what the SDK clients' `.stream()` helpers give.

Normalization (`drop_sdk_nulls`): the SDK models materialize some declared fields as
`null` that the wire never carried (Anthropic `stop_details`; Chat message `annotations`,
`audio`, `function_call`, `tool_calls`, `parsed`, function `parsed_arguments`, and
`usage` / `system_fingerprint` when no chunk had them; Responses `parsed`,
`parsed_arguments`). roller never invents keys, so those null values are dropped from
the SDK side when roller has no such key. Nothing else is normalized.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
from anthropic._models import construct_type as anthropic_construct
from anthropic._streaming import SSEDecoder as AnthropicSSEDecoder
from anthropic.lib.streaming._beta_messages import accumulate_event
from anthropic.types.beta import BetaRawMessageStreamEvent
from openai._models import construct_type as openai_construct
from openai._streaming import SSEDecoder as OpenAISSEDecoder
from openai._types import omit
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

ANTHROPIC_SDK_NULLS = frozenset({"stop_details"})
CHAT_SDK_NULLS = frozenset(
    {
        "usage",
        "system_fingerprint",
        "annotations",
        "audio",
        "function_call",
        "tool_calls",
        "parsed",
        "parsed_arguments",
    }
)
RESPONSES_SDK_NULLS = frozenset({"parsed", "parsed_arguments"})

T = TypeVar("T")


def utf8_whole(chunks: Iterable[bytes]) -> list[bytes]:
    """`chunks` without a UTF-8 sequence cut off at the very end of the body.

    The SDK decoders decode the unterminated last line strictly and raise
    UnicodeDecodeError on it; that line can never complete an event, so roller (which
    decodes with U+FFFD and discards the unterminated event) and the SDK are compared on
    the body up to the last whole character.
    """
    pieces = list(chunks)
    body = b"".join(pieces)
    try:
        body.decode("utf-8")
        return pieces
    except UnicodeDecodeError as err:
        if err.reason != "unexpected end of data":
            raise
        drop = len(body) - err.start
    while drop > 0 and pieces:
        last = pieces.pop()
        if len(last) > drop:
            pieces.append(last[: len(last) - drop])
            drop = 0
        else:
            drop -= len(last)
    return pieces


def drop_sdk_nulls(sdk: Any, ours: Any, keys: frozenset[str]) -> Any:
    """`sdk` without the null values of `keys` that `ours` does not have at that place."""
    if isinstance(sdk, dict) and isinstance(ours, dict):
        return {
            k: drop_sdk_nulls(v, ours.get(k), keys)
            for k, v in sdk.items()
            if not (v is None and k in keys and k not in ours)
        }
    if isinstance(sdk, list) and isinstance(ours, list) and len(sdk) == len(ours):
        return [drop_sdk_nulls(a, b, keys) for a, b in zip(sdk, ours, strict=True)]
    return sdk


def sdk_dict(model: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        # Unknown block types are constructed into the nearest model; pydantic warns.
        warnings.simplefilter("ignore")
        return dict(model.to_dict())


@dataclass
class AnthropicSDKResult:
    """What the SDK made of a Messages stream, plus facts the test checks against."""

    message: dict[str, Any] | None  # None before `message_start`
    events: list[str]  # SSE event names, in order
    open_blocks: set[int]  # content blocks started and not stopped


def anthropic_oracle(chunks: Iterable[bytes]) -> AnthropicSDKResult:
    """The message the Anthropic SDK accumulates from the bytes."""
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    names: list[str] = []
    open_blocks: set[int] = set()
    for sse in AnthropicSSEDecoder().iter_bytes(iter(utf8_whole(chunks))):
        names.append(sse.event or "")
        # As anthropic._streaming.Stream.__stream__ does.
        if sse.event in ("ping", None) or not sse.data:
            continue
        assert sse.event != "error", "the generators never send error events"
        data = sse.json()
        if sse.event == "content_block_start":
            open_blocks.add(data["index"])
        elif sse.event == "content_block_stop":
            open_blocks.discard(data["index"])
        event: Any = anthropic_construct(type_=BetaRawMessageStreamEvent, value=data)
        snapshot = accumulate_event(
            event=event,
            current_snapshot=snapshot,
            json_bufs=json_bufs,
            request_headers=httpx2.Headers(),
        )
    message = None if snapshot is None else sdk_dict(snapshot)
    return AnthropicSDKResult(message, names, open_blocks)


@dataclass
class ChatSDKResult:
    completion: dict[str, Any] | None  # None when no chunk arrived
    saw_done: bool


def chat_oracle(chunks: Iterable[bytes]) -> ChatSDKResult:
    """The completion the OpenAI SDK accumulates from the bytes."""
    state = ChatCompletionStreamState()
    seen = False
    saw_done = False
    for sse in OpenAISSEDecoder().iter_bytes(iter(utf8_whole(chunks))):
        if sse.data.startswith("[DONE]"):  # as openai._streaming.Stream.__stream__ does
            saw_done = True
            break
        chunk: Any = openai_construct(type_=ChatCompletionChunk, value=sse.json())
        if chunk.object != "chat.completion.chunk":  # ChatCompletionStream skips these
            continue
        state.handle_chunk(chunk)
        seen = True
    # get_final_completion() only adds parsing on top of this snapshot, and raises for
    # finish_reason `length` / `content_filter`.
    completion = sdk_dict(state.current_completion_snapshot) if seen else None
    return ChatSDKResult(completion, saw_done)


def _responses_state(
    chunks: Iterable[bytes],
) -> tuple[ResponseStreamState[Any], dict[str, Any], list[Any]]:
    state: ResponseStreamState[Any] = ResponseStreamState(text_format=omit, input_tools=omit)
    created: dict[str, Any] = {}
    fired: list[Any] = []
    for sse in OpenAISSEDecoder().iter_bytes(iter(utf8_whole(chunks))):
        data = sse.json()
        if data.get("type") == "response.created":
            created = data["response"]
        event: Any = openai_construct(type_=ResponseStreamEvent, value=data)
        fired = state.handle_event(event)
    return state, created, fired


@dataclass
class ResponsesSDKResult:
    final: dict[str, Any] | None  # the final response, when a terminal event arrived
    partial_items: list[dict[str, Any]] | None  # else the items so far (None: no created)


def responses_oracle(chunks: Iterable[bytes]) -> ResponsesSDKResult:
    """What the SDK makes of a Responses stream.

    With a terminal event: the response it builds from `response.completed` (what
    `get_final_response()` returns), or for `response.incomplete` (where
    `get_final_response()` raises) the response of the event it yields, whose missing
    `output` it fills from its accumulated items.

    Without one: the output items the SDK reports for an unfinished stream. The SDK
    fills the `output` of a `response.incomplete` event that has none with what it
    accumulated (per index: the `output_item.done` item, else the added item with its
    deltas); we append such an event to the cut stream and read that output.
    """
    state, created, fired = _responses_state(chunks)
    if state._completed_response is not None:
        return ResponsesSDKResult(sdk_dict(state._completed_response), None)
    if fired and fired[-1].type == "response.incomplete":
        return ResponsesSDKResult(sdk_dict(fired[-1].response), None)
    if not created:
        return ResponsesSDKResult(None, None)
    bare = {k: v for k, v in created.items() if k != "output"}
    synthetic = {"type": "response.incomplete", "sequence_number": 10**9, "response": bare}
    event: Any = openai_construct(type_=ResponseStreamEvent, value=synthetic)
    last: Any = state.handle_event(event)[-1]
    return ResponsesSDKResult(None, [sdk_dict(item) for item in last.response.output])


def run_oracles(oracle: Callable[[list[bytes]], T], inputs: list[list[bytes]]) -> Iterator[T]:
    """Run `oracle` over every input; iterate to collect the results.

    With `ROLLER_WIRE_ORACLE_WORKERS=N` (N > 0) the work starts at once in N forked
    worker processes, so roller's side runs while the SDK's does: the SDK accumulators
    cost milliseconds a stream (pydantic construction of every event), and an idle core
    can take them. The default is 0, in this process: on a machine already saturated by
    other work (where this was measured) the hand-offs cost more than they save. Workers
    are forked after the oracle ran once here, so they start with the SDK's lazily built
    pydantic schemas and run the very same SDK modules.
    """
    if _WORKERS == 0:
        return map(oracle, inputs)
    pool = _POOLS.get(oracle)
    if pool is None:
        for other in _POOLS.values():  # one set of workers at a time
            other.shutdown()
        _POOLS.clear()
        oracle(inputs[0])
        context = multiprocessing.get_context("fork")
        pool = _POOLS[oracle] = ProcessPoolExecutor(max_workers=_WORKERS, mp_context=context)
    return pool.map(oracle, inputs)


_WORKERS = int(os.environ.get("ROLLER_WIRE_ORACLE_WORKERS", "0"))
_POOLS: dict[Callable[..., Any], ProcessPoolExecutor] = {}
