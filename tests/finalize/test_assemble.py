"""The assemble stage: records and manifest from the stages' parts, nothing decided here.

Over a real Claude Code run (native evidence, relations, raw bodies): the same parts
with raw/ kept or cleaned differ only where retention shows.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.harnesses.fixture_capture import inputs_of, native_copy, tape_of

from roller.finalize.assemble import CaptureParts, assemble
from roller.finalize.decode import DecodedCall
from roller.finalize.pipeline import parts_in_memory
from roller.finalize.status import Verdict
from roller.harnesses import adapter_for


def _parts(tmp_path: Path) -> tuple[CaptureParts, list[DecodedCall]]:
    native = adapter_for("claude-code").read_native(
        native_copy("claude-code", "parallel", tmp_path)
    )
    tape = tape_of("claude-code", "parallel", tmp_path)
    parts, decoded = parts_in_memory(inputs_of("claude-code", "parallel"), tape, native)
    assert parts.verdict == Verdict(complete=True, retained=True)  # the run's policy is `full`
    return parts, decoded


def test_kept_raw_names_every_body_and_native_source(tmp_path: Path) -> None:
    parts, decoded = _parts(tmp_path)
    built = assemble(parts, decoded)
    assert [c.call_id for c in built.calls] == list(parts.ids.calls)
    assert sorted(built.response_bodies) == sorted(parts.ids.calls)
    assert all(c.response.raw_path == f"raw/responses/{c.call_id}.body" for c in built.calls)
    evidence = [e for r in built.relations for e in r.evidence] + [
        e for p in built.manifest.participants for e in p.evidence
    ]
    assert evidence and all(e.retained for e in evidence)
    assert built.manifest.raw_retained and built.manifest.capture_status == "complete"


def test_cleaned_raw_says_so_in_every_record(tmp_path: Path) -> None:
    parts, decoded = _parts(tmp_path)
    kept = assemble(parts, decoded)
    cleaned = assemble(replace(parts, verdict=Verdict(complete=True, retained=False)), decoded)
    assert cleaned.response_bodies == {} and not cleaned.manifest.raw_retained
    assert all(c.response.raw_path is None for c in cleaned.calls)
    assert [c.response.raw_sha256 for c in cleaned.calls] == [
        c.response.raw_sha256 for c in kept.calls
    ]
    for record in [*cleaned.relations, *cleaned.manifest.participants]:
        for e in record.evidence:
            assert e.retained == e.source.startswith("call:")  # calls stay; native logs go
    # nothing else moves
    assert [r.model_dump(exclude={"evidence"}) for r in cleaned.relations] == [
        r.model_dump(exclude={"evidence"}) for r in kept.relations
    ]


def test_the_manifest_carries_the_parts_as_given(tmp_path: Path) -> None:
    parts, decoded = _parts(tmp_path)
    manifest = assemble(
        replace(parts, verdict=Verdict(complete=False, retained=True)), decoded
    ).manifest
    assert manifest.capture_status == "partial"  # assemble does not re-decide
    assert manifest.capture_errors == parts.errors and manifest.coverage == parts.coverage
    assert manifest.counts.calls == len(parts.calls)
    assert manifest.counts.relations == len(parts.related.relations)
    assert [p.participant_id for p in manifest.participants] == list(
        parts.ids.participants.values()
    )
