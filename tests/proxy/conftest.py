"""Fixtures for proxy tests: a proxy in the background loop in front of a fake upstream."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roller.capture.tape import TapeReadResult, read_tape
from roller.proxy import ProxyConfig, ProxyServer, Upstreams
from tests.support.servers import BackgroundLoop


@dataclass
class RunningProxy:
    loop: BackgroundLoop
    server: ProxyServer
    url: str
    tape_dir: Path

    def tape(self, *, idle_timeout: float = 5.0) -> TapeReadResult:
        """The tape once nothing is in flight (end frames are written by then)."""
        assert self.loop.run(self.server.wait_idle(idle_timeout)), "proxy never went idle"
        return read_tape(self.tape_dir)

    def only_exchange(self) -> Any:
        result = self.tape()
        assert result.problems == ()
        (exchange,) = result.exchanges
        return exchange


ProxyFactory = Callable[..., RunningProxy]


@pytest.fixture
def start_proxy(bg_loop: BackgroundLoop, tmp_path: Path) -> Iterator[ProxyFactory]:
    started: list[ProxyServer] = []

    def start(upstream: str | None = None, **options: Any) -> RunningProxy:
        upstreams = options.pop("upstreams", None) or Upstreams(default=upstream)
        tape_dir = options.pop("tape_dir", tmp_path / f"tape{len(started)}")
        server = ProxyServer(ProxyConfig(tape_dir=tape_dir, upstreams=upstreams, **options))
        url = bg_loop.run(server.start())
        started.append(server)
        return RunningProxy(bg_loop, server, url, tape_dir)

    yield start
    for server in started:
        bg_loop.run(server.stop(grace=1.0))
