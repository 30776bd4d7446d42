"""Hypothesis strategies for valid provider streams, and their serialization to SSE bytes.

Each `*_streams()` strategy draws a `GeneratedStream`: the events (what a provider would
send), the SSE body bytes, the byte chunks it is fed in (cut anywhere, also inside UTF-8
sequences and CRLF pairs), and optionally a cut position where the stream stops early.

Hypothesis supplies the randomness as one seeded `random.Random` per example
(`st.randoms`): a stream needs hundreds of small choices, and drawing each through
Hypothesis costs ~50 µs, which would make the 10,000-example differential runs take
minutes. A failing example is still reproducible (Hypothesis replays the seed) and is
printed with its events.

Shapes follow the provider documentation and the harness notes: Anthropic Messages with
text, citations, thinking + signature, tool_use with chunked `input_json_delta`, unknown
fields and block types; Chat Completions with one or two choices, content / refusal /
reasoning_content deltas, index-chunked tool calls, logprobs and a usage chunk;
Responses with message, function_call (Codex namespace) and reasoning items; Gemini
chunks with text, thoughts, signatures and function calls. Text mixes ASCII with 2-, 3-
and 4-byte UTF-8 characters, JSON escapes and line separators.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from roller.wire.sse import SSEDecoder

# Characters chosen to stress UTF-8 splitting and JSON escaping.
_ALPHABET = (
    string.ascii_letters
    + string.digits
    + ' _-.,:{}[]"\\/\n\r\t\x00\x1f'
    + "é߿ࠀ€😀\u2028\u2029\ufeff\ud7ff\ue000\uffff𐀀\U0010ffff"
)
_ID_CHARS = string.ascii_letters + string.digits
NEWLINES = ("\n", "\r\n", "\r")


def text(rng: random.Random, max_size: int = 12) -> str:
    return "".join(rng.choices(_ALPHABET, k=rng.randint(0, max_size)))


def ident(rng: random.Random, prefix: str = "") -> str:
    return prefix + "".join(rng.choices(_ID_CHARS, k=rng.randint(1, 10)))


def json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 2 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randint(-(2**53), 2**53)
    if kind == 3:
        return rng.choice([0.0, -0.5, 1e-7, 3.14159, 1e300, -2.5e-300, rng.uniform(-1e6, 1e6)])
    if kind == 4:
        return text(rng, 8)
    if kind == 5:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return json_object(rng, depth + 1)


def json_object(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    return {text(rng, 5): json_value(rng, depth) for _ in range(rng.randint(0, 3))}


def pieces(rng: random.Random, whole: str, max_pieces: int = 3) -> list[str]:
    """`whole` cut at random points (pieces may be empty, as real deltas sometimes are)."""
    points = sorted(rng.randint(0, len(whole)) for _ in range(rng.randint(0, max_pieces - 1)))
    out: list[str] = []
    start = 0
    for point in points:
        out.append(whole[start:point])
        start = point
    out.append(whole[start:])
    return out


@dataclass
class GeneratedStream:
    events: list[tuple[str | None, Any]]  # (SSE event name or None, data as dict or raw str)
    body: bytes = b""
    chunks: list[bytes] = field(default_factory=list)
    cut: int | None = None  # bytes kept when the stream is cut early, else None
    rich: bool = False  # Responses: in-flight events the SDK snapshot does not track

    @property
    def fed(self) -> bytes:
        """The bytes actually delivered (the whole body, or its cut prefix)."""
        return self.body if self.cut is None else self.body[: self.cut]


def serialize(
    events: list[tuple[str | None, Any]], newline: str, ensure_ascii: bool, comments: bool
) -> bytes:
    out: list[str] = []
    for i, (name, data) in enumerate(events):
        if comments and i % 3 == 1:
            out.append(": keep-alive" + newline)
        if name is not None:
            out.append(f"event: {name}{newline}")
        line = data if isinstance(data, str) else json.dumps(data, ensure_ascii=ensure_ascii)
        out.append(f"data: {line}{newline}{newline}")
    return "".join(out).encode("utf-8")


def split_body(body: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p for p in points if 0 < p < len(body)})
    out: list[bytes] = []
    start = 0
    for cut in cuts:
        out.append(body[start:cut])
        start = cut
    out.append(body[start:])
    return out


def finish(
    rng: random.Random, events: list[tuple[str | None, Any]], *, may_cut: bool
) -> GeneratedStream:
    """Serialize `events`, choose byte split points and (when `may_cut`) maybe a cut."""
    body = serialize(
        events,
        newline=rng.choice(NEWLINES),
        ensure_ascii=rng.random() < 0.5,
        comments=rng.random() < 0.3,
    )
    cut = rng.randint(0, len(body)) if may_cut and rng.random() < 0.4 else None
    fed = body if cut is None else body[:cut]
    if rng.random() < 0.03:
        points = list(range(1, len(fed)))  # one byte at a time
    else:
        points = [rng.randint(0, len(fed)) for _ in range(rng.randint(0, 8))]
    return GeneratedStream(events=events, body=body, chunks=split_body(fed, points), cut=cut)


def _from_seed(
    build: Callable[..., GeneratedStream], may_cut: bool
) -> st.SearchStrategy[GeneratedStream]:
    return st.randoms(use_true_random=True).map(lambda rng: build(rng, may_cut=may_cut))


def anthropic_streams(*, may_cut: bool = True) -> st.SearchStrategy[GeneratedStream]:
    return _from_seed(anthropic_stream, may_cut)


def chat_streams(*, may_cut: bool = True) -> st.SearchStrategy[GeneratedStream]:
    return _from_seed(chat_stream, may_cut)


def responses_streams(*, may_cut: bool = True) -> st.SearchStrategy[GeneratedStream]:
    return _from_seed(responses_stream, may_cut)


def gemini_streams(*, may_cut: bool = True) -> st.SearchStrategy[GeneratedStream]:
    return _from_seed(gemini_stream, may_cut)


# ---------------------------------------------------------------- Anthropic Messages


def _anthropic_block(rng: random.Random, index: int) -> list[dict[str, Any]]:
    kind = rng.choice(["text", "text", "thinking", "tool_use", "tool_use", "redacted", "unknown"])

    def delta(d: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": d}

    def start(block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": block}

    events: list[dict[str, Any]] = []
    if kind == "text":
        block: dict[str, Any] = {"type": "text", "text": ""}
        if rng.random() < 0.3:
            block["citations"] = None
        events.append(start(block))
        for piece in pieces(rng, text(rng)):
            events.append(delta({"type": "text_delta", "text": piece}))
            if rng.random() < 0.15:
                citation = {
                    "type": "char_location",
                    "cited_text": text(rng),
                    "document_index": rng.randint(0, 3),
                    "document_title": None if rng.random() < 0.5 else text(rng),
                    "start_char_index": 0,
                    "end_char_index": rng.randint(0, 99),
                }
                events.append(delta({"type": "citations_delta", "citation": citation}))
    elif kind == "thinking":
        events.append(start({"type": "thinking", "thinking": "", "signature": ""}))
        for piece in pieces(rng, text(rng, 20)):
            events.append(delta({"type": "thinking_delta", "thinking": piece}))
        events.append(delta({"type": "signature_delta", "signature": ident(rng, "Eu")}))
    elif kind == "tool_use":
        block = {"type": "tool_use", "id": ident(rng, "toolu_"), "name": ident(rng), "input": {}}
        if rng.random() < 0.3:
            block["caller"] = {"type": "direct"}
        events.append(start(block))
        arguments = json.dumps(json_object(rng), ensure_ascii=rng.random() < 0.5)
        fragments = pieces(rng, arguments, max_pieces=4)
        if rng.random() < 0.5:
            fragments = ["", *fragments]  # the API opens with an empty fragment
        for fragment in fragments:
            events.append(delta({"type": "input_json_delta", "partial_json": fragment}))
    elif kind == "redacted":
        events.append(start({"type": "redacted_thinking", "data": ident(rng)}))
    else:
        events.append(start({"type": ident(rng, "x_future_block_"), "payload": json_value(rng)}))
    events.append({"type": "content_block_stop", "index": index})
    return events


def anthropic_stream(rng: random.Random, *, may_cut: bool = True) -> GeneratedStream:
    usage: dict[str, Any] = {"input_tokens": rng.randint(0, 9999), "output_tokens": 1}
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if rng.random() < 0.5:
            usage[key] = rng.randint(0, 9999)
    if rng.random() < 0.3:
        usage["service_tier"] = "standard"
    message: dict[str, Any] = {
        "id": ident(rng, "msg_"),
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": ident(rng, "claude-"),
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    if rng.random() < 0.3:
        message["x_unknown_field"] = json_value(rng)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index in range(rng.randint(0, 3)):
        for event in _anthropic_block(rng, index):
            events.append(event)
            if rng.random() < 0.05:
                events.append({"type": "ping"})
    stop: dict[str, Any] = {
        "stop_reason": rng.choice(["end_turn", "tool_use", "max_tokens", "pause_turn"]),
        "stop_sequence": None if rng.random() < 0.7 else ident(rng),
    }
    if rng.random() < 0.5:
        stop["stop_details"] = None
    delta_usage: dict[str, Any] = {"output_tokens": rng.randint(0, 9999)}
    for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        choice = rng.randrange(3)
        if choice:
            delta_usage[key] = rng.randint(0, 9999) if choice == 1 else None
    events.append({"type": "message_delta", "delta": stop, "usage": delta_usage})
    events.append({"type": "message_stop"})
    return finish(rng, [(e["type"], e) for e in events], may_cut=may_cut)


# ---------------------------------------------------------------- Chat Completions


def _chat_choice(rng: random.Random, index: int, logprobs: bool) -> list[dict[str, Any]]:
    """The `choices[0]` entries of the chunks one choice streams, in order."""
    entries: list[dict[str, Any]] = [
        {
            "index": index,
            "delta": {"role": "assistant", "content": "", "refusal": None},
            "logprobs": None,
            "finish_reason": None,
        }
    ]

    def add(delta: dict[str, Any], piece: str | None = None) -> None:
        lp = None
        if logprobs and piece is not None:
            token = {
                "token": piece,
                "logprob": -rng.random() * 5,
                "bytes": list(piece.encode("utf-8")),
                "top_logprobs": [],
            }
            lp = {"content": [token], "refusal": None}
        entries.append({"index": index, "delta": delta, "logprobs": lp, "finish_reason": None})

    if rng.random() < 0.3:
        for piece in pieces(rng, text(rng)):
            add({"reasoning_content": piece})
    mode = rng.choice(["text", "tools", "both", "refusal"])
    if mode in ("text", "both"):
        for piece in pieces(rng, text(rng, 20)):
            add({"content": piece}, piece)
    if mode == "refusal":
        for piece in pieces(rng, text(rng)):
            add({"refusal": piece})
    if mode in ("tools", "both"):
        for call in range(rng.randint(1, 2)):
            fragments = pieces(rng, json.dumps(json_object(rng)))
            first = {
                "index": call,
                "id": ident(rng, "call_"),
                "type": "function",
                "function": {"name": ident(rng), "arguments": fragments[0]},
            }
            add({"tool_calls": [first]})
            for fragment in fragments[1:]:
                add({"tool_calls": [{"index": call, "function": {"arguments": fragment}}]})
    reason = "tool_calls" if mode in ("tools", "both") else rng.choice(["stop", "length"])
    entries.append({"index": index, "delta": {}, "logprobs": None, "finish_reason": reason})
    return entries


def chat_stream(rng: random.Random, *, may_cut: bool = True) -> GeneratedStream:
    n = 2 if rng.random() < 0.2 else 1
    logprobs = rng.random() < 0.3
    per_choice = [_chat_choice(rng, i, logprobs) for i in range(n)]
    # OpenAI sends one choice per chunk when n > 1: interleave, keeping each choice's
    # order, with choice 0 opening the stream.
    order = [0] * len(per_choice[0])
    for i in range(1, n):
        for _ in per_choice[i]:
            order.insert(rng.randint(1, len(order)), i)
    include_usage = rng.random() < 0.5
    top: dict[str, Any] = {
        "id": ident(rng, "chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": rng.randint(0, 2**31),
        "model": ident(rng, "gpt-"),
        "system_fingerprint": None if rng.random() < 0.3 else ident(rng, "fp_"),
    }
    if rng.random() < 0.5:
        top["service_tier"] = rng.choice(["default", "flex", "priority"])
    positions = [0] * n
    events: list[tuple[str | None, Any]] = []
    for choice in order:
        chunk: dict[str, Any] = {**top, "choices": [per_choice[choice][positions[choice]]]}
        positions[choice] += 1
        if include_usage:
            chunk["usage"] = None
        if rng.random() < 0.2:
            chunk["obfuscation"] = ident(rng)
        events.append((None, chunk))
    if include_usage:
        usage = {
            "prompt_tokens": rng.randint(0, 9999),
            "completion_tokens": rng.randint(0, 9999),
            "total_tokens": rng.randint(0, 9999),
            "prompt_tokens_details": {"cached_tokens": rng.randint(0, 99), "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": rng.randint(0, 99)},
        }
        events.append((None, {**top, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return finish(rng, events, may_cut=may_cut)


# ---------------------------------------------------------------- Responses


def _responses_item(
    rng: random.Random, index: int, seq: list[int], rich: bool
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Events for one output item and the finished item. `rich` adds the in-flight
    events the SDK's snapshot does not track (annotations, reasoning summary deltas)."""

    def ev(kind: str, **fields: Any) -> dict[str, Any]:
        seq[0] += 1
        return {"type": kind, "sequence_number": seq[0], "output_index": index, **fields}

    kind = rng.choice(["message", "message", "function_call", "reasoning"])
    # Ids are unique within a response, as the API makes them: the SDK keys items by
    # `call_id`/`id` and rejects a response where two output indexes share one.
    unique = f"{index}x"
    events: list[dict[str, Any]] = []
    done: dict[str, Any]
    if kind == "message":
        item_id = ident(rng, "msg_" + unique)
        added = {
            "type": "message",
            "id": item_id,
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        events.append(ev("response.output_item.added", item=added))
        parts = []
        for c in range(1 if rng.random() < 0.8 else 2):
            part: dict[str, Any] = {
                "type": "output_text",
                "text": "",
                "annotations": [],
                "logprobs": [],
            }
            at = {"item_id": item_id, "content_index": c}
            events.append(ev("response.content_part.added", **at, part=dict(part)))
            whole = text(rng, 20)
            for piece in pieces(rng, whole):
                events.append(ev("response.output_text.delta", **at, delta=piece, logprobs=[]))
            annotations = []
            if rich and rng.random() < 0.5:
                annotation = {
                    "type": "url_citation",
                    "url": ident(rng, "https://x/"),
                    "title": text(rng),
                    "start_index": 0,
                    "end_index": len(whole),
                }
                annotations.append(annotation)
                events.append(
                    ev(
                        "response.output_text.annotation.added",
                        **at,
                        annotation_index=0,
                        annotation=annotation,
                    )
                )
            events.append(ev("response.output_text.done", **at, text=whole, logprobs=[]))
            part = {**part, "text": whole, "annotations": annotations}
            events.append(ev("response.content_part.done", **at, part=part))
            parts.append(part)
        done = {**added, "status": "completed", "content": parts}
    elif kind == "function_call":
        item_id = ident(rng, "fc_" + unique)
        added = {
            "type": "function_call",
            "id": item_id,
            "call_id": ident(rng, "call_" + unique),
            "name": ident(rng),
            "arguments": "",
            "status": "in_progress",
        }
        if rng.random() < 0.4:
            added["namespace"] = rng.choice(["multi_agent_v1", "collaboration"])
        events.append(ev("response.output_item.added", item=added))
        arguments = json.dumps(json_object(rng))
        for piece in pieces(rng, arguments):
            events.append(
                ev("response.function_call_arguments.delta", item_id=item_id, delta=piece)
            )
        events.append(
            ev("response.function_call_arguments.done", item_id=item_id, arguments=arguments)
        )
        done = {**added, "status": "completed", "arguments": arguments}
    else:
        item_id = ident(rng, "rs_" + unique)
        added = {"type": "reasoning", "id": item_id, "summary": []}
        events.append(ev("response.output_item.added", item=added))
        summary = []
        for s in range(rng.randint(0, 1) if rich else 0):
            at = {"item_id": item_id, "summary_index": s}
            empty = {"type": "summary_text", "text": ""}
            events.append(ev("response.reasoning_summary_part.added", **at, part=empty))
            whole = text(rng, 20)
            for piece in pieces(rng, whole):
                events.append(ev("response.reasoning_summary_text.delta", **at, delta=piece))
            events.append(ev("response.reasoning_summary_text.done", **at, text=whole))
            finished = {"type": "summary_text", "text": whole}
            events.append(ev("response.reasoning_summary_part.done", **at, part=finished))
            summary.append(finished)
        done = {**added, "summary": summary, "encrypted_content": ident(rng, "gAAAA")}
    events.append(ev("response.output_item.done", item=done))
    return events, done


def responses_stream(rng: random.Random, *, may_cut: bool = True) -> GeneratedStream:
    rich = rng.random() < 0.5
    response: dict[str, Any] = {
        "id": ident(rng, "resp_"),
        "object": "response",
        "created_at": rng.randint(0, 2**31),
        "status": "in_progress",
        "model": ident(rng, "gpt-"),
        "output": [],
        "usage": None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
    }
    if rng.random() < 0.3:
        response["x_unknown_field"] = json_value(rng)
    if rng.random() < 0.5:
        response["reasoning"] = {"effort": "medium", "summary": "auto"}
    seq = [0]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "sequence_number": 0, "response": response},
    ]
    if rng.random() < 0.3:
        seq[0] += 1
        events.append(
            {"type": "response.in_progress", "sequence_number": seq[0], "response": response}
        )
    done_items = []
    for index in range(rng.randint(0, 3)):
        item_events, done = _responses_item(rng, index, seq, rich)
        events.extend(item_events)
        done_items.append(done)
    usage = {
        "input_tokens": rng.randint(0, 9999),
        "input_tokens_details": {"cached_tokens": rng.randint(0, 99)},
        "output_tokens": rng.randint(0, 9999),
        "output_tokens_details": {"reasoning_tokens": rng.randint(0, 99)},
        "total_tokens": rng.randint(0, 9999),
    }
    terminal = rng.choice(["response.completed", "response.completed", "response.incomplete"])
    final = {**response, "status": "completed", "usage": usage, "output": done_items}
    if terminal == "response.incomplete":
        final["status"] = "incomplete"
        final["incomplete_details"] = {"reason": "max_output_tokens"}
    if rng.random() < 0.2:
        del final["output"]  # a bare terminal response: items come from output_item.done
    seq[0] += 1
    events.append({"type": terminal, "sequence_number": seq[0], "response": final})
    generated = finish(rng, [(e["type"], e) for e in events], may_cut=may_cut)
    generated.rich = rich
    return generated


# ---------------------------------------------------------------- Gemini


def gemini_stream(rng: random.Random, *, may_cut: bool = True) -> GeneratedStream:
    """GenerateContentResponse chunks of one candidate, the last with a finishReason."""
    chunks: list[dict[str, Any]] = []
    count = rng.randint(1, 6)
    response_id = ident(rng)
    for i in range(count):
        parts: list[dict[str, Any]] = []
        for _ in range(rng.randint(0, 2)):
            kind = rng.choice(["text", "text", "thought", "call", "signed"])
            if kind == "text":
                parts.append({"text": text(rng)})
            elif kind == "thought":
                parts.append({"text": text(rng), "thought": True})
            elif kind == "signed":
                parts.append({"text": text(rng), "thoughtSignature": ident(rng)})
            else:
                call: dict[str, Any] = {"name": ident(rng), "args": json_object(rng)}
                if rng.random() < 0.5:
                    call["id"] = ident(rng)
                part: dict[str, Any] = {"functionCall": call}
                if rng.random() < 0.5:
                    part["thoughtSignature"] = ident(rng)
                parts.append(part)
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if i == count - 1:
            candidate["finishReason"] = rng.choice(["STOP", "MAX_TOKENS", "SAFETY"])
        chunk: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": "gemini-2.5-flash",
            "responseId": response_id,
        }
        if rng.random() < 0.5 or i == count - 1:
            chunk["usageMetadata"] = {
                "promptTokenCount": rng.randint(0, 9999),
                "candidatesTokenCount": rng.randint(0, 9999),
                "totalTokenCount": rng.randint(0, 9999),
            }
        chunks.append(chunk)
    return finish(rng, [(None, c) for c in chunks], may_cut=may_cut)


def run_roller(codec: Any, chunks: list[bytes]) -> Any:
    """Feed byte chunks through roller's incremental path: SSEDecoder → assembler."""
    decoder = SSEDecoder()
    assembler = codec.assembler()
    for chunk in chunks:
        for event in decoder.feed(chunk):
            assembler.feed(event)
    for event in decoder.close():
        assembler.feed(event)
    return assembler.finish()
