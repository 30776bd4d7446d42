"""DeepSeek Harness: a harness roller sees only on the wire, through the gateway.

No adapter (roller does not launch it): the package is its declared profile
(`roller.harnesses.deepseek.profile`), which the gateway's credentials may name.
"""

from __future__ import annotations

from roller.harnesses.deepseek.profile import NAME, PRIVATE_FIELDS, TOOLS, WIRE
from roller.harnesses.harness import Harness

HARNESS = Harness(
    name=NAME, package=__name__, wire=WIRE, tools=TOOLS, private_fields=PRIVATE_FIELDS
)
