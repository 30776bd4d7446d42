"""Regenerate the DeepSeek Harness fixtures in this directory from real runs.

    .venv/bin/python tests/data/harnesses/deepseek/regenerate.py [NAME ...]

Each fixture is one real `roller collect --harness deepseek --capture-calls` run of
DeepSeek Harness 0.2.1rc2 (through roller's driver) against `roller mock-model` (the
scenario named below), with the options and prompts named below. Kept per fixture,
verbatim: `native/` (the session logs and roller's `roller/driver.jsonl`; the runtime's
`session.lock` files are left out), `attempt.json` and `tape/tape-*.rtape.gz` (the
proxy's recording, gzipped). No secret is in any of it: the mock run's key is a
placeholder passed in the environment only.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parents[3] / "src" / "roller" / "acceptance" / "scenarios"
# fixture -> (mock scenario, launch options, prompts)
FIXTURES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "minimal-plain": ("plain", (), ("Do the task.",)),
    "minimal-tool-error": ("tool-error", (), ("Do the task.",)),
    "sdk-single": ("spawn-one", ("profile=sdk",), ("Do the task.",)),
    "sdk-parallel": ("spawn-two-parallel", ("profile=sdk",), ("Do the task.",)),
    "sdk-nested": ("spawn-nested", ("profile=sdk", "max-depth=2"), ("Do the task.",)),
    "sdk-fork": (
        str(SCENARIOS / "deepseek-fork.toml"),
        ("profile=sdk",),
        ("Say hello.", "Now fork yourself into one subagent that keeps this conversation."),
    ),
}


def regenerate(name: str) -> None:
    scenario, options, prompts = FIXTURES[name]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        argv = [
            sys.executable, "-m", "roller", "collect", "--harness", "deepseek",
            "--api-base", f"mock:{scenario}", "--capture-calls", "--capture-debug", "full",
            "--run-dir", str(run), "--timeout", "240", "--json",
        ]  # fmt: skip
        for option in options:
            argv += ["--option", option]
        for prompt in prompts:
            argv += ["--prompt", prompt]
        done = subprocess.run(argv, capture_output=True, check=False)
        print(f"{name}: roller collect exited {done.returncode}")
        (attempt,) = run.glob("samples/*/capture/attempt-*")
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(
            attempt / "raw" / "native",
            out / "native",
            ignore=shutil.ignore_patterns("session.lock"),
        )
        shutil.copyfile(attempt / "raw" / "attempt.json", out / "attempt.json")
        (out / "tape").mkdir()
        for seg in sorted((attempt / "raw" / "tape").iterdir()):
            (out / "tape" / f"{seg.name}.gz").write_bytes(gzip.compress(seg.read_bytes(), mtime=0))


if __name__ == "__main__":
    for fixture in sys.argv[1:] or FIXTURES:
        regenerate(fixture)
