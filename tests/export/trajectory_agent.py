"""A small agent program whose root rewrites its own history, run by the trajectory tests.

It uses the official SDKs as an agent framework would, pointed at roller by the standard
base-URL environment variables, and declares its participants with roller's explicit
headers (root: `x-roller-session-id` only; a child adds `x-roller-agent-id`).

    python trajectory_agent.py compaction   Anthropic root: a tool round trip, then the
                                            history replaced by a summary (compaction)
                                            and another round trip; a child call between.
    python trajectory_agent.py dynamic      Responses root: a tool round trip, then a
                                            client-side tool search loads another tool
                                            (`tool_search_call` / `tool_search_output`)
                                            and the request's tools grow.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anthropic

# Each mode imports only the SDK it uses: importing both costs seconds per run.

SESSION = "trajectory-session-1"
SUMMARY = "Summary of the conversation so far: roller records agents. Continue the task."
LOOKUP_ANTHROPIC = {
    "name": "lookup",
    "description": "Look something up.",
    "input_schema": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
}


def _responses_tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    }


def _round_trip(client: anthropic.Anthropic, messages: list[Any]) -> None:
    """Ask, run the one tool call the model makes, and ask again with its result."""
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


def compaction() -> None:
    import anthropic

    root = anthropic.Anthropic(default_headers={"x-roller-session-id": SESSION})
    _round_trip(root, [{"role": "user", "content": "Find out about roller."}])
    child = anthropic.Anthropic(
        default_headers={"x-roller-session-id": SESSION, "x-roller-agent-id": "planner"}
    )
    child.messages.create(
        model="mock-model", max_tokens=64, messages=[{"role": "user", "content": "Plan the work."}]
    )
    # Compaction: the root's history is replaced by a summary of it.
    _round_trip(root, [{"role": "user", "content": SUMMARY}])


def dynamic() -> None:
    import openai

    client = openai.OpenAI(default_headers={"x-roller-session-id": SESSION})
    lookup = _responses_tool("lookup")
    first = client.responses.create(
        model="mock-model", input="Find out about roller.", tools=[lookup]
    )
    call = next(i for i in first.output if i.type == "function_call")
    search = "ts_call_roller_1"
    client.responses.create(
        model="mock-model",
        tools=[lookup, _responses_tool("fetch")],
        input=[
            {"role": "user", "content": "Find out about roller."},
            {
                "type": "function_call",
                "id": call.id,
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "see fetch"},
            {
                "type": "tool_search_call",
                "call_id": search,
                "execution": "client",
                "status": "completed",
                "arguments": {"query": "fetch"},
            },
            {
                "type": "tool_search_output",
                "call_id": search,
                "execution": "client",
                "status": "completed",
                "tools": [_responses_tool("fetch")],
            },
        ],  # type: ignore[list-item]
    )


if __name__ == "__main__":
    {"compaction": compaction, "dynamic": dynamic}[sys.argv[1]]()
