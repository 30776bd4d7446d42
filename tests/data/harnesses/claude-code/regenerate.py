"""Regenerate the Claude Code fixtures in this directory from real runs.

    .venv/bin/python tests/data/harnesses/claude-code/regenerate.py [NAME ...]

Each fixture is one real `roller collect --harness claude-code --capture-calls` run
against `roller mock-model` (the scenario named below), with the launch plan roller
ships. Kept per fixture:
- `native/`: the copied `~/.claude/projects/` tree, trimmed to keep the repository
  small: request shape/blob lines (outside the parentUuid chain) are dropped, and the
  bulky attachments (system prompt snapshots, skill/agent/tool listings) keep their line
  with the payload emptied; every line and field the reader relies on is untouched;
- with a tape (`TAPED`): `attempt.json` and `tape/tape-*.rtape.gz` (the proxy's recording,
  gzipped), so finalize can run on the real pair in tests.
No secret is in any of it: the mock run's key is a placeholder and never on the tape.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROMPT = "Do the task."
# fixture -> (mock scenario, collect timeout in seconds)
FIXTURES: dict[str, tuple[str, float]] = {
    "single": ("spawn-one", 120),
    "parallel": ("spawn-two-parallel", 120),
    "nested": ("spawn-nested", 120),
    "foreground": ("spawn-foreground", 120),
    "nested-background": (str(HERE / "scenarios" / "nested-background.toml"), 120),
    "midturn-notification": (str(HERE / "scenarios" / "midturn-notification.toml"), 120),
    "killed-child": (str(HERE / "scenarios" / "slow-child.toml"), 12),
}
TAPED = {"parallel", "nested-background", "killed-child", "midturn-notification"}
DROPPED_TYPES = {"api-request-shape", "api-request-blob"}
DROPPED_ATTACHMENTS = {
    "prompt_snapshot",
    "skill_listing",
    "agent_listing_delta",
    "deferred_tools_delta",
}


def _trim(line: bytes) -> bytes | None:
    """The line as checked in: None to drop it, else with bulky payloads emptied.

    Lines outside the parentUuid chain (request shapes and blobs) are dropped; bulky
    attachments keep their line (uuid, parentUuid, type) so the chain stays intact,
    with the payload replaced by `{"type": ..., "trimmed": true}`.
    """
    value = json.loads(line)
    if value.get("type") in DROPPED_TYPES:
        return None
    attachment = value.get("attachment")
    if isinstance(attachment, dict) and attachment.get("type") in DROPPED_ATTACHMENTS:
        value["attachment"] = {"type": attachment["type"], "trimmed": True}
        value.pop("rendered", None)
        return json.dumps(value, separators=(",", ":")).encode() + b"\n"
    return line


def _copy_native(source: Path, dest: Path) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".jsonl":
            lines = [_trim(ln) for ln in path.read_bytes().splitlines(keepends=True)]
            target.write_bytes(b"".join(ln for ln in lines if ln is not None))
        else:
            shutil.copyfile(path, target)


def regenerate(name: str) -> None:
    scenario, timeout = FIXTURES[name]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        argv = [
            sys.executable, "-m", "roller", "collect", "--harness", "claude-code",
            "--api-base", f"mock:{scenario}", "--capture-calls", "--capture-debug", "full",
            "--prompt", PROMPT, "--run-dir", str(run), "--timeout", str(timeout), "--json",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, check=False)
        print(f"{name}: roller collect exited {done.returncode}")
        (attempt,) = run.glob("samples/*/capture/attempt-*")
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        _copy_native(attempt / "raw" / "native", out / "native")
        if name in TAPED:
            shutil.copyfile(attempt / "raw" / "attempt.json", out / "attempt.json")
            for seg in sorted((attempt / "raw" / "tape").iterdir()):
                (out / "tape").mkdir(exist_ok=True)
                (out / "tape" / f"{seg.name}.gz").write_bytes(
                    gzip.compress(seg.read_bytes(), mtime=0)
                )


if __name__ == "__main__":
    for fixture in sys.argv[1:] or FIXTURES:
        regenerate(fixture)
