"""The Codex CLI adapter: pin, `codex exec` launch plan, native log copy and reader.

Checked against codex-cli **0.171.0** (npm `@openai/codex`, a node stub plus the native
musl binary in `@openai/codex-linux-x64`) on 2026-11-29, with every field relied on seen
in real runs against `roller mock-model` (facts: /work/shared/harnesses/codex.md).

Launch (data, DESIGN.md rule 5): `codex exec --skip-git-repo-check --json -`, the prompt
on stdin (a prompt starting with `-` is never taken for a flag), cwd = the scratch work
dir, HOME/TMPDIR = scratch, `CODEX_HOME=$HOME/.codex` holding a generated `config.toml`:
- one model provider `roller` at the proxy (`base_url` = the OpenAI base with `/v1`),
  `wire_api = "responses"` (the only API 0.171.0 accepts), `supports_websockets = false`
  (every model call is a plain HTTP request the proxy records), no retries (a retry
  would be a second call for one native response);
- the key from `OPENAI_API_KEY` (`env_key`): the user's key, or a placeholder for `mock:`;
- `[features] plugins = false` (otherwise the curated-plugin sync contacts github.com and
  chatgpt.com), `check_for_update_on_startup = false`, `[analytics] enabled = false`:
  with these the only connections are to the proxy (measured with strace);
- `approval_policy = "never"`, `sandbox_mode = "workspace-write"` (headless: a command
  runs in the sandbox or fails, it never waits for an approval);
- `CODEX_ROLLOUT_TRACE_ROOT=$CODEX_HOME/rollout-trace`: Codex's rollout trace, the only
  record binding a code-mode script's nested calls to their `exec` call
  (`roller.harnesses.codex.trace`); it adds the header `x-codex-inference-call-id` to
  each request and changes nothing else on the wire (compared 2026-12-01).
Mode: the model decides (`roller.harnesses.codex.catalog`): no `--model` or a catalog
model runs Codex's code mode (tools in an `additional_tools` input item, called from a
JavaScript `exec` tool), another name plain function tools; `model_notice` says which.
Subagents: v1 (the `multi_agent_v1` namespace) is Codex's default; the option
`multi-agent=v2` sets `[features] multi_agent_v2` (the `collaboration` namespace,
warm-forked children). Without `--capture-calls`, `[agents] enabled = false` and no
`multi_agent_v2`, so no delegation tool is offered (`[features] multi_agent` is
deprecated in 0.171.0 and says so on every run). `max-depth=N` sets `[agents]
max_depth` (v1 only; with Codex's default 1 a child gets no spawn tool). In code mode
the catalog model's multi-agent version wins, and `agent-tools=exec` moves the v2 tools
into the scripts (`[features.multi_agent_v2] non_code_mode_only = false`, a table that
replaces the scalar). `codex exec` aborts a child whose parent turn ends first, so a
parent must call `wait_agent` for its children to run.

Multi-turn: a later turn resumes `codex exec resume <root thread id> -` with the root
thread confirmed by the native logs (`confirmed_root_thread`), never `--last`, which
picks the most recently updated thread and may pick a child.

Native logs: `$CODEX_HOME/sessions/` (rollout JSONL per thread) is copied to
`raw/native/sessions/`, and `state_5.sqlite` (threads, spawn edges) to
`raw/native/state_5.sqlite` through SQLite's backup API (one consistent snapshot,
WAL included); each rollout trace's `trace.jsonl` and `manifest.json` to
`raw/native/rollout-trace/` (not its payloads: the tape holds every byte). The reader is
`roller.harnesses.codex.native.read_native`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.errors import UsageError
from roller.harnesses.base import (
    FileToWrite,
    LaunchPlan,
    LaunchRequest,
    NativeCapture,
    Pin,
    ScratchDirs,
)
from roller.harnesses.codex.acceptance import ACCEPTANCE
from roller.harnesses.codex.catalog import mode_notice
from roller.harnesses.codex.native import SESSIONS, read_native
from roller.harnesses.codex.profile import INJECTIONS, NAME, TOOLS, WIRE
from roller.harnesses.codex.state import COPY_ERROR_SUFFIX, STATE_DB
from roller.harnesses.codex.trace import TRACE_FILE, TRACE_MANIFEST, TRACES
from roller.harnesses.harness import Harness
from roller.harnesses.launch import checked_launch, harness_env
from roller.harnesses.native_files import copy_file, copy_tree, snapshot_sqlite
from roller.harnesses.options import ConfigKey, LaunchOption, LaunchOptions
from roller.harnesses.resume import confirmed_id, confirmed_root_participant, resume_id

PROVIDER = "roller"
KEY_ENV = "OPENAI_API_KEY"
# Codex writes its rollout trace here: the only record binding a code-mode script's
# nested calls to their `exec` call (`roller.harnesses.codex.trace`).
TRACE_ENV = "CODEX_ROLLOUT_TRACE_ROOT"
EXEC_ARGS: tuple[str, ...] = ("exec", "--skip-git-repo-check", "--json")
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "multi-agent",
        ConfigKey("[features] multi_agent_v2"),
        "subagent protocol: v1 (multi_agent_v1 namespace) or v2 (collaboration, warm forks)",
        choices=("v1", "v2"),
        default="v1",
    ),
    LaunchOption(
        "max-depth",
        ConfigKey("[agents] max_depth"),
        "how deep v1 children may spawn (Codex's default 1: a child gets no spawn tool)",
        integer=(1, 8),
    ),
    LaunchOption(
        "agent-tools",
        ConfigKey("[features.multi_agent_v2] non_code_mode_only"),
        "code mode, v2: collaboration tools the model calls itself (direct, Codex's default) "
        "or from inside its exec scripts (exec)",
        choices=("direct", "exec"),
        default="direct",
    ),
    LaunchOption(
        "sandbox",
        ConfigKey("sandbox_mode"),
        "Codex's sandbox for commands",
        choices=("danger-full-access", "read-only", "workspace-write"),
        default="workspace-write",
    ),
)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def codex_home(dirs: ScratchDirs) -> Path:
    return dirs.home / ".codex"


def _toml(value: str | bool | int) -> str:
    """A TOML scalar (JSON string escapes are valid TOML basic-string escapes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)


def render_config(tables: Mapping[str, Mapping[str, str | bool | int]]) -> str:
    """`config.toml` text: the "" table first (top-level keys), then the others."""
    lines: list[str] = []
    for name, values in tables.items():
        if name:
            lines += ["", f"[{name}]"]
        lines += [f"{key} = {_toml(value)}" for key, value in values.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def config_tables(
    request: LaunchRequest, options: LaunchOptions
) -> dict[str, dict[str, str | bool | int]]:
    """The generated config as data (see the module docstring for each value's reason)."""
    v2 = options["multi-agent"] == "v2"
    top: dict[str, str | bool | int] = {"model_provider": PROVIDER}
    if request.model:
        top["model"] = request.model
    top.update(
        {
            "approval_policy": "never",
            "sandbox_mode": options["sandbox"],
            "check_for_update_on_startup": False,
        }
    )
    tables: dict[str, dict[str, str | bool | int]] = {
        "": top,
        "analytics": {"enabled": False},
        f"model_providers.{PROVIDER}": {
            "name": PROVIDER,
            "base_url": request.base_urls["openai"],
            "env_key": KEY_ENV,
            "wire_api": "responses",
            "request_max_retries": 0,
            "stream_max_retries": 0,
            "supports_websockets": False,
        },
        "features": {"plugins": False, "multi_agent_v2": request.capture_calls and v2},
    }
    if options["agent-tools"] == "exec":
        # the table form replaces the scalar: TOML cannot hold both
        del tables["features"]["multi_agent_v2"]
        tables["features.multi_agent_v2"] = {
            "enabled": request.capture_calls and v2,
            "non_code_mode_only": False,
        }
    agents: dict[str, str | bool | int] = {}
    if not request.capture_calls:
        agents["enabled"] = False
    if "max-depth" in options:
        agents["max_depth"] = int(options["max-depth"])
    if agents:
        tables["agents"] = agents
    return tables


def confirmed_root_thread(native: NativeCapture | None) -> str:
    """The root thread id the native logs confirm, for `codex exec resume`.

    Exactly one root participant, with no native problem (`roller.harnesses.resume`):
    anything else is an error, because resuming a guessed thread would continue the
    wrong conversation.
    """
    root = confirmed_root_participant(NAME, native)
    return confirmed_id(NAME, "thread uuid", root.key, _UUID)


class CodexAdapter:
    name = NAME
    profile = "exec"
    pin = Pin(registry="npm", package="@openai/codex", version="0.171.0", bin="codex")
    subtasks: SubtaskCapability = "supported"
    coverage_basis: OutputCoverage = "token_usage_count"
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        """The first turn: `codex exec … -` with the prompt on stdin."""
        return self._plan(request, resume_thread=None)

    def confirmed_root(self, native: NativeCapture | None) -> str:
        return confirmed_root_thread(native)

    def resume_plan(self, request: LaunchRequest, root: str) -> LaunchPlan:
        """A later turn in the same scratch HOME: resume the confirmed root thread."""
        return self._plan(request, resume_thread=resume_id(NAME, "thread uuid", root, _UUID))

    def _plan(self, request: LaunchRequest, resume_thread: str | None) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        binary = launch.binary
        key = request.credentials.get(KEY_ENV)
        if not key:
            raise UsageError(f"{NAME} reads its provider key from {KEY_ENV}; it is not set")
        if resume_thread is None:
            argv = [str(binary), *EXEC_ARGS, "-"]
        else:
            argv = [str(binary), "exec", "resume", *EXEC_ARGS[1:], resume_thread, "-"]
        home = codex_home(request.dirs)
        env = harness_env(request.dirs, binary)
        env["CODEX_HOME"] = str(home)
        env[TRACE_ENV] = str(home / TRACES)
        env[KEY_ENV] = key
        return LaunchPlan(
            argv=tuple(argv),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            files=(
                FileToWrite(
                    home / "config.toml", render_config(config_tables(request, launch.options))
                ),
            ),
            secret_env=frozenset({KEY_ENV}),
            stdin=launch.prompt.encode(),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        """Copy `sessions/`, each rollout trace's event log and manifest (not its
        payloads: the tape holds every byte), and a snapshot of `state_5.sqlite`."""
        home = codex_home(dirs)
        copy_tree(home / SESSIONS, dest / SESSIONS)
        traces = home / TRACES
        for trace in sorted(traces.iterdir()) if traces.is_dir() else []:
            for name in (TRACE_FILE, TRACE_MANIFEST):
                copy_file(trace / name, dest / TRACES / trace.name / name)
        state = home / STATE_DB
        if state.is_file():
            try:
                snapshot_sqlite(state, dest / STATE_DB)
            except sqlite3.Error as exc:
                # The reader reports the missing copy as a problem; say why here.
                dest.mkdir(parents=True, exist_ok=True)
                (dest / f"{STATE_DB}{COPY_ERROR_SUFFIX}").write_text(f"{exc}\n")

    read_native = staticmethod(read_native)

    def model_notice(self, model: str | None, version: str) -> str | None:
        """Which mode (code mode, function tools, fallback) Codex runs `model` in."""
        return mode_notice(model, version)


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    injections=INJECTIONS,
    adapter=CodexAdapter(),
    acceptance=ACCEPTANCE,
)
