"""One participant's segmented conversation as ATIF steps.

Input: the participant's segments (`roller.export.trajectory`: items verbatim, each
tagged with the call that first carried it) and its calls. Output: ATIF v1.8 step
objects (plain JSON), numbered from 1:
- every call of a segment is one `agent` step (`llm_call_count: 1`), placed after the
  input items the call added: its output's text as `message`, thinking as
  `reasoning_content`, tool calls with their `tool_call_id`, token `metrics` (prompt
  tokens include cache reads; cache-creation tokens in `metrics.extra`), the call's ids
  in `extra`. A call whose output did not complete still has its step (empty message,
  `extra.output_complete: false`);
- a tool result in a later input becomes an `observation` result of the agent step
  that made the tool call (`source_call_id`); one whose call is not in this
  conversation is a `user` step saying which id it answers;
- other input items are `user` / `system` steps (`developer` counts as `system`); an
  assistant item the request carried without this conversation having produced it
  (history the harness supplied) is an `agent` step with `is_copied_context`;
- the first `copied` input items of the first segment (a fork child's inherited
  prefix, found by the caller) and, in a later segment, the leading items that repeat
  the previous segment are `is_copied_context: true`;
- a later segment opens with a `system` step whose `extra.context_management` says why
  the context was rebuilt (`docs/protocol.md`, "Main trajectory").
Parts ATIF cannot hold (anything but text and images of its four media types) are kept
verbatim in the step's `extra.untranslated` and counted in `problems`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from roller.capture.models import CallRecord
from roller.capture.trajectory_record import TrajectoryMessage, TrajectorySegment
from roller.export.calls import prompt_tokens
from roller.wire import Codec, codec_named
from roller.wire.chat import arguments_value, parse_data_url

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_SOURCE = {"user": "user", "system": "system", "developer": "system", "assistant": "agent"}


@dataclass
class Steps:
    """The steps being built and what the builder noticed."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    tool_steps: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool id -> step
    agent_steps: dict[str, dict[str, Any]] = field(default_factory=dict)  # call id -> step

    def add(self, step: dict[str, Any]) -> dict[str, Any]:
        step["step_id"] = len(self.steps) + 1
        self.steps.append({"step_id": step.pop("step_id"), **step})
        return self.steps[-1]


def content_of(value: Any, problems: list[str]) -> tuple[Any, list[Any]]:
    """ATIF `message`/`content` (a string, or text and image parts) and what it cannot hold."""
    if value is None:
        return "", []
    if isinstance(value, str):
        return value, []
    parts: list[dict[str, Any]] = []
    untranslated: list[Any] = []
    for part in value if isinstance(value, list) else [value]:
        kind = part.get("type") if isinstance(part, dict) else None
        image = (
            parse_data_url(str(part.get("image_url", {}).get("url", "")))
            if kind == "image_url"
            else None
        )
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "image_url" and (image is None or image[0] in IMAGE_TYPES):
            url = str(part["image_url"].get("url"))
            media = image[0] if image else _media_of(url)
            if media is None:
                untranslated.append(part)
                continue
            parts.append({"type": "image", "source": {"media_type": media, "path": url}})
        else:
            untranslated.append(part)
    problems.extend(
        f"atif_untranslated:{p.get('type') if isinstance(p, dict) else 'json'}"
        for p in untranslated
    )
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"], untranslated
    return (parts or ""), untranslated


def _media_of(url: str) -> str | None:
    ext = url.rsplit(".", 1)[-1].lower()
    return {
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "png": "image/png",
        "gif": "image/gif",
        "webp": "image/webp",
    }.get(ext)


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    body = call.get("function") or call.get("custom") or {}
    raw = body.get("arguments", body.get("input"))
    value = arguments_value(raw) if call.get("type") == "function" else raw
    out: dict[str, Any] = {
        "tool_call_id": str(call.get("id")),
        "function_name": str(body.get("name")),
        "arguments": value if isinstance(value, dict) else {"input": value},
    }
    if not isinstance(value, dict):
        out["extra"] = {"arguments_not_an_object": True, "type": call.get("type")}
    return out


def _codec(protocol: str | None) -> Codec:
    codec = codec_named(protocol)
    assert codec is not None  # a segment's protocol is one the trajectory could read
    return codec


def metrics_of(call: CallRecord) -> dict[str, Any] | None:
    usage = call.usage
    if usage is None:
        return None
    metrics: dict[str, Any] = {
        "prompt_tokens": prompt_tokens(call),
        "completion_tokens": usage.output_tokens,
        "cached_tokens": usage.cache_read_tokens,
    }
    if usage.cache_write_tokens is not None:
        metrics["extra"] = {"cache_creation_tokens": usage.cache_write_tokens}
    return {k: v for k, v in metrics.items() if v is not None}


def _agent_step(steps: Steps, call: CallRecord, items: list[Any]) -> None:
    tool_ids = [t.ref or t.id for t in call.tool_refs.emitted]
    view = _codec(call.protocol).chat.items(items, tool_ids=tool_ids)
    texts: list[Any] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for chat in view.plain():
        if chat.get("content") not in (None, ""):
            texts.append(chat["content"])
        if chat.get("reasoning_content"):
            reasoning.append(chat["reasoning_content"])
        calls.extend(_tool_call(c) for c in chat.get("tool_calls") or [])
    steps.problems.extend(view.problems)
    pieces: list[Any] = [
        p for t in texts for p in ([{"type": "text", "text": t}] if isinstance(t, str) else t)
    ]
    message, untranslated = content_of(pieces, steps.problems)
    extra: dict[str, Any] = {
        "call_id": call.call_id,
        "response_id": call.response_id,
        "protocol": call.protocol,
    }
    if not call.output_complete:
        extra["output_complete"] = False
        extra["output_incomplete_reason"] = call.output_incomplete_reason
    if untranslated:
        extra["untranslated"] = untranslated
    step: dict[str, Any] = {
        "timestamp": call.request.received_at,
        "source": "agent",
        "model_name": call.response_model or call.model,
        "message": message,
        "llm_call_count": 1,
        "extra": extra,
    }
    if reasoning:
        step["reasoning_content"] = "\n".join(reasoning)
    if calls:
        step["tool_calls"] = calls
    metrics = metrics_of(call)
    if metrics:
        step["metrics"] = metrics
    added = steps.add(step)
    steps.agent_steps[call.call_id] = added
    for c in calls:
        steps.tool_steps[c["tool_call_id"]] = added


def _observe(steps: Steps, chat: dict[str, Any], timestamp: str, copied: bool) -> None:
    call_id = str(chat.get("tool_call_id"))
    content, untranslated = content_of(chat.get("content"), steps.problems)
    owner = steps.tool_steps.get(call_id)
    if owner is None:
        step: dict[str, Any] = {
            "timestamp": timestamp,
            "source": "user",
            "message": content,
            "extra": {"tool_result_for": call_id},
        }
        if copied:
            step["is_copied_context"] = True
        steps.add(step)
        return
    result: dict[str, Any] = {"source_call_id": call_id, "content": content}
    if untranslated:
        result["extra"] = {"untranslated": untranslated}
    owner.setdefault("observation", {"results": []})["results"].append(result)


def _input_item(
    steps: Steps, protocol: str, message: TrajectoryMessage, timestamp: str, copied: bool
) -> None:
    view = _codec(protocol).chat.items([message.message])
    steps.problems.extend(view.problems)
    for chat in view.plain():
        role = str(chat.get("role"))
        if role == "tool":
            _observe(steps, chat, timestamp, copied)
            continue
        content, untranslated = content_of(chat.get("content"), steps.problems)
        extra: dict[str, Any] = {
            "call_id": message.call_id,
            "position": message.position,
            "role": role,
        }
        if message.injections:
            extra["injected"] = message.injected
            extra["injections"] = [i.model_dump(mode="json") for i in message.injections]
        if untranslated:
            extra["untranslated"] = untranslated
        step: dict[str, Any] = {
            "timestamp": timestamp,
            "source": _SOURCE.get(role, "user"),
            "message": content,
            "extra": extra,
        }
        if role == "assistant":
            calls = [_tool_call(c) for c in chat.get("tool_calls") or []]
            if calls:
                step["tool_calls"] = calls
            copied = True  # produced outside this conversation's calls: context it was given
        if copied:
            step["is_copied_context"] = True
        added = steps.add(step)
        for c in added.get("tool_calls") or []:
            steps.tool_steps[c["tool_call_id"]] = added


def _system_prompt(segment: TrajectorySegment) -> Any:
    config = segment.configs[0] if segment.configs else None
    return _codec(segment.protocol).system_prompt(config)


def _keys(protocol: str, messages: Sequence[TrajectoryMessage]) -> list[Hashable]:
    return [_codec(protocol).item_key(m.message) for m in messages]


def build_steps(
    segments: Sequence[TrajectorySegment], calls: dict[str, CallRecord], copied_prefix: int = 0
) -> Steps:
    """The steps of a participant's segments (module docstring). `copied_prefix`: how
    many leading input items of the first segment are copied context."""
    steps = Steps()
    previous: list[Hashable] = []
    for segment in segments:
        first_call = calls[segment.requests[0].call_id] if segment.requests else None
        when = first_call.request.received_at if first_call else None
        if segment.index > 0:
            steps.add(
                {
                    "timestamp": when,
                    "source": "system",
                    "message": f"context rebuilt: {segment.start.reason}",
                    "extra": {
                        "context_management": {
                            "segment": segment.index,
                            **segment.start.model_dump(mode="json"),
                        }
                    },
                }
            )
        system = _system_prompt(segment)
        if system is not None:
            view = _codec(segment.protocol).chat.items([], system=system)
            (chat, *_) = view.plain() or [{"content": ""}]
            content, _ = content_of(chat.get("content"), steps.problems)
            steps.add(
                {
                    "timestamp": when,
                    "source": "system",
                    "message": content,
                    "extra": {"system_prompt": True},
                }
            )
        keys = _keys(segment.protocol, segment.messages)
        repeats = 0
        if segment.index == 0:
            repeats = copied_prefix
        else:
            while repeats < min(len(keys), len(previous)) and keys[repeats] == previous[repeats]:
                repeats += 1
        _segment_steps(steps, segment, calls, repeats)
        previous = keys
    return steps


def _segment_steps(
    steps: Steps, segment: TrajectorySegment, calls: dict[str, CallRecord], repeats: int
) -> None:
    for request in segment.requests:
        call = calls[request.call_id]
        mine = [(n, m) for n, m in enumerate(segment.messages) if m.call_id == request.call_id]
        for n, m in mine:
            if m.source == "input":
                _input_item(
                    steps, segment.protocol, m, call.request.received_at, copied=n < repeats
                )
        _agent_step(steps, call, [m.message for _, m in mine if m.source == "output"])
