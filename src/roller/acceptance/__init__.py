"""The subagent acceptance suite shared by every harness (issue 4).

Top layer, next to `roller.cli`: it drives `roller collect` end to end and reads the
captures it leaves, so it may import every other layer and nothing imports it.
- the data types (`Scenario`, `Expect`, `AcceptanceProfile`, `ScenarioOverride`) live in
  `roller.harnesses.acceptance`, so each harness package can declare its own profile;
- `scenarios`: the common scenario table (+ mock scenario files not built in);
- `profiles`: each harness's applicability and overrides, looked up in the registry;
- `oracle`: which agent the mock meant each request to come from (test knowledge);
- `checks`: what a finished run must show; `runner`: mock, collect, checks, concurrency.
Entry points: `scripts/test_subagents_e2e.py` and `tests/e2e/`.
"""
