"""JSON Schemas generated from the record models, checked into `schemas/`.

`python -m roller.capture.schemas` rewrites `schemas/`; with `--check` it exits 1 when
a checked-in schema differs from the models (the test suite runs the same comparison).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from roller.capture.models import (
    AttemptInputs,
    CallRecord,
    Manifest,
    RelationRecord,
    RunConfig,
    SampleInfo,
)
from roller.capture.summary_record import RunSummary
from roller.capture.trajectory_record import TrajectoryRecord

SCHEMAS: dict[str, type[BaseModel]] = {
    "roller.call.v1.json": CallRecord,
    "roller.relation.v1.json": RelationRecord,
    "roller.capture.v1.json": Manifest,
    "roller.run.v1.json": RunConfig,
    "roller.sample.v1.json": SampleInfo,
    "roller.attempt.v1.json": AttemptInputs,
    "roller.trajectory.v1.json": TrajectoryRecord,
    "roller.summary.v1.json": RunSummary,
}


def render() -> dict[str, str]:
    out = {}
    for name, model in SCHEMAS.items():
        schema = model.model_json_schema(by_alias=True, mode="validation")
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": name, **schema}
        out[name] = json.dumps(schema, indent=2, sort_keys=False) + "\n"
    return out


def stale(directory: Path) -> list[str]:
    """Names of schema files in `directory` that are missing or differ from the models."""
    return [
        name
        for name, text in render().items()
        if not (directory / name).exists() or (directory / name).read_text() != text
    ]


def main(argv: list[str]) -> int:
    directory = Path(argv[argv.index("--dir") + 1]) if "--dir" in argv else Path("schemas")
    if "--check" in argv:
        names = stale(directory)
        for name in names:
            print(f"schemas/{name} is out of date: run python -m roller.capture.schemas")
        return 1 if names else 0
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (directory / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
