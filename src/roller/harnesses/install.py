"""Installing pinned harness binaries into roller's cache.

Layout: `$ROLLER_CACHE/harnesses/<name>-<version>/` (default `~/.cache/roller`), an npm
prefix (`node_modules/.bin/<bin>`) or a Python venv (`venv/bin/<bin>`), plus
`roller-install.json` written last: a directory without it is an unfinished install and
is redone. Rules kept:
- always the exact version (`pkg@X.Y.Z`, `pkg==X.Y.Z`): a bare `npm install` on Node 20
  silently resolves an old Claude Code;
- after installing, the version actually installed is read back from the package's own
  metadata and must equal the pin;
- idempotent: an intact install is reused (CI keeps the cache between runs);
- a pin's `runtime` (a Node the machine lacks, from npm) is installed into the same
  prefix first, at its exact version, and the package is then installed with the
  runtime's bin directory first on PATH, so npm and every install script run under it;
  the marker records it and an install whose runtime differs from the pin is redone;
- `install_once` serializes installs of one version on one machine (a file lock), so
  concurrent samples on a Ray node wait for one install.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from roller.errors import HarnessError
from roller.harnesses.base import HarnessAdapter, Pin, Runtime

MARKER = "roller-install.json"


def cache_root() -> Path:
    env = os.environ.get("ROLLER_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "roller"


@dataclass(frozen=True)
class Installed:
    name: str
    version: str
    root: Path
    bin: Path


def install_dir(name: str, version: str) -> Path:
    return cache_root() / "harnesses" / f"{name}-{version}"


def bin_path(pin: Pin, root: Path) -> Path:
    """Where an install under `root` keeps the pinned binary."""
    if pin.registry == "npm":
        return root / "node_modules" / ".bin" / pin.bin
    return root / "venv" / "bin" / pin.bin


def find_installed(adapter: HarnessAdapter, version: str | None = None) -> Installed | None:
    pin = adapter.pin
    if pin.registry == "none":
        return None
    version = version or pin.version
    root = install_dir(adapter.name, version)
    marker = root / MARKER
    if not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    binary = bin_path(pin, root)
    if data.get("version") != version or not binary.exists():
        return None
    if pin.runtime is not None and data.get("runtime") != _runtime_spec(pin.runtime):
        return None
    return Installed(adapter.name, version, root, binary)


def _runtime_spec(runtime: Runtime) -> str:
    return f"{runtime.package}@{runtime.version}"


def _run(
    argv: list[str], cwd: Path, log: Callable[[str], None], env: dict[str, str] | None = None
) -> None:
    log("$ " + " ".join(argv))
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    except OSError as exc:
        raise HarnessError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
    assert proc.stdout is not None
    tail: list[str] = []
    for raw in proc.stdout:
        line = raw.rstrip()
        if line:
            tail = [*tail[-19:], line]
            log(line)
    if proc.wait() != 0:
        raise HarnessError(
            f"{' '.join(argv[:3])} … failed (exit {proc.returncode}):\n" + "\n".join(tail)
        )


def _npm_install(
    root: Path, specs: list[str], log: Callable[[str], None], env: dict[str, str] | None = None
) -> None:
    argv = ["npm", "install", "--prefix", str(root), "--no-audit", "--no-fund"]
    _run([*argv, "--loglevel=error", "--save-exact", *specs], root, log, env)


def _install_npm(pin: Pin, version: str, root: Path, log: Callable[[str], None]) -> str | None:
    """npm-install the pin (its runtime first) into `root`; the version installed."""
    if shutil.which("npm") is None:
        raise HarnessError("npm is not on PATH; install Node.js (>= 20) and npm first")
    (root / "package.json").write_text('{"name": "roller-harness", "private": true}\n')
    env: dict[str, str] | None = None
    if pin.runtime is not None:
        runtime = pin.runtime
        _npm_install(root, [_runtime_spec(runtime)], log)
        got = _installed_npm_version(root, runtime.package)
        if got != runtime.version:
            raise HarnessError(
                f"{runtime.package}: asked for {runtime.version}, the registry installed "
                f"{got or 'nothing'}"
            )
        # npm is a node script (`#!/usr/bin/env node`): with the runtime first on PATH,
        # npm and the package's install scripts run under the runtime, not the machine's.
        bin_dir = str(root / "node_modules" / ".bin")
        env = {**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")])}
    _npm_install(root, [f"{pin.package}@{version}", *pin.extra_packages], log, env)
    return _installed_npm_version(root, pin.package)


def _installed_npm_version(root: Path, package: str) -> str | None:
    meta = root / "node_modules" / package / "package.json"
    try:
        return str(json.loads(meta.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _installed_pypi_version(root: Path, package: str) -> str | None:
    py = root / "venv" / "bin" / "python"
    try:
        out = subprocess.run(
            [str(py), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def install(
    adapter: HarnessAdapter,
    version: str | None = None,
    log: Callable[[str], None] = lambda _line: None,
) -> Installed:
    """Install `adapter`'s pinned package (or `version`) unless an intact install exists."""
    pin = adapter.pin
    if pin.registry == "none":
        raise HarnessError(f"harness {adapter.name} has nothing to install")
    version = version or pin.version
    existing = find_installed(adapter, version)
    if existing is not None:
        log(f"{adapter.name} {version} already installed at {existing.root}")
        return existing
    # Installed in place (venv scripts and npm links record their location); the
    # marker written last tells a finished install from an interrupted one.
    root = install_dir(adapter.name, version)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if pin.registry == "npm":
        got = _install_npm(pin, version, root, log)
    else:
        _run([sys.executable, "-m", "venv", str(root / "venv")], root, log)
        specs = [f"{pin.package}=={version}", *pin.extra_packages]
        _run(
            [
                str(root / "venv" / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *specs,
            ],
            root,
            log,
        )
        got = _installed_pypi_version(root, pin.package)
    if got != version:
        raise HarnessError(
            f"{pin.package}: asked for {version}, the registry installed {got or 'nothing'}"
        )
    binary = bin_path(pin, root)
    if not binary.exists():
        raise HarnessError(f"{pin.package} {version} installed but {binary} is missing")
    marker = {
        "name": adapter.name,
        "package": pin.package,
        "version": version,
        "bin": str(binary.relative_to(root)),
        "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if pin.runtime is not None:
        marker["runtime"] = _runtime_spec(pin.runtime)
    (root / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
    return Installed(adapter.name, version, root, binary)


def install_once(
    adapter: HarnessAdapter,
    version: str | None = None,
    log: Callable[[str], None] = lambda _line: None,
) -> Installed:
    """`install`, under an exclusive file lock in the cache: concurrent callers on one
    machine (several Ray samples starting on one node) wait for one install, then all
    find it intact, instead of racing on the same directory."""
    version = version or adapter.pin.version
    found = find_installed(adapter, version)
    if found is not None:
        return found
    lock = cache_root() / "harnesses" / f".{adapter.name}-{version}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        return install(adapter, version, log)
