"""`roller collect --storage-layout compact/v3` through the CLI: the generic golden agent
(tests/golden/generic) collected with each layout gives the same capture as read, the
v3 one with contexts.blobs and raw/attempt.json naming its layout; `roller finalize`
re-publishes it in that layout unless told otherwise, and `roller validate` passes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.collect.test_golden_generic import GOLDEN
from tests.support.captures import only_attempt, roller, summarize


def _collect(run_dir: Path, *layout: str) -> None:
    proc = roller(
        "collect", "--harness", "generic", "--api-base", f"mock:{GOLDEN / 'scenario.toml'}",
        "--capture-calls", "--capture-debug", "full", *layout, "--run-dir", str(run_dir),
        "--", sys.executable, str(GOLDEN / "agent.py"),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # partial, as the golden run is (impostor call)


def test_collect_and_refinalize_in_compact_v3(tmp_path: Path) -> None:
    _collect(tmp_path / "v2")
    _collect(tmp_path / "v3", "--storage-layout", "compact/v3")
    two, three = only_attempt(tmp_path / "v2"), only_attempt(tmp_path / "v3")
    assert three.manifest.storage_layout == "compact/v3" and three.paths.contexts.is_file()
    assert json.loads(three.paths.attempt_inputs.read_text())["storage_layout"] == "compact/v3"
    assert "storage_layout" not in json.loads(two.paths.attempt_inputs.read_text())
    assert summarize(three) == summarize(two)
    assert [c.context for c in three.calls] == [c.context for c in two.calls]
    before = three.paths.calls.read_bytes()
    assert roller("finalize", str(three.paths.root)).returncode == 0
    assert three.paths.calls.read_bytes() == before and three.paths.contexts.is_file()
    assert roller("validate", str(tmp_path / "v3")).returncode == 0
    assert (
        roller("finalize", "--storage-layout", "compact/v2", str(three.paths.root)).returncode == 0
    )
    assert not three.paths.contexts.exists()
    assert roller("validate", str(tmp_path / "v3")).returncode == 0
