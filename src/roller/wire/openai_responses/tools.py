"""OpenAI Responses: where a request's tool definitions are.

A Responses request can define tools in three places, all kept as sent:
- the `tools` field;
- `additional_tools` input items (`{"type": "additional_tools", "id", "role":
  "developer", "tools": […]}`): the tools travel in the conversation instead of `tools`,
  which is then absent. Codex 0.171.0 sends this shape for its catalog models ("code
  mode", with the header `x-openai-internal-codex-responses-lite: true`): a freeform
  `exec` tool running JavaScript that calls nested tools, plus direct namespaces
  (probed 2026-12-01; docs/harnesses.md, "Codex CLI");
- `tool_search_output` input items (`tools`): definitions a client-side `tool_search`
  loaded at run time (Codex `tool_search_call` → `tool_search_output`).
The last two are in the conversation, so they are also run-time tool loading for the
main trajectory (`history.loads_tools`).
"""

from __future__ import annotations

from typing import Any

from roller.wire.history import canon
from roller.wire.jsonvalues import as_list

# Input items whose `tools` are definitions the model is offered from then on.
TOOL_ITEMS = ("additional_tools", "tool_search_output")


def tool_items(items: Any) -> list[dict[str, Any]]:
    """The input items that carry tool definitions, in input order."""
    return [
        item
        for item in as_list(items)
        if isinstance(item, dict)
        and item.get("type") in TOOL_ITEMS
        and isinstance(item.get("tools"), list)
    ]


def definitions(request: Any) -> Any:
    """Every tool definition the request offers: `tools` as sent, then each tool item's
    `tools` in input order, a definition equal to an earlier one (the same JSON value)
    kept once. Without tool items this is the `tools` value itself (None when absent),
    so a request of the plain shape reads exactly as before."""
    if not isinstance(request, dict):
        return None
    declared = request.get("tools")
    carried = tool_items(request.get("input"))
    if not carried:
        return declared
    out: list[Any] = []
    seen: set[str] = set()
    for tool in [*as_list(declared), *(t for item in carried for t in item["tools"])]:
        key = canon(tool)
        if key not in seen:
            seen.add(key)
            out.append(tool)
    return out
