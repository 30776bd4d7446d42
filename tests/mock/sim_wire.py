"""Protocol-neutral conversation history, and its request/response forms per protocol.

Test support for the harness simulator: `Msg` is one history entry; `encode` builds the
request body a harness of that protocol would send (shapes from
/work/shared/harnesses/*.md: Claude Code's `role: "system"` messages, Codex's namespace
tools and `agent_message` items with `encrypted_content`, Gemini's `functionResponse`);
`decode` reads the mock's non-streamed response back into a `Msg`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from roller.wire.types import ProtocolName


@dataclass
class Call:
    id: str | None
    name: str
    arguments: dict[str, Any]
    namespace: str | None = None
    item_id: str | None = None


@dataclass
class Tool:
    name: str
    schema: dict[str, Any]
    namespace: str | None = None


@dataclass
class Msg:
    role: str  # system | user | assistant | tool | agent_message
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    call_id: str | None = None
    name: str | None = None


def path_for(protocol: ProtocolName, model: str) -> str:
    return {
        "anthropic-messages": "/v1/messages?beta=true",
        "openai-chat-completions": "/v1/chat/completions",
        "openai-responses": "/v1/responses",
        "gemini": f"/v1beta/models/{model}:generateContent",
    }[protocol]


def encode(
    protocol: ProtocolName, model: str, system: str, history: list[Msg], tools: list[Tool]
) -> dict[str, Any]:
    return {
        "anthropic-messages": _anthropic,
        "openai-chat-completions": _chat,
        "openai-responses": _responses,
        "gemini": _gemini,
    }[protocol](model, system, history, tools)


def decode(protocol: ProtocolName, body: dict[str, Any]) -> Msg:
    if protocol == "anthropic-messages":
        text = "".join(b["text"] for b in body["content"] if b["type"] == "text")
        calls = [
            Call(b["id"], b["name"], b["input"]) for b in body["content"] if b["type"] == "tool_use"
        ]
        return Msg("assistant", text, calls)
    if protocol == "openai-chat-completions":
        message = body["choices"][0]["message"]
        calls = [
            Call(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
        return Msg("assistant", message["content"] or "", calls)
    if protocol == "openai-responses":
        text, calls = "", []
        for item in body["output"]:
            if item["type"] == "message":
                text += "".join(p["text"] for p in item["content"])
            elif item["type"] == "function_call":
                calls.append(
                    Call(
                        item["call_id"],
                        item["name"],
                        json.loads(item["arguments"]),
                        item.get("namespace"),
                        item["id"],
                    )
                )
        return Msg("assistant", text, calls)
    parts = body["candidates"][0]["content"]["parts"]
    text = "".join(p.get("text", "") for p in parts)
    # The real API sends no functionCall.id; Gemini CLI mints `<tool>_<epoch_ms>_<n>`.
    calls = [
        Call(
            p["functionCall"].get("id") or f"{p['functionCall']['name']}_1795974922439_{i}",
            p["functionCall"]["name"],
            p["functionCall"]["args"],
        )
        for i, p in enumerate(parts)
        if "functionCall" in p
    ]
    return Msg("assistant", text, calls)


def _anthropic(model: str, system: str, history: list[Msg], tools: list[Tool]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for msg in history:
        if msg.role == "system":
            messages.append({"role": "system", "content": msg.text})
        elif msg.role in ("user", "agent_message"):
            block = {"type": "text", "text": msg.text}
            if messages and messages[-1]["role"] == "user" and _has_results(messages[-1]):
                messages[-1]["content"].append(block)  # Claude Code appends reminders here
            else:
                messages.append({"role": "user", "content": [block]})
        elif msg.role == "assistant":
            content: list[dict[str, Any]] = []
            if msg.text:
                content.append({"type": "text", "text": msg.text})
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in msg.calls
            ]
            messages.append({"role": "assistant", "content": content})
        elif msg.role == "tool":
            block = {"type": "tool_result", "tool_use_id": msg.call_id, "content": msg.text}
            if messages and messages[-1]["role"] == "user" and _has_results(messages[-1]):
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
    return {
        "model": model,
        "max_tokens": 32000,
        "stream": False,
        "system": [{"type": "text", "text": system}],
        "messages": messages,
        "tools": [{"name": t.name, "input_schema": t.schema} for t in tools],
    }


def _has_results(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "tool_result" for b in message["content"])


def _chat(model: str, system: str, history: list[Msg], tools: list[Tool]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for msg in history:
        if msg.role == "system":
            messages.append({"role": "system", "content": msg.text})
        elif msg.role in ("user", "agent_message"):
            messages.append({"role": "user", "content": msg.text})
        elif msg.role == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": msg.text or None}
            if msg.calls:
                out["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in msg.calls
                ]
            messages.append(out)
        elif msg.role == "tool":
            messages.append({"role": "tool", "tool_call_id": msg.call_id, "content": msg.text})
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": False,
    }
    if tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "parameters": t.schema}}
            for t in tools
        ]
    return body


def _responses(model: str, system: str, history: list[Msg], tools: list[Tool]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for msg in history:
        if msg.role == "system":
            items.append(_message("developer", "input_text", msg.text))
        elif msg.role == "user":
            items.append(_message("user", "input_text", msg.text))
        elif msg.role == "agent_message":
            # Codex v2: the task travels as encrypted_content, plaintext for non-OpenAI hosts.
            items.append(
                {
                    "type": "agent_message",
                    "author": "/root",
                    "recipient": "/root/child",
                    "content": [
                        {"type": "input_text", "text": "Message from /root. Type: TASK"},
                        {"type": "encrypted_content", "encrypted_content": msg.text},
                    ],
                }
            )
        elif msg.role == "assistant":
            if msg.text:
                items.append(_message("assistant", "output_text", msg.text))
            for c in msg.calls:
                item = {
                    "type": "function_call",
                    "id": c.item_id,
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": json.dumps(c.arguments),
                }
                if c.namespace:
                    item["namespace"] = c.namespace
                items.append(item)
        elif msg.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "id": f"fco_{uuid.uuid4()}",
                    "call_id": msg.call_id,
                    "output": msg.text,
                }
            )
    namespaces: dict[str, list[dict[str, Any]]] = {}
    flat: list[dict[str, Any]] = []
    for t in tools:
        spec = {"type": "function", "name": t.name, "parameters": t.schema, "strict": False}
        if t.namespace:
            namespaces.setdefault(t.namespace, []).append(spec)
        else:
            flat.append(spec)
    flat += [{"type": "namespace", "name": ns, "tools": specs} for ns, specs in namespaces.items()]
    return {
        "model": model,
        "instructions": system,
        "input": items,
        "tools": flat,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "stream": False,
        "store": False,
    }


def _message(role: str, part: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _gemini(model: str, system: str, history: list[Msg], tools: list[Tool]) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    for msg in history:
        if msg.role in ("user", "system", "agent_message"):
            contents.append({"role": "user", "parts": [{"text": msg.text}]})
        elif msg.role == "assistant":
            parts: list[dict[str, Any]] = [{"text": msg.text}] if msg.text else []
            parts += [
                {
                    "functionCall": {"name": c.name, "args": c.arguments, "id": c.id},
                    "thoughtSignature": "skip_thought_signature_validator",
                }
                for c in msg.calls
            ]
            contents.append({"role": "model", "parts": parts})
        elif msg.role == "tool":
            response = {"name": msg.name, "id": msg.call_id, "response": {"output": msg.text}}
            part = {"functionResponse": response}
            if (
                contents
                and contents[-1]["role"] == "user"
                and "functionResponse" in str(contents[-1]["parts"])
            ):
                contents[-1]["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part]})
    return {
        "contents": contents,
        "systemInstruction": {"role": "user", "parts": [{"text": system}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": t.name, "parametersJsonSchema": t.schema} for t in tools
                ]
            }
        ],
        "generationConfig": {"temperature": 0},
    }
