"""Finalizing an attempt directory: the I/O shell around the finalize stages.

Reads `raw/attempt.json`, the tape under `raw/tape/` and the native logs under
`raw/native/` (through the harness adapter's pure reader), builds the records, writes
raw response bodies under `raw/responses/` when raw/ is retained, and publishes the
formal files and the manifest. Running it again on the same raw/ gives byte-identical
formal files: that is what `roller finalize ATTEMPT_DIR` does.

It streams, so memory does not grow with the length of a capture beyond each call's
`CallFacts` (a few hundred bytes): the tape is indexed, not read (`index_tape`); the
first pass decodes one exchange at a time and keeps its facts, the rest going to a
`Spill` on disk; the stages between decode and assemble (`capture_parts`, the same as
`build_capture` runs) read only the facts; the second pass assembles one record at a
time from the spill and the tape and the writer streams it into `calls.jsonl`, then the
relations, derived as they are written. The records are the ones `build_capture` makes
from the same inputs, byte for byte (tests/finalize/test_streaming.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from roller.capture.files import sync_files, write_unsynced
from roller.capture.layout import RELATIONS, AttemptPaths
from roller.capture.models import AttemptInputs, FileEntry, Manifest, StorageLayout
from roller.capture.reader import read_json_model
from roller.capture.tape import TapeIndex, index_tape
from roller.capture.writer import publish_lines, serialize
from roller.errors import CaptureFormatError
from roller.finalize.assemble import CaptureParts, call_shell, decide, manifest, relation_records
from roller.finalize.contexts import Contexts
from roller.finalize.decode import decode_exchange, request_texts
from roller.finalize.ids import call_id
from roller.finalize.pipeline import capture_parts
from roller.finalize.spill import Spill
from roller.finalize.tool_ids import tool_refs_of
from roller.harnesses import adapter_for


def finalize_attempt(paths: AttemptPaths, layout: StorageLayout | None = None) -> Manifest:
    """Finalize and publish in `layout` (default: the one raw/attempt.json names, else
    compact/v2)."""
    if not paths.attempt_inputs.exists():
        raise CaptureFormatError(
            f"{paths.root} has no raw/attempt.json: its debug material was cleaned "
            "(retention) or it is not an attempt directory, so it cannot be re-finalized"
        )
    inputs = read_json_model(paths.attempt_inputs, AttemptInputs)
    layout = layout or inputs.storage_layout or "compact/v2"
    native = adapter_for(inputs.harness.name).read_native(paths.native)
    with index_tape(paths.tape) as tape, Spill(paths.root) as spill, Contexts(paths, layout) as ctx:
        facts = []
        for n, ref in enumerate(tape.exchanges):
            call = decode_exchange(n, tape.load(ref), inputs.harness.name)
            facts.append(call.facts)
            (tool_ids,), _ = tool_refs_of(facts[-1:], native)
            shell = call_shell(call, call_id(inputs.capture_scope, n), tool_ids)
            spill.put(shell, call.exchange.request_body)

        def texts(i: int) -> tuple[str, ...]:
            return request_texts(tape.load(tape.exchanges[i]))

        parts = capture_parts(inputs, facts, tape.problems, native, texts)
        bodies: list[Path] = []

        def manifest_for(files: Mapping[str, FileEntry]) -> Manifest:
            sync_files(bodies)  # the response bodies reach the disk before the manifest
            return manifest(parts, files[RELATIONS].lines, layout)

        relation_lines = (serialize(r).encode() + b"\n" for r in relation_records(parts))
        call_lines = _call_lines(paths, parts, tape, spill, ctx, bodies)
        return publish_lines(paths, call_lines, relation_lines, manifest_for, ctx.written())


def _call_lines(
    paths: AttemptPaths,
    parts: CaptureParts,
    tape: TapeIndex,
    spill: Spill,
    contexts: Contexts,
    bodies: list[Path],
) -> Iterator[bytes]:
    """Each call's record line, assembled from the spill and the tape, its context inline
    (compact/v2) or stored (compact/v3); with raw/ kept, each response body written
    under raw/responses/ on the way (names into `bodies`)."""
    retained = parts.verdict.retained
    for i, ref in enumerate(tape.exchanges):
        body = tape.request_body(ref)
        shell, context = spill.get(i, body)
        yield contexts.line(decide(parts, i, shell), body, context)
        if retained and shell.response.raw_sha256 is not None:
            target = paths.response_body(parts.ids.calls[i])
            write_unsynced(target, tape.load(ref).body)
            bodies.append(target)
    contexts.finish()
