"""Attempt archives (`roller.collect.attempt_archive`): an attempt packed on one machine
unpacks byte for byte at the attempt directory the driver chose, and an archive that
holds anything but that attempt and its trajectory is refused before a byte is written."""

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


def test_a_task_folder_travels_with_its_links(tmp_path: Path) -> None:
    src = tmp_path / "files"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.txt").write_text("a")
    (src / "link").symlink_to("sub/a.txt")
    unpack_dir(pack_dir(src), tmp_path / "out")
    assert (tmp_path / "out" / "sub" / "a.txt").read_text() == "a"
    assert (tmp_path / "out" / "link").is_symlink()
