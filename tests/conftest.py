from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.servers import BackgroundLoop


@pytest.fixture
def bg_loop() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop()
    try:
        yield loop
    finally:
        loop.close()
