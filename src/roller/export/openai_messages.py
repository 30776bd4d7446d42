"""`roller export calls --format openai-messages`: every call as OpenAI chat messages.

One `roller.export.openai_messages/v1` record per call (a JSON line): the request's
conversation as OpenAI chat `messages` (the system prompt first), its `tools` as chat
function tools, and the assistant `reply` — whatever protocol the call used
(`Codec.chat` normalises, `roller.wire.chat`). Kept alongside, so nothing needs guessing:
- `protocol`, `response_id` and `origin`: for every message, where each piece came from
  in the protocol's own items and each source item's envelope (role, type, item ids),
  from which `Codec.chat.restore` rebuilds the original items;
- `participant` (id, role, parent, depth, name) and `continuity` (`roller.export.continuity`:
  whether the context extends the same agent's previous call, and why not);
- `params`: the request body without its items, system prompt and tools (sampling
  settings, tool_choice, …), minus harness-private fields (`private_fields`), which are
  named in `left_out`;
- `problems`: what the normalisation could not translate (kept verbatim in the message).
Only exportable calls are written unless blocked ones are asked for; `Omissions`
counts the rest by reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from roller.capture.models import CallRecord, ParticipantRecord
from roller.capture.reader import Capture, shared_calls
from roller.export.calls import participant_json
from roller.export.continuity import Continuity, Flows, continuity
from roller.export.omissions import Omissions
from roller.export.private_fields import strip_private
from roller.wire import codec_named
from roller.wire.chat import ChatView
from roller.wire.item_views import ItemViews

SCHEMA = "roller.export.openai_messages/v1"


def source_json(capture: Capture) -> dict[str, Any]:
    m = capture.manifest
    return {
        "capture": str(capture.paths.root),
        "sample_id": m.sample_id,
        "attempt": m.attempt,
        "capture_scope": m.capture_scope,
        "harness": m.harness.name,
        "harness_version": m.harness.version,
    }


def params_of(call: CallRecord, harness: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The request body minus items, system prompt, tools and the declared harness's
    private fields."""
    body, removed = strip_private(call.context, harness)
    codec = codec_named(call.protocol)
    history = codec.history(body) if codec is not None else None
    if codec is None or history is None:
        return {}, removed
    return {k: v for k, v in history.config.items() if k != codec.system_field}, removed


def request_view(call: CallRecord, remembered: ItemViews | None = None) -> ChatView | None:
    """The call's request as chat messages and tools; None when no codec reads it.
    `remembered`: the items earlier calls' views read (`roller.wire.item_views`)."""
    codec = codec_named(call.protocol)
    return codec.chat.request(call.context, remembered) if codec is not None else None


def reply_view(call: CallRecord) -> ChatView:
    """The call's output as chat message(s), its tool calls under the ids the capture
    gave them (Gemini's API names none); empty without an output."""
    codec = codec_named(call.protocol)
    if codec is None or call.output is None:
        return ChatView()
    return codec.chat.reply(call.output, [t.ref or t.id for t in call.tool_refs.emitted])


def message_record(
    call: CallRecord,
    participant: ParticipantRecord | None,
    source: dict[str, Any],
    flow: Continuity | None,
    harness: str,
    remembered: ItemViews | None = None,
) -> dict[str, Any] | None:
    """The call as OpenAI chat messages; None when its request has no readable items.
    `remembered`: as `request_view`'s."""
    view = request_view(call, remembered)
    if view is None:
        return None
    reply = reply_view(call) if call.output is not None else None
    params, removed = params_of(call, harness)
    usage = call.usage.model_dump() if call.usage else None
    return {
        "schema": SCHEMA,
        "call_id": call.call_id,
        "sequence": call.sequence,
        "source": source,
        "participant": participant_json(participant),
        "continuity": flow.as_json() if flow else None,
        "protocol": call.protocol,
        "model": call.model,
        "response_model": call.response_model,
        "response_id": call.response_id,
        "messages": view.plain(),
        "tools": list(view.tools),
        "reply": reply.plain() if reply is not None else None,
        "params": params,
        "usage": usage,
        "finish_reason": call.finish_reason,
        "export_status": call.export_status,
        "export_blocked_by": list(call.export_blocked_by),
        "origin": {
            "messages": [m.origin() for m in view.messages],
            "reply": [m.origin() for m in reply.messages] if reply is not None else None,
        },
        "problems": list(view.problems) + (list(reply.problems) if reply else []),
        "left_out": list(removed),
    }


def message_records(
    capture: Capture, include_blocked: bool, omissions: Omissions, in_sequence: bool = False
) -> Iterator[dict[str, Any]]:
    """Every chosen call of the capture as an openai-messages record. `in_sequence`:
    calls.jsonl holds its calls in sequence order (`ValidationReport.calls_in_sequence`),
    so it is read once, each call's continuity decided as it comes; otherwise the calls
    are read once for continuity and again for the records."""
    participants = {p.participant_id: p for p in capture.manifest.participants}
    source = source_json(capture)
    harness = capture.manifest.harness.name
    # contexts read once per conversation, and their messages viewed once (`ItemViews`)
    decided = None if in_sequence else continuity(shared_calls(capture.calls))
    flows = Flows()
    remembered = ItemViews()
    for call in shared_calls(capture.calls):
        flow = flows.see(call) if decided is None else decided.get(call.call_id)
        if call.export_status != "exportable" and not include_blocked:
            omissions.leave_out("blocked:" + ",".join(call.export_blocked_by))
            continue
        owner = participants.get(call.participant_id or "")
        record = message_record(call, owner, source, flow, harness, remembered)
        if record is None:
            omissions.leave_out("unreadable_request")
            continue
        omissions.strip(tuple(record["left_out"]))
        omissions.written += 1
        yield record
