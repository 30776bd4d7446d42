"""roller's DeepSeek Harness driver: the source of a script that runs in the harness's venv.

roller never imports it (its standard-library parts are tested directly): DeepSeek
Harness is a Python SDK over a JSON-RPC runtime, not a CLI prompt, so the adapter writes
this file into the scratch dir and launches it with the harness venv's python. It runs
ONE prompt (read from stdin, so no prompt is ever taken for a flag) as one turn of the
session `--session-id` (a fresh one), or of `--resume <id>` (the persisted one), waits
until the session tree has settled, closes the runtime so it flushes its session logs,
and appends what the SDK's side channel said to `--record` (JSON lines): first
`{"event": "driver.started", "profile", "session_id", "resume"}`, then
`{"event": "subagent.started"|"subagent.finished", ...payload}`, one
`{"event": "notice.consumed", "child", "seq"}` per settled notice the root took into a
turn, and last `{"event": "settled", "outcome": "settled"|"timeout", "pending": [...]}`.

Settled (facts of deepseek-harness 0.2.1rc2): `Session.run()` returns when the root first
goes idle, while background children still run; closing then aborts them. So after the
prompt: every `subagent.started` child has its `subagent.finished`, every direct child's
`subagent-settled` notice has entered a root turn (a root `user/message` event whose
`source.senderSessionId` is the child), and the root is idle after its last event. A
wait that runs out is recorded (`timeout`) and is not an error: the turn itself ran.
The runtime gets a long shutdown: with the SDK's 1 s default it is killed before it
writes `session.v4.jsonl`. The API key comes from the environment only.
Exit codes: 0 the turn completed (its `turn/end` kind `completed`; settled or not),
1 the run failed or the turn ended otherwise (the kind is printed), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

SETTLED_NOTICE = "subagent-settled"
SHUTDOWN_S = 30.0


class Tree:
    """What the side channel said about the root's session tree (guarded by `cond`)."""

    def __init__(self, root: str, record: TextIO):
        self.root = root
        self.record = record
        self.cond = threading.Condition()
        self.parents: dict[str, str] = {}
        self.finished: set[str] = set()
        self.consumed: set[str] = set()
        self.root_idle = False

    def write(self, line: dict[str, Any]) -> None:
        self.record.write(json.dumps(line, sort_keys=True) + "\n")
        self.record.flush()

    def feed(self, method: str, payload: dict[str, Any]) -> None:
        with self.cond:
            if method in ("subagent.started", "subagent.finished"):
                self.write({"event": method, **payload})
                child = payload.get("childSessionId")
                if isinstance(child, str):
                    if method == "subagent.started":
                        self.parents[child] = str(payload.get("parentSessionId"))
                    else:
                        self.finished.add(child)
            elif payload.get("sessionId") == self.root:
                if method == "session.status":
                    self.root_idle = payload.get("status") == "idle"
                elif method == "session.event":
                    self.root_idle = False
                    self._notice(payload.get("event"))
            self.cond.notify_all()

    def _notice(self, event: Any) -> None:
        if not isinstance(event, dict) or event.get("type") != "user/message":
            return
        data = event.get("data")
        source = data.get("source") if isinstance(data, dict) else None
        if isinstance(source, dict) and source.get("kind") == SETTLED_NOTICE:
            child = source.get("senderSessionId")
            if isinstance(child, str):
                self.consumed.add(child)
                self.write({"event": "notice.consumed", "child": child, "seq": event.get("seq")})

    def pending(self) -> list[str]:
        unfinished = {c for c in self.parents if c not in self.finished}
        unconsumed = {c for c, p in self.parents.items() if p == self.root} - self.consumed
        return sorted(unfinished | unconsumed)

    def settle(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while self.pending() or not self.root_idle:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.write(
                        {"event": "settled", "outcome": "timeout", "pending": self.pending()}
                    )
                    return
                self.cond.wait(left)
            self.write({"event": "settled", "outcome": "settled", "pending": []})


def pump(subscription: Any, tree: Tree) -> None:
    while True:
        try:
            note = subscription.next()
        except BaseException:  # noqa: BLE001 - the runtime closed: nothing more will come
            return
        payload = note.payload if isinstance(note.payload, dict) else {}
        tree.feed(str(note.method), payload)


def arguments(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="run one DeepSeek Harness turn for roller")
    ap.add_argument("--profile", required=True)
    session = ap.add_mutually_exclusive_group(required=True)
    session.add_argument("--session-id", help="start this session")
    session.add_argument("--resume", metavar="SESSION_ID", help="resume this session")
    ap.add_argument("--dsh-home", required=True)
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--provider", default="deepseek-official")
    ap.add_argument("--patch", action="append", default=[])
    ap.add_argument("--settle-timeout", type=float, default=120.0)
    ap.add_argument("--record", required=True)
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = arguments(argv)
    root = args.resume or args.session_id
    prompt = sys.stdin.read()
    Path(args.record).parent.mkdir(parents=True, exist_ok=True)
    with Path(args.record).open("a", encoding="utf-8") as record:
        from deepseek_harness import DeepSeekHarness  # type: ignore[import-not-found]

        tree = Tree(root, record)
        tree.write(
            {
                "event": "driver.started",
                "profile": args.profile,
                "session_id": root,
                "resume": args.resume is not None,
            }
        )
        harness = DeepSeekHarness(
            profile=args.profile,
            model=args.model,
            provider=args.provider,
            dsh_home=args.dsh_home,
            cwd=args.cwd,
            base_url=args.base_url,
            patches=tuple(args.patch),
            shutdown_timeout_seconds=SHUTDOWN_S,
        )
        try:
            with harness:
                subscription = harness.client.subscribe_notifications(None)
                threading.Thread(target=pump, args=(subscription, tree), daemon=True).start()
                session = (
                    harness.resume_session(root) if args.resume else harness.start_session(root)
                )
                result = session.run(prompt)
                tree.settle(args.settle_timeout)
        except Exception as exc:  # noqa: BLE001 - reported, exit 1
            print(f"roller deepseek driver: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print(result.final_response)
    if result.finish_reason != "completed":
        print(f"roller deepseek driver: the turn ended {result.finish_reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
