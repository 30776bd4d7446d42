"""What every installed harness's launch plan starts from: the checks, the binary, the env.

Each adapter keeps its own flags, files and variables as data (DESIGN.md rule 5); this
module owns only what is the same for all of them, so it is decided once:
- a launch is refused, before anything runs, when the harness is not installed, when it
  has no prompt (empty or blank: a headless harness has nothing to do), or when it is
  given a `--option` key it does not know (a typo must not be silently dropped);
- the binary is the pinned one in roller's cache (`roller.harnesses.install.bin_path`),
  and its directory comes first on PATH, so a harness that runs its own binary again
  runs the pinned one;
- the environment is nothing of the user's but PATH, plus the credentials the harness
  reads (`passed_credentials`: only those, only when set; they are the plan's
  `secret_env`, never written to disk).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from roller.errors import HarnessError, UsageError
from roller.harnesses.base import LaunchRequest, Pin, ScratchDirs
from roller.harnesses.install import bin_path

# PATH when the user's environment has none: where Node and the usual tools live.
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def checked_launch(
    name: str, pin: Pin, request: LaunchRequest, options: Iterable[str]
) -> tuple[Path, str]:
    """The installed binary and the prompt, once the request is one `name` can run.

    `options` are the `--option` keys the harness knows; any other key is refused.
    """
    if request.install_dir is None:
        raise HarnessError(f"{name} is not installed: run `roller harness install {name}`")
    if request.prompt is None or not request.prompt.strip():
        raise UsageError(f"{name} needs a prompt (--prompt)")
    known = list(options)
    unknown = sorted(set(request.options) - set(known))
    if unknown:
        raise UsageError(
            f"unknown {name} option(s) {', '.join(unknown)} (known: {', '.join(known)})"
        )
    return bin_path(pin, request.install_dir), request.prompt


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
