"""Finalizing an attempt directory: the I/O shell around the pure `build_capture`.

Reads `raw/attempt.json`, the tape under `raw/tape/` and the native logs under
`raw/native/` (through the harness adapter's pure reader), builds the records, writes
raw response bodies under `raw/responses/` when raw/ is retained, and publishes the
formal files and the manifest. Running it again on the same raw/ gives byte-identical
formal files: that is what `roller finalize ATTEMPT_DIR` does.
"""

from __future__ import annotations

from roller.capture.files import atomic_write
from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs, Manifest
from roller.capture.reader import read_json_model
from roller.capture.tape import read_tape
from roller.capture.writer import publish
from roller.errors import CaptureFormatError
from roller.finalize.pipeline import build_capture
from roller.harnesses import adapter_for


def finalize_attempt(paths: AttemptPaths) -> Manifest:
    if not paths.attempt_inputs.exists():
        raise CaptureFormatError(
            f"{paths.root} has no raw/attempt.json: its debug material was cleaned "
            "(retention) or it is not an attempt directory, so it cannot be re-finalized"
        )
    inputs = read_json_model(paths.attempt_inputs, AttemptInputs)
    adapter = adapter_for(inputs.harness.name)
    tape = read_tape(paths.tape)
    native = adapter.read_native(paths.native)
    finalized = build_capture(inputs, tape, native)
    if finalized.manifest.raw_retained:
        for call_id, body in finalized.response_bodies.items():
            atomic_write(paths.response_body(call_id), body)
    return publish(paths, finalized.calls, finalized.relations, finalized.manifest)
