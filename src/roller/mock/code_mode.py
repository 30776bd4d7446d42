"""Code mode: tools offered in an `additional_tools` item and called from a script.

A Responses request in code mode (Codex 0.171.0 with a catalog model; probed 2026-12-01,
docs/harnesses.md, "Codex CLI") has no `tools`. Its first input item is
`{"type": "additional_tools", "tools": [namespaces…]}`: a `functions` namespace holding a
freeform (`custom`) tool `exec` that runs JavaScript, and namespaces of tools the model
calls directly (`collaboration.spawn_agent`). Every other tool is *nested*: a script
calls it as `await tools.NAME(args)`, and `exec`'s description declares it in
TypeScript (``declare const tools: { NAME(args: { cmd: string; workdir?: string; … }):
Promise<…>; };``). A namespaced nested tool is `NAMESPACE__NAME`. Some nested tools are
*deferred*: not declared, only named by a developer message line
`Deferred tool namespaces:\n- multi_agent_v1: …`, and listed with their declarations in
the script's `ALL_TOOLS` global.

This module owns those facts for the mock, as pure functions:
- `read_tools(items)`: the direct and nested tools a request offers (`OfferedTool.via`
  is the name a script calls a nested tool by) and the deferred namespaces not looked
  up yet. The mock looks a deferred namespace up the way a model must: one `exec`
  that writes `ALL_TOOLS`' declarations of that namespace (`lookup_script`); the
  declarations in its output then offer those tools in later requests. Stateless: both
  the lookup and its output are in the request's own history.
- `script_for(calls)`: one script making the nested calls (concurrently) and writing
  each result as one line of JSON, in call order; `nested_calls(script)` reads the calls
  back from a script in the history (the mock's own form: `tools.NAME({json})`).
Declarations are read into JSON Schemas only as far as the mock's argument filling
needs: top-level properties, required unless marked `?`, scalar and array types and
string-literal unions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from roller.mock.reply import ToolCallOut
from roller.mock.request_view import OfferedTool
from roller.wire.types import JSONObject

TOOLS_ITEM = "additional_tools"
EXEC_TOOL = "exec"
# The namespace Responses gives top-level function tools: its tools are called bare.
TOP_NAMESPACE = "functions"
_SEP = "__"

_DECLARATION = re.compile(
    r"declare const tools: \{ (?P<name>[A-Za-z_$][\w$]*)\(args: \{(?P<body>.*?)\n?\}\): Promise<",
    re.S,
)
_PROPERTY = re.compile(r"^  (?P<name>[A-Za-z_$][\w$]*)(?P<optional>\?)?: (?P<type>.+?);?$")
_DEFERRED_BLOCK = re.compile(r"Deferred tool namespaces:\n((?:- [^\n]*\n?)+)")
_DEFERRED_LINE = re.compile(r"^- ([A-Za-z_$][\w$]*):", re.M)
_CALL = re.compile(r"\btools\.([A-Za-z_$][\w$]*)\(")
_LOOKUP = re.compile(r'ALL_TOOLS\.filter\(\(t\) => t\.name\.startsWith\("([A-Za-z_$][\w$]*)__"\)\)')


@dataclass(frozen=True, slots=True)
class CodeModeTools:
    """What a code-mode request offers: tools called directly or from `exec`, and the
    deferred namespaces whose tools are not declared in the request yet."""

    tools: tuple[OfferedTool, ...]
    deferred: tuple[str, ...]


def exec_item(item: Any) -> bool:
    """Whether a history item is a call of the code-mode `exec` tool."""
    return isinstance(item, dict) and (
        item.get("type") == "custom_tool_call" and item.get("name") == EXEC_TOOL
    )


def read_tools(
    items: Sequence[Any], texts: Iterable[str], results: Iterable[str]
) -> CodeModeTools | None:
    """The code-mode tools of a request whose input `items` hold an `additional_tools`
    item offering `exec` (None otherwise). `texts` are its system/developer texts (the
    deferred namespaces line), `results` its tool results (looked-up declarations)."""
    direct: list[OfferedTool] = []
    description: str | None = None
    found = False
    for item in items:
        if not (isinstance(item, dict) and item.get("type") == TOOLS_ITEM):
            continue
        for tool, namespace in _flatten(item.get("tools")):
            if tool.get("name") == EXEC_TOOL and tool.get("type") == "custom":
                found = True
                description = str(tool.get("description") or "")
                continue
            schema = tool.get("parameters")
            name = str(tool["name"])
            direct.append(OfferedTool(name, namespace, schema if isinstance(schema, dict) else {}))
    if not found:
        return None
    nested = declarations(description or "")
    for text in results:
        nested.update(declarations(text))
    looked_up = {
        ns for item in items if exec_item(item) for ns in _LOOKUP.findall(str(item.get("input")))
    }
    deferred = [
        ns
        for text in texts
        for block in _DEFERRED_BLOCK.findall(text)
        for ns in _DEFERRED_LINE.findall(block)
        if ns not in looked_up and not any(n.startswith(ns + _SEP) for n in nested)
    ]
    offered = [_nested(js_name, schema) for js_name, schema in nested.items()]
    return CodeModeTools(tuple(direct + offered), tuple(dict.fromkeys(deferred)))


def _flatten(tools: Any) -> list[tuple[dict[str, Any], str | None]]:
    out: list[tuple[dict[str, Any], str | None]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        if tool.get("type") == "namespace":
            namespace = None if tool["name"] == TOP_NAMESPACE else tool["name"]
            inner = tool.get("tools")
            out += [
                (t, namespace)
                for t in (inner if isinstance(inner, list) else [])
                if isinstance(t, dict) and isinstance(t.get("name"), str)
            ]
        else:
            out.append((tool, None))
    return out


def _nested(js_name: str, schema: JSONObject) -> OfferedTool:
    namespace, sep, name = js_name.rpartition(_SEP)
    if not sep or not namespace or not name:
        return OfferedTool(js_name, None, schema, via=js_name)
    return OfferedTool(name, namespace, schema, via=js_name)


def declarations(text: str) -> dict[str, JSONObject]:
    """Nested tool name -> a JSON Schema of its arguments, from TypeScript declarations."""
    out: dict[str, JSONObject] = {}
    for match in _DECLARATION.finditer(text):
        properties: dict[str, Any] = {}
        required: list[str] = []
        depth = 0
        for line in match["body"].split("\n"):
            prop = _PROPERTY.match(line) if depth == 0 else None
            if prop is not None:
                properties[prop["name"]] = _schema_of(prop["type"])
                if not prop["optional"]:
                    required.append(prop["name"])
            # nested object/array types span lines; only depth 0 holds argument names
            depth += sum(line.count(c) for c in "{<") - sum(line.count(c) for c in "}>")
        out[match["name"]] = {"type": "object", "properties": properties, "required": required}
    return out


def _schema_of(ts: str) -> JSONObject:
    ts = ts.strip()
    literals = re.findall(r'"([^"]*)"', ts)
    if literals and re.fullmatch(r'"[^"]*"(\s*\|\s*"[^"]*")*', ts):
        return {"type": "string", "enum": literals}
    if ts in ("string", "number", "boolean"):
        return {"type": ts}
    if ts.startswith("Array<"):
        inner = ts[len("Array<") :]
        return {"type": "array", "items": _schema_of(inner[:-1]) if inner.endswith(">") else {}}
    if ts.endswith("{"):
        return {"type": "object"}
    return {}


def script_for(calls: Sequence[ToolCallOut]) -> str:
    """A script making the nested `calls` concurrently, one JSON result line each."""
    made = "".join(
        f"  tools.{call.via}({json.dumps(call.arguments, ensure_ascii=False)}),\n" for call in calls
    )
    return (
        f"// roller mock-model: {len(calls)} nested tool call(s)\n"
        f"for (const result of await Promise.all([\n{made}])) text(JSON.stringify(result));\n"
    )


def lookup_script(namespaces: Sequence[str]) -> str:
    """A script writing the declarations of every deferred tool of `namespaces`."""
    lines = [f"// roller mock-model: look up the deferred tools of {', '.join(namespaces)}"]
    lines += [
        f'for (const t of ALL_TOOLS.filter((t) => t.name.startsWith("{ns}__")))'
        " text(t.description);"
        for ns in namespaces
    ]
    return "\n".join(lines) + "\n"


def nested_calls(script: str) -> list[tuple[str | None, str, Any]]:
    """`(namespace, name, arguments)` of each `tools.NAME({json})` call in a script, in
    order; a call whose arguments are not a JSON literal keeps `None` arguments."""
    out: list[tuple[str | None, str, Any]] = []
    decoder = json.JSONDecoder()
    position = 0
    while (match := _CALL.search(script, position)) is not None:
        position = match.end()
        try:
            arguments, position = decoder.raw_decode(script, position)
        except ValueError:
            arguments = None
        tool = _nested(match[1], {})
        out.append((tool.namespace, tool.name, arguments))
    return out
