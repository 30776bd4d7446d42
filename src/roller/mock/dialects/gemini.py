"""Gemini `generateContent` / `streamGenerateContent` for the mock, as Gemini CLI uses it.

Rules kept here:
- The model and the streaming flag come from the path
  (`/v1beta/models/{model}:streamGenerateContent?alt=sse`), never from the body.
- Requests: `systemInstruction` is system text; `contents` with role `model` are
  assistant turns (their `functionCall` parts context calls); `functionResponse` parts are
  tool results (matched by `id` when the client sent one, else by name); parts marked
  `thought` are skipped. Tools are `functionDeclarations` (`parameters` or
  `parametersJsonSchema`). `generationConfig.responseMimeType: application/json` is JSON
  mode, with `responseJsonSchema` or `responseSchema` as the schema (Gemini CLI's router
  retries for 100 s on anything that does not parse).
- Responses carry no `functionCall.id`, like the real API (the CLI mints its own);
  `finishReason` is `STOP` for text and calls alike; `responseId` and `modelVersion` are set.
- Streams: one `data:` chunk per text piece, the last chunk holding the function calls,
  `finishReason` and the full `usageMetadata`. Without `alt=sse` the chunks are returned
  as one JSON array, as the real endpoint does.
"""

from __future__ import annotations

import json
from typing import Any

from roller.mock.dialects.base import BadRequest, as_dict, as_list, as_str
from roller.mock.ids import IdKind, IdMint
from roller.mock.reply import Reply, chunks, estimate_tokens
from roller.mock.request_view import ContextCall, Entry, OfferedTool, RequestView
from roller.mock.sse import json_event
from roller.wire.types import JSONObject, ProtocolName

_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "INVALID_ARGUMENT", 500: "INTERNAL"}


class GeminiDialect:
    name: ProtocolName = "gemini"
    request_id_header: tuple[str, IdKind] | None = None
    token_count_field = "totalTokens"

    def read(self, body: JSONObject, *, path_model: str | None, path_stream: bool) -> RequestView:
        contents = body.get("contents")
        if not isinstance(contents, list):
            raise BadRequest("contents is not specified")
        entries: list[Entry] = []
        for index, content in enumerate(contents):
            entries.extend(_entries(index, as_dict(content)))
        system = body.get("systemInstruction", body.get("system_instruction"))
        return RequestView(
            protocol=self.name,
            model=path_model or "",
            stream=path_stream,
            entries=tuple(entries),
            tools=tuple(_tools(as_list(body.get("tools")))),
            system=as_str(system) or _parts_text(as_dict(system).get("parts")),
            json_schema=_json_schema(as_dict(body.get("generationConfig"))),
        )

    def render(self, reply: Reply, view: RequestView, ids: IdMint) -> JSONObject:
        parts: list[JSONObject] = []
        if reply.text or not reply.tool_calls:
            parts.append({"text": reply.text})
        parts.extend(
            {"functionCall": {"name": call.name, "args": call.arguments}}
            for call in reply.tool_calls
        )
        return self._chunk(view, ids.mint("gemini-response"), parts, reply, final=True)

    def render_stream(self, reply: Reply, view: RequestView, ids: IdMint) -> list[bytes]:
        return [json_event(chunk) for chunk in self.stream_chunks(reply, view, ids)]

    def stream_chunks(self, reply: Reply, view: RequestView, ids: IdMint) -> list[JSONObject]:
        """The streamed response as objects (SSE `data:` payloads, or the JSON array)."""
        response_id = ids.mint("gemini-response")
        pieces = chunks(reply.text) if reply.text or not reply.tool_calls else []
        calls = [
            {"functionCall": {"name": call.name, "args": call.arguments}}
            for call in reply.tool_calls
        ]
        out = [self._chunk(view, response_id, [{"text": p}], reply, final=False) for p in pieces]
        if calls or not out:
            out.append(self._chunk(view, response_id, calls, reply, final=True))
        else:
            out[-1] = self._chunk(view, response_id, [{"text": pieces[-1]}], reply, final=True)
        return out

    def _chunk(
        self,
        view: RequestView,
        response_id: str,
        parts: list[JSONObject],
        reply: Reply,
        *,
        final: bool,
    ) -> JSONObject:
        candidate: JSONObject = {"content": {"role": "model", "parts": parts}, "index": 0}
        prompt = estimate_tokens(view.body_size)
        usage: JSONObject = {"promptTokenCount": prompt, "totalTokenCount": prompt}
        if final:
            candidate["finishReason"] = "STOP"
            output = estimate_tokens(reply.output_chars)
            usage = {
                "promptTokenCount": prompt,
                "candidatesTokenCount": output,
                "totalTokenCount": prompt + output,
            }
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": view.model,
            "responseId": response_id,
        }

    def error_body(self, status: int, message: str) -> JSONObject:
        return {
            "error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}
        }


def _parts_text(parts: Any) -> str:
    texts = [
        as_str(as_dict(p).get("text")) for p in as_list(parts) if not as_dict(p).get("thought")
    ]
    return "\n".join(t for t in texts if t)


def _result_text(response: Any) -> str:
    # Gemini CLI wraps tool output as {"output": "..."}; anything else is kept as JSON.
    if isinstance(response, dict) and isinstance(response.get("output"), str):
        return str(response["output"])
    return json.dumps(response, ensure_ascii=False)


def _entries(index: int, content: dict[str, Any]) -> list[Entry]:
    parts = [as_dict(p) for p in as_list(content.get("parts"))]
    if content.get("role") == "model":
        calls = tuple(
            ContextCall(id=fc.get("id"), name=as_str(fc.get("name")), arguments=fc.get("args"))
            for p in parts
            if (fc := as_dict(p.get("functionCall")))
        )
        return [Entry("assistant", index, _parts_text(parts), calls=calls)]
    entries = [
        Entry(
            "tool",
            index,
            _result_text(fr.get("response")),
            result_of=fr.get("id") if isinstance(fr.get("id"), str) else None,
            tool_name=as_str(fr.get("name")) or None,
        )
        for p in parts
        if (fr := as_dict(p.get("functionResponse")))
    ]
    text = _parts_text(parts)
    if text:
        entries.append(Entry("user", index, text))
    return entries


def _tools(raw: list[Any]) -> list[OfferedTool]:
    tools = []
    for holder in raw:
        spec = as_dict(holder)
        for decl in as_list(spec.get("functionDeclarations", spec.get("function_declarations"))):
            fn = as_dict(decl)
            if isinstance(fn.get("name"), str):
                schema = fn.get("parametersJsonSchema", fn.get("parameters"))
                tools.append(OfferedTool(fn["name"], schema=as_dict(schema)))
    return tools


def _json_schema(config: dict[str, Any]) -> JSONObject | None:
    if config.get("responseMimeType") != "application/json":
        return None
    return as_dict(config.get("responseJsonSchema", config.get("responseSchema")))


DIALECT = GeminiDialect()
