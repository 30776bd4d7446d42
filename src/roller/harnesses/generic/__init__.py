"""The `generic` harness: any command that talks to a model through the standard SDK
environment variables.

Launch (`runs_command`): the user's command, in the user's own environment (a generic
program may need its virtualenv, config and PATH), with the SDK base URLs pointed at the proxy:
`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` (with `/v1`), `GOOGLE_GEMINI_BASE_URL`, and for
`mock:` placeholder keys so SDK clients start without real credentials. A task's prompt
(a tasks file line, or `--prompt`) is given to the command as `ROLLER_PROMPT`.

Native logs: none. Identity comes from the wire alone: roller's explicit
`x-roller-session-id` / `x-roller-agent-id` / `x-roller-parent-agent-id` headers, which
any agent framework may send to declare its participants (see docs/identity.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.errors import UsageError
from roller.harnesses.base import (
    LaunchPlan,
    LaunchRequest,
    NativeCapture,
    Pin,
    ScratchDirs,
)
from roller.harnesses.generic.profile import NAME, WIRE
from roller.harnesses.harness import Harness
from roller.harnesses.options import LaunchOption, resolve_options


class GenericAdapter:
    name: str = NAME
    profile: str = "command"
    pin: Pin = Pin(registry="none", package="", version="", bin="")
    subtasks: SubtaskCapability = "unknown"
    coverage_basis: OutputCoverage = "none"
    options: tuple[LaunchOption, ...] = ()
    runs_command = True

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        if not request.command:
            raise UsageError(f"the {NAME} harness needs a command after `--`")
        resolve_options(self.name, self.options, request.options)  # it takes none
        env = dict(os.environ)
        env.update(
            {
                "ANTHROPIC_BASE_URL": request.base_urls["anthropic"],
                "OPENAI_BASE_URL": request.base_urls["openai"],
                "GOOGLE_GEMINI_BASE_URL": request.base_urls["gemini"],
                "ROLLER_SCRATCH_DIR": str(request.dirs.work),
            }
        )
        if request.prompt is not None:
            env["ROLLER_PROMPT"] = request.prompt
        env.update(request.credentials)
        return LaunchPlan(
            argv=tuple(request.command),
            env=env,
            cwd=Path.cwd(),
            timeout_s=request.timeout_s,
            secret_env=frozenset(request.credentials),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        return None

    def read_native(self, native_dir: Path) -> NativeCapture | None:
        return None


HARNESS = Harness(name=NAME, package=__name__, wire=WIRE, adapter=GenericAdapter())
