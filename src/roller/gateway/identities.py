"""The wire identity of a gateway request, its session plan and its row summary, kept per
evidence.

A harness's turns in one conversation carry the same identity headers and the same body
values at the paths its rules read (`WireProfile.body_paths`), so the gateway keeps each
request's `Identified` (the `WireIdentity`, the `SessionPlan` it maps to, the summary the
row and the tape annotation hold) per (credential, identity headers, those body values)
and derives only a request whose evidence it has not seen. Facts relied on:
- `roller.harnesses.identify` reads the headers only by name (the gateway hands it just
  the pairs an identity rule can read, `roller.gateway.headers`) and a body only at the
  declared paths (`roller.identity.memo`): equal keys give equal identities. Identity is
  never guessed: the key is the whole evidence, compared exactly
  (`tests/gateway/test_identities.py` compares kept and derived over many cases).
- A credential is one configured client (`GatewayPolicy.clients` is keyed by its token
  hash) whose declared harness and roller-header trust do not change while it runs.
- Kept values are shared between requests and never mutated (the row and the tape
  annotation only serialize them).
Rules kept: the kept set follows the harness registry as it is now (a harness registered
later clears it); it is bounded (evidence comes from clients): past `MAX_KEPT` keys it
is emptied and refills; a profile whose rule does not declare its body paths, or a body
value too large to key (`roller.identity.memo.MAX_NODES`), is derived every time.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Final

from roller.gateway.config import Client
from roller.gateway.derivation import SessionPlan, plan_session
from roller.harnesses import identify, registry
from roller.harnesses.registry import Registry
from roller.identity import WireIdentity
from roller.identity.evidence import BodyPath
from roller.identity.memo import body_values

MAX_KEPT: Final = 4096
Pair = tuple[str, str]
_UNDECLARED: Final = "undeclared"  # a profile whose body paths are not declared


def identity_summary(identity: WireIdentity, plan: SessionPlan) -> dict[str, Any]:
    """What the call row keeps of the wire identity (the full evidence is on the tape and
    is derived again by export)."""
    return {
        "rule": identity.rule,
        "session_key": identity.session_key,
        "participant_key": identity.participant_key,
        "parent_key": identity.parent_key,
        "is_child": identity.is_child,
        "rejected": [[r.field, r.reason] for r in identity.rejected],
        "participant_unknown": plan.participant_unknown,
    }


@dataclass(frozen=True, slots=True)
class Identified:
    """One request's identity and what the gateway derives from it."""

    identity: WireIdentity
    plan: SessionPlan
    summary: dict[str, Any]


def identified(client: Client, headers: tuple[Pair, ...], body: object) -> Identified:
    """The full derivation (what `Identities.of` keeps)."""
    identity = identify(client.harness, headers, body, trust_roller=client.roller_headers)
    plan = plan_session(client, identity)
    return Identified(identity, plan, identity_summary(identity, plan))


class Identities:
    """The identities of one gateway's requests, kept per evidence (bounded)."""

    def __init__(self) -> None:
        self._registry: Registry | None = None
        self._paths: dict[str, tuple[BodyPath, ...] | str] = {}  # harness -> its paths
        self._kept: dict[Hashable, Identified] = {}

    def of(self, client: Client, headers: tuple[Pair, ...], body: object) -> Identified:
        """`identified(client, headers, body)`, kept when its evidence can key it."""
        current = registry()
        if current is not self._registry:  # a harness was registered or removed
            self._registry = current
            self._paths.clear()
            self._kept.clear()
        paths = self._paths.get(client.harness)
        if paths is None:
            declared = current.wire(client.harness).body_paths()
            paths = self._paths[client.harness] = _UNDECLARED if declared is None else declared
        values = None if isinstance(paths, str) else body_values(paths, body)
        if values is None:
            return identified(client, headers, body)
        key = (client.token_sha256, headers, values)
        found = self._kept.get(key)
        if found is None:
            found = identified(client, headers, body)
            if len(self._kept) >= MAX_KEPT:
                self._kept.clear()
            self._kept[key] = found
        return found
