"""Publishing a capture: formal files, integrity check, cleanup, manifest last.

Order (`docs/protocol.md`, "Integrity and publication"):
1. write `calls.jsonl` and `relations.jsonl` atomically, streamed (a record at a time,
   hashed as written: a capture of any size is never held in memory);
2. read them back and check they hash to exactly what was written (integrity);
3. clean `raw/` per retention — the records were already built knowing whether raw/
   survives, so cleanup never changes a status or leaves a dangling reference;
4. hash the formal files and write `manifest.json` last, atomically.
A crash before step 4 leaves an old or no manifest, which `roller validate` rejects.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from roller.capture.files import atomic_write, atomic_write_lines, describe_file, fsync_dir
from roller.capture.layout import CALLS, LAYOUT_FILES, RELATIONS, AttemptPaths
from roller.capture.models import CallRecord, FileEntry, Manifest, RelationRecord
from roller.errors import IntegrityError


def serialize(record: CallRecord | RelationRecord | Manifest) -> str:
    """The one canonical serialization of a record (field order as declared)."""
    return record.model_dump_json(by_alias=True)


def publish(
    paths: AttemptPaths,
    calls: Sequence[CallRecord],
    relations: Sequence[RelationRecord],
    manifest: Manifest,
) -> Manifest:
    """Write the formal files, clean raw/ unless `manifest.raw_retained`, write the manifest.

    `manifest.files` is ignored and recomputed from the bytes written.
    """
    return publish_lines(
        paths,
        (serialize(c).encode("utf-8") + b"\n" for c in calls),
        (serialize(r).encode("utf-8") + b"\n" for r in relations),
        lambda files: manifest,
    )


def publish_lines(
    paths: AttemptPaths,
    call_lines: Iterable[bytes],
    relation_lines: Iterable[bytes],
    manifest_for: Callable[[Mapping[str, FileEntry]], Manifest],
    written: Mapping[str, Path] | None = None,
) -> Manifest:
    """`publish` for records already serialized (each line LF-terminated), streamed.

    `written` names formal files the caller wrote beside them while the lines were
    produced (compact/v3's contexts.blobs, at a temporary path, fsynced here and moved in
    place). A formal file of another layout left by an earlier publication is removed.
    `manifest_for(files)` gives the manifest once the formal files are written (it may
    count from them: `files[RELATIONS].lines` is the number of relations); its `files`
    is replaced by what was written."""
    files = {
        CALLS: atomic_write_lines(paths.root / CALLS, call_lines),
        RELATIONS: atomic_write_lines(paths.root / RELATIONS, relation_lines),
    }
    for name, tmp in (written or {}).items():
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, paths.root / name)
        files[name] = describe_file(paths.root / name)
    for name in (n for n in LAYOUT_FILES["compact/v3"] if n not in files):
        (paths.root / name).unlink(missing_ok=True)
    fsync_dir(paths.root)
    for name, entry in files.items():
        if describe_file(paths.root / name) != entry:
            raise IntegrityError(f"{paths.root / name} does not hold what was just written")
    manifest = manifest_for(files)
    if not manifest.raw_retained and paths.raw.exists():
        shutil.rmtree(paths.raw)
    final = manifest.model_copy(update={"files": dict(files)})
    atomic_write(paths.manifest, (serialize(final) + "\n").encode("utf-8"))
    return final
