"""`install_once`: concurrent samples on one machine (a Ray node) wait for one install of
a pinned harness under the cache's file lock, then all use it. The installer is replaced
by one that takes a while and records how many run at once; the lock and the cache
lookups are the real ones, in a throwaway ROLLER_CACHE."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from roller.harnesses import adapter_for
from roller.harnesses import install as install_module
from roller.harnesses.base import HarnessAdapter
from roller.harnesses.install import Installed, bin_path, find_installed, install_dir, install_once


def test_concurrent_callers_wait_for_one_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROLLER_CACHE", str(tmp_path / "cache"))
    adapter = adapter_for("claude-code")
    version = adapter.pin.version
    state = {"running": 0, "most": 0, "installs": 0}
    guard = threading.Lock()

    def slow_install(
        a: HarnessAdapter, v: str | None = None, log: Callable[[str], None] = print
    ) -> Installed:
        found = find_installed(a, v)  # what the real install does first
        if found is not None:
            return found
        with guard:
            state["running"] += 1
            state["installs"] += 1
            state["most"] = max(state["most"], state["running"])
        time.sleep(0.5)
        assert v is not None
        root = install_dir(a.name, v)
        binary = bin_path(a.pin, root)
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")
        (root / install_module.MARKER).write_text(json.dumps({"version": v}))
        with guard:
            state["running"] -= 1
        return Installed(a.name, v, root, binary)

    monkeypatch.setattr(install_module, "install", slow_install)
    results: list[Installed] = []
    threads = [
        threading.Thread(target=lambda: results.append(install_once(adapter, version)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["installs"] == 1 and state["most"] == 1
    assert len(results) == 4 and len({r.root for r in results}) == 1
    assert find_installed(adapter, version) is not None
