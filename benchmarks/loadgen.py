"""A small, cheap HTTP/1.1 load generator for the proxy benchmark: raw asyncio streams.

What it keeps, and why:
- Keep-alive connections opened once and reused for every request (a harness keeps its
  connections too; a connect per request would measure the kernel, not the proxy).
- One request in flight per connection; concurrency is the number of connections.
- No HTTP library: request bytes are built once per target and parsing does only what
  timing needs (status, `content-length` or chunked framing). On a 2-core machine the
  load generator shares the CPU with the mock and the proxy, so it must cost little, and
  it costs the same for every target, so ratios against the direct run stay fair.
- Times are `perf_counter_ns` from the request write: latency to the last body byte,
  time to first byte (TTFB) to the first body byte (a stream's first SSE event), and time
  to first token (TTFT) to the first body chunk holding `Target.token_marker` (the first
  text delta: what a user of a streaming model waits for).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class Target:
    """Where to send the load and the exact bytes of one request to it."""

    name: str
    host: str
    port: int
    request: bytes
    token_marker: bytes = b""

    @classmethod
    def build(
        cls,
        name: str,
        base_url: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        token_marker: bytes = b"",
    ) -> Target:
        parts = urlsplit(base_url)
        assert parts.hostname is not None and parts.port is not None
        lines = [f"POST {path} HTTP/1.1", f"Host: {parts.hostname}:{parts.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode()
        return cls(name, parts.hostname, parts.port, head + body, token_marker)


@dataclass
class Batch:
    """What one batch of requests measured, in nanoseconds."""

    target: str
    latencies: list[int] = field(default_factory=list)
    first_bytes: list[int] = field(default_factory=list)
    first_tokens: list[int] = field(default_factory=list)
    body_sizes: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    wall_ns: int = 0

    @property
    def throughput(self) -> float:
        """Completed requests per second."""
        return len(self.latencies) / (self.wall_ns / 1e9) if self.wall_ns else 0.0


class ResponseError(Exception):
    """The response was not a 200 or its framing was not understood."""


class Connection:
    """One keep-alive HTTP/1.1 connection; `exchange` sends one request, reads one reply."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, target: Target) -> Connection:
        reader, writer = await asyncio.open_connection(target.host, target.port)
        return cls(reader, writer)

    def close(self) -> None:
        self.writer.close()

    async def exchange(self, request: bytes, marker: bytes) -> tuple[int, int, int, int]:
        """(latency, time to first body byte, time to the first chunk holding `marker`,
        all in ns; body bytes). Without a marker the token time is the latency."""
        reader = self.reader
        start = time.perf_counter_ns()
        self.writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        if head[9:12] != b"200":
            raise ResponseError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
        length = -1
        chunked = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            lowered = name.strip().lower()
            if lowered == b"content-length":
                length = int(value)
            elif lowered == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        first = token = 0
        size = 0
        if chunked:
            while True:
                size_line = await reader.readuntil(b"\r\n")
                n = int(size_line.split(b";", 1)[0], 16)
                if n == 0:
                    while await reader.readuntil(b"\r\n") != b"\r\n":
                        pass  # trailer fields, if any, end at an empty line
                    break
                data = await reader.readexactly(n + 2)
                if not first:
                    first = time.perf_counter_ns()
                # A marker split across two chunks is found in the second: a little late,
                # equally for every target.
                if marker and not token and marker in data:
                    token = time.perf_counter_ns()
                size += n
        elif length >= 0:
            await reader.readexactly(length)
            first = time.perf_counter_ns()
            size = length
        else:
            raise ResponseError("a response with neither content-length nor chunked framing")
        end = time.perf_counter_ns()
        return end - start, (first or end) - start, (token or end) - start, size


class Pool:
    """`size` open connections to one target, reused batch after batch."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.connections: list[Connection] = []

    async def resize(self, size: int) -> None:
        while len(self.connections) < size:
            self.connections.append(await Connection.open(self.target))
        while len(self.connections) > size:
            self.connections.pop().close()

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        self.connections.clear()

    async def batch(self, requests: int) -> Batch:
        """Send `requests` requests, one in flight per connection, and time them."""
        result = Batch(self.target.name)
        remaining = requests
        request, marker = self.target.request, self.target.token_marker

        async def worker(index: int) -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                try:
                    connection = self.connections[index]
                    latency, first, token, size = await connection.exchange(request, marker)
                except (OSError, asyncio.IncompleteReadError, ResponseError, ValueError) as exc:
                    result.errors.append(f"{type(exc).__name__}: {exc}")
                    # The connection's state is unknown after a failure: start a fresh one.
                    self.connections[index].close()
                    self.connections[index] = await Connection.open(self.target)
                    continue
                result.latencies.append(latency)
                result.first_bytes.append(first)
                result.first_tokens.append(token)
                result.body_sizes.add(size)

        started = time.perf_counter_ns()
        await asyncio.gather(*(worker(i) for i in range(len(self.connections))))
        result.wall_ns = time.perf_counter_ns() - started
        return result
