"""The soak suite's clients: many concurrent streaming clients, each request a fault.

`run_load(target)` runs `target.clients` concurrent clients for `target.seconds`; each
client sends requests back to back, the fault of each chosen from `FAULTS` by a seeded
schedule, and keeps what it sent and saw (`Sent`). Every request carries its own id in
`x-soak-id`, so a test finds its one tape exchange (and call row) by it and checks the
outcome recorded against the one the fault must give (`Fault.outcomes`).

Faults that are requests of their own (no HTTP exchange reaches the handler): `ctrl`, a
header line with a control character carrying a secret, which the HTTP parser refuses;
it never becomes an exchange, and its secret must appear in no log.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

import aiohttp

BIG_BODY_BYTES: Final = 20 * 1024 * 1024


@dataclass(frozen=True)
class Fault:
    name: str
    weight: int  # relative frequency in the schedule
    outcomes: frozenset[str]  # what the exchange's end frame may say
    upstream_status: int | None = None  # what the end frame must say, when it says one
    gateway_only: bool = False


_OK = frozenset({"ok"})
FAULTS: Final = (
    Fault("ok", 30, _OK, 200),
    Fault("reset", 6, frozenset({"upstream_disconnected"}), 200),
    Fault("s429", 4, _OK, 429),
    Fault("s500", 3, _OK, 500),
    Fault("s529", 3, _OK, 529),
    Fault("slow", 3, _OK, 200),
    Fault("client_gone", 5, frozenset({"client_disconnected"}), 200),
    Fault("malformed", 4, _OK, 400),
    Fault("utf8", 4, _OK, 200),
    Fault("utf8_request", 3, _OK, 400),
    Fault("big", 1, _OK, 200),
    Fault("ctrl", 2, frozenset()),  # refused by the HTTP parser: no exchange
    Fault("unauth", 8, frozenset({"rejected"}), None, gateway_only=True),
)
BY_NAME: Final = {f.name: f for f in FAULTS}


@dataclass(frozen=True)
class Target:
    url: str  # base URL of the proxy or gateway
    headers: Callable[[int], Mapping[str, str]]  # what client n sends (its credentials)
    secrets: tuple[str, ...]  # values that must never reach disk or a log
    clients: int
    seconds: float
    max_big: int  # 20 MB bodies in the whole run (the machine has 2 cores)
    gateway: bool = False
    seed: int = 15
    phase: str = "p1"  # prefixes every soak id (a run may have several phases)


@dataclass
class Sent:
    soak_id: str
    fault: str
    status: int | None = None  # what the client saw; None: no response head
    error: str | None = None


@dataclass
class LoadResult:
    sent: list[Sent] = field(default_factory=list)
    seconds: float = 0.0

    def exchanges(self) -> list[Sent]:
        """The requests that must each be one exchange on the tape."""
        return [s for s in self.sent if s.fault != "ctrl"]

    def extend(self, other: LoadResult) -> None:
        self.sent.extend(other.sent)
        self.seconds += other.seconds

    def faults(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.sent:
            counts[s.fault] = counts.get(s.fault, 0) + 1
        return counts


def _schedule(target: Target, rng: random.Random) -> list[str]:
    faults = [f for f in FAULTS if target.gateway or not f.gateway_only]
    names = [f.name for f in faults]
    return rng.choices(names, weights=[f.weight for f in faults], k=100_000)


def _body(fault: str, stream: bool = True) -> bytes:
    if fault == "malformed":
        return b'{"model": "soak", "messages": [{"role": '
    message = {"role": "user", "content": "hello"}
    return json.dumps({"model": "soak-model", "stream": stream, "messages": [message]}).encode()


async def _chunks_with_split_utf8() -> AsyncIterator[bytes]:
    # An invalid UTF-8 sequence split across two chunks of a chunked request body.
    yield b'{"model": "soak", "messages": "\xe2\x82'
    await asyncio.sleep(0.005)
    yield b'\x28"}'


async def _control_character(target: Target, soak_id: str) -> Sent:
    """A header line the HTTP parser refuses; its value must never be logged."""
    host, port = target.url.removeprefix("http://").rsplit(":", 1)
    secret = target.secrets[0]
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
            + f"x-api-key: {secret}\x01{soak_id}\r\n".encode()
            + b"content-length: 0\r\nconnection: close\r\n\r\n"
        )
        await writer.drain()
        line = await reader.readline()
        writer.close()
    except OSError as exc:  # the server is gone (the crash test kills it)
        return Sent(soak_id, "ctrl", None, f"{type(exc).__name__}: {exc}")
    status = int(line.split()[1]) if line.startswith(b"HTTP/") else None
    return Sent(soak_id, "ctrl", status)


async def _one(
    session: aiohttp.ClientSession, target: Target, n: int, fault: str, soak_id: str
) -> Sent:
    if fault == "ctrl":
        return await _control_character(target, soak_id)
    headers = {**target.headers(n), "x-soak-fault": fault, "x-soak-id": soak_id}
    headers["content-type"] = "application/json"
    if fault == "unauth":
        headers = {k: v for k, v in headers.items() if k != "authorization"}
        headers["authorization"] = "Bearer rlr_not-a-token-" + soak_id
    data: bytes | AsyncIterator[bytes] = _body(fault)
    if fault == "big":
        data = _body(fault, stream=False)[:-1] + b', "pad": "' + b"x" * BIG_BODY_BYTES + b'"}'
    elif fault == "unauth":
        data = b"x" * (1024 * 1024)  # an unauthenticated flood's body must cost nothing
    elif fault == "utf8_request":
        data = _chunks_with_split_utf8()
    sent = Sent(soak_id, fault)
    url = target.url + "/v1/chat/completions?k=" + target.secrets[-1]
    try:
        async with session.post(url, data=data, headers=headers) as response:
            sent.status = response.status
            if fault == "client_gone":
                await response.content.readany()
                response.close()  # gone mid-stream
                return sent
            await response.read()
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        sent.error = f"{type(exc).__name__}: {exc}"
    return sent


async def _client(
    session: aiohttp.ClientSession,
    target: Target,
    n: int,
    schedule: list[str],
    deadline: float,
    result: LoadResult,
    bigs: list[int],
) -> None:
    i = 0
    while time.monotonic() < deadline:
        fault = schedule[(n * 7919 + i * 104729) % len(schedule)]
        if fault == "big":
            if bigs[0] >= target.max_big:
                fault = "ok"
            else:
                bigs[0] += 1
        soak_id = f"{target.phase}-c{n}-r{i}"
        result.sent.append(await _one(session, target, n, fault, soak_id))
        i += 1


async def run_load(target: Target) -> LoadResult:
    rng = random.Random(target.seed)
    schedule = _schedule(target, rng)
    result = LoadResult()
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=120)
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        deadline = started + target.seconds
        bigs = [0]
        await asyncio.gather(
            *(
                _client(session, target, n, schedule, deadline, result, bigs)
                for n in range(target.clients)
            )
        )
    result.seconds = time.monotonic() - started
    return result
