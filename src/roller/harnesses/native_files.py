"""Copying native logs out of a scratch HOME into `raw/native/`: trees, files, SQLite.

Used by the adapters' `collect_native`, after the harness has exited. Rules kept:
- a source that is not there copies nothing: the reader reports what is missing;
- symlinks are never followed nor kept, so neither the copy nor a later read of it
  reaches outside the scratch HOME;
- a SQLite database in WAL mode (its rows partly still in `-wal`) is never opened
  where the harness left it: the database, `-wal` and `-shm` are copied as they are
  into a temporary directory, and that copy is written with SQLite's backup API into
  one self-contained file in journal mode DELETE. It is built beside its destination
  and renamed into place, so a failed copy leaves nothing that could be read as a
  (possibly empty) database.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

SQLITE_PARTS = ("", "-wal", "-shm")


def _links(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if (Path(directory) / n).is_symlink()]


def copy_tree(source: Path, dest: Path) -> None:
    """Copy the directory `source` to `dest` (merged into what is there), links left out."""
    if source.is_dir():
        shutil.copytree(source, dest, ignore=_links, dirs_exist_ok=True)


def copy_file(source: Path, dest: Path) -> None:
    """Copy the regular file `source` to `dest`, creating `dest`'s directory."""
    if source.is_file() and not source.is_symlink():
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)


def copy_sqlite_parts(db: Path, dest: Path) -> None:
    """Copy `db` and its `-wal`/`-shm` as they are, named after `dest`."""
    for suffix in SQLITE_PARTS:
        copy_file(db.with_name(db.name + suffix), dest.with_name(dest.name + suffix))


def snapshot_sqlite(db: Path, dest: Path) -> None:
    """One consistent, self-contained copy of the WAL-mode database `db` at `dest`.

    Raises sqlite3.Error when SQLite cannot read the copy; `dest` is then not written.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="roller-sqlite-") as tmp:
        copy = Path(tmp) / db.name
        copy_sqlite_parts(db, copy)
        try:
            with closing(sqlite3.connect(copy)) as src, closing(sqlite3.connect(partial)) as out:
                src.backup(out)
                out.execute("PRAGMA journal_mode=DELETE")
            partial.replace(dest)
        finally:
            partial.unlink(missing_ok=True)


def consolidate_sqlite(db: Path, dest: Path) -> None:
    """`db` (with its -wal and -shm) as one self-contained file at `dest`.

    A missing database writes nothing, and one SQLite cannot read is copied as the raw
    files: the reader reports both (failures are data).
    """
    if not db.is_file():
        return
    try:
        snapshot_sqlite(db, dest)
    except sqlite3.Error:
        # Kept as they were, so the reader reports a store that is not a consolidated copy.
        copy_sqlite_parts(db, dest)
