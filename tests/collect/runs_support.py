"""What the collection-run tests share: a mock model the test owns (so it can count the
requests every `roller collect` of a run makes), the SDK program, and the collect command
line of a generic run against that mock."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.servers import BackgroundLoop

from roller.mock.scenario_files import load_scenario
from roller.mock.server import MockModel

AGENT = Path(__file__).with_name("sdk_agent.py")
# The SDKs refuse to start without a key; against the test's mock any value will do.
KEYS = {"ANTHROPIC_API_KEY": "sk-test-placeholder", "OPENAI_API_KEY": "sk-test-placeholder"}


class CountingMock:
    """A mock model on 127.0.0.1 in a background loop; `requests` is what it served."""

    def __init__(self, scenario: str = "plain") -> None:
        self.mock = MockModel(load_scenario(scenario))
        self._loop = BackgroundLoop()
        self.url = self._loop.serve(self.mock.app())

    @property
    def requests(self) -> int:
        return self.mock.requests

    def close(self) -> None:
        self._loop.close()


@contextmanager
def counting_mock(scenario: str = "plain") -> Iterator[CountingMock]:
    mock = CountingMock(scenario)
    try:
        yield mock
    finally:
        mock.close()


def write_tasks(path: Path, ids: Sequence[str]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "prompt": f"task {i}"}) + "\n" for i in ids))
    return path


def generic_run(
    api_base: str, run_dir: Path, tasks: Path, *extra: str, mode: str = "plain"
) -> list[str]:
    """The `roller collect` arguments of a generic single-agent tasks run."""
    return [
        "collect", "--harness", "generic", "--single-agent", "--api-base", api_base,
        "--tasks", str(tasks), "--run-dir", str(run_dir), *extra,
        "--", sys.executable, str(AGENT), mode,
    ]  # fmt: skip
