"""The OpenCode adapter: pin, launch plan, native log collection and reading.

Checked against OpenCode **1.18.33** (npm `opencode-ai`, a Bun-compiled native binary
linked as `node_modules/.bin/opencode`), run headless with `opencode run` against the
proxy on this machine.

Launch (a plan as data; `roller.collect` runs it):
- Config: `$HOME/.config/opencode/opencode.json` in the scratch HOME (OpenCode's global
  config; the work dir stays the task's own). One provider `roller`
  (`@ai-sdk/openai-compatible`, bundled: nothing is installed at run time) whose
  `baseURL` is the proxy's OpenAI URL; `model` and `small_model` are `roller/<model>`, so
  the title request goes through the proxy too; `enabled_providers: ["roller"]`,
  `autoupdate: false`, `share: "disabled"`. The API key is referenced as
  `{env:OPENAI_API_KEY}` and passed in the environment only, never written to disk.
- The `task` subagent tool: with `--capture-calls`, OpenCode's bundled permission rules
  are left alone (`task` allowed to primary agents, denied to subagents: depth 1). An
  explicit global `"task": "allow"` would also reach the subagents (measured: the child
  is then offered `task` and hits the depth limit), so "allow" means *not overriding*.
  Without `--capture-calls`, `"permission": {"task": "deny"}`: OpenCode then removes the
  tool from the request altogether.
- Environment: nothing of the user's but PATH (`base_env`), plus
  `OPENCODE_DISABLE_{AUTOUPDATE,MODELS_FETCH,LSP_DOWNLOAD,DEFAULT_PLUGINS,SHARE,CLAUDE_CODE}=1`
  (no models.dev fetch, no update check, no LSP download, no share, no Claude Code
  config import) and `npm_config_registry=http://127.0.0.1:9/`: OpenCode still starts a
  background `npm install @opencode-ai/plugin` into its config dir; pointed at a closed
  loopback port it fails at once instead of reaching registry.npmjs.org (OpenCode logs
  `background dependency install failed` and carries on).
- Option `agents` (`--option agents=JSON`): OpenCode's own `agent` config entries
  (custom subagents with their own prompt, permissions and model), merged into the
  config; a bare model name (or `roller/<name>`) becomes `roller/<name>` and is
  registered with the provider, so the subagent's calls go through the proxy too.
- Command: `opencode run --model roller/<model> --format json --print-logs --log-level
  INFO`, the prompt on **stdin**: OpenCode reads a non-TTY stdin as the message, byte
  for byte. (Argv is worse: an argument with spaces is wrapped in literal quotes, and
  splitting the prompt into words loses its newlines.)

Multi-turn (`ResumableAdapter`): a later turn is the same command plus `--session <id>`,
the prompt on stdin again, in the same scratch HOME. Checked with 1.18.33: the turn is
added to that session (no second title request: the session already has its title), and
its request carries the earlier turns' messages. The id is the one root session of the
store (`confirmed_root`), never `--continue` (the most recent session, maybe a child).

Native logs (`collect_native`, after the process has exited): the SQLite store
`~/.local/share/opencode/opencode.db` is in WAL mode and most rows are still in
`opencode.db-wal`, so `opencode.db`, `-wal` and `-shm` are first copied together into a
temporary directory (the scratch HOME is never opened by SQLite), then the copy is
written with SQLite's backup API into `raw/native/opencode.db`: one self-contained
file in journal mode DELETE. OpenCode's own log (`~/.local/share/opencode/log/*.log`)
is copied to `raw/native/log/` for people; nothing reads it.

Native reading: `opencode.native.read_native` (facts, over `opencode.store.read_store`'s
rows); their docstrings give the tables and fields and what each fact rests on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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
from roller.harnesses.harness import Harness
from roller.harnesses.launch import checked_launch, harness_env, passed_credentials
from roller.harnesses.native_files import consolidate_sqlite, copy_tree
from roller.harnesses.opencode.acceptance import ACCEPTANCE
from roller.harnesses.opencode.native import read_native
from roller.harnesses.opencode.profile import NAME, TOOLS, WIRE
from roller.harnesses.opencode.store import DB_NAME
from roller.harnesses.options import ConfigKey, LaunchOption
from roller.harnesses.resume import confirmed_id, confirmed_root_participant, resume_id

PROVIDER = "roller"
# Asked for when the user names no model. Any name works with the mock model; for a real
# OpenAI-compatible upstream, pass --model.
DEFAULT_MODEL = "gpt-4.1-mini"
KEY_ENV = "OPENAI_API_KEY"
# A loopback port nothing listens on: OpenCode's background plugin install fails fast.
DEAD_REGISTRY = "http://127.0.0.1:9/"

# Environment the pinned version honours (checked in its binary and in runs).
QUIET_ENV: dict[str, str] = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "npm_config_registry": DEAD_REGISTRY,
}
RUN_FLAGS = ("--format", "json", "--print-logs", "--log-level", "INFO")
# OpenCode session ids: `ses_` and 26 base-62 characters (1.18.33).
_SESSION_ID = re.compile(r"ses_[0-9A-Za-z]{8,64}")
# Launch options (`roller collect --option KEY=VALUE`).
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "agents",
        ConfigKey("opencode.json agent"),
        "JSON: OpenCode `agent` config entries (custom subagents with their own "
        "prompt, permissions and model; a bare model name is served through the proxy)",
    ),
)


def data_dir(home: Path) -> Path:
    return home / ".local" / "share" / "opencode"


def config_path(home: Path) -> Path:
    return home / ".config" / "opencode" / "opencode.json"


def parse_agents(raw: str) -> dict[str, dict[str, Any]]:
    """The `agents` launch option: OpenCode's own `agent` config map, as JSON.

    A model given as a bare name (or `roller/<name>`) is served through the proxy: it
    becomes `roller/<name>` and is registered with the provider.
    """
    try:
        agents = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--option agents=…: not JSON ({exc})") from exc
    if not isinstance(agents, dict) or not all(isinstance(v, dict) for v in agents.values()):
        raise UsageError("--option agents=…: expected a JSON object of agent objects")
    return agents


def _agent_models(agents: dict[str, dict[str, Any]]) -> list[str]:
    """Rewrite proxy-served agent models to `roller/<name>`; return those names."""
    names: list[str] = []
    for agent in agents.values():
        model = agent.get("model")
        if not isinstance(model, str):
            continue
        name = model.removeprefix(f"{PROVIDER}/")
        if "/" in name:
            continue  # another provider: the user's choice, left alone
        agent["model"] = f"{PROVIDER}/{name}"
        names.append(name)
    return names


def opencode_config(
    base_url: str,
    model: str,
    capture_calls: bool,
    with_key: bool,
    agents: dict[str, dict[str, Any]] | None = None,
) -> dict[str, object]:
    """The whole OpenCode config roller writes (no secret: the key is an env reference)."""
    options: dict[str, str] = {"baseURL": base_url}
    if with_key:
        options["apiKey"] = "{env:" + KEY_ENV + "}"
    agents = {k: dict(v) for k, v in (agents or {}).items()}
    models = {m: {"name": m, "tool_call": True} for m in [model, *_agent_models(agents)]}
    config: dict[str, object] = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "roller proxy",
                "options": options,
                "models": models,
            }
        },
        "enabled_providers": [PROVIDER],
        "model": f"{PROVIDER}/{model}",
        "small_model": f"{PROVIDER}/{model}",
        "autoupdate": False,
        "share": "disabled",
    }
    if agents:
        config["agent"] = agents
    if not capture_calls:
        config["permission"] = {"task": "deny"}
    return config


class OpenCodeAdapter:
    name = NAME
    profile = "bundled"
    pin = Pin(registry="npm", package="opencode-ai", version="1.18.33", bin="opencode")
    subtasks: SubtaskCapability = "supported"
    coverage_basis: OutputCoverage = "per_session_assistant_count"
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        return self._plan(request, resume_session=None)

    def confirmed_root(self, native: NativeCapture | None) -> str:
        """The id of the one session row without a parent (the store's root)."""
        root = confirmed_root_participant(self.name, native)
        return confirmed_id(self.name, "session id", root.key, _SESSION_ID)

    def resume_plan(self, request: LaunchRequest, root: str) -> LaunchPlan:
        """`opencode run … --session <root session id>`: the next turn of that session."""
        return self._plan(
            request, resume_session=resume_id(self.name, "session id", root, _SESSION_ID)
        )

    def _plan(self, request: LaunchRequest, resume_session: str | None) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        binary = launch.binary
        model = request.model or DEFAULT_MODEL
        secrets = passed_credentials(request.credentials, (KEY_ENV,))
        agents = parse_agents(launch.options["agents"]) if "agents" in launch.options else None
        config = opencode_config(
            request.base_urls["openai"],
            model,
            request.capture_calls,
            with_key=bool(secrets),
            agents=agents,
        )
        env = harness_env(request.dirs, binary)
        env.update(QUIET_ENV)
        env.update(secrets)
        resume = ("--session", resume_session) if resume_session is not None else ()
        return LaunchPlan(
            argv=(str(binary), "run", "--model", f"{PROVIDER}/{model}", *RUN_FLAGS, *resume),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            files=(
                FileToWrite(config_path(request.dirs.home), json.dumps(config, indent=2) + "\n"),
            ),
            secret_env=frozenset(secrets),
            stdin=launch.prompt.encode(),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        source = data_dir(dirs.home)
        dest.mkdir(parents=True, exist_ok=True)
        consolidate_db(source / DB_NAME, dest / DB_NAME)
        copy_tree(source / "log", dest / "log")

    read_native = staticmethod(read_native)


# The database copy shared by every SQLite-keeping harness (kept under its old name).
consolidate_db = consolidate_sqlite


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    adapter=OpenCodeAdapter(),
    acceptance=ACCEPTANCE,
)
