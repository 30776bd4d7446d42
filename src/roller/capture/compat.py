"""Reading older records: the converter chain from what was written to the current model.

Owns one fact per change of a persisted record: which schema string it applies to, how
to recognize a record written before the change, and how to bring it to the current
shape. `roller.capture.reader` runs the chain only when a record does not validate as it
is (so current records pay nothing), then validates the converted record strictly; a
record no converter applies to fails with its original error, never reinterpreted.

Rules kept (docs/protocol.md, "Versions and migration"):
- a converter only fills in what the older writer could not know, with the value that
  means "not recorded" (an optional field added later becomes null), or, for a schema
  bump, translates `roller.X/vN` to `roller.X/vN+1` and sets the new schema string;
- converters are pure functions of the JSON value, applied in the order of `CHAIN` until
  none applies, so a record several changes old passes through each in turn;
- what the chain did is reported (`Upgrade.applied`), so a reader may say so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Converter:
    """One change of one record kind, and how an older record is brought past it."""

    schema: str  # the record's `schema` string the converter applies to
    name: str  # what changed, as reported
    applies: Callable[[JsonObject], bool]
    convert: Callable[[JsonObject], JsonObject]


@dataclass(frozen=True)
class Upgrade:
    record: JsonObject
    applied: tuple[str, ...]  # converter names, in the order they ran


def _lacks(key: str) -> Callable[[JsonObject], bool]:
    return lambda record: key not in record


def _with_null(key: str) -> Callable[[JsonObject], JsonObject]:
    return lambda record: {**record, key: None}


CHAIN: tuple[Converter, ...] = (
    # Early roller.capture/v1 manifests (the seed's compact layout) were written before
    # the optional lifecycle existed: "validation is compatible with old records that
    # have no lifecycle". Absent means not recorded, the same as null.
    Converter(
        schema="roller.capture/v1",
        name="roller.capture/v1: lifecycle absent (written before it existed) -> null",
        applies=_lacks("lifecycle"),
        convert=_with_null("lifecycle"),
    ),
)


def upgrade(record: object, chain: tuple[Converter, ...] = CHAIN) -> Upgrade | None:
    """The record brought to the current shape, or None when no converter applies
    (it is current already, or no known older shape: the caller keeps its own error)."""
    if not isinstance(record, dict):
        return None
    applied: list[str] = []
    current: JsonObject = record
    progressed = True
    while progressed:
        progressed = False
        for converter in chain:
            if (
                current.get("schema") == converter.schema
                and converter.name not in applied
                and converter.applies(current)
            ):
                current = converter.convert(current)
                applied.append(converter.name)
                progressed = True
    return Upgrade(current, tuple(applied)) if applied else None
