"""roller's Hermes plugin: the source of a module that runs inside Hermes Agent 0.19.0.

roller never runs it itself (its tests do, with a stand-in for Hermes's plugin context):
the adapter writes this file's text as `$HERMES_HOME/plugins/roller-identity/__init__.py`
beside `PLUGIN_YAML` and enables the plugin in the scratch config. Standard library
only, no roller import (it is loaded by Hermes's interpreter). Mechanism (Hermes
`hermes_cli/plugins.py`, `hermes_cli/middleware.py`): `register(ctx)` registers
middleware and hooks; `llm_request` middleware runs right before every provider call
of every AIAgent, root or child (`agent/conversation_loop.py`), and may return
`{"request": ...}` to replace the call's kwargs; `extra_headers` there is the path
Hermes uses for its own per-request headers. It is passive:
1. `llm_request` middleware: every model request of an AIAgent gets ONE extra header,
   `x-roller-hermes-session-id`, carrying that agent's own session id (`state.db`
   `sessions.id`); the request is otherwise returned unchanged. roller's proxy records the
   header as evidence and removes it before forwarding.
2. `tool_execution` middleware around `delegate_task` + the `subagent_start` hook: one JSON
   line per child in `$HERMES_HOME/roller/delegations.jsonl` naming the delegation tool
   call that created it. Hermes builds a call's children on the thread that runs the tool
   (tools/delegate_tool.py), so a thread-local scopes each child to its call; `ordinal` is
   the build order inside the call, which is the batch's task index.
Nothing here raises into Hermes: Hermes isolates middleware errors itself, and a
delegation record that cannot be written costs roller its evidence, not the run.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

HEADER = "x-roller-hermes-session-id"  # roller.harnesses.hermes.profile reads it from here
RECORD = Path("roller") / "delegations.jsonl"
PLUGIN_NAME = "roller-identity"
PLUGIN_YAML = f"""name: {PLUGIN_NAME}
version: "1"
description: "roller capture: names the executing Hermes agent on each model request."
kind: standalone
"""
_scope = threading.local()
_write_lock = threading.Lock()


def hermes_home() -> Path:
    env = os.environ.get("HERMES_HOME")
    return Path(env) if env else Path.home() / ".hermes"


def tag_request(request: Any = None, session_id: Any = "", **_context: Any) -> Any:
    """`llm_request` middleware: the request with the session header added, or None."""
    if not isinstance(request, dict) or not isinstance(session_id, str) or not session_id:
        return None
    headers = dict(request.get("extra_headers") or {})
    headers[HEADER] = session_id
    return {"request": {**request, "extra_headers": headers}, "source": "roller-identity"}


def scope_delegation(
    tool_name: Any = "",
    tool_call_id: Any = "",
    session_id: Any = "",
    next_call: Callable[..., Any] | None = None,
    **_context: Any,
) -> Any:
    """`tool_execution` middleware: remembers which delegate call is building children."""
    assert next_call is not None
    if tool_name != "delegate_task":
        return next_call()
    outer = getattr(_scope, "call", None)
    _scope.call = {"tool_call_id": tool_call_id, "session_id": session_id, "children": 0}
    try:
        return next_call()
    finally:
        _scope.call = outer


def record_child(
    parent_session_id: Any = None, child_session_id: Any = None, **_context: Any
) -> None:
    """`subagent_start` hook: one line naming the child, its parent and its delegate call."""
    call = getattr(_scope, "call", None)
    line: dict[str, Any] = {
        "event": "subagent_start",
        "parent_session_id": parent_session_id,
        "child_session_id": child_session_id,
        "tool_call_id": None,
        "ordinal": None,
    }
    if call is not None and call["session_id"] == parent_session_id:
        line["tool_call_id"] = call["tool_call_id"]
        line["ordinal"] = call["children"]
        call["children"] += 1
    path = hermes_home() / RECORD
    try:
        with _write_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, sort_keys=True) + "\n")
    except OSError:
        pass  # the reader reports the child's missing delegation record; the run goes on


def register(ctx: Any) -> None:
    ctx.register_middleware("llm_request", tag_request)
    ctx.register_middleware("tool_execution", scope_delegation)
    ctx.register_hook("subagent_start", record_child)
