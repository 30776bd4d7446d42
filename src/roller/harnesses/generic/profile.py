"""The generic harness on the wire: any program, so no native identity of its own.

Only roller's explicit `x-roller-session-id` / `x-roller-agent-id` /
`x-roller-parent-agent-id` headers are read (the engine's own precedence rule 1), which
any agent framework may send to declare its participants (docs/identity.md), so a
gateway trusts them from its credentials by default (`roller_headers`). Every other
harness's native headers are rejected unread under it.
"""

from __future__ import annotations

from typing import Final

from roller.identity import WireProfile

NAME: Final = "generic"

WIRE: Final = WireProfile(harness=NAME, roller_headers=True)
