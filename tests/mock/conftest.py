from __future__ import annotations

from collections.abc import Callable

import pytest

from roller.mock import MockModel, Scenario, load_scenario
from tests.support.servers import BackgroundLoop

ServeMock = Callable[..., tuple[MockModel, str]]


@pytest.fixture
def serve_mock(bg_loop: BackgroundLoop) -> ServeMock:
    """Start a mock on a real loopback port: serve_mock("spawn-one") -> (mock, base_url)."""

    def start(scenario: str | Scenario = "plain", **options: object) -> tuple[MockModel, str]:
        loaded = load_scenario(scenario) if isinstance(scenario, str) else scenario
        mock = MockModel(loaded, **options)  # type: ignore[arg-type]
        return mock, bg_loop.serve(mock.app())

    return start
