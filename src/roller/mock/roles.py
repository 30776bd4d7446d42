"""Tool roles: one scenario word ("spawn", "shell", …) for each harness's own tool.

A scenario says *what* the model does (spawn a subagent, run a shell command); this module
says *how* on the harness at hand, from the tools the request offers. Which tool plays
which role is each harness's declared fact (`roller.harnesses.tools.ToolHints`, in its
package's profile); `role_tools()` merges them over the harness registry. Rules kept here:
- A role resolves to the first offered tool in its merged row (matched by bare name, so a
  namespaced `multi_agent_v1.spawn_agent` counts); when none is offered the role does
  not resolve and the rule using it does not match. A spawn tool a harness declares for
  forking spawns only is picked first by a forking spawn and never by a plain one.
- Arguments start from the tool's own schema (required properties only), get the role's
  meaning put into whichever property the schema names for it (`prompt`, `message`,
  `task`, `goal`…), the constants the harness declares for that tool (a subagent type,
  an agent name), and finally the scenario's explicit `arguments`, which always win.
- Everything derived from the context (Codex v1 `wait_agent` targets) comes from this
  request's own history: the spawn results it carries, less the children a wait output
  or a `<subagent_notification>` already reported in a final state (`pending_agent_ids`;
  Codex 0.171.0's v1 `wait_agent` returns at the first target's final status).
- A tool a harness defers behind a bridge (`ToolHints.bridge`: OpenClaw's Tool Search
  `tool_call{id, args}`) resolves when the request offers the bridge and its system text
  names the deferred tool; the call is made through the bridge, its arguments filled from
  the schema the harness declares for the deferred tool. A bridged call in the context
  counts as a call of the tool it names (`called`, `not_called`).
- User texts a harness wrote itself that quote a child's task back (`quoting_wrappers`,
  OpenClaw's announce block) are not what the user wrote (`authored_user_texts`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roller.harnesses import registry
from roller.harnesses.registry import Registry
from roller.harnesses.tools import ROLES, Role, ToolBridge
from roller.mock.arguments import fill
from roller.mock.reply import ToolCallOut
from roller.mock.request_view import ContextCall, OfferedTool, RequestView
from roller.wire.types import JSONObject


def _merged_roles(reg: Registry) -> dict[Role, tuple[str, ...]]:
    rows: dict[Role, list[str]] = {role: [] for role in ROLES}
    for harness in reg.harnesses:
        for role in ROLES:
            rows[role] += [n for n in harness.tools.names(role) if n not in rows[role]]
    return {role: tuple(names) for role, names in rows.items()}


def _fork_spawn(reg: Registry) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for h in reg.harnesses for n in h.tools.fork_spawn))


def _constants(reg: Registry) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for harness in reg.harnesses:
        for tool, values in harness.tools.constants.items():
            out.setdefault(tool, {}).update(values)
    return out


def _fork_arguments(reg: Registry) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for harness in reg.harnesses:
        for tool, values in harness.tools.fork_arguments.items():
            out.setdefault(tool, {}).update(values)
    return out


def _bridges(reg: Registry) -> tuple[ToolBridge, ...]:
    return tuple(h.tools.bridge for h in reg.harnesses if h.tools.bridge is not None)


def _quoting(reg: Registry) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for h in reg.harnesses for p in h.tools.quoting_wrappers)


def role_tools() -> dict[Role, tuple[str, ...]]:
    """role -> every registered harness's tool names for it, in order of preference."""
    return registry().derived(_merged_roles)


def quotes_a_task(text: str) -> bool:
    """Whether a harness wrote this user text itself, quoting a child's task back."""
    return any(p.match(text) for p in registry().derived(_quoting))


def authored_user_texts(view: RequestView) -> list[str]:
    """The request's user texts minus those a harness wrote quoting a child's task."""
    return [t for t in view.user_texts if not quotes_a_task(t)]


def _bridged_name(call: ContextCall) -> str | None:
    """The tool a bridge call in the context runs, when `call` is one."""
    for bridge in registry().derived(_bridges):
        if call.name == bridge.tool and isinstance(call.arguments, dict):
            name = call.arguments.get(bridge.name_field)
            if isinstance(name, str):
                return name
    return None


# Parameters a role takes in a scenario (name -> accepted Python types), and the required ones.
ROLE_PARAMS: dict[Role, dict[str, tuple[type, ...]]] = {
    "spawn": {
        "prompt": (str,),
        "description": (str,),
        "background": (bool,),
        "fork": (bool,),
        "name": (str,),
        "resume": (bool,),
    },
    "shell": {"command": (str,)},
    "write": {"path": (str,), "content": (str,)},
    "read": {"path": (str,)},
    "wait": {"timeout_ms": (int,)},
    "complete": {"text": (str,)},
}
ROLE_REQUIRED: dict[Role, tuple[str, ...]] = {
    "spawn": ("prompt",),
    "shell": ("command",),
    "write": ("path", "content"),
    "read": ("path",),
    "wait": (),
    "complete": (),
}

_PROMPT_PROPS = ("prompt", "message", "task", "goal", "instructions", "query")
_PATH_PROPS = ("file_path", "filePath", "path", "absolute_path")
_COMMAND_PROPS = ("command", "cmd")
_TASK_NAME_CHARS = re.compile(r"[^a-z0-9_]+")


@dataclass(frozen=True, slots=True)
class CallSpec:
    """One tool call a scenario rule makes: by `role` or by exact `tool` name."""

    role: Role | None = None
    tool: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)
    # `tool` calls only: make the call even when the request does not offer the tool (a
    # model calling a tool it was not given, to exercise a harness's rejection path).
    force: bool = False


def role_of(name: str) -> Role | None:
    """The role a tool name plays (used to classify calls already in the context)."""
    for role, names in role_tools().items():
        if name in names:
            return role
    return None


def calls_of(view: RequestView, wanted: frozenset[str]) -> list[ContextCall]:
    """Context calls whose role, bare name or `ns.name` is in `wanted`."""
    found = []
    for call in view.calls:
        qualified = call.name if call.namespace is None else f"{call.namespace}.{call.name}"
        names = {role_of(call.name), call.name, qualified}
        bridged = _bridged_name(call)
        if bridged is not None:
            names |= {role_of(bridged), bridged}
        if names & wanted:
            found.append(call)
    return found


def resolve_call(spec: CallSpec, view: RequestView) -> ToolCallOut | None:
    """The concrete call `spec` makes on this request, or None when its tool isn't offered."""
    if spec.tool is not None:
        tool = view.offered(spec.tool)
        if tool is None:
            if not spec.force:
                return None
            # Not offered: no schema to fill from, so exactly the scenario's arguments.
            return ToolCallOut(name=spec.tool, arguments=dict(spec.arguments))
        arguments = fill(tool.schema)
    else:
        assert spec.role is not None
        tool = _tool_for(spec.role, view, spec.params)
        bridge = None
        if tool is None:
            tool, bridge = _bridged_tool(spec.role, view, spec.params)
            if tool is None:
                return None
        arguments = _role_arguments(spec.role, tool, spec.params, view)
        if bridge is not None:
            if isinstance(arguments, dict):
                arguments.update(spec.arguments)
            wrapped = {bridge.name_field: tool.name, bridge.args_field: arguments}
            return ToolCallOut(name=bridge.tool, arguments=wrapped)
    if not isinstance(arguments, dict):
        arguments = {}
    arguments.update(spec.arguments)
    return ToolCallOut(
        name=tool.name,
        namespace=tool.namespace,
        arguments=arguments,
        via=tool.via,
        call_type=tool.call_type,
    )


def _bridged_tool(
    role: Role, view: RequestView, params: Mapping[str, Any]
) -> tuple[OfferedTool | None, ToolBridge | None]:
    """The deferred tool a role reaches through an offered bridge (see the docstring)."""
    names = _role_names(role, params)
    for bridge in registry().derived(_bridges):
        if view.offered(bridge.tool) is None:
            continue
        for name in names:
            schema = bridge.deferred.get(name)
            if schema is not None and name in view.system_text:
                return OfferedTool(name=name, schema=dict(schema)), bridge
    return None, None


def _role_names(role: Role, params: Mapping[str, Any]) -> tuple[str, ...]:
    names = role_tools()[role]
    if role == "spawn":
        # A harness's fork spawn may be its own tool; only a forking spawn uses it.
        fork = registry().derived(_fork_spawn)
        first = fork if params.get("fork") else ()
        names = first + tuple(n for n in names if n not in fork)
    return names


def _tool_for(role: Role, view: RequestView, params: Mapping[str, Any]) -> OfferedTool | None:
    for name in _role_names(role, params):
        tool = next((t for t in view.tools if t.name == name), None)
        if tool is not None:
            return tool
    return None


def _properties(schema: JSONObject) -> Mapping[str, Any] | None:
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else None


def _slot(schema: JSONObject, candidates: tuple[str, ...]) -> str | None:
    """The schema property carrying a role's meaning; the first candidate when the schema
    declares no properties at all (a tool with an open schema takes the common name)."""
    props = _properties(schema)
    if props is None:
        return candidates[0]
    return next((name for name in candidates if name in props), None)


def _has(schema: JSONObject, name: str) -> bool:
    props = _properties(schema)
    return props is not None and name in props


def _role_arguments(
    role: Role, tool: OfferedTool, params: Mapping[str, Any], view: RequestView
) -> Any:
    schema = tool.schema
    if role == "complete":
        text = str(params.get("text", "done"))
        return fill(schema, all_properties=True, strings=lambda _path: text)
    args = fill(schema)
    if not isinstance(args, dict):
        args = {}
    for name, value in registry().derived(_constants).get(tool.name, {}).items():
        if _has(schema, name):
            args[name] = value
    if role == "spawn":
        _spawn_arguments(args, schema, params)
        if params.get("fork"):
            args.update(registry().derived(_fork_arguments).get(tool.name, {}))
        if params.get("resume") and _has(schema, "task_id"):
            resumed = spawned_task_ids(view)
            if resumed:
                args["task_id"] = resumed[0]
    elif role == "shell":
        _put(args, schema, _COMMAND_PROPS, params["command"])
        if _has(schema, "description"):
            args["description"] = f"Run {params['command']}"
    elif role in ("write", "read"):
        _put(args, schema, _PATH_PROPS, params["path"])
        if role == "write":
            _put(args, schema, ("content",), params["content"])
    elif role == "wait":
        if _has(schema, "targets"):
            args["targets"] = pending_agent_ids(view) or spawned_agent_ids(view)
        if _has(schema, "timeout_ms"):
            args["timeout_ms"] = params.get("timeout_ms", 30000)
    return args


def _spawn_arguments(args: dict[str, Any], schema: JSONObject, params: Mapping[str, Any]) -> None:
    description = str(params.get("description", "roller subtask"))
    _put(args, schema, _PROMPT_PROPS, params["prompt"])
    if _has(schema, "description"):
        args["description"] = description
    if "background" in params and _has(schema, "run_in_background"):
        args["run_in_background"] = params["background"]
    if "fork" in params and _has(schema, "fork_turns"):
        args["fork_turns"] = "all" if params["fork"] else "none"
    if _has(schema, "task_name"):
        # Codex v2 rejects any task_name outside [a-z0-9_]+.
        raw = str(params.get("name", description)).lower()
        args["task_name"] = _TASK_NAME_CHARS.sub("_", raw).strip("_") or "roller_subtask"


def _put(args: dict[str, Any], schema: JSONObject, candidates: tuple[str, ...], value: str) -> None:
    name = _slot(schema, candidates)
    if name is None:
        return
    props = _properties(schema) or {}
    prop = props.get(name)
    if isinstance(prop, Mapping) and str(prop.get("type", "")).lower() == "array":
        # Codex's older `shell` tool takes argv, not a command line.
        args[name] = ["bash", "-lc", value]
    else:
        args[name] = value


_TASK_ID = re.compile(r'<task id="([^"]+)"')


def spawned_task_ids(view: RequestView) -> list[str]:
    """Child session ids the spawn results in this context report (OpenCode:
    `<task id="ses_…" state="…">`), in context order."""
    ids: list[str] = []
    for call in calls_of(view, frozenset({"spawn"})):
        result = view.result_for(call)
        match = _TASK_ID.search(result.text) if result is not None else None
        if match is not None and match[1] not in ids:
            ids.append(match[1])
    return ids


def spawned_agent_ids(view: RequestView) -> list[str]:
    """Agent ids the spawn results in this context report (Codex: `{"agent_id": …}`), in
    context order, each once. A result is one JSON document, or (a code-mode `exec`
    output, one line per nested call) several, one a line."""
    ids: list[str] = []
    for call in calls_of(view, frozenset({"spawn"})):
        result = view.result_for(call)
        if result is None:
            continue
        for payload in _json_documents(result.text):
            agent = payload.get("agent_id")
            if isinstance(agent, str) and agent not in ids:
                ids.append(agent)
    return ids


# Codex's agent statuses that are not final (`AgentStatus`, snake_case on the wire); a
# final one is `{"completed": text}`, `{"errored": text}`, "shutdown" or "not_found".
_LIVE_STATUSES = frozenset({"pending_init", "running"})


def reported_agent_ids(view: RequestView) -> set[str]:
    """Agent ids this context reports in a final state: a v1 wait output
    (`{"status": {id: status}}`) or a notification (`{"agent_path": id, "status": …}`),
    in a tool result or a user message."""
    texts = [e.text for e in view.tool_results] + view.user_texts
    out: set[str] = set()
    for payload in (p for text in texts for p in _json_documents(text)):
        status = payload.get("status")
        path = payload.get("agent_path")
        if isinstance(path, str):
            status = {path: status}
        if isinstance(status, dict):
            out.update(k for k, v in status.items() if _final(v))
    return out


def _final(status: object) -> bool:
    return isinstance(status, dict) or (isinstance(status, str) and status not in _LIVE_STATUSES)


def pending_agent_ids(view: RequestView) -> list[str]:
    """Spawned agent ids (`spawned_agent_ids`) not reported final yet, in context order."""
    reported = reported_agent_ids(view)
    return [a for a in spawned_agent_ids(view) if a not in reported]


def _json_documents(text: str) -> list[dict[str, Any]]:
    whole = _loads(text)
    if whole is not None:
        return [whole]
    return [payload for line in text.splitlines() if (payload := _loads(line)) is not None]


def _loads(line: str) -> dict[str, Any] | None:
    try:
        payload = json.loads(line)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None
