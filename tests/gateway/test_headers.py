"""The gateway's header reading: the identity over the headers a rule can read equals the
identity over every header, and the credentials it strips are the header-by-header rule's.

`roller.gateway.headers` decides both once per name sequence; these compare its answers
with `roller.harnesses.identify` over the whole request and with `Redactor.secret_header`
name by name, on every probed harness's wire samples, under every declared harness,
with hostile additions (conflicting copies, forged native headers of other harnesses,
install-scoped ids, roller's headers, mixed case).
"""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from roller.gateway import headers as gateway_headers
from roller.gateway.headers import HeaderReading, identity_names
from roller.gateway.tokens import presented_in, presented_token
from roller.harnesses import harness_names, identify, registry
from roller.proxy import Redactor
from tests.identity import wire_samples as w

BODIES: list[Any] = [
    None,
    w.cc_body(),
    w.cx_body(),
    w.ds_body("ds-1", parent="ds-0", depth=1),
    w.PI_BODY,
    w.HERMES_BODY,
    w.QWEN_RESPONSES_BODY,
]
HOSTILE: list[list[tuple[str, str]]] = [
    [],
    [("X-Roller-Session-Id", "r1"), ("x-roller-agent-id", "a1")],
    [("x-session-id", "one"), ("X-Session-Id", "two")],  # conflicting copies
    [("x-claude-code-session-id", "forged"), ("thread-id", "t")],  # another harness's
    [("x-codex-turn-metadata", '{"not": "closed"'), ("session_id", "s")],
    [("Authorization", "Bearer rlr_x"), ("x-api-key", "rlr_x"), ("cookie", "c=1")],
]


def _samples() -> list[list[tuple[str, str]]]:
    dicts = [v for v in vars(w).values() if isinstance(v, dict) and "user-agent" in v]
    dicts += [w.cx_headers("t1"), w.cx_headers("t2", parent="t1"), w.ds_headers("ds-1")]
    return [list(d.items()) for d in dicts]


def _multidict(pairs: list[tuple[str, str]]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


def test_identity_over_the_readable_headers_is_the_identity_over_all() -> None:
    reading = HeaderReading(Redactor())
    harnesses = (*harness_names(), "no-such-harness")
    compared = 0
    for sample, extra in product(_samples(), HOSTILE):
        headers = _multidict([*sample, *extra])
        plan, pairs = reading.of(headers)
        picked = plan.identity_headers(pairs)
        assert all(name.lower() in identity_names(registry()) for name, _ in picked)
        for harness, body, trust in product(harnesses, BODIES, (True, False)):
            full = identify(harness, headers, body, trust_roller=trust)
            assert identify(harness, picked, body, trust_roller=trust) == full
            compared += 1
    assert compared > 1000


def test_credentials_are_the_header_by_header_rule() -> None:
    redactor = Redactor(extra_headers=["X-Team-Secret"])
    reading = HeaderReading(redactor)
    for sample, extra in product(_samples(), HOSTILE):
        headers = _multidict([*sample, *extra, ("x-team-secret", "t")])
        expected = tuple(dict.fromkeys(n.lower() for n in headers if redactor.secret_header(n)))
        assert reading.of(headers)[0].credentials == expected
        assert "x-team-secret" in expected


def test_past_the_bound_a_reading_is_still_built_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gateway_headers, "MAX_READINGS", 2)
    reading = HeaderReading(Redactor())
    for n in range(5):
        headers = _multidict([(f"x-noise-{n}", "v"), ("X-Session-Id", f"s{n}")])
        plan, pairs = reading.of(headers)
        assert plan.identity_headers(pairs) == (("X-Session-Id", f"s{n}"),)
    assert len(reading._readings) == 2


TOKEN_HEADERS: list[list[tuple[str, str]]] = [
    [],
    [("X-Api-Key", "rlr_a")],
    [("x-api-key", "rlr_a"), ("Authorization", "Bearer rlr_a")],
    [("authorization", "Bearer rlr_a"), ("X-API-KEY", " rlr_b ")],  # different credentials
    [("Authorization", "Basic abc"), ("x-api-key", "rlr_a")],  # not a Bearer token
    [("x-goog-api-key", "rlr_a"), ("x-api-key", "rlr_a"), ("x-goog-api-key", "rlr_a")],
    [("x-api-key", "rlr_\udcff")],  # not UTF-8
    [("authorization", "bearer\trlr_a"), ("AUTHORIZATION", "Bearer rlr_c")],
]


def test_the_token_headers_are_the_lookup_by_name() -> None:
    reading = HeaderReading(Redactor())
    queries: list[list[tuple[str, str]]] = [[], [("key", "rlr_a")], [("KEY", "rlr_z")]]
    for sample, extra, token, query in product(_samples(), HOSTILE, TOKEN_HEADERS, queries):
        headers = _multidict([*sample, *extra, *token])
        plan, pairs = reading.of(headers)
        assert presented_in(plan.token_headers(pairs), query) == presented_token(headers, query)
