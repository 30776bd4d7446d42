"""Regenerate the Gemini CLI fixtures in this directory from real runs.

    .venv/bin/python tests/data/harnesses/gemini-cli/regenerate.py [NAME ...]

Each fixture is one real `roller collect --harness gemini-cli --capture-calls` run of
Gemini CLI 0.61.0 against `roller mock-model` (the scenario named below), with the
launch plan roller ships. Kept per fixture:
- `native/tmp/<slug>/chats/…`: the copied chats, verbatim;
- `native/telemetry.log`: the telemetry outfile, trimmed to keep the repository small —
  spans and metric batches are dropped, and each log record keeps only `attributes`
  minus its bulky request payloads (`request_text`, `gen_ai.*` prompt attributes); the
  `api_response` `response_text` and every attribute the reader relies on are
  untouched, and the file stays a stream of pretty-printed JSON values as written;
- `FULL_TELEMETRY` fixtures also keep the untrimmed file as `telemetry.full.log.gz`
  (spans, metrics and all), so the reader is tested on exactly what the CLI wrote;
- `TAPED` fixtures: `attempt.json` and `tape/tape-*.rtape.gz` (the proxy's recording,
  gzipped), so finalize runs on the real pair in tests.
No secret is in any of it: the mock run's key is a placeholder, never on the tape or in
the native logs.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROMPT = "Do the task."
RESTRICTED_AGENT = json.dumps(
    {
        "roller-restricted": {
            "description": "A restricted helper for roller's tool-config scenario.",
            "prompt": "You are a restricted helper. Do exactly what you are asked.",
            "tools": ["read_file"],
            "model": "gemini-2.5-flash",
        }
    }
)
# fixture -> (mock scenario, collect timeout in seconds, extra collect arguments)
FIXTURES: dict[str, tuple[str, float, tuple[str, ...]]] = {
    "single": ("spawn-one", 120, ()),
    "parallel": ("spawn-two-parallel", 120, ()),
    "identical-prompts": ("spawn-identical-prompts", 120, ()),
    "file-sharing": ("spawn-file-sharing", 120, ()),
    "tool-error": ("tool-error", 120, ()),
    "plain-fixed-model": ("plain", 120, ("--model", "gemini-2.5-flash")),
    "child-failed": (str(HERE / "scenarios" / "child-no-complete.toml"), 120, ()),
    "tool-config": (
        str(HERE / "scenarios" / "tool-config.toml"),
        120,
        ("--option", f"agents={RESTRICTED_AGENT}"),
    ),
    "killed-child": (str(HERE / "scenarios" / "slow-child.toml"), 20, ()),
}
TAPED = {"parallel", "identical-prompts", "file-sharing", "killed-child"}
FULL_TELEMETRY = {"parallel"}
DROPPED_ATTRIBUTES = ("request_text",)


def _trim_record(value: Any) -> Any | None:
    """A telemetry value as checked in: None to drop it (spans, metrics)."""
    if not isinstance(value, dict) or "attributes" not in value or "_spanContext" in value:
        return None
    attrs = value.get("attributes")
    if not isinstance(attrs, dict) or "event.name" not in attrs:
        return None
    kept = {
        k: v
        for k, v in attrs.items()
        if k not in DROPPED_ATTRIBUTES and not k.startswith("gen_ai.")
    }
    return {"attributes": kept, "_body": value.get("_body")}


def _trim_telemetry(text: str) -> str:
    decoder = json.JSONDecoder()
    pos, out = 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break  # a torn tail (killed run) is dropped; the full copy keeps it
        trimmed = _trim_record(value)
        if trimmed is not None:
            out.append(json.dumps(trimmed, indent=2) + "\n")
    return "".join(out)


def regenerate(name: str) -> None:
    scenario, timeout, extra = FIXTURES[name]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        argv = [
            sys.executable, "-m", "roller", "collect", "--harness", "gemini-cli",
            "--api-base", f"mock:{scenario}", "--capture-calls", "--capture-debug", "full",
            "--prompt", PROMPT, "--run-dir", str(run), "--timeout", str(timeout), "--json",
            *extra,
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, check=False)
        print(f"{name}: roller collect exited {done.returncode}")
        (attempt,) = run.glob("samples/*/capture/attempt-*")
        source = attempt / "raw" / "native"
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        for chat in sorted(source.glob("tmp/*/chats/**/*.jsonl")):
            target = out / "native" / chat.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(chat, target)
        telemetry = source / "telemetry.log"
        if telemetry.is_file():
            text = telemetry.read_text(errors="replace")
            (out / "native" / "telemetry.log").write_text(_trim_telemetry(text))
            if name in FULL_TELEMETRY:
                (out / "telemetry.full.log.gz").write_bytes(
                    gzip.compress(telemetry.read_bytes(), mtime=0)
                )
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
