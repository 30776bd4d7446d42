"""Bytes per sample in compact/v2 and compact/v3, for conversations of 10, 50 and 200 calls.

Run from the repository root (docs/benchmarks.md, "Storage per sample"):

    .venv/bin/python benchmarks/storage_layout.py [--calls 10,50,200]

Each sample is one conversation (`finalize_scale.build_attempt`: a harness-size system
prompt and tool schemas, each turn adding a tool call and its result, the whole
transcript resent every call), finalized twice from the same tape: compact/v2 (every
call's context inside calls.jsonl) and compact/v3 (contexts content-addressed in
contexts.blobs). Printed: the formal files' bytes (manifest, calls, relations, blobs)
per sample and per call, the ratio, and the tape's request bytes for scale. Both
captures validate and read back to equal records (checked here too).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from finalize_scale import Shape, build_attempt

from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.reader import iter_calls
from roller.finalize.attempt import finalize_attempt

FILES = ("manifest.json", "calls.jsonl", "relations.jsonl", "contexts.blobs")


def published(source: AttemptPaths, dest: Path, layout: str) -> AttemptPaths:
    paths = AttemptPaths(dest / "attempt-0001")
    shutil.copytree(source.raw, paths.raw)
    finalize_attempt(paths, layout)  # type: ignore[arg-type]
    report = validate_attempt(paths)
    assert report.ok, report.problems
    return paths


def formal_bytes(paths: AttemptPaths) -> dict[str, int]:
    return {f: (paths.root / f).stat().st_size for f in FILES if (paths.root / f).exists()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", default="10,50,200")
    p.add_argument("--fixed-kb", type=int, default=16)
    p.add_argument("--turn-kb", type=int, default=1)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="roller-storage-"))
    rows = []
    try:
        for n in [int(x) for x in args.calls.split(",")]:
            shape = Shape(n, 0, 0, args.fixed_kb, args.turn_kb)
            source = build_attempt(work / f"src{n}", n, shape, "full")
            tape = sum(f.stat().st_size for f in source.tape.iterdir())
            v2 = published(source, work / f"v2-{n}", "compact/v2")
            v3 = published(source, work / f"v3-{n}", "compact/v3")
            assert list(iter_calls(v2)) == list(iter_calls(v3))
            rows.append((n, tape, formal_bytes(v2), formal_bytes(v3)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"bytes per sample: one conversation, {args.fixed_kb} KiB system+tools, "
        f"+{args.turn_kb} KiB tool result per turn"
    )
    print("calls |      tape |  compact/v2   per call |  compact/v3   per call | v3/v2")
    for n, tape, two, three in rows:
        t2, t3 = sum(two.values()), sum(three.values())
        print(
            f"{n:5d} | {tape:9,d} | {t2:11,d} {t2 // n:10,d} | {t3:11,d} {t3 // n:10,d} "
            f"| {t3 / t2:.3f}"
        )
    for n, _, two, three in rows:
        print(f"  {n} calls: v2 {two}; v3 {three}")


if __name__ == "__main__":
    main()
