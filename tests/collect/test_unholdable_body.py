"""A request body Python reads as JSON but no record can hold (a lone surrogate escape)
is the call's data through `roller collect`: the capture is published, validates, says
why the call has no context, and keeps the exact bytes — no traceback, nothing lost."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.captures import roller

from roller.capture.reader import read_attempt
from roller.capture.tape import read_tape

BODY = b'{"model":"mock-model","max_tokens":8,"messages":[{"role":"user","content":"a \\ud800 b"}]}'
PROGRAM = f"""
import os, urllib.request
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages", data={BODY!r},
    headers={{"content-type": "application/json", "anthropic-version": "2023-06-01"}})
urllib.request.urlopen(request).read()
"""


def test_the_call_is_recorded_with_why_and_the_bytes_kept(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = roller(
        "collect", "--harness", "generic", "--single-agent", "--api-base", "mock:plain",
        "--run-dir", str(run_dir), "--", sys.executable, "-c", PROGRAM,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1  # a partial capture, as documented: not a crash
    (attempt,) = run_dir.glob("samples/*/capture/attempt-*")
    assert roller("validate", str(attempt)).returncode == 0
    (call,) = read_attempt(attempt).calls
    assert call.context is None
    assert [e.code for e in call.errors] == ["context_not_json"]
    # not complete, so raw/ is retained (on-error): the exact body is on the tape
    (exchange,) = read_tape(attempt / "raw" / "tape").exchanges
    assert exchange.request_body == BODY
