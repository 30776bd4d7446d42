"""The Gemini CLI adapter: pin, headless launch plan, native log copy and reader.

Checked against Gemini CLI **0.61.0** (npm `@google/gemini-cli`, Node 20), on 2026-11-29,
with every field this module relies on seen in real runs against `roller mock-model`.

Launch (data, DESIGN.md rule 5): `gemini --output-format stream-json --approval-mode
yolo --prompt=<prompt>` (the `=` form keeps a prompt starting with `-` a value), stdin
closed, cwd = the scratch work dir, HOME/TMPDIR = scratch, `GOOGLE_GEMINI_BASE_URL` = the
proxy (the SDK appends `/v1beta/models/…`), `GEMINI_API_KEY` passed through (a
placeholder for `mock:`), `GEMINI_CLI_NO_RELAUNCH=true` (no self-relaunch). Without
`--model` the CLI routes each turn through its model router, whose JSON-mode
`generateContent` side calls are recorded like any other call (`json_mode: true`) and
attributed to the agent whose turn they serve. `~/.gemini/settings.json`:
- auth `gemini-api-key`, folder trust off, auto-update off;
- usage statistics off (no Clearcut, no `x-gemini-api-privileged-user-id` header);
- telemetry **on, to a local file only** (`target: local`, `outfile`, `logPrompts`):
  OpenTelemetry then exports spans, logs and metrics to that file and nowhere else
  (measured with strace: the only connections are to the base URL). It is roller's
  identity evidence — the wire carries none (docs/harnesses.md, "Gemini CLI").
- without `--capture-calls`: `experimental.enableAgents: false` and `tools.exclude:
  ["invoke_agent"]`, so no request offers the delegation tool (measured: with the first
  alone the tool is still offered and answers "Subagent 'generalist' not found.").
`--option` keys: `approval-mode` (default `yolo`, so shell and file tools are offered
and run; `default` offers 8 tools, none that writes a file or runs a shell), `agents`
(JSON `{name: {description, prompt, tools, model, …}}`: each becomes a local agent
`~/.gemini/agents/<name>.md`, e.g. a subagent with its own tool set and model).

Native logs: `~/.gemini/tmp/<slug>/chats/` is copied to `raw/native/tmp/<slug>/chats/`,
the telemetry file to `raw/native/telemetry.log`; the reader and the log shapes are in
`roller.harnesses.gemini_cli.logs` (facts), `gemini_cli.chats` and `gemini_cli.telemetry`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.errors import UsageError
from roller.harnesses.base import (
    FileToWrite,
    LaunchPlan,
    LaunchRequest,
    Pin,
    ScratchDirs,
)
from roller.harnesses.gemini_cli.acceptance import ACCEPTANCE
from roller.harnesses.gemini_cli.logs import TELEMETRY_FILE, read_native
from roller.harnesses.gemini_cli.profile import NAME, SPAWN_TOOL, TOOLS, WIRE
from roller.harnesses.harness import Harness
from roller.harnesses.launch import checked_launch, harness_env, passed_credentials
from roller.harnesses.native_files import copy_file, copy_tree
from roller.harnesses.options import CliFlag, ConfigKey, LaunchOption

CREDENTIAL_ENV: tuple[str, ...] = ("GEMINI_API_KEY",)
HEADLESS_ARGS: tuple[str, ...] = ("--output-format", "stream-json")
QUIET_ENV: Mapping[str, str] = {"GEMINI_CLI_NO_RELAUNCH": "true"}
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "approval-mode",
        CliFlag("--approval-mode"),
        "the CLI's approval mode (`default` offers no tool that writes or runs a shell)",
        default="yolo",
        empty_drops=True,
    ),
    LaunchOption(
        "agents",
        ConfigKey("~/.gemini/agents/<name>.md"),
        "JSON {name: {description, prompt, tools, model, …}}: local agent definitions",
        empty_drops=True,
    ),
)
# Keys a local agent definition may carry besides its prompt (the CLI's own schema).
AGENT_KEYS: tuple[str, ...] = (
    "description",
    "display_name",
    "tools",
    "model",
    "temperature",
    "max_turns",
    "timeout_mins",
)


def settings(telemetry_file: Path, capture_calls: bool) -> dict[str, Any]:
    """`~/.gemini/settings.json` for a headless, offline-but-for-the-model run."""
    value: dict[str, Any] = {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {
            "enabled": True,
            "target": "local",
            "outfile": str(telemetry_file),
            "logPrompts": True,
        },
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    }
    if not capture_calls:
        # Both: without agents the CLI still offers `invoke_agent` (it then answers
        # "Subagent … not found"); the exclusion removes the tool from every request.
        value["experimental"] = {"enableAgents": False}
        value["tools"] = {"exclude": [SPAWN_TOOL]}
    return value


def agent_files(home: Path, spec: str) -> tuple[FileToWrite, ...]:
    """Local agent definitions (`~/.gemini/agents/<name>.md`) from the `agents` option."""
    try:
        agents = json.loads(spec)
    except json.JSONDecodeError as exc:
        raise UsageError(f"gemini-cli option agents: not JSON ({exc.msg})") from exc
    if not isinstance(agents, dict) or not all(isinstance(v, dict) for v in agents.values()):
        raise UsageError("gemini-cli option agents: expected {name: {description, prompt, …}}")
    files = []
    for name, definition in agents.items():
        if not name or "/" in name or not isinstance(definition.get("description"), str):
            raise UsageError(f"gemini-cli option agents: {name!r} needs a name and a description")
        unknown = sorted(set(definition) - {*AGENT_KEYS, "prompt"})
        if unknown:
            raise UsageError(f"gemini-cli option agents: {name}: unknown key(s) {unknown}")
        # YAML front matter written as JSON values (JSON is YAML), the prompt as the body.
        head = [f"name: {json.dumps(name)}", "kind: local"]
        head += [f"{k}: {json.dumps(definition[k])}" for k in AGENT_KEYS if k in definition]
        body = str(definition.get("prompt", ""))
        text = "---\n" + "\n".join(head) + "\n---\n" + body + "\n"
        files.append(FileToWrite(home / ".gemini" / "agents" / f"{name}.md", text))
    return tuple(files)


class GeminiCliAdapter:
    name = NAME
    profile = "cli-headless"
    pin = Pin(registry="npm", package="@google/gemini-cli", version="0.61.0", bin="gemini")
    subtasks: SubtaskCapability = "supported"
    coverage_basis: OutputCoverage = "per_response_id"
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        binary, options = launch.binary, launch.options
        argv = [str(binary), *HEADLESS_ARGS, *options.argv()]
        if request.model:
            argv += ["--model", request.model]
        argv.append(f"--prompt={launch.prompt}")

        home = request.dirs.home
        gemini_dir = home / ".gemini"
        files = [
            FileToWrite(
                gemini_dir / "settings.json",
                json.dumps(settings(gemini_dir / TELEMETRY_FILE, request.capture_calls), indent=2)
                + "\n",
            )
        ]
        if "agents" in options:
            files += agent_files(home, options["agents"])

        env = harness_env(request.dirs, binary)
        env.update(QUIET_ENV)
        env["GOOGLE_GEMINI_BASE_URL"] = request.base_urls["gemini"]
        secrets = passed_credentials(request.credentials, CREDENTIAL_ENV)
        env.update(secrets)
        return LaunchPlan(
            argv=tuple(argv),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            files=tuple(files),
            secret_env=frozenset(secrets),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        """Copy every project's `chats/` tree and the telemetry file."""
        gemini_dir = dirs.home / ".gemini"
        for chats in sorted((gemini_dir / "tmp").glob("*/chats")):
            copy_tree(chats, dest / chats.relative_to(gemini_dir))
        copy_file(gemini_dir / TELEMETRY_FILE, dest / TELEMETRY_FILE)

    read_native = staticmethod(read_native)


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    adapter=GeminiCliAdapter(),
    acceptance=ACCEPTANCE,
)
