"""The subagent acceptance suite shared by every harness (issue 4).

Top layer, next to `roller.cli`: it drives `roller collect` end to end and reads the
captures it leaves, so it may import every other layer and nothing imports it.
- `spec`: the data types (`Scenario`, `Expect`, `HarnessProfile`, `ScenarioOverride`);
- `scenarios`: the common scenario table (+ mock scenario files not built in);
- `profiles`: per-harness applicability and overrides, one module per harness;
- `oracle`: which agent the mock meant each request to come from (test knowledge);
- `checks`: what a finished run must show; `runner`: mock, collect, checks, concurrency.
Entry points: `scripts/test_subagents_e2e.py` and `tests/e2e/`.
"""
