"""Reading captures: the only way export, view and validate see the data.

Strict: a record with an unknown field, a wrong type or a wrong schema string is an
error naming the file and line. A record written before a later change of its format is
first brought to the current shape by the converter chain (`roller.capture.compat`),
then validated as strictly; the chain runs only when the record does not validate as it
is. `read_attempt` loads everything; `iter_calls` streams.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from roller.capture.compat import Upgrade, upgrade
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord, Manifest, RelationRecord, RunConfig, SampleInfo
from roller.errors import CaptureFormatError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Capture:
    paths: AttemptPaths
    manifest: Manifest
    calls: list[CallRecord]
    relations: list[RelationRecord]


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])


def validate_json(data: bytes, model: type[M]) -> M:
    """`data` as `model`: as it is, or through the converter chain when it is an older
    shape of the record; otherwise the original `ValidationError`."""
    try:
        return model.model_validate_json(data)
    except ValidationError:
        upgraded = _upgraded(data)
        if upgraded is None:
            raise
    # JSON mode again, so the converted record is held to exactly the same rules.
    return model.model_validate_json(json.dumps(upgraded.record))


def _upgraded(data: bytes) -> Upgrade | None:
    try:
        return upgrade(json.loads(data))
    except ValueError:  # not JSON at all: nothing to convert
        return None


def read_json_model(path: Path, model: type[M]) -> M:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CaptureFormatError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return validate_json(data, model)
    except ValidationError as exc:
        raise CaptureFormatError(
            f"{path}: not a valid {model.__name__}: {_first_error(exc)}"
        ) from exc


def iter_jsonl(path: Path, model: type[M]) -> Iterator[M]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CaptureFormatError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if data:
        for lineno, line in enumerate(data.splitlines(keepends=True), 1):
            if not line.endswith(b"\n"):
                raise CaptureFormatError(f"{path}:{lineno}: last line is not terminated")
            try:
                yield validate_json(line, model)
            except ValidationError as exc:
                raise CaptureFormatError(
                    f"{path}:{lineno}: not a valid {model.__name__}: {_first_error(exc)}"
                ) from exc


def read_manifest(paths: AttemptPaths) -> Manifest:
    return read_json_model(paths.manifest, Manifest)


def iter_calls(paths: AttemptPaths) -> Iterator[CallRecord]:
    return iter_jsonl(paths.calls, CallRecord)


def iter_relations(paths: AttemptPaths) -> Iterator[RelationRecord]:
    return iter_jsonl(paths.relations, RelationRecord)


def read_attempt(path: Path | AttemptPaths) -> Capture:
    paths = path if isinstance(path, AttemptPaths) else AttemptPaths(Path(path))
    return Capture(
        paths=paths,
        manifest=read_manifest(paths),
        calls=list(iter_calls(paths)),
        relations=list(iter_relations(paths)),
    )


def read_run_config(path: Path) -> RunConfig:
    return read_json_model(path, RunConfig)


def read_sample_info(path: Path) -> SampleInfo:
    return read_json_model(path, SampleInfo)


def dump_json(model: BaseModel) -> bytes:
    """Pretty JSON for small human-facing files (run.json, sample.json)."""
    return (json.dumps(model.model_dump(by_alias=True, mode="json"), indent=2) + "\n").encode()
