"""Access to the real Codex runs under tests/data/harnesses/codex/ (see regenerate.py there)
and small helpers to mutate a copy of them for the hostile-input tests."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).parents[1] / "data" / "harnesses" / "codex"

Record = dict[str, Any]


def native(name: str) -> Path:
    return DATA / name / "native"


def copy(name: str, dest: Path) -> Path:
    """A private copy of a scenario's native dir (mutations never touch the data)."""
    out = dest / name
    shutil.copytree(native(name), out)
    return out


def rollouts(native_dir: Path) -> dict[str, Path]:
    """thread id -> rollout path (the id is the session_meta's, read from line 0)."""
    out = {}
    for path in sorted((native_dir / "sessions").rglob("*.jsonl")):
        first = json.loads(path.read_text().split("\n", 1)[0])
        out[first["payload"]["id"]] = path
    return out


def records(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def rewrite(path: Path, edit: Callable[[list[Record]], list[Record]]) -> None:
    lines = edit(records(path))
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines))


def items(path: Path, kind: str, item: str | None = None) -> list[Record]:
    """The records of one `type` (and payload `type`), in file order."""
    return [
        r
        for r in records(path)
        if r["type"] == kind and (item is None or r["payload"].get("type") == item)
    ]


def root_and_children(native_dir: Path) -> tuple[str, list[str]]:
    root, children = None, []
    for tid, path in rollouts(native_dir).items():
        meta = records(path)[0]["payload"]
        if meta.get("parent_thread_id"):
            children.append(tid)
        else:
            root = tid
    assert root is not None
    return root, children
