"""The gateway's kept identities: what `Identities.of` answers is exactly the full derivation.

Two facts make keeping them sound, and both are checked here on every registered
harness: `derive` reads a body only at the paths its profile declares (a body cut down
to those paths derives the same identity as the whole body), and equal evidence keys
mean values the rules cannot tell apart (1, 1.0, True and "1" at a declared path are
different keys). Then one warm `Identities` is run over many requests (probed harness
headers with hostile additions, every declared harness, both trusts, bodies whose
declared values vary in value and type) and compared with a fresh derivation each time.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from itertools import product
from typing import Any

import pytest

from roller.gateway import identities as gateway_identities
from roller.gateway.config import Client
from roller.gateway.headers import HeaderReading
from roller.gateway.identities import Identities, identified
from roller.harnesses import harness_names, identify, registry
from roller.identity import WireProfile
from roller.identity.evidence import BodyPath, Evidence
from roller.identity.keys import Keys
from roller.identity.memo import MAX_NODES, body_values
from roller.proxy import Redactor
from tests.gateway.test_headers import HOSTILE, _multidict, _samples
from tests.identity import wire_samples as w

BASE_BODIES: list[Any] = [
    None,
    [],
    "text",
    w.cc_body(),
    w.cc_body(session="other-session"),
    w.cx_body(),
    w.ds_body("ds-1", parent="ds-0", depth=1),
    w.ds_body("ds-1"),
    w.ds_body(w.DS_CHILD, parent=w.DS_ROOT, depth=2),
    w.PI_BODY,
    w.HERMES_BODY,
    w.QWEN_RESPONSES_BODY,
]
ODD_VALUES: list[Any] = [1, 1.0, True, "1", 0.0, -0.0, None, [], {}, ["a"], {"k": 1}, "x" * 300]


def _all_paths() -> list[BodyPath]:
    paths: list[BodyPath] = []
    for name in harness_names():
        declared = registry().wire(name).body_paths()
        assert declared is not None, name  # every built-in rule kind declares its paths
        paths.extend(p for p in declared if p not in paths)
    return paths


def _put(body: dict[str, Any], path: BodyPath, value: Any) -> None:
    for key in path[:-1]:
        inner = body.get(key)
        if not isinstance(inner, dict):
            inner = body[key] = {}
        body = inner
    body[path[-1]] = value


def _bodies() -> list[Any]:
    """The base bodies, and dict bodies with each declared path set to odd values."""
    out = list(BASE_BODIES)
    for base, path, value in product(BASE_BODIES, _all_paths(), ODD_VALUES):
        if isinstance(base, dict):
            body = copy.deepcopy(base)
            _put(body, path, value)
            out.append(body)
    return out


def _projected(body: Any, paths: list[BodyPath]) -> Any:
    """`body` holding only the values at `paths` (what `dig` can reach of them)."""
    if not isinstance(body, dict):
        return body
    out: dict[str, Any] = {}
    for path in paths:
        value: Any = body
        for key in path:
            if not isinstance(value, dict) or key not in value:
                break
            value = value[key]
        else:
            _put(out, path, copy.deepcopy(value))
    return out


def test_a_body_cut_to_the_declared_paths_derives_the_same_identity() -> None:
    compared = 0
    for name, body in product((*harness_names(), "no-such-harness"), _bodies()):
        declared = registry().wire(name).body_paths()
        assert declared is not None
        kept = _projected(body, list(declared))
        for sample, trust in product(_samples(), (True, False)):
            full = identify(name, sample, body, trust_roller=trust)
            assert identify(name, sample, kept, trust_roller=trust) == full, (name, body)
            compared += 1
    assert compared > 5000


def test_values_the_rules_can_tell_apart_are_different_keys() -> None:
    path: list[BodyPath] = [("a",)]
    keys = [body_values(path, {"a": value}) for value in ODD_VALUES]
    keys.append(body_values(path, {}))
    assert all(key is not None for key in keys)
    assert len(set(keys)) == len(keys)
    assert body_values(path, {"a": [{"b": 1}, {"b": 1.0}]}) != body_values(
        path, {"a": [{"b": 1.0}, {"b": 1}]}
    )


def test_a_value_too_large_or_not_json_is_not_keyed() -> None:
    path: list[BodyPath] = [("a",)]
    assert body_values(path, {"a": list(range(MAX_NODES))}) is None
    assert body_values(path, {"a": list(range(MAX_NODES - 2))}) is not None
    assert body_values(path, {"a": (1, 2)}) is None  # a tuple is not parsed JSON
    assert body_values(path, {"a": {1: "x"}}) is None


def test_kept_identities_are_the_full_derivation() -> None:
    reading = HeaderReading(Redactor())
    ids = Identities()
    clients = [
        Client(f"{i:064x}", "alice", "acme", name, roller_headers=trust)
        for i, (name, trust) in enumerate(
            product((*harness_names(), "no-such-harness"), (True, False))
        )
    ]
    bodies = _bodies()
    compared = 0
    for round_ in range(2):  # the second round answers from what the first kept
        for sample, extra in product(_samples(), HOSTILE):
            plan, pairs = reading.of(_multidict([*sample, *extra]))
            picked = plan.identity_headers(pairs)
            for client, body in product(clients, bodies[round_::7]):
                got = ids.of(client, picked, body)
                assert got == identified(client, picked, body), (client.harness, body)
                compared += 1
    assert compared > 10000
    assert 0 < len(ids._kept) < compared / 2  # kept, and answered from what was kept


def test_past_the_bound_identities_are_still_derived(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway_identities, "MAX_KEPT", 3)
    ids = Identities()
    client = Client("f" * 64, "alice", "acme", "claude-code")
    for n in range(10):
        headers = (("x-claude-code-session-id", f"s{n}"),)
        body = w.cc_body(session=f"s{n}")
        assert ids.of(client, headers, body) == identified(client, headers, body)
        assert len(ids._kept) <= 3


@dataclass(frozen=True)
class _Undeclared:
    """A rule kind from outside `roller.identity` that does not declare its body paths."""

    name: str = "undeclared"

    def headers(self) -> tuple[str, ...]:
        return ()

    def read(self, ev: Evidence, body: object) -> Keys | None:
        return None


def test_a_rule_without_declared_paths_is_never_keyed() -> None:
    profile = WireProfile(harness="x", rule=_Undeclared())  # type: ignore[arg-type]
    assert profile.body_paths() is None
    assert WireProfile(harness="x").body_paths() == ()
