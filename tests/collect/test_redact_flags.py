"""`roller collect --redact-header/--redact-query`: a key in a place no built-in rule
knows (a header such as `x-key`, a `?k=` query) is kept off disk when named, in every
file of the run and in roller's output; the names are the run's (run.json), so a
`--resume` keeps them and may only add more."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from tests.support.captures import roller

from roller.capture.models import RunConfig
from roller.capture.reader import read_json_model
from roller.collect.runs import resumed_spec

# One Anthropic Messages call carrying the key in a header and in the query string.
PROGRAM = """
import anthropic, os
key = os.environ["PROBE_VALUE"]  # not argv: a command line is recorded
client = anthropic.Anthropic(default_headers={"x-key": key}, default_query={"k": key})
client.messages.create(model="mock-model", max_tokens=16,
                       messages=[{"role": "user", "content": "hi"}])
"""


def _collect(run_dir: Path, key: str, *flags: str) -> str:
    proc = roller(
        "collect", "--harness", "generic", "--single-agent", "--api-base", "mock:plain",
        "--capture-debug", "full", "--run-dir", str(run_dir), *flags,
        "--", sys.executable, "-c", PROGRAM,
        env={**os.environ, "PROBE_VALUE": key},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def _files_with(run_dir: Path, key: str) -> list[Path]:
    return [p for p in run_dir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def test_named_headers_and_query_parameters_never_reach_disk(tmp_path: Path) -> None:
    key = "k3y-" + secrets.token_hex(16)
    # without the names the key is recorded as sent (the control: this test can fail)
    _collect(tmp_path / "plain", key)
    assert _files_with(tmp_path / "plain", key)

    run_dir = tmp_path / "redacted"
    output = _collect(run_dir, key, "--redact-header", "X-Key", "--redact-query", "k")
    assert key not in output
    assert _files_with(run_dir, key) == []
    (calls,) = run_dir.rglob("calls.jsonl")
    assert b'"x-key"' in calls.read_bytes()  # the name is recorded as removed, not its value

    config = read_json_model(run_dir / "run.json", RunConfig)
    spec = resumed_spec(config)  # what --resume continues with
    assert (spec.redact_headers, spec.redact_query) == (("x-key",), ("k",))
