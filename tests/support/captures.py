"""Helpers to run `roller collect` for real and to summarize a capture for comparison."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roller.capture.layout import find_attempts
from roller.capture.reader import Capture, read_attempt

REPO = Path(__file__).resolve().parents[2]


def roller(
    *args: str,
    cwd: Path | None = None,
    timeout: float = 180,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the roller CLI as a user would (a real process), capturing its output.
    `env` is the environment to start from (default: this process's)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("COLUMNS", "200")
    return subprocess.run(
        [sys.executable, "-m", "roller", *args],
        check=False,
        cwd=cwd or REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def only_attempt(run_dir: Path) -> Capture:
    attempts = find_attempts(run_dir)
    assert len(attempts) == 1, attempts
    return read_attempt(attempts[0])


def summarize(capture: Capture) -> dict[str, Any]:
    """A comparable projection of a capture: structure and statuses, no ids or times."""
    pindex = {p.participant_id: n for n, p in enumerate(capture.manifest.participants)}
    seq = {c.call_id: c.sequence for c in capture.calls}
    return {
        "capture_status": capture.manifest.capture_status,
        "execution_status": capture.manifest.execution_status,
        "capture_errors": sorted({e.code for e in capture.manifest.capture_errors}),
        "participants": [
            {
                "role": p.role,
                "parent": pindex.get(p.parent_participant_id) if p.parent_participant_id else None,
                "depth": p.depth,
                "native_ids": p.native_ids,
                "calls": [seq[c] for c in p.call_ids],
            }
            for p in capture.manifest.participants
        ],
        "calls": [
            {
                "sequence": c.sequence,
                "participant": pindex.get(c.participant_id) if c.participant_id else None,
                "kind": c.kind,
                "protocol": c.protocol,
                "stream": c.stream,
                "tools": [t.name for t in c.tool_refs.emitted],
                "execution": c.execution_status,
                "response_capture": c.response_capture_status,
                "identity": c.identity_status,
                "capture": c.capture_status,
                "export": c.export_status,
                "blocked_by": list(c.export_blocked_by),
            }
            for c in capture.calls
        ],
        "relations": sorted(
            (
                {
                    "type": r.type,
                    "status": r.status,
                    "parent": pindex.get(r.parent_participant_id)
                    if r.parent_participant_id
                    else None,
                    "child": pindex.get(r.child_participant_id) if r.child_participant_id else None,
                    "source": seq.get(r.source_call_id) if r.source_call_id else None,
                    "target": seq.get(r.target_call_id) if r.target_call_id else None,
                }
                for r in capture.relations
            ),
            key=lambda r: json.dumps(r, sort_keys=True),
        ),
    }
