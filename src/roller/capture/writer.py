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

import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence

from roller.capture.files import atomic_write, atomic_write_lines, describe_file
from roller.capture.layout import CALLS, RELATIONS, AttemptPaths
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
) -> Manifest:
    """`publish` for records already serialized (each line LF-terminated), streamed.

    `manifest_for(files)` gives the manifest once the formal files are written (it may
    count from them: `files[RELATIONS].lines` is the number of relations); its `files`
    is replaced by what was written."""
    files = {
        CALLS: atomic_write_lines(paths.root / CALLS, call_lines),
        RELATIONS: atomic_write_lines(paths.root / RELATIONS, relation_lines),
    }
    for name, written in files.items():
        if describe_file(paths.root / name) != written:
            raise IntegrityError(f"{paths.root / name} does not hold what was just written")
    manifest = manifest_for(files)
    if not manifest.raw_retained and paths.raw.exists():
        shutil.rmtree(paths.raw)
    final = manifest.model_copy(update={"files": dict(files)})
    atomic_write(paths.manifest, (serialize(final) + "\n").encode("utf-8"))
    return final
