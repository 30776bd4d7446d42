"""`ToolHints`: the tools a harness offers its model, by the mock's scenario roles.

A mock scenario says *what* the model does ("spawn", "shell", …); `roller.mock.roles`
resolves the role to the harness's own tool from what the request offers. What each
harness calls its tools is a fact of that harness, so it is declared here as data by
each harness package and merged by the mock over the registry: a role resolves to the
first offered tool of its merged row (harnesses in registry order, each harness's names
in its own order of preference).

Facts kept per harness:
- `roles`: role -> tool names, preferred first (older names after newer ones);
- `fork_spawn`: spawn tools only a *forking* spawn uses (a harness with a separate tool
  for a child that starts from a copy of the parent's history); a plain spawn never
  picks one, a forking spawn prefers one;
- `constants`: tool -> argument values the harness needs that no scenario should have to
  know (a subagent type, an agent name);
- `fork_arguments`: tool -> argument values that make a spawn with that tool fork the
  parent's history (OpenClaw `sessions_spawn` `context: "fork"`);
- `bridge`: a tool that calls a deferred tool by name (`ToolBridge`: OpenClaw's Tool
  Search `tool_call{id, args}`), so a role whose own tool is not offered directly can
  still resolve through it;
- `quoting_wrappers`: openings of user-role texts the harness writes itself that quote a
  child's task back to its parent (OpenClaw's announce block repeats the task): the mock
  does not read them as what the user wrote, so a parent is never taken for its child.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Role = Literal["spawn", "shell", "write", "read", "wait", "complete"]
ROLES: tuple[Role, ...] = get_args(Role)


@dataclass(frozen=True)
class ToolBridge:
    """A tool that runs another tool named in its arguments: `{name_field: tool,
    args_field: {...}}`. `deferred` lists the tools reachable only through it, each with the
    argument schema the harness documents for it (the request carries none)."""

    tool: str
    name_field: str
    args_field: str
    deferred: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolHints:
    """One harness's tool names per role (see the module docstring)."""

    roles: Mapping[Role, tuple[str, ...]] = field(default_factory=dict)
    fork_spawn: tuple[str, ...] = ()
    constants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    fork_arguments: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    bridge: ToolBridge | None = None
    quoting_wrappers: tuple[str, ...] = ()

    def names(self, role: Role) -> tuple[str, ...]:
        """Every tool that plays `role` (fork-only spawn tools included)."""
        names = self.roles.get(role, ())
        return (*names, *self.fork_spawn) if role == "spawn" else names
