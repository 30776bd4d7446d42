"""Publication cleans raw/ so that a kill at any moment loses nothing.

raw/ is renamed `raw.discarded/` before the manifest is written and removed after it
(`roller.capture.writer`). A kill between the two used to leave an attempt with no
manifest and raw/ half deleted — unrecoverable (seen in the collection e2e test: kill -9
while a sample published, then `roller collect --resume` failed on the missing tape).
Here the kill is simulated at each step, on a real Claude Code fixture whose capture is
complete (raw/ not retained under the default retention, `on-error`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import roller.capture.writer as writer
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.collect.verdicts import judge_attempt
from roller.finalize.attempt import finalize_attempt
from tests.harnesses.fixture_capture import fixture_dir, unpacked_copy

FIXTURE = ("claude-code", "parallel")


class Killed(Exception):
    """Stands for roller dying at that line."""


def _attempt(tmp: Path, name: str = "attempt-0001") -> AttemptPaths:
    paths = AttemptPaths(tmp / name)
    src = fixture_dir(*FIXTURE)
    unpacked_copy(src / "tape", paths.tape)
    unpacked_copy(src / "native", paths.native)
    # the fixture was collected with raw/ kept; the default retention cleans it
    inputs = (src / "attempt.json").read_bytes()
    paths.attempt_inputs.write_bytes(inputs.replace(b'"full"', b'"on-error"'))
    return paths


def _formal(paths: AttemptPaths) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (paths.calls, paths.relations, paths.manifest)}


@pytest.fixture
def clean(tmp_path: Path) -> dict[str, bytes]:
    """The formal files of an uninterrupted publication, which cleans raw/."""
    paths = _attempt(tmp_path / "clean")
    assert finalize_attempt(paths).raw_retained is False
    assert not paths.raw.exists() and not paths.raw_discarded.exists()
    return _formal(paths)


def test_killed_before_the_manifest_the_attempt_is_finalized_again_whole(
    tmp_path: Path, clean: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _attempt(tmp_path)

    def die(path: Path, data: bytes) -> None:
        raise Killed(path)

    with monkeypatch.context() as m:
        m.setattr(writer, "atomic_write", die)
        with pytest.raises(Killed):
            finalize_attempt(paths)
    assert not paths.manifest.exists() and not paths.raw.exists()
    assert (paths.raw_discarded / "tape").is_dir()  # nothing lost: raw/ is set aside whole

    verdict = judge_attempt(paths)  # what `roller collect --resume` does
    assert verdict.recovered and verdict.outcome == "succeeded", verdict
    assert _formal(paths) == clean
    assert not paths.raw.exists() and not paths.raw_discarded.exists()
    assert validate_attempt(paths).ok


def test_killed_after_the_manifest_the_discarded_copy_is_removed(
    tmp_path: Path, clean: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _attempt(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(writer.shutil, "rmtree", lambda path: (_ for _ in ()).throw(Killed(path)))
        with pytest.raises(Killed):
            finalize_attempt(paths)
    assert paths.manifest.exists() and paths.raw_discarded.is_dir()

    verdict = judge_attempt(paths)
    assert not verdict.recovered and verdict.outcome == "succeeded", verdict
    assert not paths.raw_discarded.exists()
    assert _formal(paths) == clean


def test_an_earlier_manifest_that_keeps_raw_gets_raw_back(tmp_path: Path) -> None:
    """Re-finalizing an attempt published with raw/ retained, killed after the rename:
    the manifest on disk still says raw/ is there, so raw/ is put back, not deleted."""
    paths = _attempt(tmp_path)
    finalize_attempt(paths)
    # the earlier publication's manifest, raw/ retained; then the rename, then the kill
    paths.manifest.write_bytes(paths.manifest.read_bytes().replace(
        b'"raw_retained":false', b'"raw_retained":true'))  # fmt: skip
    _attempt(tmp_path, "other").raw.rename(paths.raw_discarded)
    writer.settle_raw(paths)
    assert (paths.raw / "tape").is_dir() and not paths.raw_discarded.exists()
