"""Finalize over a checked-in real run: a native log copy plus the proxy's gzipped tape.

A fixture directory (tests/data/harnesses/<harness>/<name>/) holds `native/`,
`attempt.json` and `tape/tape-*.rtape.gz`, as each harness's regenerate.py wrote them from
a real `roller collect` run. These helpers rebuild what finalize reads and run the pure
`build_capture` on it, so tests can check — and perturb — the real pair.
"""

from __future__ import annotations

import gzip
import shutil
from dataclasses import replace
from pathlib import Path

from roller.capture.models import AttemptInputs
from roller.capture.reader import read_json_model
from roller.capture.tape import TapeReadResult, read_tape
from roller.finalize.assemble import FinalizedCapture
from roller.finalize.pipeline import build_capture
from roller.harnesses import adapter_for

DATA = Path(__file__).resolve().parents[1] / "data" / "harnesses"


def fixture_dir(harness: str, name: str) -> Path:
    path = DATA / harness / name
    assert path.is_dir(), f"missing fixture {path} (run its regenerate.py)"
    return path


def unpacked_copy(src: Path, dst: Path) -> Path:
    """`src` copied to `dst`, every `*.gz` file stored gunzipped under its plain name.

    Fixtures keep big files (tape segments, OpenCode's SQLite store) gzipped; some
    harnesses' tapes are stored plain. Finalize must see them as the run wrote them.
    """
    dst.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir()):
        if entry.is_dir():
            unpacked_copy(entry, dst / entry.name)
        elif entry.name.endswith(".gz"):
            (dst / entry.name.removesuffix(".gz")).write_bytes(gzip.decompress(entry.read_bytes()))
        else:
            shutil.copyfile(entry, dst / entry.name)
    return dst


def native_copy(harness: str, name: str, dest: Path) -> Path:
    """A writable copy of a fixture's native dir (tests corrupt copies, never the data)."""
    return unpacked_copy(fixture_dir(harness, name) / "native", dest / "native")


def tape_of(harness: str, name: str, dest: Path) -> TapeReadResult:
    tape_dir = unpacked_copy(fixture_dir(harness, name) / "tape", dest / "tape")
    result = read_tape(tape_dir)
    assert not result.problems, result.problems
    return result


def inputs_of(harness: str, name: str) -> AttemptInputs:
    return read_json_model(fixture_dir(harness, name) / "attempt.json", AttemptInputs)


def finalize_fixture(
    harness: str,
    name: str,
    tmp: Path,
    native_dir: Path | None = None,
    tape: TapeReadResult | None = None,
) -> FinalizedCapture:
    """build_capture over the fixture (or a perturbed native dir / tape), as finalize runs it."""
    native_dir = native_dir or native_copy(harness, name, tmp)
    tape = tape or tape_of(harness, name, tmp)
    native = adapter_for(harness).read_native(native_dir)
    return build_capture(inputs_of(harness, name), tape, native)


def reordered(tape: TapeReadResult, order: list[int]) -> TapeReadResult:
    """The same exchanges in another arrival order (the order finalize numbers calls by)."""
    return replace(tape, exchanges=tuple(tape.exchanges[i] for i in order))
