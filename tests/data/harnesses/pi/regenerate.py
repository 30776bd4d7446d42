"""Regenerate the Pi fixtures in this directory from real runs.

    .venv/bin/python tests/data/harnesses/pi/regenerate.py [NAME ...]

Each fixture is one real `roller collect --harness pi --capture-calls` run of Pi 0.73.1
against `roller mock-model` (the scenario named below), with the launch plan roller
ships and the models.json API named below. Kept per fixture, verbatim:
`native/sessions/…` (the copied session files), `attempt.json` and
`tape/tape-*.rtape.gz` (the proxy's recording, gzipped), so finalize runs on the real
pair in tests. No secret is in any of it: the mock run's key is a placeholder, and Pi's
models.json names the key's variable, never its value.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROMPT = "Do the task."
# fixture -> (mock scenario, models.json api)
FIXTURES: dict[str, tuple[str, str]] = {
    "responses-tool-error": ("tool-error", "openai-responses"),
    "completions-tool-error": ("tool-error", "openai-completions"),
    "anthropic-tool-error": ("tool-error", "anthropic-messages"),
    "responses-plain": ("plain", "openai-responses"),
}


def regenerate(name: str) -> None:
    scenario, api = FIXTURES[name]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        argv = [
            sys.executable, "-m", "roller", "collect", "--harness", "pi",
            "--api-base", f"mock:{scenario}", "--capture-calls", "--capture-debug", "full",
            "--prompt", PROMPT, "--run-dir", str(run), "--timeout", "120", "--json",
            "--option", f"api={api}",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, check=False)
        print(f"{name}: roller collect exited {done.returncode}")
        (attempt,) = run.glob("samples/*/capture/attempt-*")
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(attempt / "raw" / "native", out / "native")
        shutil.copyfile(attempt / "raw" / "attempt.json", out / "attempt.json")
        (out / "tape").mkdir()
        for seg in sorted((attempt / "raw" / "tape").iterdir()):
            (out / "tape" / f"{seg.name}.gz").write_bytes(gzip.compress(seg.read_bytes(), mtime=0))


if __name__ == "__main__":
    for fixture in sys.argv[1:] or FIXTURES:
        regenerate(fixture)
