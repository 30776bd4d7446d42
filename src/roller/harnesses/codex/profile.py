"""Codex CLI on the wire (0.171.0, probed 2026-11-29; /work/shared/harnesses/codex.md).

Identity headers (rule `codex-headers`, kind `ThreadSession`), on every
`POST /v1/responses`:
- `session-id`: the root thread id, kept by every child;
- `thread-id`: the thread making the request (equal to `session-id` on the root);
- children only: `x-codex-parent-thread-id` (the spawning thread) and
  `x-openai-subagent: collab_spawn` (evidence only);
- `x-codex-turn-metadata`: a JSON object repeating `session_id`, `thread_id`, and for
  children `parent_thread_id`, plus `agent_name` (`/root` for parent and v1 child alike,
  `/root/<task>` for a v2 child: a label, never a key) and `installation_id`
  (install-scoped).
Code mode (catalog models, probed 2026-12-01) sends the same headers, plus
`x-openai-internal-codex-responses-lite: true`; with the rollout trace on, also
`x-codex-inference-call-id` (per request): neither is identity.
Thread ids are uuids: the participant key is the bare thread id at any depth.

Body: `prompt_cache_key` is the root session id, in child requests too: per conversation,
not per participant.

Tools (mock roles): `spawn_agent` and `wait_agent` (namespaced `multi_agent_v1.…` in v1,
`collaboration.…` in v2), `exec_command` (older: `shell`, `shell_command`). In code mode
the same names, called from an `exec` script when nested (`roller.mock.code_mode`).

Injected input: a user message whose text is a whole
`<subagent_notification>{json}</subagent_notification>` (v1, naming `agent_path`), and
any `agent_message` input item (v2, naming its `author`); both bind to the child whose
native ids hold that agent.
"""

from __future__ import annotations

from typing import Final

from roller.harnesses.tools import ToolHints
from roller.harnesses.wrappers import ElementPart, InjectionWrappers, TypedItem
from roller.identity import BodyField, ThreadSession, TurnMetadata, WireProfile

NAME: Final = "codex"

WIRE: Final = WireProfile(
    harness=NAME,
    rule=ThreadSession(
        "codex-headers",
        session="session-id",
        thread="thread-id",
        parent="x-codex-parent-thread-id",
        metadata=TurnMetadata(
            "x-codex-turn-metadata",
            session_key="session_id",
            thread_key="thread_id",
            parent_key="parent_thread_id",
            label_key="agent_name",
            install_scoped=("installation_id",),
        ),
        labels=("x-openai-subagent",),
    ),
    body=BodyField(("prompt_cache_key",)),
)

TOOLS: Final = ToolHints(
    roles={
        "spawn": ("spawn_agent",),
        "shell": ("exec_command", "shell", "shell_command"),
        "wait": ("wait_agent",),
    }
)

INJECTIONS: Final = InjectionWrappers(
    items=(TypedItem("agent_message", "agent_message", names_field="author", binds="child"),),
    roles=("user",),
    message_type="message",
    parts=(
        ElementPart(
            "subagent_notification",
            "<subagent_notification>",
            "</subagent_notification>",
            names_key="agent_path",
            binds="child",
        ),
    ),
)
