"""A scripted stand-in for each real harness's agent loop, for testing the mock's scenarios.

Each `HarnessShape` is written from /work/shared/harnesses/<name>.md: the protocol, the
tools the parent and the child are offered (names and schemas), and how the harness runs
a spawn and hands its result back (synchronously as the tool result, asynchronously as a
later notification turn, Codex's spawn/wait with agent ids, Gemini's `complete_task`).
`Simulation.run()` drives the root conversation and every child it spawns against the
mock over real HTTP, asserts every call names an offered tool with its required
arguments, and records what happened. It never runs a command: shell calls act on a small
in-memory working directory shared by parent and child.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roller.mock import MockModel
from roller.wire.types import ProtocolName
from tests.mock.http import post_json
from tests.mock.sim_wire import Call, Msg, Tool, decode, encode, path_for

S: dict[str, Any] = {"type": "string"}
B: dict[str, Any] = {"type": "boolean"}
INT: dict[str, Any] = {"type": "integer"}
MAX_REQUESTS = 80


def obj(required: list[str] | None, **props: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required is not None:
        schema["required"] = required
    return schema


def tools(*specs: tuple[str, dict[str, Any]], namespace: str | None = None) -> list[Tool]:
    return [Tool(name, schema, namespace) for name, schema in specs]


# --- tool sets, per /work/shared/harnesses/*.md -----------------------------------------
CC_AGENT = (
    "Agent",
    obj(
        ["description", "prompt"],
        description=S,
        prompt=S,
        subagent_type=S,
        model={"type": "string", "enum": ["sonnet", "opus", "haiku", "fable"]},
        run_in_background=B,
        isolation={"type": "string", "enum": ["worktree", "remote"]},
    ),
)
CC_BASE = tools(
    ("Bash", obj(["command"], command=S, description=S, timeout={"type": "number"})),
    (
        "Edit",
        obj(["file_path", "old_string", "new_string"], file_path=S, old_string=S, new_string=S),
    ),
    ("ListAgents", obj([])),
    ("Read", obj(["file_path"], file_path=S, offset=INT, limit=INT)),
    ("ToolSearch", obj(["query"], query=S)),
    ("Write", obj(["file_path", "content"], file_path=S, content=S)),
)
OC_CHILD = tools(
    ("bash", obj(["command", "description"], command=S, description=S, workdir=S)),
    ("edit", obj(["filePath", "oldString", "newString"], filePath=S, oldString=S, newString=S)),
    ("glob", obj(["pattern"], pattern=S)),
    ("read", obj(["filePath"], filePath=S, offset=INT, limit=INT)),
    ("webfetch", obj(["url"], url=S)),
    ("write", obj(["content", "filePath"], content=S, filePath=S)),
)
OC_PARENT = OC_CHILD + tools(
    (
        "task",
        obj(
            ["description", "prompt", "subagent_type"],
            description=S,
            prompt=S,
            subagent_type=S,
            task_id=S,
            command=S,
        ),
    ),
    ("todowrite", obj(["todos"], todos={"type": "array", "items": S})),
)
CODEX_LOCAL = tools(
    ("exec_command", obj(["cmd"], cmd=S, workdir=S, yield_time_ms=INT)),
    ("update_plan", obj(["plan"], plan={"type": "array", "items": S})),
)
CODEX_V1 = tools(
    ("close_agent", obj(["id"], id=S)),
    ("resume_agent", obj(["id"], id=S)),
    ("send_input", obj(["id", "message"], id=S, message=S)),
    ("spawn_agent", obj(None, message=S, items={"type": "array"}, agent_type=S, model=S)),
    ("wait_agent", obj(["targets"], targets={"type": "array", "items": S}, timeout_ms=INT)),
    namespace="multi_agent_v1",
)
CODEX_V2 = tools(
    ("followup_task", obj(["target", "message"], target=S, message=S)),
    ("interrupt_agent", obj(["target"], target=S)),
    ("list_agents", obj([])),
    ("send_message", obj(["target", "message"], target=S, message=S)),
    (
        "spawn_agent",
        obj(
            ["task_name", "message"],
            task_name=S,
            message={"type": "string", "encrypted": True},
            fork_turns={"type": "string", "enum": ["all", "none"]},
            agent_type=S,
        ),
    ),
    ("wait_agent", obj([], timeout_ms=INT)),
    namespace="collaboration",
)
GEMINI_BASE = tools(
    ("glob", obj(["pattern"], pattern=S)),
    ("read_file", obj(["file_path"], file_path=S, start_line=INT, end_line=INT)),
    ("run_shell_command", obj(["command"], command=S, description=S, dir_path=S)),
    ("write_file", obj(["file_path", "content"], file_path=S, content=S)),
)
GEMINI_PARENT = GEMINI_BASE + tools(
    ("invoke_agent", obj(["agent_name", "prompt"], agent_name=S, prompt=S, wait_for_previous=B)),
    ("update_topic", obj(["topic"], topic=S)),
)
GEMINI_CHILD = GEMINI_BASE + tools(
    ("complete_task", obj(["result"], result=obj(["response"], response=S))),
)
HERMES_CHILD = tools(
    ("read_file", obj(["path"], path=S, offset=INT, limit=INT)),
    ("terminal", obj(["command"], command=S, background=B, timeout=INT)),
    ("write_file", obj(["path", "content"], path=S, content=S)),
)
HERMES_PARENT = HERMES_CHILD + tools(
    ("clarify", obj(["question"], question=S)),
    (
        "delegate_task",
        obj([], goal=S, context=S, tasks={"type": "array", "items": obj(["goal"], goal=S)}),
    ),
    ("memory", obj(["action"], action={"type": "string", "enum": ["add", "replace"]})),
)
PI_TOOLS = tools(
    ("read", obj(["path"], path=S)),
    ("bash", obj(["command"], command=S, timeout=INT)),
    ("edit", obj(["path", "oldText", "newText"], path=S, oldText=S, newText=S)),
    ("write", obj(["path", "content"], path=S, content=S)),
)
QWEN_BASE = tools(
    ("read_file", obj(["absolute_path"], absolute_path=S)),
    ("run_shell_command", obj(["command"], command=S, is_background=B, description=S)),
    ("write_file", obj(["file_path", "content"], file_path=S, content=S)),
    # No `required` list at all, as probed: only description + prompt may be sent.
    ("agent", obj(None, description=S, prompt=S, subagent_type=S, run_in_background=B)),
)
DEEPSEEK_CHILD = tools(
    ("bash", obj(["command"], command=S)),
    ("working_directory", obj([])),
)
DEEPSEEK_PARENT = DEEPSEEK_CHILD + tools(
    ("subagent", obj(["prompt"], description=S, prompt=S)),
    ("subagent_fork", obj(["prompt"], prompt=S)),
    ("send_message", obj(["agent_id", "message"], agent_id=S, message=S)),
)
OPENCLAW_CHILD = tools(
    ("exec", obj(["command"], command=S, workdir=S)),
    ("read", obj(["path"], path=S)),
    ("write", obj(["path", "content"], path=S, content=S)),
)
OPENCLAW_PARENT = OPENCLAW_CHILD + tools(
    (
        "sessions_spawn",
        obj(["task"], task=S, label=S, mode={"type": "string", "enum": ["run", "session"]}),
    ),
    ("sessions_yield", obj([])),
)


@dataclass(frozen=True)
class HarnessShape:
    name: str
    protocol: ProtocolName
    model: str
    parent_tools: list[Tool]
    child_tools: Callable[[int], list[Tool]]  # depth of the child -> its tools
    spawn_style: str  # sync | async | codex-v1 | codex-v2 | gemini | none
    spawn_tool: str | None
    system_in_messages: bool = False


HARNESSES: dict[str, HarnessShape] = {
    h.name: h
    for h in (
        HarnessShape(
            "claude-code",
            "anthropic-messages",
            "claude-opus-5-5",
            [*CC_BASE, Tool(*CC_AGENT)],
            # 2.1.332 lets depth 1 and 2 spawn; a depth-3 agent has no Agent tool.
            lambda depth: [*CC_BASE, Tool(*CC_AGENT)] if depth < 3 else list(CC_BASE),
            "async",
            "Agent",
            system_in_messages=True,
        ),
        HarnessShape(
            "opencode",
            "openai-chat-completions",
            "fake-model",
            OC_PARENT,
            lambda depth: OC_CHILD,
            "sync",
            "task",
        ),
        HarnessShape(
            "codex-v1",
            "openai-responses",
            "fake-model",
            CODEX_LOCAL + CODEX_V1,
            lambda depth: CODEX_LOCAL,
            "codex-v1",
            "spawn_agent",
        ),
        HarnessShape(
            "codex-v2",
            "openai-responses",
            "fake-model",
            CODEX_LOCAL + CODEX_V2,
            lambda depth: CODEX_LOCAL,
            "codex-v2",
            "spawn_agent",
        ),
        HarnessShape(
            "gemini-cli",
            "gemini",
            "gemini-3.8-flash",
            GEMINI_PARENT,
            lambda depth: GEMINI_CHILD,
            "gemini",
            "invoke_agent",
        ),
        HarnessShape(
            "hermes",
            "openai-chat-completions",
            "fake-model",
            HERMES_PARENT,
            lambda depth: HERMES_CHILD,
            "sync",
            "delegate_task",
        ),
        HarnessShape(
            "pi", "openai-chat-completions", "fake-model", PI_TOOLS, lambda d: [], "none", None
        ),
        HarnessShape(
            "qwen-code",
            "openai-chat-completions",
            "fake-model",
            QWEN_BASE,
            lambda depth: QWEN_BASE if depth < 5 else QWEN_BASE[:-1],
            "async",
            "agent",
        ),
        HarnessShape(
            "deepseek",
            "anthropic-messages",
            "deepseek-v4-flash",
            DEEPSEEK_PARENT,
            lambda depth: DEEPSEEK_CHILD,
            "async",
            "subagent",
        ),
        HarnessShape(
            "openclaw",
            "openai-chat-completions",
            "fake-model",
            OPENCLAW_PARENT,
            lambda depth: OPENCLAW_CHILD,
            "async",
            "sessions_spawn",
        ),
    )
}


@dataclass
class Agent:
    label: str
    depth: int
    tools: list[Tool]
    history: list[Msg]
    system: str = "You are a coding agent."
    # Codex: spawned children not yet run, by agent id; they run when the parent waits.
    codex_children: dict[str, tuple[Call, Agent]] = field(default_factory=dict)
    notifications: list[str] = field(default_factory=list)


@dataclass
class Simulation:
    harness: HarnessShape
    mock: MockModel
    base_url: str
    files: dict[str, str] = field(default_factory=dict)
    steps: list[tuple[str, str | None, list[str], str]] = field(default_factory=list)
    calls: list[tuple[str, Call]] = field(default_factory=list)
    # (agent label, call, the output the tool gave at the time it ran)
    results: list[tuple[str, Call, str]] = field(default_factory=list)
    spawned: list[tuple[str, str]] = field(default_factory=list)  # (parent, child) labels
    aborted: list[str] = field(default_factory=list)
    # calls to a tool the agent was not offered, refused by the harness (agent label, call)
    rejected: list[tuple[str, Call]] = field(default_factory=list)
    side_requests: list[tuple[str, str]] = field(default_factory=list)

    def run(self, prompt: str = "Use a subagent to say hi") -> str:
        h = self.harness
        history = [Msg("system", "<env>cwd: /work</env>")] if h.system_in_messages else []
        history.append(Msg("user", prompt))
        root = Agent("root", 0, list(h.parent_tools), history)
        if h.name == "opencode":
            self._title_request(prompt)
        return self._agent(root)

    # -- the agent loop ------------------------------------------------------------------
    def _agent(self, agent: Agent) -> str:
        if self.harness.name == "gemini-cli":
            self._router_request(agent)
        completed = False
        graced = False
        while True:
            reply = self._request(agent)
            agent.history.append(reply)
            if not reply.calls:
                if agent.notifications:
                    agent.history.append(Msg("user", "\n".join(agent.notifications)))
                    agent.notifications.clear()
                    continue
                if self.harness.spawn_style == "gemini" and agent.depth > 0 and not completed:
                    assert not graced, (
                        "Gemini child answered text twice: ERROR_NO_COMPLETE_TASK_CALL"
                    )
                    graced = True
                    agent.history.append(Msg("user", "You MUST call `complete_task`."))
                    continue
                for child_id in agent.codex_children:
                    self.aborted.append(child_id)  # exec ends: unwaited children are aborted
                return reply.text
            extra: list[Msg] = []
            for call in reply.calls:
                if not any(
                    (t.name, t.namespace) == (call.name, call.namespace) for t in agent.tools
                ):
                    # As the real harnesses do (OpenCode turns it into tool `invalid`): the
                    # call is refused with an error result and the agent carries on.
                    self.rejected.append((agent.label, call))
                    output = f"Model tried to call unavailable tool '{call.name}'."
                    agent.history.append(Msg("tool", output, call_id=call.id, name=call.name))
                    continue
                self._check_call(agent, call)
                self.calls.append((agent.label, call))
                if call.name == "complete_task":
                    completed = True
                    return json.dumps(call.arguments["result"])
                output, more = self._execute(agent, call)
                self.results.append((agent.label, call, output))
                agent.history.append(Msg("tool", output, call_id=call.id, name=call.name))
                extra += more
            agent.history.extend(extra)

    def _request(self, agent: Agent) -> Msg:
        h = self.harness
        assert len(self.mock.served) < MAX_REQUESTS, "scenario did not terminate"
        body = encode(h.protocol, h.model, agent.system, agent.history, agent.tools)
        status, payload = post_json(self.base_url + path_for(h.protocol, h.model), body)
        assert status == 200, payload
        reply = decode(h.protocol, payload)
        served = self.mock.served[-1]
        self.steps.append((agent.label, served.rule, [c.name for c in reply.calls], reply.text))
        return reply

    def _check_call(self, agent: Agent, call: Call) -> None:
        offered = {(t.name, t.namespace): t for t in agent.tools}
        tool = offered.get((call.name, call.namespace))
        assert tool is not None, f"{agent.label} called {call.namespace}.{call.name}: not offered"
        for name in tool.schema.get("required", []):
            assert name in call.arguments, f"{call.name} lacks required {name!r}"
        for name, value in call.arguments.items():
            prop = tool.schema["properties"].get(name, {})
            if "enum" in prop:
                assert value in prop["enum"], f"{call.name}.{name}={value!r} not in enum"
        if "task_name" in call.arguments:
            assert re.fullmatch(r"[a-z0-9_]+", call.arguments["task_name"])

    # -- tools -----------------------------------------------------------------------------
    def _execute(self, agent: Agent, call: Call) -> tuple[str, list[Msg]]:
        if call.name == self.harness.spawn_tool or call.name == "subagent_fork":
            return self._spawn(agent, call)
        if call.name == "wait_agent":
            return self._wait(agent, call)
        command = call.arguments.get("command", call.arguments.get("cmd"))
        if command is not None:
            return self._shell(command if isinstance(command, str) else command[-1]), []
        raise AssertionError(f"the simulator does not run {call.name}")

    def _shell(self, command: str) -> str:
        if m := re.fullmatch(r"echo (\S+) > (\S+)", command):
            self.files[m[2]] = m[1] + "\n"
            return ""
        if m := re.fullmatch(r"cat (\S+)", command):
            return self.files.get(m[1], f"cat: {m[1]}: No such file or directory\nexit code 1")
        if m := re.fullmatch(r"ls (\S+)", command):
            if m[1] in self.files:
                return m[1]
            return f"ls: cannot access '{m[1]}': No such file or directory\nexit code 2"
        return ""

    def _child(self, agent: Agent, call: Call) -> Agent:
        h = self.harness
        label = f"{agent.label}/{len([s for s in self.spawned if s[0] == agent.label]) + 1}"
        self.spawned.append((agent.label, label))
        prompt = next(
            call.arguments[k] for k in ("prompt", "message", "task", "goal") if k in call.arguments
        )
        history = [Msg("system", "<env>cwd: /work</env>")] if h.system_in_messages else []
        system = "You are a coding agent."
        if h.name == "hermes":
            system = f"You are a focused subagent. YOUR TASK: {prompt}"
        if h.name == "openclaw":
            context = "[Subagent Context] You are running as a subagent (depth 1/5)."
            prompt = f"{context}\n[Subagent Task] {prompt}"
        if h.spawn_style == "codex-v2":
            fork = call.arguments.get("fork_turns", "all")
            if fork == "all":
                # warm fork: the parent's history, its spawn output "aborted", then the task.
                history = [*agent.history, Msg("tool", "aborted", call_id=call.id, name=call.name)]
            history += [Msg("system", "You are a subagent."), Msg("agent_message", prompt)]
        elif h.spawn_style == "codex-v1":
            history += [Msg("system", "You are a subagent."), Msg("user", prompt)]
        else:
            history.append(Msg("user", prompt))
        return Agent(label, agent.depth + 1, list(h.child_tools(agent.depth + 1)), history, system)

    def _spawn(self, agent: Agent, call: Call) -> tuple[str, list[Msg]]:
        h = self.harness
        child = self._child(agent, call)
        if h.spawn_style in ("codex-v1", "codex-v2"):
            agent_id = str(uuid.uuid4())
            agent.codex_children[agent_id] = (call, child)
            if h.spawn_style == "codex-v1":
                return json.dumps({"agent_id": agent_id, "nickname": "Halley"}), []
            return json.dumps({"task_name": f"/root/{call.arguments['task_name']}"}), []
        background = call.arguments.get("run_in_background", True)
        final = self._agent(child)
        if h.spawn_style == "gemini":
            return (
                f"Subagent 'generalist' finished.\nTermination Reason: GOAL\nResult:\n{final}",
                [],
            )
        if h.spawn_style == "async" and background:
            agent.notifications.append(self._notification(call, child, final))
            return self._launched(call, child), []
        if h.name == "claude-code":
            return f"[Subagent hand-back] The report follows:\n  {final}\nagentId: a1", []
        if h.name == "opencode":
            return (
                f'<task id="ses_{child.label}" state="completed">\n<task_result>\n{final}\n'
                "</task_result>\n</task>",
                [],
            )
        if h.name == "hermes":
            return json.dumps({"results": [{"task_index": 0, "summary": final}]}), []
        return final, []

    def _launched(self, call: Call, child: Agent) -> str:
        return {
            "claude-code": "Async agent launched successfully.\nagentId: a0123 output_file: /tmp/a",
            "qwen-code": f"Background agent launched successfully. task_id: gp-{call.id}",
            "deepseek": "started subagent 3663bd01",
            "openclaw": json.dumps({"status": "accepted", "childSessionKey": "agent:main:sub"}),
        }[self.harness.name]

    def _notification(self, call: Call, child: Agent, final: str) -> str:
        if self.harness.name == "deepseek":
            return f"Background subagent 3663bd01 finished with closing message: {final}"
        if self.harness.name == "openclaw":
            return f"A background task completed.\nChild result <prompt-data>{final}</prompt-data>"
        description = call.arguments.get("description", "")
        return (
            "<system-reminder>[SYSTEM NOTIFICATION - NOT USER INPUT]<task-notification>"
            f"<tool-use-id>{call.id}</tool-use-id><status>completed</status>"
            f'<summary>Agent "{description}" completed</summary><result>{final}</result>'
            "</task-notification></system-reminder>"
        )

    def _wait(self, agent: Agent, call: Call) -> tuple[str, list[Msg]]:
        if self.harness.spawn_style == "codex-v1":
            assert sorted(call.arguments["targets"]) == sorted(agent.codex_children)
        else:
            assert "targets" not in call.arguments  # v2 rejects it as an unknown field
        finals = {aid: self._agent(child) for aid, (_, child) in agent.codex_children.items()}
        agent.codex_children.clear()
        if self.harness.spawn_style == "codex-v1":
            status = {aid: {"completed": final} for aid, final in finals.items()}
            return json.dumps({"status": status, "timed_out": False}), []
        notes = [
            Msg("agent_message", f"Message from child. Type: FINAL_ANSWER\nPayload:\n{final}")
            for final in finals.values()
        ]
        return json.dumps({"message": "Wait completed.", "timed_out": False}), notes

    # -- side requests ---------------------------------------------------------------------
    def _title_request(self, prompt: str) -> None:
        body = {
            "model": self.harness.model,
            "messages": [
                {"role": "system", "content": "You are a title generator. Output only a title."},
                {"role": "user", "content": "Generate a title for this conversation:\n"},
                {"role": "user", "content": prompt},
            ],
            "stream": False,
        }
        status, payload = post_json(self.base_url + "/v1/chat/completions", body)
        assert status == 200
        title = payload["choices"][0]["message"]["content"]
        self.side_requests.append(("title", title))

    def _router_request(self, agent: Agent) -> None:
        schema = {
            "type": "object",
            "properties": {
                "complexity_reasoning": {"type": "string"},
                "complexity_score": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "required": ["complexity_reasoning", "complexity_score"],
        }
        body = {
            "contents": [{"role": "user", "parts": [{"text": agent.history[-1].text}]}],
            "generationConfig": {
                "responseMimeType": "application/json",
                "responseJsonSchema": schema,
            },
        }
        path = "/v1beta/models/gemini-3.5-flash-lite:generateContent"
        status, payload = post_json(self.base_url + path, body)
        assert status == 200
        text = payload["candidates"][0]["content"]["parts"][0]["text"]
        self.side_requests.append(("router", text))
