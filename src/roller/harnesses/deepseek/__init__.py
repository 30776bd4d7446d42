"""The DeepSeek Harness adapter: pin, a driver-script launch plan, native copy and reader.

Checked against deepseek-harness **0.2.1rc2** (PyPI `deepseek-harness-sdk` +
`deepseek-harness-runtime-bin`, the latter a 316 MB single-file Node runtime), on
2026-12-01, in real runs against `roller mock-model` (docs/harnesses.md, "DeepSeek Harness").

DeepSeek Harness is a Python SDK (JSON-RPC over stdio to its runtime), not a CLI that
takes a prompt. The launch runs roller's driver (`roller.harnesses.deepseek.driver`,
written into the scratch dir) with the harness venv's python: one prompt (on stdin) as
one turn of the session `roller-root`, then the wait for the session tree to settle
(children finished, their notices taken in by the root), then a long shutdown so the
runtime flushes its logs (with the SDK's 1 s default it does not). Everything else is
data (DESIGN.md rule 5):
- `profile` option: `sdk-minimal` (default: root only, no subagent tools, the manifest
  says `subtasks: not_available_in_bundled_profile`) or `sdk` (`subagent`,
  `subagent_fork`, and 23 more tools).
- Patches (`--patch`, the runtime's own overlay files) written beside the driver: for
  `sdk`, session logs uncompressed (`compression: none`, as `sdk-minimal` ships: Python
  3.11 cannot read zstd); `max-depth` > 1 raises the subagent plugin's `maxDepth`.
- Environment: `base_env` + `DSH_TELEMETRY_MODE=DISABLED` (the default exports to the
  harness vendor's collector), `DSH_PERMISSION_MODE` from `permission-mode` (default
  `danger-full-access`: the `sdk` profile's bash refuses to run unsandboxed without it,
  and no sandbox backend exists here; roller's scratch dirs are the boundary, as for the
  other harnesses), the key as `DEEPSEEK_API_KEY` (environment only, never on disk), the
  proxy's Anthropic base URL for the driver's `base_url` (`DEEPSEEK_BASE_URL`).
  `DSH_HOME` is `~/.dsh` in the scratch HOME.

Multi-turn (`ResumableAdapter`): a later turn runs the driver with `--resume` on the
root session the native logs confirm; the SDK restores it from `DSH_HOME`
(`resume_session`), so a fork in turn 2 inherits turn 1.

Native logs (`collect_native`): `~/.dsh/sessions/` and roller's `~/.dsh/roller/driver.jsonl`
into `raw/native/`. Shapes and facts: `roller.harnesses.deepseek.sessions` / `.native`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.harnesses.base import (
    FileToWrite,
    LaunchPlan,
    LaunchRequest,
    NativeCapture,
    Pin,
    ScratchDirs,
)
from roller.harnesses.deepseek import driver
from roller.harnesses.deepseek.acceptance import ACCEPTANCE
from roller.harnesses.deepseek.native import COVERAGE, read_native
from roller.harnesses.deepseek.profile import NAME, PRIVATE_FIELDS, TOOLS, WIRE
from roller.harnesses.deepseek.sessions import RECORD, SESSIONS
from roller.harnesses.harness import Harness
from roller.harnesses.launch import checked_launch, harness_env, passed_credentials
from roller.harnesses.native_files import copy_file, copy_tree
from roller.harnesses.options import ConfigKey, EnvVar, LaunchOption
from roller.harnesses.resume import confirmed_id, confirmed_root_participant, resume_id

ROOT_SESSION: Final = "roller-root"
KEY_ENV: Final = "DEEPSEEK_API_KEY"
# The model asked for when `--model` is not given (the profiles' own default).
DEFAULT_MODEL: Final = "deepseek-v4-flash"
PROVIDER: Final = "deepseek-official"
QUIET_ENV: Mapping[str, str] = {"DSH_TELEMETRY_MODE": "DISABLED"}
_SESSION_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
NO_ZSTD: Final = """- id: session-persistence-jsonl
  config:
    root: !!js dshHomePath('sessions')
    compression: none
"""
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "profile",
        ConfigKey("driver --profile"),
        "the bundled profile: sdk-minimal (root only) or sdk (subagent, subagent_fork)",
        choices=("sdk-minimal", "sdk"),
        default="sdk-minimal",
    ),
    LaunchOption(
        "permission-mode",
        EnvVar("DSH_PERMISSION_MODE"),
        "the harness's sandbox policy (the sdk profile's bash needs danger-full-access here)",
        choices=("danger-full-access", "workspace-write", "read-only"),
        default="danger-full-access",
    ),
    LaunchOption(
        "max-depth",
        ConfigKey("patch subagent.maxDepth"),
        "how deep subagents may delegate (sdk profile; the harness's default is 1)",
        integer=(1, 4),
        default="1",
    ),
    LaunchOption(
        "settle-timeout",
        ConfigKey("driver --settle-timeout"),
        "seconds the driver waits for children and their notices after the turn",
        integer=(1, 3600),
        default="120",
    ),
)


def dsh_home(home: Path) -> Path:
    return home / ".dsh"


def patches(profile: str, max_depth: int) -> dict[str, str]:
    """Patch file name -> content, for the runtime's `--patch` overlays."""
    out: dict[str, str] = {}
    if profile == "sdk":
        out["no-zstd.yml"] = NO_ZSTD
    if max_depth > 1:
        out["max-depth.yml"] = f"- id: subagent\n  config:\n    maxDepth: {max_depth}\n"
    return out


class DeepSeekAdapter:
    name = NAME
    profile = "sdk-driver"
    pin = Pin(
        registry="pypi",
        package="deepseek-harness-sdk",
        version="0.2.1rc2",
        bin="dsh",
        extra_packages=("deepseek-harness-runtime-bin==0.2.1rc2",),
    )
    subtasks: SubtaskCapability = "not_available_in_bundled_profile"
    coverage_basis: OutputCoverage = COVERAGE
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        return self._plan(request)

    def confirmed_root(self, native: NativeCapture | None) -> str:
        """The root session id of the logs (the driver's `roller-root`)."""
        root = confirmed_root_participant(self.name, native)
        return confirmed_id(self.name, "session id", root.key, _SESSION_ID)

    def resume_plan(self, request: LaunchRequest, root: str) -> LaunchPlan:
        """The driver again, `--resume` on `root` (restored from `DSH_HOME` by the SDK)."""
        return self._plan(request, session=resume_id(self.name, "session id", root, _SESSION_ID))

    def _plan(self, request: LaunchRequest, *, session: str | None = None) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        options = launch.options
        here = request.dirs.tmp / "roller-deepseek"
        files = {"driver.py": Path(driver.__file__).read_text(encoding="utf-8")}
        files.update(patches(options["profile"], int(options["max-depth"])))
        home = dsh_home(request.dirs.home)
        argv = [
            str(launch.binary.parent / "python"),
            str(here / "driver.py"),
            "--profile", options["profile"],
            *(("--resume", session) if session else ("--session-id", ROOT_SESSION)),
            "--dsh-home", str(home),
            "--cwd", str(request.dirs.work),
            "--base-url", request.base_urls["anthropic"],
            "--model", request.model or DEFAULT_MODEL,
            "--provider", PROVIDER,
            "--settle-timeout", options["settle-timeout"],
            "--record", str(home / RECORD),
        ]  # fmt: skip
        argv += [
            arg for name in files if name.endswith(".yml") for arg in ("--patch", str(here / name))
        ]
        env = harness_env(request.dirs, launch.binary)
        env.update(QUIET_ENV)
        env.update(options.env())
        secrets = passed_credentials(request.credentials, (KEY_ENV,))
        env.update(secrets)
        return LaunchPlan(
            argv=tuple(argv),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            files=tuple(FileToWrite(here / name, text) for name, text in files.items()),
            secret_env=frozenset(secrets),
            stdin=launch.prompt.encode(),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        home = dsh_home(dirs.home)
        dest.mkdir(parents=True, exist_ok=True)
        copy_tree(home / SESSIONS, dest / SESSIONS)
        copy_file(home / RECORD, dest / RECORD)

    read_native = staticmethod(read_native)


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    adapter=DeepSeekAdapter(),
    acceptance=ACCEPTANCE,
    private_fields=PRIVATE_FIELDS,
)
