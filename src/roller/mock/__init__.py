"""roller.mock — the embedded default model: one server speaking every protocol roller records.

`MockModel(load_scenario("spawn-one")).app()` is an aiohttp application answering
Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and Gemini, streamed and not,
from a declarative scenario (docs/mock.md). `roller mock-model` runs it standalone.
"""

from __future__ import annotations

from roller.mock.scenario import Decision, Rule, Scenario
from roller.mock.scenario_files import builtin_scenarios, load_scenario, parse_scenario
from roller.mock.server import MockModel, RunningMock, ServedRequest

__all__ = [
    "Decision",
    "MockModel",
    "Rule",
    "RunningMock",
    "Scenario",
    "ServedRequest",
    "builtin_scenarios",
    "load_scenario",
    "parse_scenario",
]
