"""The Hermes Agent adapter: pin, one-shot launch plan with roller's plugin, native copy.

Checked against Hermes Agent **0.19.0** (PyPI `hermes-agent`, with `anthropic==0.87.0`,
the version its `anthropic` extra pins, for the Anthropic Messages mode), on 2026-12-01,
in real runs against `roller mock-model` in each API mode (docs/harnesses.md, "Hermes Agent").

Launch (data, DESIGN.md rule 5): `hermes --oneshot=<prompt>` in the scratch work dir,
HOME = the scratch HOME (Hermes keeps everything under `~/.hermes`). `-z`/`--oneshot` is
Hermes's finite-query session: it declares a stateless channel, so `delegate_task` runs
its children synchronously inside the tool call (even when asked for the background)
and every child has finished when the process exits — the wait for children is the
harness's own. Files written before launch:
- `~/.hermes/config.yaml` (JSON, which YAML reads): one provider `roller` whose
  `base_url` is the proxy (`…/v1` for Chat and Responses, without `/v1` for Anthropic,
  whose SDK adds it), `api_mode` from the `api-mode` option, the key named by
  `key_env` (`OPENAI_API_KEY` / `ANTHROPIC_API_KEY`, passed in the environment only: no
  credential on disk); `model.context_length` set, which turns off Hermes's model
  metadata probes (`/api/show`, `GET /v1/models[/M]`); `security.allow_lazy_installs:
  false` (a first run otherwise pip-installs tool dependencies from PyPI); roller's
  plugin enabled (`plugins.enabled`); `delegation.max_spawn_depth` / `delegation.model`
  from the options.
- `~/.hermes/plugins/roller-identity/{plugin.yaml,__init__.py}`: roller's plugin
  (`roller.harnesses.hermes.plugin`): one `x-roller-hermes-session-id` header per model
  request (the executing agent's own session id) and a delegation record naming each
  child's `delegate_task` call; nothing else changes (measured: with and without it, the
  requests differ in that header only).
Environment: `base_env` + `HERMES_DISABLE_LAZY_INSTALLS=1`. What stays: Hermes probes
a loopback base URL for a local LM Studio (`GET /api/v1/models`, once per agent built):
no setting skips it; it is recorded as a `model_list` side call, unattributed.

Native logs (`collect_native`): `~/.hermes/state.db` (+ `-wal`/`-shm`) as one
consolidated copy `raw/native/state.db`, roller's `roller/delegations.jsonl` and its
`config.yaml` (which API ran: the reader needs it to trust stored item ids), and for
people the delegation live transcripts (`cache/delegation/`) and `logs/`. The reader
and the shapes are in `roller.harnesses.hermes.store` / `.native`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.harnesses.base import FileToWrite, LaunchPlan, LaunchRequest, Pin, ScratchDirs
from roller.harnesses.harness import Harness
from roller.harnesses.hermes import plugin
from roller.harnesses.hermes.acceptance import ACCEPTANCE
from roller.harnesses.hermes.native import COVERAGE, read_native
from roller.harnesses.hermes.profile import NAME, TOOLS, WIRE
from roller.harnesses.hermes.store import CONFIG, DB_NAME, DELEGATIONS, PROVIDER
from roller.harnesses.launch import checked_launch, harness_env, passed_credentials
from roller.harnesses.native_files import copy_file, copy_sqlite_parts, copy_tree, snapshot_sqlite
from roller.harnesses.options import ConfigKey, LaunchOption

# The model asked for when `--model` is not given (what `roller mock-model` lists).
DEFAULT_MODEL: Final = "mock-model"
QUIET_ENV: Mapping[str, str] = {"HERMES_DISABLE_LAZY_INSTALLS": "1"}
# api_mode -> (LaunchRequest.base_urls family, key variable)
API_MODES: Mapping[str, tuple[str, str]] = {
    "chat_completions": ("openai", "OPENAI_API_KEY"),
    "codex_responses": ("openai", "OPENAI_API_KEY"),
    "anthropic_messages": ("anthropic", "ANTHROPIC_API_KEY"),
}
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "api-mode",
        ConfigKey("config.yaml providers.roller.api_mode"),
        "the API Hermes speaks to the proxy",
        choices=tuple(API_MODES),
        default="chat_completions",
    ),
    LaunchOption(
        "max-spawn-depth",
        ConfigKey("config.yaml delegation.max_spawn_depth"),
        "how deep delegation may go (2: a child with role orchestrator may delegate)",
        integer=(1, 4),
        default="1",
    ),
    LaunchOption(
        "child-model",
        ConfigKey("config.yaml delegation.model"),
        "the model subagents ask for (default: the parent's)",
        empty_drops=True,
    ),
    LaunchOption(
        "context-length",
        ConfigKey("config.yaml model.context_length"),
        "the context window Hermes assumes (set, so Hermes does not probe for it)",
        integer=(1024, 10_000_000),
        default="131072",
    ),
)


def hermes_home(home: Path) -> Path:
    return home / ".hermes"


def hermes_config(
    api_mode: str, base_url: str, model: str, options: Mapping[str, str]
) -> dict[str, Any]:
    """The whole config roller writes (no secret: the key is named by `key_env`)."""
    delegation: dict[str, Any] = {"max_spawn_depth": int(options["max-spawn-depth"])}
    if options.get("child-model"):
        delegation["model"] = options["child-model"]
    return {
        "model": {
            "provider": PROVIDER,
            "default": model,
            "context_length": int(options["context-length"]),
        },
        "providers": {
            PROVIDER: {
                "base_url": base_url,
                "key_env": API_MODES[api_mode][1],
                "default_model": model,
                "api_mode": api_mode,
            }
        },
        "security": {"allow_lazy_installs": False},
        "plugins": {"enabled": [plugin.PLUGIN_NAME]},
        "delegation": delegation,
    }


def plugin_files(home: Path) -> tuple[FileToWrite, ...]:
    """roller's plugin as Hermes loads it: a directory with its manifest and module."""
    where = hermes_home(home) / "plugins" / plugin.PLUGIN_NAME
    source = Path(plugin.__file__).read_text(encoding="utf-8")
    return (
        FileToWrite(where / "plugin.yaml", plugin.PLUGIN_YAML),
        FileToWrite(where / "__init__.py", source),
    )


class HermesAdapter:
    name = NAME
    profile = "oneshot-roller-plugin"
    pin = Pin(
        registry="pypi",
        package="hermes-agent",
        version="0.19.0",
        bin="hermes",
        extra_packages=("anthropic==0.87.0",),
    )
    subtasks: SubtaskCapability = "supported"
    coverage_basis: OutputCoverage = COVERAGE
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        api_mode = launch.options["api-mode"]
        family, key_env = API_MODES[api_mode]
        model = request.model or DEFAULT_MODEL
        config = hermes_config(api_mode, request.base_urls[family], model, launch.options.values)
        home = request.dirs.home
        env = harness_env(request.dirs, launch.binary)
        env.update(QUIET_ENV)
        secrets = passed_credentials(request.credentials, (key_env,))
        env.update(secrets)
        return LaunchPlan(
            # `--oneshot=` keeps a prompt that starts with `-` from being read as a flag.
            argv=(str(launch.binary), f"--oneshot={launch.prompt}"),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            files=(
                FileToWrite(hermes_home(home) / "config.yaml", json.dumps(config, indent=2) + "\n"),
                *plugin_files(home),
            ),
            secret_env=frozenset(secrets),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        source = hermes_home(dirs.home)
        dest.mkdir(parents=True, exist_ok=True)
        db = source / DB_NAME
        if db.is_file():
            try:
                snapshot_sqlite(db, dest / DB_NAME)
            except sqlite3.Error:
                copy_sqlite_parts(db, dest / DB_NAME)  # the reader reports it
        copy_file(source / DELEGATIONS, dest / DELEGATIONS)
        copy_file(source / CONFIG, dest / CONFIG)  # roller's own: which API ran
        copy_tree(source / "cache" / "delegation", dest / "delegation")
        copy_tree(source / "logs", dest / "logs")

    read_native = staticmethod(read_native)


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    adapter=HermesAdapter(),
    acceptance=ACCEPTANCE,
)
