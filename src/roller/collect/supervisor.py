"""The harness supervisor: a tiny process between roller and the harness, so the harness
and everything it started die with roller, whatever kills roller.

Run as a script (`python -I -S supervisor.py FD GRACE_S -- ARGV…`), never imported by
roller at run time: it uses the standard library only, so it starts in a few tens of
milliseconds and has nothing of roller's state.

What it relies on, and why it exists (docs/collect.md, "Crash safety"):
- FD is one end of a socket pair; roller keeps the other end, which no other process
  holds (close-on-exec, and each supervisor inherits only its own end). When roller
  dies, even by `kill -9`, the kernel closes its end and this process reads EOF. That is
  independent of threads, unlike `PR_SET_PDEATHSIG`, which fires when the *thread* that
  forked the child exits (asyncio or an executor may fork from a thread that ends early)
  and reaches only the direct child, not the harness's own subprocesses.
- The harness runs in its own session (process group = its pid). This process is a
  child subreaper (`PR_SET_CHILD_SUBREAPER`), so descendants the harness orphaned are
  re-parented here instead of to init, and can still be found and killed even when they
  left the process group.
Protocol on FD, one JSON object a line: to roller `{"event": "started", "pid": P}` or
`{"event": "error", "message": …}`, then `{"event": "exited", "returncode": N}` (negative:
killed by that signal); from roller `stop\n` (end it: SIGTERM to the group, SIGKILL after
GRACE_S) or EOF (roller is gone: SIGKILL to everything at once).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36


def _send(sock: socket.socket, message: dict[str, object]) -> None:
    with contextlib.suppress(OSError):  # roller may be gone; the cleanup still runs
        sock.sendall((json.dumps(message) + "\n").encode())


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name is in parentheses and may contain anything: split after it
        fields = stat[stat.rfind(b")") + 2 :].split()
        out[int(name)] = int(fields[1])
    return out


def _descendants(root: int) -> list[int]:
    parents = _parents()
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        children = [c for c, p in parents.items() if p == pid]
        found += children
        frontier += children
    return found


def _kill_everything(pgid: int) -> None:
    """SIGKILL the harness's process group and every descendant of this process, then
    reap them all (subreaped orphans included), until this process has no child left."""
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)
    for _ in range(50):  # a forking process may add children while we kill: repeat
        pids = _descendants(os.getpid())
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap(block=True)
    _reap(block=False)


def _reap(block: bool) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


_terminated = False


def _on_sigterm(*_: object) -> None:
    global _terminated  # noqa: PLW0603 - a signal handler has nowhere else to say it
    _terminated = True


def _wait(sock: socket.socket, wake: int, proc: subprocess.Popen[bytes], timeout: float) -> str:
    """What happened first: `exited`, `stop`, `gone` (roller's end closed, or this
    process was sent SIGTERM) or `timeout`."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if _terminated:
            return "gone"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        ready, _, _ = select.select([sock.fileno(), wake], [], [], min(left, 1.0))
        if wake in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake, 512)
        if sock.fileno() in ready:
            data = sock.recv(512)
            if not data:
                return "gone"
            if b"stop" in data:
                return "stop"
    return "exited"


def _end(proc: subprocess.Popen[bytes]) -> int:
    """The harness's return code, killing it first when it still runs; then nothing it
    started is left (its group, and every descendant re-parented here)."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGKILL)  # in case it left its own group
        proc.wait()
    _kill_everything(proc.pid)
    return proc.returncode


def main(argv: list[str]) -> int:
    fd, grace = int(argv[0]), float(argv[1])
    command = argv[argv.index("--") + 1 :]
    sock = socket.socket(fileno=fd)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Wake select() on SIGCHLD, so the harness's exit is seen at once. Handlers (not
    # ignored signals) are reset by exec, so the harness gets default dispositions.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        proc = subprocess.Popen(command, start_new_session=True, close_fds=True)
    except OSError as exc:
        _send(sock, {"event": "error", "message": f"cannot start {command[0]}: {exc.strerror}"})
        return 0
    _send(sock, {"event": "started", "pid": proc.pid})
    what = _wait(sock, wake_r, proc, float("inf"))
    if what == "stop":
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGTERM)
        what = _wait(sock, wake_r, proc, grace)
    returncode = _end(proc)
    _send(sock, {"event": "exited", "returncode": returncode, "ended_by": what})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
