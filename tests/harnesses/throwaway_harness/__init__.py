"""A throwaway harness, declared in the test tree only: the proof that a harness is one unit.

Everything roller needs to know about it is here, as in any `roller.harnesses.<name>`
package: its wire profile (its own agent-scoped identity headers and an install-scoped
id), its tool names per mock role, one injected-message wrapper, its launch options as
descriptors, and an adapter whose launch plan runs `agent.py` (beside this file) with the
test's Python. It has no native logs: finalize attributes its calls from its wire
profile alone. Registering `HARNESS` (`roller.harnesses.register`) is the only step; no
other source file names it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.harnesses.base import LaunchPlan, LaunchRequest, NativeCapture, Pin, ScratchDirs
from roller.harnesses.harness import Harness
from roller.harnesses.launch import DEFAULT_PATH, base_env, passed_credentials, required_prompt
from roller.harnesses.options import CliFlag, EnvVar, LaunchOption, resolve_options
from roller.harnesses.tools import ToolHints
from roller.harnesses.wrappers import ElementPart, InjectionWrappers
from roller.identity import AgentScoped, WireProfile

NAME: Final = "throwaway"
RULE: Final = "throwaway-headers"
SESSION_HEADER: Final = "x-throwaway-session"
AGENT_HEADER: Final = "x-throwaway-agent"
PARENT_HEADER: Final = "x-throwaway-parent"
INSTALL_HEADER: Final = "x-throwaway-install"
SPAWN_TOOL: Final = "throwaway_spawn"
NOTE: Final = ("<throwaway-note>", "</throwaway-note>")
AGENT: Final = Path(__file__).with_name("agent.py")
KEY_ENV: Final = "OPENAI_API_KEY"

WIRE: Final = WireProfile(
    harness=NAME,
    rule=AgentScoped(RULE, SESSION_HEADER, AGENT_HEADER, PARENT_HEADER),
    install_scoped=(INSTALL_HEADER,),
)
TOOLS: Final = ToolHints(roles={"spawn": (SPAWN_TOOL,)}, constants={SPAWN_TOOL: {"kind": "helper"}})
INJECTIONS: Final = InjectionWrappers(
    roles=("user",), parts=(ElementPart("system_reminder", NOTE[0], NOTE[1]),)
)
OPTIONS: Final = (
    LaunchOption("greeting", EnvVar("THROWAWAY_GREETING"), "what the agent says", default="hello"),
    LaunchOption(
        "depth", CliFlag("--depth"), "how many nested children", integer=(0, 3), default="1"
    ),
)


class ThrowawayAdapter:
    name = NAME
    profile = "script"
    pin = Pin(registry="none", package="", version="", bin="")
    subtasks: SubtaskCapability = "unknown"
    coverage_basis: OutputCoverage = "none"
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        prompt = required_prompt(NAME, request)
        options = resolve_options(NAME, OPTIONS, request.options)
        env = base_env(request.dirs, os.environ.get("PATH") or DEFAULT_PATH)
        env.update(options.env())
        env["THROWAWAY_BASE_URL"] = request.base_urls["openai"]
        secrets = passed_credentials(request.credentials, (KEY_ENV,))
        env.update(secrets)
        return LaunchPlan(
            argv=(sys.executable, str(AGENT), *options.argv()),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            secret_env=frozenset(secrets),
            stdin=prompt.encode(),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        return None

    def read_native(self, native_dir: Path) -> NativeCapture | None:
        return None


HARNESS: Final = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    injections=INJECTIONS,
    adapter=ThrowawayAdapter(),
)
