"""Attempt archives: one finished attempt (its capture directory and its stored main
trajectory) as bytes, so a runner on another machine can hand it back to the driver
without a shared filesystem (`roller.collect.ray_executor`); also a task's files folder
the other way.

Rules kept:
- an archive holds exactly `capture/attempt-NNNN/…` and `trajectory/attempt-NNNN.json` of
  one sample, paths relative to the sample directory; unpacking refuses anything else
  (another attempt, an absolute path, `..`, a link, a device) before writing a byte, so
  a runner can never write outside the attempt it was given;
- the attempt directory must not exist on the driver yet: the driver chose its number,
  and an attempt directory is only ever written by its one runner;
- files are unpacked byte for byte (the capture's hashes in manifest.json cover them;
  the driver validates the attempt afterwards, like any other);
- all or nothing: the archive is unpacked beside the attempt (`.attempt-NNNN.unpack-…`)
  and the attempt directory renamed into place, so a driver killed, or a disk failing,
  in the middle leaves no part of an attempt for a resume to judge (the staging
  directory is removed, or left as a dot-named sibling that no reader lists); an
  archive that cannot be read is a `CaptureFormatError`, as a refused one is.
"""

from __future__ import annotations

import io
import secrets
import shutil
import tarfile
import zlib
from pathlib import Path

from roller.capture.layout import AttemptPaths, SamplePaths
from roller.errors import CaptureFormatError


def _members(sample: SamplePaths, number: int) -> tuple[str, str]:
    attempt = sample.attempt(number).root.relative_to(sample.root).as_posix()
    trajectory = sample.trajectory_file(number).relative_to(sample.root).as_posix()
    return attempt, trajectory


def pack_attempt(attempt: AttemptPaths) -> bytes:
    """The attempt's directory and its stored main trajectory (when there is one)."""
    sample = SamplePaths(attempt.root.parent.parent)
    number = attempt.attempt_number
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        for name in _members(sample, number):
            if (sample.root / name).exists():
                tar.add(sample.root / name, arcname=name)
    return buffer.getvalue()


def _check(members: list[tarfile.TarInfo], allowed: tuple[str, ...], where: str) -> None:
    for m in members:
        inside = any(m.name == a or m.name.startswith(a + "/") for a in allowed)
        if not inside or not (m.isfile() or m.isdir()) or ".." in Path(m.name).parts:
            raise CaptureFormatError(f"{where}: the archive holds {m.name!r}, not the attempt's")


def unpack_attempt(data: bytes, attempt: AttemptPaths) -> None:
    """Write an archive from `pack_attempt` as `attempt` (same number) on this machine:
    all of it or nothing (module docstring)."""
    if attempt.root.exists():
        raise CaptureFormatError(f"{attempt.root} exists already: it is another runner's")
    sample = SamplePaths(attempt.root.parent.parent)
    allowed = _members(sample, attempt.attempt_number)
    staging = attempt.root.with_name(f".{attempt.root.name}.unpack-{secrets.token_hex(6)}")
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = tar.getmembers()
            _check(members, allowed, str(attempt.root))
            staging.mkdir(parents=True)
            tar.extractall(staging, members=members, filter="data")
        # the attempt in one rename (it fails if the directory appeared meanwhile), then
        # its trajectory, which a resume writes again from the attempt when it is missing
        (staging / allowed[0]).rename(attempt.root)
        trajectory = staging / allowed[1]
        if trajectory.exists():
            sample.trajectory_file(attempt.attempt_number).parent.mkdir(exist_ok=True)
            trajectory.replace(sample.root / allowed[1])
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise CaptureFormatError(f"{attempt.root}: the archive cannot be read: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def pack_dir(root: Path) -> bytes:
    """A folder (a task's files), symlinks kept as links, for `unpack_dir`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        tar.add(root, arcname=".")
    return buffer.getvalue()


def unpack_dir(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=False)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")
