from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.servers import BackgroundLoop

if TYPE_CHECKING:
    from tests.export.real_captures import RealCaptures


@pytest.fixture
def bg_loop() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop()
    try:
        yield loop
    finally:
        loop.close()


@pytest.fixture(scope="session")
def real_captures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCaptures]:
    """Every checked-in real run, published once per session and shared read-only by the
    export, chat-view and viewer tests (tests/export/real_captures.py)."""
    from tests.export.real_captures import publish_all  # finalize is imported only if used

    published = publish_all(tmp_path_factory.mktemp("real-captures"))
    before = published.fingerprint()
    yield published
    assert published.fingerprint() == before, "a test wrote into the shared real captures"
