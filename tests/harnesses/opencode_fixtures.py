"""Access to the real OpenCode 1.18.33 fixtures under tests/data/harnesses/opencode/.

Each fixture is one real run of the pinned binary (see regenerate.py there): the
consolidated store `native/opencode.db.gz` and, for `roller collect` runs, the attempt
inputs and the proxy's tape. Everything is unpacked into a test's own directory, so a
test may change its copy (`sql`) without touching the fixture.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from roller.capture.layout import AttemptPaths

DATA = Path(__file__).resolve().parents[1] / "data" / "harnesses" / "opencode"


def native_copy(name: str, dest: Path) -> Path:
    """A fresh `native/` directory holding the fixture's store; returns the directory."""
    out = dest / "native"
    out.mkdir(parents=True)
    packed = DATA / name / "native" / "opencode.db.gz"
    (out / "opencode.db").write_bytes(gzip.decompress(packed.read_bytes()))
    return out


def attempt_dir(name: str, dest: Path) -> AttemptPaths:
    """A fresh attempt directory whose raw/ holds the fixture's real tape and store."""
    paths = AttemptPaths(dest / "attempt-0001")
    paths.tape.mkdir(parents=True)
    shutil.copyfile(DATA / name / "attempt.json", paths.attempt_inputs)
    for seg in sorted((DATA / name / "tape").glob("*.gz")):
        (paths.tape / seg.name.removesuffix(".gz")).write_bytes(gzip.decompress(seg.read_bytes()))
    native_copy(name, paths.raw)
    return paths


def sql(db: Path, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement on a (copied) store and return its rows."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(statement, params).fetchall()
        conn.commit()
    return rows


def data_of(db: Path, table: str, row_id: str) -> dict[str, Any]:
    ((raw,),) = sql(db, f"SELECT data FROM {table} WHERE id = ?", row_id)
    value = json.loads(raw)
    assert isinstance(value, dict)
    return value


def set_data(db: Path, table: str, row_id: str, value: dict[str, Any]) -> None:
    sql(db, f"UPDATE {table} SET data = ? WHERE id = ?", json.dumps(value), row_id)
