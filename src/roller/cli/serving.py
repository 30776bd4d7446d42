"""What the foreground server commands share (`proxy`, `gateway`, `mock-model`).

Not a command: the listen address they parse, and how they wait to be stopped. Rules:
- `--listen` is `HOST:PORT` or `[IPV6]:PORT`, a port from 0 (pick a free one) to
  65535; anything else is one usage error naming the value;
- the SIGINT/SIGTERM handlers are in place before the command announces where it
  listens, so a script that signals as soon as it reads that line gets a clean stop;
  they are removed once a signal arrived, so a second one during shutdown acts as usual.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence

import click

from roller.errors import UsageError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` or `[IPV6]:PORT` -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(
            f"--listen must be HOST:PORT with a port from 0 to 65535 "
            f"(e.g. 127.0.0.1:8080), got {value!r}"
        )
    return host, int(port)


async def announce_and_wait(lines: Sequence[str]) -> None:
    """Print `lines` on stdout, then return on the first SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        for line in lines:
            click.echo(line)
        await stop.wait()
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
