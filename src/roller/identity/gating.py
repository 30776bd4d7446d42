"""Which headers each declared harness is trusted to send, and which ids never key anything.

The gate is the reason a forged header cannot choose an identity: a native identity header
is read only when the declared harness is the one that sends it. Names such as
`x-session-id`, `session-id`, `thread-id` or `session_id` are generic: any SDK, proxy or
client could stamp them, so reading them for the wrong harness would let an unrelated
value key a session. The gate fails closed: a header another registered harness owns is
recorded as rejected, unread, and the request falls back to what its own harness sends
(often nothing).

Install-scoped ids are one value per installation, shared by every conversation on the
machine; keying a session on one would merge every run into one row. They are never read
as identity and never copied into evidence, only noted as rejected.

A `Gate` is derived from the profiles of every registered harness
(`roller.harnesses.registry`); nothing here names a harness.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from roller.identity.evidence import Evidence
from roller.identity.profile import WireProfile

ROLLER_SESSION: Final = "x-roller-session-id"
ROLLER_AGENT: Final = "x-roller-agent-id"
ROLLER_PARENT_AGENT: Final = "x-roller-parent-agent-id"
ROLLER_HEADERS: Final = (ROLLER_SESSION, ROLLER_AGENT, ROLLER_PARENT_AGENT)

REASON_INSTALL_SCOPED: Final = "install-scoped id, never a session key"
REASON_ACCOUNT_SCOPED: Final = "account-scoped id, never a session key"
REASON_UNKNOWN_HARNESS: Final = "unknown harness name; only roller headers are read"
REASON_ROLLER_UNTRUSTED: Final = "roller header, not trusted for this credential"


@dataclass(frozen=True, slots=True)
class Gate:
    """The trust table over a set of profiles.

    - `harnesses`: the declared names the gate knows; any other is treated like a
      harness without native identity (only roller's headers) and noted as rejected;
    - `owners`: header name -> the harnesses trusted to send it;
    - `install_scoped`: header names of install-scoped ids (any harness's).
    """

    harnesses: frozenset[str]
    owners: Mapping[str, frozenset[str]]
    install_scoped: frozenset[str]

    @classmethod
    def of(cls, profiles: Iterable[WireProfile]) -> Gate:
        profiles = tuple(profiles)
        owners: dict[str, set[str]] = {}
        for profile in profiles:
            for header in profile.headers():
                owners.setdefault(header, set()).add(profile.harness)
        return cls(
            harnesses=frozenset(p.harness for p in profiles),
            owners={name: frozenset(names) for name, names in owners.items()},
            install_scoped=frozenset(h for p in profiles for h in p.install_scoped),
        )

    def trusted(self, header: str, harness: str) -> bool:
        """Whether `harness` (as declared) may be believed when it sends `header`."""
        owners = self.owners.get(header)
        return owners is not None and harness in owners

    def untrusted_reason(self, header: str, harness: str) -> str:
        owners = ", ".join(sorted(self.owners.get(header, ())))
        return f"header of {owners}, not trusted for declared harness {_shown(harness)}"

    def check(self, harness: str, ev: Evidence) -> None:
        """Reject, without reading, every native header the declared harness does not send,
        and every install-scoped id."""
        if harness not in self.harnesses:
            ev.reject("harness", REASON_UNKNOWN_HARNESS)
        for name in sorted(ev.view.names()):
            if name in self.owners and not self.trusted(name, harness):
                ev.reject(name, self.untrusted_reason(name, harness))
            elif name in self.install_scoped:
                ev.reject(name, REASON_INSTALL_SCOPED)


def _shown(harness: str) -> str:
    # The declared name comes from configuration, but keep reasons bounded and printable.
    if harness.isprintable() and 0 < len(harness) <= 40:
        return harness
    return "(unprintable name)"
