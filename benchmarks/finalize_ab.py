"""Finalize from two checkouts, interleaved, on the same synthetic capture.

Run from the repository root (about two minutes at 10,000 calls and 8 rounds):

    .venv/bin/python benchmarks/finalize_ab.py --before /tmp/before [--calls 10000] [--rounds 8]

(`git archive <rev> src | tar -x -C /tmp/before` makes the other checkout.) On a shared
VM the same finalize moves by ±15% between runs minutes apart (docs/benchmarks.md,
rounds 19–21), more than most changes to it win; a change is judged by runs of both
trees taking turns. This builds one attempt with `finalize_scale.py`'s builder (its
shape flags and `--storage-layout`), then per round copies it twice (the copies synced
to disk before any timing) and finalizes each copy in a fresh process of one tree
(`finalize_attempt`, as `finalize_scale.py`'s `finalize`; `PYTHONPATH=<tree>/src`,
checked to be the `roller` that process imports), the trees' order alternating by
round. It prints each pair's wall seconds and CPU seconds (the process and the
processes it waited for: its workers), both trees' medians, and in how many pairs the
tree under test was faster. Each run's manifest (the sha256 of every formal file) must
equal the first run's: trees that publish different bytes do not do the same work, and
the script says so and exits 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from finalize_scale import FINALIZE, Shape, build_attempt

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Run:
    tree: str  # "before" or "after"
    seconds: float
    cpu_seconds: float


def imported_from(src: Path) -> Path:
    """Where a fresh process with `src` on PYTHONPATH imports `roller` from."""
    done = subprocess.run(
        [sys.executable, "-c", "import roller; print(roller.__file__)"],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip()).resolve()


def finalize_once(made: Path, copy: Path, src: Path, tree: str) -> tuple[Run, bytes]:
    """`made` copied to `copy` and finalized by the `roller` under `src`: the run and
    the manifest it published."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(made, copy)
    os.sync()  # the copy's writeback is not the finalize's
    attempt = copy / "samples" / "bench" / "capture" / "attempt-0001"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", FINALIZE, str(attempt)],
        env={**os.environ, "PYTHONPATH": str(src)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    said = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"finalize by the {tree} tree failed: {said.strip()[-2000:]}")
    manifest = (attempt / "manifest.json").read_bytes()
    shutil.rmtree(copy, ignore_errors=True)
    return Run(tree, seconds, usage.ru_utime + usage.ru_stime), manifest


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", type=Path, required=True, help="the other checkout (has src/)")
    p.add_argument("--calls", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--root-turns", type=int, default=40)
    p.add_argument("--children", type=int, default=3)
    p.add_argument("--child-turns", type=int, default=10)
    p.add_argument("--fixed-kb", type=int, default=16, help="system prompt + tools, KiB")
    p.add_argument("--turn-kb", type=int, default=1, help="tool result added per turn, KiB")
    p.add_argument(
        "--storage-layout",
        choices=["compact/v2", "compact/v3"],
        default="compact/v2",
        help="the layout finalize publishes in",
    )
    p.add_argument("--workdir", type=Path, default=None, help="default: a temporary directory")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    trees = {"before": args.before.resolve() / "src", "after": HERE.parent / "src"}
    for tree, src in trees.items():
        found = imported_from(src)
        if not found.is_relative_to(src.resolve()):
            sys.exit(f"with PYTHONPATH={src}, roller imports from {found}: not the {tree} tree")
    shape = Shape(args.root_turns, args.children, args.child_turns, args.fixed_kb, args.turn_kb)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="roller-finalize-ab-"))
    runs: list[Run] = []
    try:
        made = work / "made"
        shutil.rmtree(made, ignore_errors=True)
        build_attempt(made, args.calls, shape, "on-error", args.storage_layout)
        print(f"{args.calls} calls built; {args.rounds} rounds, the trees taking turns")
        first: bytes | None = None
        for k in range(args.rounds):
            order = ("before", "after") if k % 2 == 0 else ("after", "before")
            pair = {}
            for tree in order:
                run, manifest = finalize_once(made, work / "copy", trees[tree], tree)
                first = first if first is not None else manifest
                if manifest != first:
                    sys.exit(f"round {k + 1}: the {tree} tree published other bytes")
                pair[tree] = run
                runs.append(run)
            b, a = pair["before"], pair["after"]
            print(
                f"  round {k + 1}: before {b.seconds:.2f} s ({b.cpu_seconds:.2f} CPU-s), "
                f"after {a.seconds:.2f} s ({a.cpu_seconds:.2f} CPU-s)",
                flush=True,
            )
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    report(runs)


def report(runs: list[Run]) -> None:
    befores = [r for r in runs if r.tree == "before"]
    afters = [r for r in runs if r.tree == "after"]
    faster = sum(a.seconds < b.seconds for b, a in zip(befores, afters, strict=True))
    for name, rows in (("before", befores), ("after", afters)):
        walls = sorted(r.seconds for r in rows)
        print(
            f"{name:6s}: wall {walls[0]:.2f}–{walls[-1]:.2f} s, median {median(walls):.2f}; "
            f"CPU median {median(r.cpu_seconds for r in rows):.2f} s"
        )
    print(f"after faster in {faster} of {len(afters)} pairs; the same bytes published by both")


if __name__ == "__main__":
    main()
