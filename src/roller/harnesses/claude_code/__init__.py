"""The Claude Code adapter: pin, headless launch plan, native log copy and reader.

Checked against Claude Code **2.1.332** (npm `@anthropic-ai/claude-code`, a stub plus the
native `@anthropic-ai/claude-code-linux-x64` binary), on 2026-11-29, with every field
this module relies on seen in real runs against `roller mock-model`. The pin is exact:
`npm install @anthropic-ai/claude-code` without a version on Node 20 silently resolves
2.1.197 (the newest whose `engines` allows node 18), which behaves differently
(subagents synchronous by default, `HEAD /` at startup, depth 5).

Launch (data, DESIGN.md rule 5): `claude -p --output-format stream-json --verbose`,
the prompt on stdin (a prompt starting with `-` cannot be taken for a flag), cwd = the
scratch work dir, HOME/TMPDIR = scratch, `ANTHROPIC_BASE_URL` = the proxy, the user's
`ANTHROPIC_API_KEY` / `ANTHROPIC_AUTH_TOKEN` passed through (placeholders for `mock:`),
and the variables that stop every request that is not a model call (measured: with them
the only connection is to the base URL; without them `HEAD /api/hello`, an MCP registry
fetch and event logging to api.anthropic.com). Tool permissions: `--allowedTools
Bash,Read,Write,Edit` (works as root, unlike `--dangerously-skip-permissions`, and
leaves the offered tool list unchanged; `--allowedTools` naming Glob/Grep would add
them). Without `--capture-calls`, `--disallowedTools Agent` removes the delegation tool
from every request. `--option` keys: `allowed-tools`, `permission-mode`, `agents` (JSON
for `--agents`, e.g. a subagent with its own tool set), `max-turns`.

Multi-turn (`ResumableAdapter`): a later turn is `claude -p … --resume <session id>`, the
prompt on stdin again, in the same scratch HOME. Checked with 2.1.332: the session keeps
its id, the turn is appended to the same main transcript, and its first request carries
the earlier turns' messages. The id is the one main transcript's (`confirmed_root`),
never `--continue` (the most recent session).

Native logs: `~/.claude/projects/` is copied to `raw/native/projects/`; their location
and shape are in `roller.harnesses.claude_code.transcripts` (parsing), the facts drawn
from them in `roller.harnesses.claude_code.logs` (the reader). Identity: a call's provider
response id (`msg_…`) equals an assistant `message.id` in exactly one transcript
(coverage is checked per message id); the wire's `x-claude-code-session-id` /
`x-claude-code-agent-id` are cross-checked through `wire_aliases` (`S` → main,
`S:A` → A), never used alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.harnesses.base import LaunchPlan, LaunchRequest, NativeCapture, Pin, ScratchDirs
from roller.harnesses.claude_code.acceptance import ACCEPTANCE
from roller.harnesses.claude_code.logs import read_native
from roller.harnesses.claude_code.profile import INJECTIONS, NAME, SPAWN_TOOLS, TOOLS, WIRE
from roller.harnesses.harness import Harness
from roller.harnesses.launch import checked_launch, harness_env, passed_credentials
from roller.harnesses.native_files import copy_tree
from roller.harnesses.options import CliFlag, LaunchOption
from roller.harnesses.resume import confirmed_id, confirmed_root_participant, resume_id

# Everything that is not a model call, off (see the module docstring).
QUIET_ENV: Mapping[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
}
HEADLESS_ARGS: tuple[str, ...] = ("-p", "--output-format", "stream-json", "--verbose")
CREDENTIAL_ENV: tuple[str, ...] = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
DELEGATION_TOOL = SPAWN_TOOLS[0]
DEFAULT_ALLOWED_TOOLS = "Bash,Read,Write,Edit"

# Claude Code session ids are UUIDs (the main transcript's file name).
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# `--option` keys: each value is its flag's argument; an empty value drops the flag (and
# the default).
OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "allowed-tools",
        CliFlag("--allowedTools"),
        "tools allowed without asking (comma-separated)",
        default=DEFAULT_ALLOWED_TOOLS,
        empty_drops=True,
    ),
    LaunchOption(
        "permission-mode",
        CliFlag("--permission-mode"),
        "Claude Code's permission mode",
        empty_drops=True,
        # Claude Code refuses to bypass permissions as root unless told it is sandboxed;
        # the scratch HOME/work dir is roller's sandbox for the run.
        env_when={"bypassPermissions": {"IS_SANDBOX": "1"}},
    ),
    LaunchOption(
        "agents",
        CliFlag("--agents"),
        "JSON for --agents (custom subagents, e.g. with their own tool set)",
        empty_drops=True,
    ),
    LaunchOption("max-turns", CliFlag("--max-turns"), "turn limit", empty_drops=True),
)


class ClaudeCodeAdapter:
    name = NAME
    profile = "cli-print"
    pin = Pin(registry="npm", package="@anthropic-ai/claude-code", version="2.1.332", bin="claude")
    subtasks: SubtaskCapability = "supported"
    coverage_basis: OutputCoverage = "per_message_id"
    options = OPTIONS
    runs_command = False

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan:
        return self._plan(request, resume_session=None)

    def confirmed_root(self, native: NativeCapture | None) -> str:
        """The session id of the one main transcript (its file name, which every line of
        it repeats; the reader reports a line naming another session as a problem)."""
        root = confirmed_root_participant(self.name, native)
        return confirmed_id(self.name, "session id", root.native_ids.get("session_id"), _UUID)

    def resume_plan(self, request: LaunchRequest, root: str) -> LaunchPlan:
        """`claude -p … --resume <session id>`: the same session, its transcript appended."""
        return self._plan(request, resume_session=resume_id(self.name, "session id", root, _UUID))

    def _plan(self, request: LaunchRequest, resume_session: str | None) -> LaunchPlan:
        launch = checked_launch(self.name, self.pin, request, OPTIONS)
        binary = launch.binary
        argv = [str(binary), *HEADLESS_ARGS, *launch.options.argv()]
        if not request.capture_calls:
            argv += ["--disallowedTools", DELEGATION_TOOL]
        if request.model:
            argv += ["--model", request.model]
        if resume_session is not None:
            argv += ["--resume", resume_session]

        env = harness_env(request.dirs, binary)
        env.update(QUIET_ENV)
        env.update(launch.options.env())
        env["ANTHROPIC_BASE_URL"] = request.base_urls["anthropic"]
        secrets = passed_credentials(request.credentials, CREDENTIAL_ENV)
        env.update(secrets)
        return LaunchPlan(
            argv=tuple(argv),
            env=env,
            cwd=request.dirs.work,
            timeout_s=request.timeout_s,
            secret_env=frozenset(secrets),
            stdin=launch.prompt.encode(),
        )

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None:
        """Copy `~/.claude/projects/` (transcripts, subagent transcripts, meta.json).

        Not copied: `$TMPDIR/claude-<uid>/…/tasks/<agentId>.output` (symlinks to the
        subagent transcripts) and `~/.claude.json` (install ids, no evidence)."""
        copy_tree(dirs.home / ".claude" / "projects", dest / "projects")

    read_native = staticmethod(read_native)


HARNESS = Harness(
    name=NAME,
    package=__name__,
    wire=WIRE,
    tools=TOOLS,
    injections=INJECTIONS,
    adapter=ClaudeCodeAdapter(),
    acceptance=ACCEPTANCE,
    # The capture protocol's original name of the option (seed 000, "Enabling").
    collect_aliases={"--claude-capture-calls": "--capture-calls"},
)
