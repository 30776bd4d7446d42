"""Attempt archives (`roller.collect.attempt_archive`): an attempt packed on one machine
unpacks byte for byte at the attempt directory the driver chose, and an archive that
holds anything but that attempt and its trajectory is refused before a byte is written;
an unpack cut off midway (a disk failing; a kill likewise) or an archive that cannot be
read leaves no part of the attempt."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from roller.capture.layout import SamplePaths
from roller.collect.attempt_archive import pack_attempt, pack_dir, unpack_attempt, unpack_dir
from roller.errors import CaptureFormatError


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _node_sample(tmp_path: Path) -> SamplePaths:
    sample = SamplePaths(tmp_path / "node" / "samples" / "s1")
    attempt = sample.attempt(2)
    (attempt.raw / "tape").mkdir(parents=True)
    attempt.manifest.write_bytes(b'{"m": 1}\n')
    (attempt.raw / "tape" / "tape-0001.rtape").write_bytes(bytes(range(256)))
    sample.trajectory_file(2).parent.mkdir(parents=True)
    sample.trajectory_file(2).write_bytes(b"{}\n")
    sample.trajectory_file(1).write_bytes(b"another attempt's\n")
    return sample


def test_an_attempt_round_trips_byte_for_byte(tmp_path: Path) -> None:
    node = _node_sample(tmp_path)
    driver = SamplePaths(tmp_path / "driver" / "samples" / "s1")
    unpack_attempt(pack_attempt(node.attempt(2)), driver.attempt(2))
    assert _files(driver.attempt(2).root) == _files(node.attempt(2).root)
    assert driver.trajectory_file(2).read_bytes() == b"{}\n"
    assert not driver.trajectory_file(1).exists()  # only its own trajectory travels
    with pytest.raises(CaptureFormatError, match="exists already"):
        unpack_attempt(pack_attempt(node.attempt(2)), driver.attempt(2))


def test_an_archive_of_another_attempt_or_a_path_outside_is_refused(tmp_path: Path) -> None:
    node = _node_sample(tmp_path)
    driver = SamplePaths(tmp_path / "driver" / "samples" / "s1")
    with pytest.raises(CaptureFormatError, match="not the attempt's"):
        unpack_attempt(pack_attempt(node.attempt(2)), driver.attempt(3))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("capture/attempt-0002/../../../escaped")
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(CaptureFormatError, match="not the attempt's"):
        unpack_attempt(buffer.getvalue(), driver.attempt(2))
    assert not driver.root.exists()


def _left(sample: SamplePaths) -> list[str]:
    """Everything under the driver's sample directory, files and directories."""
    return sorted(str(p.relative_to(sample.root)) for p in sample.root.rglob("*"))


def test_an_unpack_cut_off_midway_leaves_no_part_of_the_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = _node_sample(tmp_path)
    driver = SamplePaths(tmp_path / "driver" / "samples" / "s1")
    archive = pack_attempt(node.attempt(2))
    written: list[str] = []
    makefile = tarfile.TarFile.makefile

    def failing_disk(self: tarfile.TarFile, info: tarfile.TarInfo, target: str) -> None:
        if written:
            raise OSError(28, "No space left on device")
        written.append(info.name)
        makefile(self, info, target)

    monkeypatch.setattr(tarfile.TarFile, "makefile", failing_disk)
    with pytest.raises(OSError, match="No space left"):
        unpack_attempt(archive, driver.attempt(2))
    assert written  # one file was written before the disk failed
    assert _left(driver) == ["capture"]  # no attempt, no part of one, no trajectory
    monkeypatch.undo()
    unpack_attempt(archive, driver.attempt(2))  # and the next unpack is whole
    assert _files(driver.attempt(2).root) == _files(node.attempt(2).root)


def test_an_archive_that_cannot_be_read_is_refused_whole(tmp_path: Path) -> None:
    node = _node_sample(tmp_path)
    driver = SamplePaths(tmp_path / "driver" / "samples" / "s1")
    archive = pack_attempt(node.attempt(2))
    # (bytes changed inside a member are the capture's hashes' to find: the driver
    # validates every attempt it unpacks)
    for damaged in (archive[: len(archive) // 2], b"not an archive"):
        with pytest.raises(CaptureFormatError, match="cannot be read"):
            unpack_attempt(damaged, driver.attempt(2))
        assert not driver.attempt(2).root.exists()
        assert not driver.trajectory_file(2).exists()


def test_a_task_folder_travels_with_its_links(tmp_path: Path) -> None:
    src = tmp_path / "files"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.txt").write_text("a")
    (src / "link").symlink_to("sub/a.txt")
    unpack_dir(pack_dir(src), tmp_path / "out")
    assert (tmp_path / "out" / "sub" / "a.txt").read_text() == "a"
    assert (tmp_path / "out" / "link").is_symlink()
