"""Finalizing an attempt directory: the I/O shell around the finalize stages.

Reads `raw/attempt.json`, the tape under `raw/tape/` and the native logs under
`raw/native/` (through the harness adapter's pure reader), builds the records, writes
raw response bodies under `raw/responses/` when raw/ is retained, and publishes the
formal files and the manifest. Running it again on the same raw/ gives byte-identical
formal files: that is what `roller finalize ATTEMPT_DIR` does.

It streams, so memory grows with the length of a capture by a small index only: each
call's packed tape places (~0.23 KB), its facts as a marshalled row and what pass one
keeps beside them (the spill's offsets and digest, the result ids: ~0.29 KB), a few
8-byte columns in the stages, and ~5 KB a participant (its pydantic records, identity
and attribution) — at `finalize_scale.py`'s 100k calls, a participant per 17.5 calls,
~0.8 KB a call in all, peak RSS 137 MB where main's was 332 MB (docs/benchmarks.md,
"Finalize at scale, round 5"). The tape is indexed, not read (`index_tape`); the
first pass decodes one exchange at a time and keeps its facts, the rest going to a
`Spill` on disk (`roller.finalize.first_pass`; a long capture's calls decoded in blocks
by worker processes too, started before the index and taken in order:
`roller.finalize.workers`); the stages between
decode and assemble (`capture_parts`, the same as `build_capture` runs) read only the
facts; the second pass assembles one record at a
time from the spill and the tape and the writer streams it into `calls.jsonl`, then the
relations, derived as they are written — for a capture spread over processes, by a child
forked to write them while the calls are written (`roller.capture.beside`; where it may
not fork, here after the calls). The records are the ones `build_capture` makes
from the same inputs, byte for byte (tests/finalize/test_streaming.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from roller.capture.body_refs import CaptureBodies, rewrite_tape
from roller.capture.files import sync_files, write_unsynced
from roller.capture.layout import RELATIONS, AttemptPaths
from roller.capture.models import AttemptInputs, FileEntry, Manifest, StorageLayout
from roller.capture.reader import read_json_model, read_manifest
from roller.capture.tape import TapeIndex, index_tape
from roller.capture.tape.format import BodyRef
from roller.capture.writer import publish_lines, settle_raw
from roller.errors import CaptureFormatError
from roller.finalize.assemble import CaptureParts, manifest, relation_lines
from roller.finalize.contexts import Contexts
from roller.finalize.decided import decided_json
from roller.finalize.decode import RequestContext, request_context
from roller.finalize.first_pass import FirstPass
from roller.finalize.kept_facts import KeptFacts
from roller.finalize.pipeline import capture_parts
from roller.finalize.progress import Reporter, Step, counted
from roller.finalize.spill import Spill
from roller.finalize.tool_ids import NativeToolIds
from roller.finalize.workers import awaited, first_passes, process_count, standby
from roller.harnesses import adapter_for
from roller.harnesses.native_capture import held_native


def finalize_attempt(
    paths: AttemptPaths, layout: StorageLayout | None = None, progress: Reporter | None = None
) -> Manifest:
    """Finalize and publish in `layout`; by default the layout the attempt is published
    in already (re-finalizing changes no byte), else the one raw/attempt.json names
    (`roller collect --storage-layout`), else compact/v2. `progress` is told where it is
    (`roller.finalize.progress`)."""
    report = progress or _quiet
    settle_raw(paths)  # a publication killed while it cleaned raw/
    if not paths.attempt_inputs.exists():
        raise CaptureFormatError(
            f"{paths.root} has no raw/attempt.json: its debug material was cleaned "
            "(retention) or it is not an attempt directory, so it cannot be re-finalized"
        )
    inputs = read_json_model(paths.attempt_inputs, AttemptInputs)
    layout = layout or _published_layout(paths) or inputs.storage_layout or "compact/v2"
    native = held_native(adapter_for(inputs.harness.name).read_native(paths.native))
    report(Step("index"))
    with (
        standby(paths.root, paths.tape) as spares,  # workers importing beside the index
        CaptureBodies(paths) as earlier,  # what a tape rewritten before references
        index_tape(paths.tape, resolve=earlier) as tape,
        Spill(paths.root) as spill,
        Contexts(paths, layout) as ctx,
    ):
        facts = KeptFacts()
        first = FirstPass(inputs.harness.name, inputs.capture_scope, NativeToolIds.of(native))
        processes = process_count(len(tape.exchanges))
        passes = first_passes(tape, first, paths.root, processes, spares, awaited=awaited())
        calls = len(tape.exchanges)
        for passed in passes if progress is None else counted(passes, "decode", calls, report):
            facts.add_values(passed.facts)
            spill.put_entry(
                passed.shell,
                passed.context_sha256,
                passed.has_body,
                passed.context_how,
                passed.context,
            )

        def requests(i: int) -> RequestContext:
            return request_context(tape.load(tape.exchanges[i]))

        parts = capture_parts(inputs, facts, tape.problems, native, requests)
        kept = _Kept()

        def manifest_for(files: Mapping[str, FileEntry]) -> Manifest:
            report(Step("publish"))
            if parts.verdict.retained:  # request bodies the capture holds leave the tape
                rewrite_tape(paths.tape, kept.refs, kept.inline)
            sync_files(kept.responses)  # response bodies reach the disk before the manifest
            return manifest(parts, files[RELATIONS].lines, layout)

        call_lines = _call_lines(paths, parts, tape, spill, ctx, kept)
        if progress is not None:
            call_lines = counted(call_lines, "write", calls, report)
        return publish_lines(
            paths,
            call_lines,
            relation_lines(parts),  # from the stages' facts alone: a child may write them
            manifest_for,
            ctx.written(),
            relations_beside=processes > 1,
        )


def _quiet(step: Step) -> None:
    """No reporter: nothing to tell."""


def _published_layout(paths: AttemptPaths) -> StorageLayout | None:
    try:
        return read_manifest(paths).storage_layout if paths.manifest.exists() else None
    except CaptureFormatError:
        return None  # a damaged manifest is replaced; its layout is not trusted


@dataclass
class _Kept:
    """What raw/ keeps, gathered while the records stream: the response body files
    written, and per exchange whether its request body leaves the tape (`refs`) or
    comes back into it (`inline`: referenced before, no longer held by the capture)."""

    responses: list[Path] = field(default_factory=list)
    refs: dict[str, BodyRef] = field(default_factory=dict)
    inline: dict[str, bytes] = field(default_factory=dict)


def _call_lines(
    paths: AttemptPaths,
    parts: CaptureParts,
    tape: TapeIndex,
    spill: Spill,
    contexts: Contexts,
    kept: _Kept,
) -> Iterator[bytes]:
    """Each call's record line, assembled from the spill and the tape, its context inline
    (compact/v2) or stored (compact/v3); with raw/ kept, each response body written
    under raw/responses/ on the way, and which request bodies the tape may reference."""
    retained = parts.verdict.retained
    for i, ref in enumerate(tape.exchanges):
        body = tape.request_body(ref)
        shell, context = spill.get(i, body)
        has_raw_body = spill.has_raw_body(i)
        yield contexts.line(decided_json(parts, i, shell, has_raw_body), body, context)
        if not retained:
            continue
        if contexts.gives_back(body, spill.context_is_body(i)):
            call_id = parts.ids.calls[i]
            sha = spill.context_sha256(i)
            kept.refs[ref.exchange_id] = BodyRef(call_id, i, sha, len(body))
        elif tape.referenced(ref):
            kept.inline[ref.exchange_id] = body
        if has_raw_body:
            target = paths.response_body(parts.ids.calls[i])
            write_unsynced(target, tape.load(ref).body)
            kept.responses.append(target)
    contexts.finish()
