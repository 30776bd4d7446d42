"""Finalize, validate and export at scale: calls per second and peak memory.

Run from the repository root (docs/benchmarks.md, "Finalize at scale"):

    .venv/bin/python benchmarks/finalize_scale.py [--calls 1000,10000,100000] [--quick]

What it builds, per size: one attempt directory whose `raw/` holds a synthetic tape of
N Anthropic Messages calls (streamed SSE responses, as Claude Code sends them) written
with the real `TapeWriter`, and a `raw/attempt.json` for the `generic` harness, whose
participants come from roller's own `x-roller-*` headers. The calls form conversations
that resend their whole transcript each turn, as every harness does: a root of
`--root-turns` calls and `--children` subagents of `--child-turns` calls each per
session (each subagent its own participant, named by `x-roller-agent-id`), sessions one
after another until N calls. A request carries a system prompt and tool schemas of
harness size (`--fixed-kb`, many tools), then the transcript: each turn adds the
assistant's tool call and a tool result of `--turn-kb`. Every output calls one tool, so
every later call of a conversation carries earlier results (`result_in_context`
relations grow with the square of a conversation's length, as in real captures).

What it measures, each operation in a fresh child process (wall time, and peak RSS
from `os.wait4`'s rusage: the child's own high-water mark, libraries included; its CPU
includes the processes it waited for, and where finalize starts worker processes
(`roller.finalize.workers`, from 2,000 calls on) the RSS is the largest process's, not
their sum):
`finalize` (`roller finalize ATTEMPT`, raw/ kept), `validate` (`roller validate`),
`export calls` and `export trajectory` (`roller export … --out FILE`, each validating
first, as the commands do), `view` (the call tree, `roller view`) and `view-html` (the
HTML viewer, `roller view --html … -o FILE`). The child runs
under an address-space limit (`--memory-limit-gb`): a finalize that would take the
machine's memory fails there instead, and the row says so.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs, HarnessInfo
from roller.capture.tape import TapeWriter

OPERATIONS = ("finalize", "validate", "export-calls", "export-trajectory", "view", "view-html")
# `finalize` is the capture alone (`finalize_attempt`); `roller finalize` then rewrites
# the main trajectory too, which `export-trajectory` measures on its own.
FINALIZE = (
    "import sys; from pathlib import Path; from roller.capture.layout import AttemptPaths; "
    "from roller.finalize.attempt import finalize_attempt; "
    "finalize_attempt(AttemptPaths(Path(sys.argv[1])))"
)
CHILD_ARGV = {
    "finalize": ["{python}", "-c", FINALIZE, "{attempt}"],
    "validate": ["{roller}", "validate", "{attempt}"],
    "export-calls": [
        "{roller}",
        "export",
        "calls",
        "{attempt}",
        "--out",
        "{out}",
        "--include-blocked",
    ],
    "export-messages": [
        "{roller}",
        "export",
        "calls",
        "{attempt}",
        "--format",
        "openai-messages",
        "--out",
        "{out}",
        "--include-blocked",
    ],
    "export-parquet": [
        "{roller}",
        "export",
        "calls",
        "{attempt}",
        "--format",
        "parquet",
        "--out",
        "{out}",
        "--include-blocked",
    ],
    "export-otel": ["{roller}", "export", "otel", "{attempt}", "--out", "{out}"],
    "export-atif": [
        "{roller}",
        "export",
        "atif",
        "{attempt}",
        "--out",
        "{out}",
        "--include-blocked",
    ],
    "export-trajectory": [
        "{roller}",
        "export",
        "trajectory",
        "{attempt}",
        "--out",
        "{out}",
        "--include-blocked",
    ],
    "view": ["{roller}", "view", "{attempt}"],
    "view-html": ["{roller}", "view", "--html", "{attempt}", "-o", "{out}"],
}


@dataclass(frozen=True)
class Shape:
    """The conversations a synthetic tape holds."""

    root_turns: int
    children: int
    child_turns: int
    fixed_kb: int
    turn_kb: int
    # The transcript as the body's last member, after the fixed part and the settings,
    # and no cache marker: the synthetic shape before round 22
    # (tests/view/test_page_goldens.py's capture). By default Claude Code's: the
    # transcript second, and the newest message's last block marked `cache_control`
    # (the marker moves on, so each request sends the previous last message again
    # without it).
    transcript_last: bool = False

    def conversations(self, total: int) -> Iterator[tuple[str, dict[str, str], int]]:
        """(participant label, x-roller headers, turns) until `total` calls are planned."""
        left, session = total, 0
        while left > 0:
            session += 1
            sid = f"sess-{session:06d}"
            plan = [("root", {"x-roller-session-id": sid}, self.root_turns)]
            plan += [
                (
                    f"child-{c}",
                    {"x-roller-session-id": sid, "x-roller-agent-id": f"agent-{session}-{c}"},
                    self.child_turns,
                )
                for c in range(1, self.children + 1)
            ]
            for label, headers, planned in plan:
                turns = min(planned, left)
                if turns <= 0:
                    return
                left -= turns
                yield f"{sid}/{label}", headers, turns


_VOCABULARY = [
    "".join(random.Random(i).choices(string.ascii_lowercase, k=3 + i % 7)) for i in range(4000)
]


def _text(kb: int, seed: str) -> str:
    """`kb` KiB of words drawn from a 4,000-word vocabulary (deterministic per seed): it
    compresses about as well as prose or code (~2.5x with zlib), not as a repeated
    phrase would."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < kb * 1024:
        word = _VOCABULARY[rng.randrange(len(_VOCABULARY))]
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[: kb * 1024]


def fixed_part(kb: int) -> bytes:
    """The system prompt and ~40 tool schemas every request of a harness repeats."""
    tools = [
        {
            "name": f"Tool{i}",
            "description": _text(max(1, kb // 80), f"tool {i}"),
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
            },
        }
        for i in range(40)
    ]
    system = [{"type": "text", "text": _text(max(1, kb // 2), "system")}]
    return (
        b'"system":'
        + json.dumps(system, separators=(",", ":")).encode()
        + b',"tools":'
        + json.dumps(tools, separators=(",", ":")).encode()
    )


_CACHE_MARK = b',"cache_control":{"type":"ephemeral"}'


def turn_messages(n: int, turn_kb: int) -> tuple[bytes, bytes]:
    """The assistant's tool call of turn n and the tool result the next request adds."""
    tool_id = f"toolu_{n:08d}"
    call = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"Reading file {n}."},
            {"type": "tool_use", "id": tool_id, "name": "Tool1", "input": {"path": f"f{n}"}},
        ],
    }
    result = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": _text(turn_kb, f"r{n}")}
        ],
    }
    compact = (",", ":")  # as Node's JSON.stringify and serde_json write (most harnesses)
    return (
        json.dumps(call, separators=compact).encode(),
        json.dumps(result, separators=compact).encode(),
    )


def sse_reply(n: int) -> list[bytes]:
    """A streamed Anthropic reply that says a few words and calls one tool, in chunks."""

    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    msg = {
        "id": f"msg_{n:08d}",
        "type": "message",
        "role": "assistant",
        "model": "mock-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1000 + n % 997, "output_tokens": 1},
    }
    events = [event("message_start", {"type": "message_start", "message": msg})]
    events.append(
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
    )
    for word in ("Reading ", "file ", f"{n + 1}", "."):
        delta = {"type": "text_delta", "text": word}
        events.append(
            event(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            )
        )
    events.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    block = {"type": "tool_use", "id": f"toolu_{n + 1:08d}", "name": "Tool1", "input": {}}
    events.append(
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": block},
        )
    )
    for part in ('{"path":', f' "f{n + 1}"', "}"):
        delta = {"type": "input_json_delta", "partial_json": part}
        events.append(
            event(
                "content_block_delta", {"type": "content_block_delta", "index": 1, "delta": delta}
            )
        )
    events.append(event("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events.append(
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 42},
            },
        )
    )
    events.append(event("message_stop", {"type": "message_stop"}))
    # a proxy read hands on a few events at a time
    return [b"".join(events[i : i + 3]) for i in range(0, len(events), 3)]


REQUEST_HEADERS = [
    ["content-type", "application/json"],
    ["anthropic-version", "2023-06-01"],
    ["user-agent", "synthetic-harness/1.0"],
]
RESPONSE_META = {
    "status": 200,
    "reason": "OK",
    "headers": [["content-type", "text/event-stream"], ["cache-control", "no-cache"]],
    "redacted": {"headers": []},
    "http_version": "1.1",
}


def build_attempt(
    root: Path, calls: int, shape: Shape, retention: str, layout: str = "compact/v2"
) -> AttemptPaths:
    """An attempt directory with raw/attempt.json (naming the storage layout finalize
    publishes in) and a synthetic tape of `calls` calls."""
    paths = AttemptPaths(root / "samples" / "bench" / "capture" / "attempt-0001")
    paths.raw.mkdir(parents=True)
    inputs = AttemptInputs(
        schema_="roller.attempt/v1",
        capture_scope="0123456789ab",
        sample_id="bench",
        attempt=1,
        harness=HarnessInfo(name="generic", version=None, profile=None),
        debug_retention=retention,  # type: ignore[arg-type]
        started_at="2026-12-01T00:00:00.000000Z",
        ended_at="2026-12-01T01:00:00.000000Z",
        exit_code=0,
        timed_out=False,
        launch_error=None,
        storage_layout=layout,  # type: ignore[arg-type]
    )
    paths.attempt_inputs.write_text(inputs.model_dump_json(by_alias=True) + "\n")
    fixed = fixed_part(shape.fixed_kb)
    # Claude Code's member order (2.1.x): the transcript second, the fixed part and the
    # settings after it, so a resent transcript does not end its body.
    head = b'{"model":"mock-model","messages":['
    tail = b"]," + fixed + b',"metadata":{"user_id":"user_bench"},"max_tokens":8192,"stream":true}'
    if shape.transcript_last:
        head = b'{"model":"mock-model","max_tokens":8192,"stream":true,' + fixed + b',"messages":['
        tail = b"]}"
    n = 0
    t = 1_764_547_200_000_000_000
    with TapeWriter(paths.tape, fsync_interval=None) as tape:
        for _label, roller, turns in shape.conversations(calls):
            task = {"role": "user", "content": _text(1, "task")}
            messages = [json.dumps(task, separators=(",", ":")).encode()]
            for _turn in range(turns):
                last = messages[-1]
                if not shape.transcript_last and last.endswith(b"}]}"):
                    last = last[:-3] + _CACHE_MARK + b"}]}"  # on the newest message's last block
                body = head + b",".join([*messages[:-1], last]) + tail
                meta = {
                    "method": "POST",
                    "path": "/v1/messages",
                    "query": [],
                    "headers": REQUEST_HEADERS,
                    "redacted": {"headers": ["x-api-key"], "query": []},
                    "roller": roller,
                    "upstream": "http://127.0.0.1:9",
                    "client": "127.0.0.1:50000",
                    "http_version": "1.1",
                    "annotations": {},
                }
                xid = tape.begin()
                t += 1_000_000
                tape.request(xid, meta, t=t, body=body)
                tape.response(xid, RESPONSE_META, t=t + 100_000)
                reply = sse_reply(n)
                for chunk in reply:
                    tape.chunk(xid, chunk)
                end = {
                    "outcome": "ok",
                    "error": None,
                    "client_status": 200,
                    "upstream_status": 200,
                    "request_bytes": len(body),
                    "response_bytes": sum(len(c) for c in reply),
                    "client_bytes": sum(len(c) for c in reply),
                }
                tape.end(xid, end, t=t + 500_000)
                call, result = turn_messages(n + 1, shape.turn_kb)
                messages += [call, result]
                n += 1
    return paths


@dataclass(frozen=True)
class Measured:
    operation: str
    calls: int
    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    ok: bool
    note: str

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    @property
    def calls_per_cpu_s(self) -> float:
        """Calls per second of the child's own CPU time: what a machine shared with other
        work still measures fairly."""
        return self.calls / self.cpu_seconds if self.cpu_seconds else 0.0


def _limit(gb: float) -> None:
    limit = int(gb * 1024**3)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_child(
    operation: str, paths: AttemptPaths, out: Path, calls: int, limit_gb: float
) -> Measured:
    """One operation in a fresh `roller` process: wall time and the child's peak RSS."""
    roller = str(Path(sys.executable).with_name("roller"))
    cmd = [
        a.format(attempt=paths.root, out=out, python=sys.executable, roller=roller)
        for a in CHILD_ARGV[operation]
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: _limit(limit_gb),  # noqa: PLW1509 (no threads here)
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    ok = proc.returncode == 0
    note = "" if ok else (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:120]
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(operation, calls, seconds, cpu, usage.ru_maxrss / 1024, ok, note)


def sizes(paths: AttemptPaths, tape: int) -> dict[str, int]:
    out = {"tape": tape}
    for name in ("calls.jsonl", "relations.jsonl", "contexts.blobs"):
        file = paths.root / name
        if file.exists():
            out[name] = file.stat().st_size
    return out


def outputs(root: Path, operations: list[str]) -> dict[str, int]:
    """The size of what each operation wrote (a file, or a directory's files)."""
    out = {}
    for op in operations:
        target = root / f"{op}.out"
        if target.is_file():
            out[f"{op} output"] = target.stat().st_size
        elif target.is_dir():
            out[f"{op} output"] = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    return out


def measure_size(
    work: Path,
    calls: int,
    shape: Shape,
    retention: str,
    limit_gb: float,
    operations: list[str],
    layout: str,
) -> list[Measured]:
    root = work / f"n{calls}"
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    paths = build_attempt(root, calls, shape, retention, layout)
    tape = sum(p.stat().st_size for p in paths.tape.iterdir())
    print(f"  built {calls} calls in {time.perf_counter() - started:.1f} s", flush=True)
    rows = []
    for op in operations:
        row = run_child(op, paths, root / f"{op}.out", calls, limit_gb)
        rows.append(row)
        print(
            f"  {op:18s} {row.seconds:8.2f} s {row.calls_per_s:9.0f} calls/s "
            f"{row.peak_rss_mb:8.0f} MB {'ok' if row.ok else 'FAILED ' + row.note}",
            flush=True,
        )
        if op == "finalize" and not row.ok:
            break
    file_sizes = sizes(paths, tape) | outputs(root, operations)
    print("  bytes: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in file_sizes.items()))
    shutil.rmtree(root, ignore_errors=True)
    return rows


def report(rows: list[Measured], args: argparse.Namespace) -> None:
    print()
    print(
        f"finalize at scale: conversations of a {args.root_turns}-call root and "
        f"{args.children} x {args.child_turns}-call subagents; {args.fixed_kb} KiB "
        f"system+tools, +{args.turn_kb} KiB per turn; retention {args.retention}; "
        f"{args.storage_layout}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    counts = sorted({r.calls for r in rows})
    head = "".join(f" | {n:>7d}: wall s  calls/s  /cpu-s  RSS MB" for n in counts)
    print(f"{'operation':18s}{head}")
    for op in dict.fromkeys(r.operation for r in rows):  # the operations run, in order
        cells = []
        for n in counts:
            r = next((x for x in rows if x.operation == op and x.calls == n), None)
            if r is None:
                cells.append(f" | {'-':>39s}")
            elif not r.ok:
                cells.append(f" | {'failed':>24s} {r.peak_rss_mb:>14.0f}")
            else:
                cells.append(
                    f" | {r.seconds:>13.2f} {r.calls_per_s:8.0f} {r.calls_per_cpu_s:7.0f}"
                    f" {r.peak_rss_mb:7.0f}"
                )
        print(f"{op:18s}" + "".join(cells))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", default="1000,10000,100000", help="tape sizes, comma-separated")
    p.add_argument("--quick", action="store_true", help="1,000 and 10,000 calls only")
    p.add_argument("--root-turns", type=int, default=40)
    p.add_argument("--children", type=int, default=3)
    p.add_argument("--child-turns", type=int, default=10)
    p.add_argument("--fixed-kb", type=int, default=16, help="system prompt + tools, KiB")
    p.add_argument("--turn-kb", type=int, default=1, help="tool result added per turn, KiB")
    p.add_argument("--memory-limit-gb", type=float, default=8.0)
    p.add_argument("--operations", default=",".join(OPERATIONS), help="which, in order")
    p.add_argument(
        "--retention",
        default="on-error",
        choices=["on-error", "full"],
        help="on-error (default): a complete capture's raw/ is cleaned; full: kept, "
        "with a response body file per call",
    )
    p.add_argument(
        "--storage-layout",
        default="compact/v2",
        choices=["compact/v2", "compact/v3"],
        help="the layout finalize publishes in (raw/attempt.json's storage_layout)",
    )
    p.add_argument("--workdir", type=Path, default=None, help="default: a temporary directory")
    p.add_argument("--json", type=Path, default=None, help="write every figure here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    counts = [1000, 10000] if args.quick else [int(x) for x in args.calls.split(",")]
    shape = Shape(args.root_turns, args.children, args.child_turns, args.fixed_kb, args.turn_kb)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="roller-finalize-scale-"))
    rows: list[Measured] = []
    try:
        for n in counts:
            print(f"{n} calls:", flush=True)
            rows += measure_size(
                work,
                n,
                shape,
                args.retention,
                args.memory_limit_gb,
                args.operations.split(","),
                args.storage_layout,
            )
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    report(rows, args)
    if args.json:
        args.json.write_text(
            json.dumps([r.__dict__ | {"calls_per_s": r.calls_per_s} for r in rows], indent=2)
        )


if __name__ == "__main__":
    main()
