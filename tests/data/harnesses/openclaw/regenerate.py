"""Regenerate the OpenClaw fixtures in this directory from real runs.

    .venv/bin/python tests/data/harnesses/openclaw/regenerate.py [NAME ...]

Each fixture is one real `roller collect --harness openclaw --capture-calls` run of
OpenClaw 2026.9.6 (Node 24.22.3) against `roller mock-model` (the scenario named below:
a built-in one, or a file under `scenarios/`), with the launch plan roller ships and the
`--option`s below. Kept per fixture: `native/openclaw/…` (the consolidated copies of the
agent and state SQLite stores, gzipped), `native/openclaw-launch.json` (the launcher's
report), `attempt.json` and `tape/tape-*.rtape.gz` (the proxy's recording, gzipped), so
finalize runs on the real pair in tests. The Gateway's and OpenClaw's own logs are left
out (debug only). No secret is in any of it: the mock run's key is a placeholder, the
config names the key's variable (`${OPENAI_API_KEY}`), and the Gateway token never
leaves the launcher's environment.
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
# fixture -> (mock scenario, --option values)
FIXTURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "toolsearch-single": ("spawn-one", ()),
    "direct-single": ("spawn-one", ("tool_search=off",)),
    "responses-parallel": ("spawn-two-parallel", ("api=openai-responses", "tool_search=off")),
    "anthropic-nested": ("spawn-nested", ("api=anthropic-messages",)),
    "fork": ("spawn-fork", ("tool_search=off",)),
    "steered-delivery": (str(HERE / "scenarios" / "slow-turn.toml"), ("tool_search=off",)),
    "announce-pending": (
        str(HERE / "scenarios" / "slow-announce.toml"),
        ("tool_search=off", "drain_timeout=2"),
    ),
}


def _store(src: Path, dst: Path) -> None:
    """Copy the native dir: SQLite files gzipped, logs left out."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if not path.is_file() or rel.parts[0] == "logs":
            continue
        out = dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".sqlite":
            out.with_name(out.name + ".gz").write_bytes(
                gzip.compress(path.read_bytes(), 9, mtime=0)
            )
        else:
            shutil.copyfile(path, out)


def regenerate(name: str) -> None:
    scenario, options = FIXTURES[name]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        argv = [
            sys.executable, "-m", "roller", "collect", "--harness", "openclaw",
            "--api-base", f"mock:{scenario}", "--capture-calls", "--capture-debug", "full",
            "--prompt", PROMPT, "--run-dir", str(run), "--timeout", "300", "--json",
            *(a for o in options for a in ("--option", o)),
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, check=False)
        print(f"{name}: roller collect exited {done.returncode}")
        (attempt,) = run.glob("samples/*/capture/attempt-*")
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        _store(attempt / "raw" / "native", out / "native")
        shutil.copyfile(attempt / "raw" / "attempt.json", out / "attempt.json")
        (out / "tape").mkdir()
        for seg in sorted((attempt / "raw" / "tape").iterdir()):
            (out / "tape" / f"{seg.name}.gz").write_bytes(gzip.compress(seg.read_bytes(), mtime=0))


if __name__ == "__main__":
    for fixture in sys.argv[1:] or FIXTURES:
        regenerate(fixture)
