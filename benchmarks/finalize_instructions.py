"""Instructions per call of finalize, validate and the exports, from one or more trees.

Run from the repository root (a 1k-call finalize takes about a minute under valgrind):

    .venv/bin/python benchmarks/finalize_instructions.py --trees before=/tmp/before/src,after=src \
        [--calls 1000] [--operations finalize,validate,export-trajectory] [--keep DIR]

CPU seconds on a shared 2-core machine move by ±20% between runs; instruction counts do
not depend on the load. One attempt of `--calls` calls is built once with
`finalize_scale.py`'s `build_attempt` (its default shape); per tree, each operation runs
in a fresh child process (`PYTHONPATH=<tree>`) under `valgrind --tool=callgrind
--instr-atstart=no`: the child imports everything the operation needs uninstrumented,
says so, and the counters are switched on (`callgrind_control -i on`) just before it
runs the operation and dumped (`-d`) just after, so the count is the operation's own
work, imports and interpreter start excluded. `finalize` is `finalize_attempt` on a
fresh copy of the built attempt (it writes into it); `validate` and `export-trajectory`
are the CLI commands (`main([...])` in the child) over the capture the first tree's
finalize published. Instructions are not time (a syscall or a cache miss counts
little): read them beside `finalize_scale.py`'s CPU figures, not instead of them.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from finalize_scale import Shape, build_attempt

OPERATIONS = ("finalize", "validate", "export-trajectory")
_TOTAL = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)
_CHILD = """
import importlib, os, pkgutil, sys
from pathlib import Path
import roller
for m in pkgutil.walk_packages(roller.__path__, "roller."):
    if m.name.split(".")[1] in ("capture", "finalize", "export", "cli", "harnesses", "wire"):
        importlib.import_module(m.name)
from roller.capture.layout import AttemptPaths
from roller.cli.main import main
from roller.finalize.attempt import finalize_attempt
op, attempt, out = sys.argv[1:4]
say = os.fdopen(os.dup(1), "w")  # the handshake; what the command prints goes nowhere
sys.stdout = open(os.devnull, "w")
print("ready", file=say, flush=True)
sys.stdin.readline()
if op == "finalize":
    finalize_attempt(AttemptPaths(Path(attempt)))
else:
    args = {"validate": ["validate", attempt],
            "export-trajectory": ["export", "trajectory", attempt, "--out", out,
                                  "--include-blocked"]}[op]
    try:
        main(args)
    except SystemExit as e:
        assert not e.code, e.code
print("done", file=say, flush=True)
sys.stdin.readline()
"""


def measure(tree: Path, op: str, attempt: Path, work: Path, keep: Path | None, tag: str) -> int:
    """The instructions `op` took in one child running `tree`'s code."""
    out = work / f"{tag}-{op}.cg"
    argv = ["valgrind", "--tool=callgrind", "--quiet", "--instr-atstart=no"]
    argv += [f"--callgrind-out-file={out}", sys.executable, "-c", _CHILD]
    argv += [op, str(attempt), str(work / f"{tag}-{op}.jsonl")]
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    child = subprocess.Popen(
        argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None

    def step(expect: str, *control: str) -> None:
        line = child.stdout.readline().strip()  # type: ignore[union-attr]
        if line != expect:
            child.kill()
            raise SystemExit(f"{tag} {op}: expected {expect!r}, got {line!r}")
        subprocess.run(
            ["callgrind_control", *control, str(child.pid)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        child.stdin.write("\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]

    step("ready", "-i", "on")
    step("done", "-d")
    if child.wait() != 0:
        raise SystemExit(f"{tag} {op}: exit {child.returncode}")
    dumps = sorted(work.glob(out.name + ".*"), key=lambda p: int(p.suffix[1:]))
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(dumps[0], keep / out.name)
    return int(_TOTAL.search(dumps[0].read_bytes()).group(1))  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", required=True, help="name=path/to/src,… (first: baseline)")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--operations", default=",".join(OPERATIONS))
    parser.add_argument("--retention", default="on-error")
    parser.add_argument("--keep", type=Path, default=None, help="copy the dumps here")
    args = parser.parse_args()
    trees = [(n, Path(p).resolve()) for n, p in (t.split("=", 1) for t in args.trees.split(","))]
    operations = args.operations.split(",")
    with tempfile.TemporaryDirectory(prefix="fin-instr-") as tmp:
        work = Path(tmp)
        built = build_attempt(work / "built", args.calls, Shape(40, 3, 10, 16, 1), args.retention)
        published: Path | None = None
        print(f"{args.calls} calls; instructions per call")
        for name, tree in trees:
            row = []
            for op in operations:
                attempt = built.root
                if op == "finalize":
                    attempt = work / f"{name}-attempt"
                    shutil.rmtree(attempt, ignore_errors=True)
                    shutil.copytree(built.root, attempt)
                    published = published or attempt
                else:
                    attempt = published or attempt
                count = measure(tree, op, attempt, work, args.keep, name)
                row.append(f"{op} {count / args.calls:,.0f}")
            print(f"  {name}: " + "  ".join(row), flush=True)


if __name__ == "__main__":
    main()
