"""OpenAI Responses (`POST …/responses`) for the mock, as Codex, Pi and Hermes use it.

Rules kept here:
- Requests: `input` is a string or a list of items. Messages with role `system` or
  `developer` (and `instructions`) are system text. `function_call` /
  `custom_tool_call` items are context calls (with their `namespace`);
  `function_call_output` / `custom_tool_call_output` are tool results. Codex v2
  `agent_message` items are messages from another agent, read as user text with every
  part's `text` or `encrypted_content` (Codex sends the task there in plaintext to
  non-OpenAI providers). Namespace tools (`{"type":"namespace","name":…,"tools":[…]}`)
  are flattened into tools that keep their namespace. `text.format` `json_schema` /
  `json_object` is JSON mode.
- A client `tool_search` tool (`{"type": "tool_search", "execution": "client"}`) is
  offered as `tool_search`, called with a `tool_search_call` item (arguments as an
  object); a `tool_search_output` item in the history offers its `tools` (Codex 0.171.0
  with `gpt-5.5` defers its subagent tools behind it).
- Code mode (`roller.mock.code_mode`): an `additional_tools` input item offering `exec`
  adds its direct and nested tools; an `exec` call in the history stands for the nested
  calls its script makes (each answered by the `exec` output), never for a call of its
  own (`exec` is how tools are called, not a tool a scenario role names).
- Responses: an assistant `message` item when there is text (or nothing else), then one
  `function_call` item per direct call, each with `id` (`fc_…`), `call_id` (`call_…`)
  and, for a namespaced tool, `namespace` — Codex matches the call by it; then the
  nested calls (or a lookup) as one `custom_tool_call` `exec` item (`ctc_…`) whose
  `input` is the script.
- Streams: `response.created`, `response.in_progress`, per item `output_item.added`,
  (`content_part.added`, `output_text.delta`…, `output_text.done`, `content_part.done`) or
  (`function_call_arguments.delta`…, `function_call_arguments.done`) or
  (`custom_tool_call_input.delta`…, `custom_tool_call_input.done`), `output_item.done`,
  then `response.completed` with the full response and usage including
  `input_tokens_details` and `output_tokens_details` (Codex requires both). Every event
  has an `event:` line and an increasing `sequence_number`.
"""

from __future__ import annotations

import copy
import itertools
import time
from typing import Any

from roller.mock import code_mode
from roller.mock.dialects.base import (
    BadRequest,
    as_dict,
    as_list,
    as_str,
    parse_arguments,
    required_str,
)
from roller.mock.ids import IdKind, IdMint
from roller.mock.reply import Reply, ToolCallOut, chunks, estimate_tokens
from roller.mock.request_view import ContextCall, Entry, OfferedTool, RequestView
from roller.mock.sse import json_event
from roller.wire.types import JSONObject, ProtocolName

_CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
_RESULT_ITEMS = (
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "tool_search_output",
)
# A client tool search: offered as a tool without a name, called with its own item, and
# its output's `tools` offered from then on.
_TOOL_SEARCH = "tool_search"
_TOOL_SEARCH_CALL = "tool_search_call"


def _output_items(reply: Reply, ids: IdMint) -> list[JSONObject]:
    """The response's output items: the text message (also when there is nothing else),
    the direct function calls, and code mode's one custom tool call for nested calls or
    lookups."""
    output: list[JSONObject] = []
    direct = [c for c in reply.tool_calls if c.via is None]
    nested = [c for c in reply.tool_calls if c.via is not None]
    script = code_mode.lookup_script(reply.lookups) if reply.lookups else None
    if nested:
        script = code_mode.script_for(nested)
    if reply.text or not (direct or script):
        part = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
        output.append(
            {
                "id": ids.mint("responses-message"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        )
    for call in direct:
        if call.call_type == _TOOL_SEARCH_CALL:
            output.append(_tool_search_call(call, ids))
            continue
        item: JSONObject = {
            "id": ids.mint("responses-function-call"),
            "type": "function_call",
            "status": "completed",
            "arguments": call.arguments_json,
            "call_id": ids.mint("responses-call"),
            "name": call.name,
        }
        if call.namespace is not None:
            item["namespace"] = call.namespace
        output.append(item)
    if script is not None:
        output.append(
            {
                "id": ids.mint("responses-custom-tool-call"),
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": ids.mint("responses-call"),
                "name": code_mode.EXEC_TOOL,
                "input": script,
            }
        )
    return output


class ResponsesDialect:
    name: ProtocolName = "openai-responses"
    request_id_header: tuple[str, IdKind] | None = ("x-request-id", "openai-request")
    token_count_field = "input_tokens"

    def read(self, body: JSONObject, *, path_model: str | None, path_stream: bool) -> RequestView:
        model = required_str(body, "model")
        raw_input = body.get("input")
        if isinstance(raw_input, str):
            items: list[Any] = [{"type": "message", "role": "user", "content": raw_input}]
        elif isinstance(raw_input, list):
            items = raw_input
        else:
            raise BadRequest("input: a string or an array of items is required")
        entries = [
            entry
            for index, item in enumerate(items)
            if (entry := _entry(index, as_dict(item))) is not None
        ]
        tools = _tools(as_list(body.get("tools")), namespace=None)
        for item in items:
            if as_dict(item).get("type") == "tool_search_output":
                tools += _tools(as_list(as_dict(item).get("tools")), namespace=None)
        coded = code_mode.read_tools(
            items,
            [e.text for e in entries if e.role == "system"],
            [e.text for e in entries if e.role == "tool"],
        )
        if coded is not None:
            tools += coded.tools
            entries = [_nested_entry(e, items) for e in entries]
        return RequestView(
            protocol=self.name,
            model=model,
            stream=body.get("stream") is True,
            entries=tuple(entries),
            tools=tuple(tools),
            system=as_str(body.get("instructions")),
            json_schema=_json_schema(body),
            deferred=coded.deferred if coded is not None else (),
        )

    def render(self, reply: Reply, view: RequestView, ids: IdMint) -> JSONObject:
        output = _output_items(reply, ids)  # minted first: the ids' order is the goldens'
        tokens_in = estimate_tokens(view.body_size)
        tokens_out = estimate_tokens(reply.output_chars)
        return {
            "id": ids.mint("responses-response"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "model": view.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": tokens_in,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": tokens_out,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": tokens_in + tokens_out,
            },
            "user": None,
            "metadata": {},
        }

    def render_stream(self, reply: Reply, view: RequestView, ids: IdMint) -> list[bytes]:
        final = self.render(reply, view, ids)
        sequence = itertools.count()
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            payload = {"type": kind, "sequence_number": next(sequence), **fields}
            events.append(json_event(payload, event=kind))

        opening = copy.deepcopy(final)
        opening.update(status="in_progress", output=[], usage=None)
        emit("response.created", response=opening)
        emit("response.in_progress", response=opening)
        for index, item in enumerate(final["output"]):
            if item["type"] == "message":
                _stream_message(emit, index, item)
            elif item["type"] in _STREAMED_CALLS:
                _stream_call(emit, index, item)
            else:  # a tool search call: whole, in its added and done events
                emit("response.output_item.added", output_index=index, item=item)
                emit("response.output_item.done", output_index=index, item=item)
        emit("response.completed", response=final)
        return events

    def error_body(self, status: int, message: str) -> JSONObject:
        kind = "server_error" if status >= 500 else "invalid_request_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _stream_message(emit: Any, index: int, item: JSONObject) -> None:
    text = item["content"][0]["text"]
    empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    emit(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "content": []},
    )
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    emit("response.content_part.added", **where, part=empty_part)
    for piece in chunks(text):
        emit("response.output_text.delta", **where, delta=piece, logprobs=[])
    emit("response.output_text.done", **where, text=text, logprobs=[])
    emit("response.content_part.done", **where, part=item["content"][0])
    emit("response.output_item.done", output_index=index, item=item)


# Streamed call items: item type -> (the field streamed in pieces, its delta/done event
# prefix, the item fields the done event repeats).
_STREAMED_CALLS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "function_call": ("arguments", "response.function_call_arguments", ("name",)),
    "custom_tool_call": ("input", "response.custom_tool_call_input", ()),
}


def _stream_call(emit: Any, index: int, item: JSONObject) -> None:
    field, event, repeated = _STREAMED_CALLS[item["type"]]
    emit(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", field: ""},
    )
    where = {"item_id": item["id"], "output_index": index}
    for piece in chunks(item[field]):
        emit(f"{event}.delta", **where, delta=piece)
    done = {name: item[name] for name in repeated}
    emit(f"{event}.done", **where, **done, **{field: item[field]})
    emit("response.output_item.done", output_index=index, item=item)


def _tool_search_call(call: ToolCallOut, ids: IdMint) -> JSONObject:
    return {
        "id": ids.mint("responses-tool-search-call"),
        "type": _TOOL_SEARCH_CALL,
        "call_id": ids.mint("responses-call"),
        "status": "completed",
        "execution": "client",
        "arguments": call.arguments,
    }


def _nested_entry(entry: Entry, items: list[Any]) -> Entry:
    """An `exec` call's entry, with the nested calls its script makes as its calls."""
    item = items[entry.message_index] if entry.role == "assistant" else None
    if not code_mode.exec_item(item):
        return entry
    assert isinstance(item, dict)
    calls = tuple(
        ContextCall(id=item.get("call_id"), name=name, namespace=namespace, arguments=arguments)
        for namespace, name, arguments in code_mode.nested_calls(as_str(item.get("input")))
    )
    return Entry("assistant", entry.message_index, entry.text, calls=calls)


def _tools(raw: list[Any], namespace: str | None) -> list[OfferedTool]:
    tools: list[OfferedTool] = []
    for tool in raw:
        spec = as_dict(tool)
        name = spec.get("name")
        if spec.get("type") == "namespace" and isinstance(name, str):
            tools.extend(_tools(as_list(spec.get("tools")), namespace=name))
        elif isinstance(name, str):
            # function tools carry `parameters`; custom (freeform) tools have no schema.
            tools.append(OfferedTool(name, namespace, as_dict(spec.get("parameters"))))
        elif spec.get("type") == _TOOL_SEARCH and spec.get("execution") == "client":
            schema = as_dict(spec.get("parameters"))
            tools.append(OfferedTool(_TOOL_SEARCH, None, schema, call_type=_TOOL_SEARCH_CALL))
    return tools


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in as_list(content):
        spec = as_dict(part)
        text = spec.get("text", spec.get("encrypted_content"))
        if isinstance(text, str) and text:
            parts.append(text)
    return "\n".join(parts)


def _entry(index: int, item: dict[str, Any]) -> Entry | None:
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role in ("system", "developer"):
            return Entry("system", index, text)
        if role == "user":
            return Entry("user", index, text)
        if role == "assistant":
            return Entry("assistant", index, text)
        return None
    if kind == "agent_message":
        return Entry("user", index, _content_text(item.get("content")))
    if kind in _CALL_ITEMS:
        raw = item.get("arguments", item.get("input", item.get("action")))
        call = ContextCall(
            id=item.get("call_id"),
            name=as_str(item.get("name")) or (_TOOL_SEARCH if kind == _TOOL_SEARCH_CALL else kind),
            namespace=item.get("namespace") if isinstance(item.get("namespace"), str) else None,
            arguments=parse_arguments(raw),
        )
        return Entry("assistant", index, calls=(call,))
    if kind in _RESULT_ITEMS:
        return Entry(
            "tool", index, _content_text(item.get("output")), result_of=item.get("call_id")
        )
    return None


def _json_schema(body: JSONObject) -> JSONObject | None:
    fmt = as_dict(as_dict(body.get("text")).get("format"))
    if fmt.get("type") == "json_schema":
        return as_dict(fmt.get("schema"))
    if fmt.get("type") == "json_object":
        return {}
    return None


DIALECT = ResponsesDialect()
