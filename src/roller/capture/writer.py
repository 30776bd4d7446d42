"""Publishing a capture: formal files, integrity check, cleanup, manifest last.

Order (`docs/protocol.md`, "Integrity and publication"):
1. write `calls.jsonl` and `relations.jsonl` atomically;
2. read them back and check they hold exactly the records given (integrity);
3. clean `raw/` per retention — the records were already built knowing whether raw/
   survives, so cleanup never changes a status or leaves a dangling reference;
4. hash the formal files and write `manifest.json` last, atomically.
A crash before step 4 leaves an old or no manifest, which `roller validate` rejects.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from roller.capture.files import atomic_write, describe, jsonl_bytes
from roller.capture.layout import CALLS, RELATIONS, AttemptPaths
from roller.capture.models import CallRecord, Manifest, RelationRecord
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
    payloads = {
        CALLS: jsonl_bytes(serialize(c) for c in calls),
        RELATIONS: jsonl_bytes(serialize(r) for r in relations),
    }
    for name, data in payloads.items():
        atomic_write(paths.root / name, data)
    for name, data in payloads.items():
        on_disk = (paths.root / name).read_bytes()
        if on_disk != data:
            raise IntegrityError(f"{paths.root / name} does not hold what was just written")
    if not manifest.raw_retained and paths.raw.exists():
        shutil.rmtree(paths.raw)
    final = manifest.model_copy(
        update={"files": {name: describe(data) for name, data in payloads.items()}}
    )
    atomic_write(paths.manifest, (serialize(final) + "\n").encode("utf-8"))
    return final
