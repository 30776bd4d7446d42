"""What every installed harness's launch plan starts from: the checks, the binary, the env.

Each adapter keeps its own flags, files and variables as data (DESIGN.md rule 5); this
module owns only what is the same for all of them, so it is decided once:
- a launch is refused, before anything runs, when the harness is not installed, when it
  has no prompt (empty or blank: a headless harness has nothing to do), or when its
  `--option`s do not fit the descriptors it declares (`roller.harnesses.options`: an
  unknown key, a value outside the allowed ones);
- the binary is the pinned one in roller's cache (`roller.harnesses.install.bin_path`),
  and its directory comes first on PATH, so a harness that runs its own binary again
  runs the pinned one;
- the environment is nothing of the user's but PATH, plus the credentials the harness
  reads (`passed_credentials`: only those, only when set; they are the plan's
  `secret_env`, never written to disk).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from roller.errors import HarnessError, UsageError
from roller.harnesses.base import LaunchRequest, Pin, ScratchDirs
from roller.harnesses.install import bin_path
from roller.harnesses.options import LaunchOption, LaunchOptions, resolve_options

# PATH when the user's environment has none: where Node and the usual tools live.
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class CheckedLaunch:
    """What a launch plan is built from once the request passed every check."""

    binary: Path
    prompt: str
    options: LaunchOptions


def checked_launch(
    name: str, pin: Pin, request: LaunchRequest, options: Sequence[LaunchOption]
) -> CheckedLaunch:
    """The installed binary, the prompt and the resolved options of a request `name` can run.

    `options` are the descriptors the harness declares; the request's `--option`s are
    resolved against them (`resolve_options`).
    """
    if request.install_dir is None:
        raise HarnessError(f"{name} is not installed: run `roller harness install {name}`")
    prompt = required_prompt(name, request)
    resolved = resolve_options(name, options, request.options)
    return CheckedLaunch(bin_path(pin, request.install_dir), prompt, resolved)


def required_prompt(name: str, request: LaunchRequest) -> str:
    """The request's prompt; a missing or blank one is refused."""
    if request.prompt is None or not request.prompt.strip():
        raise UsageError(f"{name} needs a prompt (--prompt)")
    return request.prompt


def base_env(dirs: ScratchDirs, path: str) -> dict[str, str]:
    """The environment every harness starts from: nothing of the user's but PATH."""
    return {
        "HOME": str(dirs.home),
        "TMPDIR": str(dirs.tmp),
        "PATH": path,
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
    }


def harness_env(dirs: ScratchDirs, binary: Path) -> dict[str, str]:
    """`base_env` with the binary's own directory first on the user's PATH."""
    path = os.environ.get("PATH") or DEFAULT_PATH
    return base_env(dirs, os.pathsep.join([str(binary.parent), path]))


def passed_credentials(credentials: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """The credentials among `names` that are set: the only ones a harness is given."""
    wanted = set(names)
    return {k: v for k, v in credentials.items() if k in wanted and v}
