"""A small multi-agent program for the golden generic capture.

It uses the official SDKs exactly as an agent framework would, pointed at roller by the
standard base-URL environment variables, and declares its participants with roller's
explicit headers:
- root (x-roller-session-id only): Anthropic Messages with a tool round trip;
- child "planner" (x-roller-agent-id): Chat Completions, streamed;
- child "worker" (x-roller-agent-id + x-roller-parent-agent-id planner): Responses with
  a tool round trip;
- one call that carries only Claude Code's headers: under `--harness generic` they are
  not trusted (fail closed), so that call must come out unattributed.
"""

from __future__ import annotations

import anthropic
import openai

SESSION = "golden-session-1"
LOOKUP_ANTHROPIC = {
    "name": "lookup",
    "description": "Look something up.",
    "input_schema": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
}
LOOKUP_RESPONSES = {
    "type": "function",
    "name": "lookup",
    "description": "Look something up.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
}


def root() -> None:
    client = anthropic.Anthropic(default_headers={"x-roller-session-id": SESSION})
    messages: list = [{"role": "user", "content": "Find out about roller."}]
    first = client.messages.create(
        model="mock-model", max_tokens=256, tools=[LOOKUP_ANTHROPIC], messages=messages
    )
    tool = next(b for b in first.content if b.type == "tool_use")
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": tool.id, "content": "roller records agents"}
            ],
        },
    ]
    client.messages.create(
        model="mock-model", max_tokens=256, tools=[LOOKUP_ANTHROPIC], messages=messages
    )


def planner() -> None:
    client = openai.OpenAI(
        default_headers={"x-roller-session-id": SESSION, "x-roller-agent-id": "planner"}
    )
    stream = client.chat.completions.create(
        model="mock-model", stream=True, messages=[{"role": "user", "content": "Plan the work."}]
    )
    for _ in stream:
        pass


def worker() -> None:
    client = openai.OpenAI(
        default_headers={
            "x-roller-session-id": SESSION,
            "x-roller-agent-id": "worker",
            "x-roller-parent-agent-id": "planner",
        }
    )
    first = client.responses.create(
        model="mock-model", input="Do the work.", tools=[LOOKUP_RESPONSES]
    )
    call = next(i for i in first.output if i.type == "function_call")
    client.responses.create(
        model="mock-model",
        tools=[LOOKUP_RESPONSES],
        input=[
            {"role": "user", "content": "Do the work."},
            {
                "type": "function_call",
                "id": call.id,
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "worked"},
        ],
    )


def impostor() -> None:
    client = anthropic.Anthropic(
        default_headers={
            "x-claude-code-session-id": SESSION,
            "x-claude-code-agent-id": "a0123456789abcdef",
        }
    )
    client.messages.create(
        model="mock-model", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )


if __name__ == "__main__":
    root()
    planner()
    worker()
    impostor()
