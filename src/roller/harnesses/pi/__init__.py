"""The Pi adapter: pin, print-mode launch plan, native log copy and reader.

Checked against Pi **0.73.1** (npm `@mariozechner/pi-coding-agent`, Node 20), on
2026-11-29, with every field this module relies on seen in real runs against
`roller mock-model` for each of the three APIs below.

Launch (data, DESIGN.md rule 5): `pi --offline --no-extensions --no-skills
--no-prompt-templates --no-themes --no-context-files --provider roller --model M --mode
json -p`, the prompt on stdin (Pi reads piped stdin as the message, so a prompt starting
with `-` is never taken for a flag), cwd = the scratch work dir, HOME/TMPDIR = scratch,
`PI_OFFLINE=1` (no update check, package check or install telemetry; measured: no
connection but the base URL). `~/.pi/agent/models.json` declares one provider,
`roller`, for the API the `api` option chooses, pointing at the proxy:

| `api` | endpoint | base URL | key read from |
|---|---|---|---|
| `openai-responses` (default) | `POST /v1/responses` | `…/v1` | `OPENAI_API_KEY` |
| `openai-completions` | `POST /v1/chat/completions` | `…/v1` | `OPENAI_API_KEY` |
| `anthropic-messages` | `POST /v1/messages` | no `/v1` (the SDK adds it) | `ANTHROPIC_API_KEY` |

`openai-responses` is the default because it is the only one whose requests carry the
session id (`session_id` header), so the native join is cross-checked on the wire. The
key is named, not written (models.json resolves `apiKey` from the variable of that
name): no credential is on disk. `compat` turns off the `developer` role and
`reasoning_effort`, which generic endpoints reject. `--option` keys: `api`, `tools`
(comma-separated allowlist for `--tools`; default Pi's four: read, bash, edit, write).

Without extensions Pi has no delegation tool at all (its README: "No sub-agents"), so
`capabilities.subtasks` is `not_available_in_bundled_profile`, and `--capture-calls`
changes nothing in the launch.

Native logs: `~/.pi/agent/sessions/` is copied to `raw/native/sessions/`; the reader and
the log shape are in `roller.harnesses.pi.logs`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.harnesses.base import (
    FileToWrite,
    LaunchPlan,
    LaunchRequest,
    Pin,
    ScratchDirs,
)
from roller.harnesses.harness import Harness
from roller.harnesses.launch import checked_launch, harness_env, passed_credentials
from roller.harnesses.native_files import copy_tree
from roller.harnesses.options import CliFlag, ConfigKey, LaunchOption
from roller.harnesses.pi.acceptance import ACCEPTANCE
from roller.harnesses.pi.logs import read_native
from roller.harnesses.pi.profile import NAME, TOOLS, WIRE

PROVIDER = "roller"
# The model asked for when `--model` is not given (what `roller mock-model` lists); a
# real provider needs `--model`.
DEFAULT_MODEL = "mock-model"
QUIET_ENV: Mapping[str, str] = {"PI_OFFLINE": "1"}
PRINT_ARGS: tuple[str, ...] = (
    "--offline",
    "--no-extensions",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
    "--no-context-files",
)


@dataclass(frozen=True)
class PiApi:
    """How models.json reaches one API through the proxy."""

    base_family: str  # key of LaunchRequest.base_urls
    key_env: str


APIS: Mapping[str, PiApi] = {
    "openai-responses": PiApi("openai", "OPENAI_API_KEY"),
    "openai-completions": PiApi("openai", "OPENAI_API_KEY"),
    "anthropic-messages": PiApi("anthropic", "ANTHROPIC_API_KEY"),
}
DEFAULT_API = "openai-responses"
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "api",
        ConfigKey("models.json providers.roller.api"),
        "the API Pi speaks to the proxy (only openai-responses carries the session id)",
        choices=tuple(APIS),
        default=DEFAULT_API,
    ),
    LaunchOption(
        "tools",
        CliFlag("--tools"),
        "comma-separated tool allowlist (default Pi's four: read, bash, edit, write)",
        empty_drops=True,
    ),
)


def models_json(api: str, base_url: str, model: str) -> dict[str, Any]:
    spec = APIS[api]
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url,
                "api": api,
                "apiKey": spec.key_env,  # resolved from the environment by Pi
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": model, "contextWindow": 128000, "maxTokens": 4096}],
            }
        }
    }


class PiAdapter:
    name = NAME
    profile = "print-no-extensions"
    pin = Pin(registry="npm", package="@mariozechner/pi-coding-agent", version="0.73.1", bin="pi")
    subtasks: SubtaskCapability = "not_available_in_bundled_profile"
    coverage_basis: OutputCoverage = "per_session_assistant_count"
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        binary, api = launch.binary, launch.options["api"]
        model = request.model or DEFAULT_MODEL
        argv = [str(binary), *PRINT_ARGS, "--provider", PROVIDER, "--model", model]
        argv += [*launch.options.argv(), "--mode", "json", "-p"]

        agent_dir = request.dirs.home / ".pi" / "agent"
        base_url = request.base_urls[APIS[api].base_family]
        pi_settings = {
            "enableInstallTelemetry": False,
            "defaultProvider": PROVIDER,
            "defaultModel": model,
        }
        files = (
            FileToWrite(
                agent_dir / "models.json",
                json.dumps(models_json(api, base_url, model), indent=2) + "\n",
            ),
            FileToWrite(agent_dir / "settings.json", json.dumps(pi_settings, indent=2) + "\n"),
        )
        env = harness_env(request.dirs, binary)
        env.update(QUIET_ENV)
        secrets = passed_credentials(request.credentials, (APIS[api].key_env,))
        env.update(secrets)
        return LaunchPlan(
            argv=tuple(argv),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            files=files,
            secret_env=frozenset(secrets),
            stdin=launch.prompt.encode(),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        """Copy `~/.pi/agent/sessions/` (one JSONL file per session)."""
        copy_tree(dirs.home / ".pi" / "agent" / "sessions", dest / "sessions")

    read_native = staticmethod(read_native)


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    adapter=PiAdapter(),
    acceptance=ACCEPTANCE,
)
