"""Which headers each declared harness is trusted to send, and which ids never key anything.

The gate is the reason a forged header cannot choose an identity: a native identity header
is read only when the declared harness is the one that sends it. `x-session-id`,
`session-id`, `thread-id`, `session_id` and `x-parent-session-id` are generic names any SDK,
proxy or client could stamp, so reading them for the wrong harness would let an unrelated
value key a session. The gate fails closed: an undeclared header is recorded as rejected
and the request falls back to what its own harness sends (often nothing).

Install-scoped ids are one value per installation, shared by every conversation on the
machine; keying a session on one would merge every run into one row. They are never read
as identity and never copied into evidence, only noted as rejected.
"""

from __future__ import annotations

from typing import Final

from roller.identity.harness_names import HarnessName

ROLLER_SESSION: Final = "x-roller-session-id"
ROLLER_AGENT: Final = "x-roller-agent-id"
ROLLER_PARENT_AGENT: Final = "x-roller-parent-agent-id"
ROLLER_HEADERS: Final = (ROLLER_SESSION, ROLLER_AGENT, ROLLER_PARENT_AGENT)

# header name -> the harnesses that send it (measured; see docs/identity.md).
NATIVE_HEADER_OWNERS: Final[dict[str, frozenset[HarnessName]]] = {
    "x-claude-code-session-id": frozenset({"claude-code"}),
    "x-claude-code-agent-id": frozenset({"claude-code"}),
    "x-claude-code-parent-agent-id": frozenset({"claude-code"}),
    "x-session-id": frozenset({"opencode"}),
    "x-parent-session-id": frozenset({"opencode"}),
    "x-session-affinity": frozenset({"opencode"}),
    "session-id": frozenset({"codex"}),
    "thread-id": frozenset({"codex"}),
    "x-codex-parent-thread-id": frozenset({"codex"}),
    "x-codex-turn-metadata": frozenset({"codex"}),
    "x-openai-subagent": frozenset({"codex"}),
    "x-deepseek-harness-session-id": frozenset({"deepseek"}),
    "session_id": frozenset({"pi"}),
}

# Install-scoped ids: header name (or body path) -> the harness that sends it.
INSTALL_SCOPED_HEADERS: Final[dict[str, HarnessName]] = {
    "x-deepseek-harness-user-id": "deepseek",
    "x-gemini-api-privileged-user-id": "gemini-cli",
}
REASON_INSTALL_SCOPED: Final = "install-scoped id, never a session key"


def trusted(header: str, harness: str) -> bool:
    """Whether `harness` (as declared) may be believed when it sends `header`."""
    owners = NATIVE_HEADER_OWNERS.get(header)
    return owners is not None and harness in owners


def untrusted_reason(header: str, harness: str) -> str:
    owners = ", ".join(sorted(NATIVE_HEADER_OWNERS.get(header, ())))
    return f"header of {owners}, not trusted for declared harness {_shown(harness)}"


def _shown(harness: str) -> str:
    # The declared name comes from configuration, but keep reasons bounded and printable.
    if harness.isprintable() and 0 < len(harness) <= 40:
        return harness
    return "(unprintable name)"
