"""Regenerate the Hermes fixtures in this directory from real runs.

    .venv/bin/python tests/data/harnesses/hermes/regenerate.py [NAME ...]

Each fixture is one real `roller collect --harness hermes --capture-calls` run of Hermes
Agent 0.19.0 against `roller mock-model` (the scenario named below), with the launch plan
roller ships (roller's plugin enabled) and the options named below. Kept per fixture,
verbatim: `native/` (the consolidated `state.db`, stored gzipped as `state.db.gz`,
roller's `roller/delegations.jsonl` and `config.yaml`; the delegation transcripts and
logs are left out), `attempt.json` and
`tape/tape-*.rtape.gz` (the proxy's recording, gzipped), so finalize runs on the real
pair in tests. No secret is in any of it: the mock run's key is a placeholder, and
Hermes's config names the key's variable, never its value.
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
PROMPT = "Do the task."
# fixture -> (mock scenario, launch options)
FIXTURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "chat-single": ("spawn-one", ("api-mode=chat_completions",)),
    "chat-batched": (str(SCENARIOS / "hermes-batched.toml"), ("api-mode=chat_completions",)),
    "chat-nested": (
        str(SCENARIOS / "hermes-nested.toml"),
        ("api-mode=chat_completions", "max-spawn-depth=2"),
    ),
    "responses-parallel": ("spawn-two-parallel", ("api-mode=codex_responses",)),
    "anthropic-tool-error": ("tool-error", ("api-mode=anthropic_messages",)),
}
KEEP = ("state.db", "config.yaml", "roller")


def regenerate(name: str) -> None:
    scenario, options = FIXTURES[name]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        argv = [
            sys.executable, "-m", "roller", "collect", "--harness", "hermes",
            "--api-base", f"mock:{scenario}", "--capture-calls", "--capture-debug", "full",
            "--prompt", PROMPT, "--run-dir", str(run), "--timeout", "240", "--json",
        ]  # fmt: skip
        for option in options:
            argv += ["--option", option]
        done = subprocess.run(argv, capture_output=True, check=False)
        print(f"{name}: roller collect exited {done.returncode}")
        (attempt,) = run.glob("samples/*/capture/attempt-*")
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        (out / "native").mkdir(parents=True)
        for part in KEEP:
            source = attempt / "raw" / "native" / part
            if source.is_dir():
                shutil.copytree(source, out / "native" / part)
            elif source.is_file() and part.endswith(".db"):
                (out / "native" / f"{part}.gz").write_bytes(
                    gzip.compress(source.read_bytes(), mtime=0)
                )
            elif source.is_file():
                shutil.copyfile(source, out / "native" / part)
        shutil.copyfile(attempt / "raw" / "attempt.json", out / "attempt.json")
        (out / "tape").mkdir()
        for seg in sorted((attempt / "raw" / "tape").iterdir()):
            (out / "tape" / f"{seg.name}.gz").write_bytes(gzip.compress(seg.read_bytes(), mtime=0))


if __name__ == "__main__":
    for fixture in sys.argv[1:] or FIXTURES:
        regenerate(fixture)
