"""Hypothesis settings shared by the wire tests.

`ROLLER_WIRE_EXAMPLES` (default 300, which keeps the suite at seconds) is the number of
generated streams each SDK-oracle test and the Gemini property test run. The acceptance
run is `ROLLER_WIRE_EXAMPLES=10000 pytest tests/wire`: 10,000 generated streams per
oracle and per property. The fuzz tests (SSE properties, robustness) run the same count
capped at 1,000: they check "never raises" over inputs far cheaper to explore.

The oracle and Gemini property tests draw their streams in batches of `BATCH` per
Hypothesis example (`EXAMPLES // BATCH` examples): a Hypothesis example costs ~1.3 ms of
its own, more than generating a stream (0.2-0.4 ms), so batching cuts the runs by a
quarter. Batches also let the SDK side run in worker processes while roller runs, opt-in
with `ROLLER_WIRE_ORACLE_WORKERS=2` (tests/wire/oracles.py `run_oracles`).

`TIMEOUT` lifts pytest-timeout's 300 s limit in proportion for long acceptance runs on a
busy machine.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("ROLLER_WIRE_EXAMPLES", "300"))
BATCH = 10
TIMEOUT = max(300, EXAMPLES // 10)

_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]
ORACLE_BATCHES = settings(
    max_examples=max(1, EXAMPLES // BATCH), deadline=None, suppress_health_check=_SLOW_IS_FINE
)
FUZZ = settings(
    max_examples=min(EXAMPLES, 1000), deadline=None, suppress_health_check=_SLOW_IS_FINE
)
