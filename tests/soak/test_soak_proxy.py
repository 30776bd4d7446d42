"""Soak: `roller proxy` under 200 concurrent streaming clients and every fault at once.

Faults (`tests.soak.load.FAULTS`): upstream resets mid-stream, 429/500/529, a slow
upstream, clients that disconnect mid-stream, malformed bodies, 20 MB bodies, invalid
UTF-8 split across chunks (response and request), header lines the HTTP parser refuses.
Asserted (`tests.soak.checks`): one ended tape exchange per request with the outcome its
fault must give, no secret in the tape or the log, flat RSS, the process alive. A bounded
run by default; `ROLLER_SOAK_SECONDS` / `ROLLER_SOAK_CLIENTS` make it longer or wider.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from roller.capture.tape import read_tape
from tests.soak.checks import CLIENTS, SECONDS, check_no_secret, check_tape, soak
from tests.soak.load import Target
from tests.soak.processes import ROLLER, serve, upstream


def test_the_proxy_survives_a_soak_with_faults(tmp_path: Path) -> None:
    key, x_key, query_key = (f"sk-soak-{secrets.token_hex(12)}" for _ in range(3))
    upstream_proc = upstream(key, tmp_path / "upstream.log")
    tape_dir, log = tmp_path / "tape", tmp_path / "proxy.log"
    proxy = serve(
        [
            ROLLER,
            "proxy",
            "--upstream",
            upstream_proc.url,
            "--tape",
            str(tape_dir),
            "--redact-header",
            "x-key",
            "--redact-query",
            "k",
            "--read-timeout",
            "30",
        ],
        log,
    )
    try:
        target = Target(
            url=proxy.url,
            headers=lambda n: {"authorization": f"Bearer {key}", "x-key": x_key},
            secrets=(key, x_key, query_key),
            clients=CLIENTS,
            seconds=SECONDS,
            max_big=4,  # two per phase
        )
        load, result = soak("proxy", proxy, target)
        assert proxy.alive(), log.read_text()[-3000:]
    finally:
        code = proxy.stop()
        upstream_proc.stop()
    assert code == 0, log.read_text()[-3000:]
    exchanges = check_tape(read_tape(tape_dir), load)
    assert len(exchanges) == len(load.exchanges()) > CLIENTS
    check_no_secret(target.secrets, tape_dir, log)
    print(result.line())
