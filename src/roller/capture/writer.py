"""Publishing a capture: formal files, integrity check, cleanup, manifest last.

Order (`docs/protocol.md`, "Integrity and publication"):
1. write `calls.jsonl` and `relations.jsonl` atomically, streamed (a record at a time,
   hashed as written: a capture of any size is never held in memory); a long capture's
   relations by a child process while this one writes its calls (`roller.capture.beside`);
2. check that they hold exactly what was written (integrity): each batch is read back
   from the file once written and compared, and what is hashed for the manifest is what
   was read back; the file's size is checked after its `fsync` (`files.write_checked`);
3. clean `raw/` per retention — the records were already built knowing whether raw/
   survives, so cleanup never changes a status or leaves a dangling reference: raw/ is
   renamed `raw.discarded/` (one atomic step), and removed only after step 4;
4. hash the formal files and write `manifest.json` last, atomically.
A crash before step 4 leaves an old or no manifest, which `roller validate` rejects, and
raw/ whole (as `raw/` or `raw.discarded/`): `settle_raw` puts it back, so the attempt
can be finalized again from it; a crash after step 4 leaves a `raw.discarded/` that
`settle_raw` removes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import orjson

from roller.capture import manifest_json
from roller.capture.beside import WrittenBeside
from roller.capture.files import (
    atomic_write,
    atomic_write_lines,
    describe_file,
    fsync_dir,
)
from roller.capture.layout import CALLS, LAYOUT_FILES, RELATIONS, AttemptPaths
from roller.capture.models import CallRecord, FileEntry, Manifest, RelationRecord
from roller.capture.models.vocabulary import Record


def serialize(record: Record) -> str:
    """The one canonical serialization of a record or a part of one (field order as
    declared; a part's bytes are the ones its record holds)."""
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
    *,
    relations_beside: bool = False,
) -> Manifest:
    """`publish` for records already serialized (each line LF-terminated), streamed.

    With `relations_beside`, relations.jsonl is written by a child process while this one
    writes calls.jsonl (`roller.capture.beside`: where it can fork safely; else, or when
    the child fails, here after the calls). `relation_lines` must then be made from
    memory alone.

    `written` names formal files the caller wrote beside them while the lines were
    produced (compact/v3's contexts.blobs, at a temporary path, fsynced here and moved in
    place). A formal file of another layout left by an earlier publication is removed.
    `manifest_for(files)` gives the manifest once the formal files are written (it may
    count from them: `files[RELATIONS].lines` is the number of relations); its `files`
    is replaced by what was written."""
    # Each is read back as it is written (step 2: `write_checked`).
    beside = None
    if relations_beside:
        beside = WrittenBeside.start(paths.root / RELATIONS, relation_lines)
    try:
        files = {CALLS: atomic_write_lines(paths.root / CALLS, call_lines)}
        relations = None if beside is None else beside.entry()
    finally:
        if beside is not None:
            beside.cancel()  # (nothing left to end once waited for)
    if relations is None:  # no child wrote it: written here, failing here if it fails
        relations = atomic_write_lines(paths.root / RELATIONS, relation_lines)
    files[RELATIONS] = relations
    for name, tmp in (written or {}).items():
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, paths.root / name)
        files[name] = describe_file(paths.root / name)
    for name in (n for n in LAYOUT_FILES["compact/v3"] if n not in files):
        (paths.root / name).unlink(missing_ok=True)
    fsync_dir(paths.root)
    manifest = manifest_for(files)
    discard = not manifest.raw_retained and paths.raw.exists()
    if discard:
        os.replace(paths.raw, paths.raw_discarded)
        fsync_dir(paths.root)
    final = manifest.model_copy(update={"files": dict(files)})
    atomic_write(paths.manifest, manifest_json.chunks(final))
    if discard:
        shutil.rmtree(paths.raw_discarded)
    return final


def settle_raw(paths: AttemptPaths) -> None:
    """Finish what a publication killed mid-cleanup left. The discarded raw/ is removed
    only when the manifest on disk says raw/ was not retained (the publication that
    discarded it got as far as its manifest); otherwise — no manifest, an unreadable
    one, or an earlier one that still retains raw/ — it is put back, so the attempt can
    be finalized again from it."""
    if not paths.raw_discarded.exists():
        return
    if paths.raw.exists() or _published_without_raw(paths):
        shutil.rmtree(paths.raw_discarded)
    else:
        os.replace(paths.raw_discarded, paths.raw)
        fsync_dir(paths.root)


def _published_without_raw(paths: AttemptPaths) -> bool:
    try:
        return orjson.loads(paths.manifest.read_bytes()).get("raw_retained") is False
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return False
