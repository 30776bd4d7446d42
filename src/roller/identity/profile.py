"""`WireProfile`: what one harness puts on the wire about who is calling, as data.

A harness package declares its profile (`roller.harnesses.<name>.profile`); this package
reads requests through it and never names a harness itself. A profile says:
- `harness`: the declared name the profile belongs to (the gateway credential's or the
  run's `harness`, never sniffed from the request);
- `rule`: the native header rule, one of the generic rule kinds (`rules.AgentScoped`,
  `rules.SessionPerAgent`, `rules.SessionHeader`, `threads.ThreadSession`,
  `lineage.BodyLineage`) parametrized by the harness's header names, or None when the
  harness sends no identity header. Every header the rule reads is trusted for this
  harness only (`gating.Gate`);
- `body`: the body-level conversation id (`body.BodyField`, `body.JsonStringField`), or
  None;
- `install_scoped`: headers carrying an install-scoped id (one value per installation,
  shared by every conversation on the machine): never read, never in evidence, rejected
  under whichever harness is declared;
- `roller_headers`: the harness has no identity of its own and declares its participants
  with roller's `x-roller-*` headers (an agent framework run as `generic`). A gateway
  trusts those headers by default only from credentials of such a harness: from any
  other they could forge a subagent and its parent.

Every rule kind also declares the body paths it reads (`body_paths`): `derive` reads
nothing else of a body, so its answer is a function of the headers the gate and the
rules read and of the values at those paths (what `roller.identity.memo` keys on). A
rule that declares none (`body_paths` missing) is never kept, always derived.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from roller.identity.evidence import BodyPath, Evidence
from roller.identity.keys import Keys
from roller.identity.wire_identity import BodyConversation


class HeaderRule(Protocol):
    """A native header rule: reads only its own headers, returns `Keys` or None.

    `name` is the rule name recorded in `WireIdentity.rule` (stable: it is persisted in
    every call record's `native_identity`). Gating happens before `read` is called.
    """

    @property
    def name(self) -> str: ...

    def headers(self) -> tuple[str, ...]:
        """Every header this rule reads (lower-case): trusted for its harness only."""
        ...

    def body_paths(self) -> tuple[BodyPath, ...]:
        """Every body path this rule reads (`dig`'s; () for a rule of headers only)."""
        ...

    def read(self, ev: Evidence, body: object) -> Keys | None: ...


class BodyRule(Protocol):
    """A body-level conversation id: `read` records evidence and rejections into `ev`."""

    def body_paths(self) -> tuple[BodyPath, ...]:
        """Every body path this rule reads."""
        ...

    def read(self, body: object, ev: Evidence) -> BodyConversation | None: ...


@dataclass(frozen=True, slots=True)
class WireProfile:
    """One harness's identity facts on the wire (see the module docstring)."""

    harness: str
    rule: HeaderRule | None = None
    body: BodyRule | None = None
    install_scoped: tuple[str, ...] = ()
    roller_headers: bool = False

    def headers(self) -> tuple[str, ...]:
        """The native headers this harness is trusted to send."""
        return self.rule.headers() if self.rule is not None else ()

    def body_paths(self) -> tuple[BodyPath, ...] | None:
        """Every body path `derive` reads under this profile; None when a rule does not
        declare its own (a kind from outside this package): then nothing may be kept."""
        paths: list[BodyPath] = []
        for rule in (self.rule, self.body):
            if rule is None:
                continue
            declared = getattr(rule, "body_paths", None)
            if declared is None:
                return None
            paths.extend(declared())
        return tuple(paths)
