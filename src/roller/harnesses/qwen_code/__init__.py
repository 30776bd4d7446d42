"""Qwen Code: a harness roller sees only on the wire, through the gateway.

No adapter (roller does not launch it): the package is its declared profile
(`roller.harnesses.qwen_code.profile`), which the gateway's credentials may name.
"""

from __future__ import annotations

from roller.harnesses.harness import Harness
from roller.harnesses.qwen_code.profile import NAME, TOOLS, WIRE

HARNESS = Harness(name=NAME, package=__name__, wire=WIRE, tools=TOOLS)
