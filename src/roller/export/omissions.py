"""What an export left out, counted by reason, and the one line that reports it.

Every export says how many calls (or samples, trajectories) it wrote, how many it left
out and why (a block reason, a format that cannot hold them), and which harness-private
fields it removed from how many calls. Reasons are coded strings (`blocked:<reason>`,
`private_field:<name>`, …) so tests can compare them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Omissions:
    """Counts of what was written, left out (by reason) and stripped (by field)."""

    noun: str
    written: int = 0
    left_out: Counter[str] = field(default_factory=Counter)
    stripped: Counter[str] = field(default_factory=Counter)

    def leave_out(self, reason: str) -> None:
        self.left_out[reason] += 1

    def strip(self, names: tuple[str, ...]) -> None:
        self.stripped.update(names)

    def merge(self, other: Omissions) -> None:
        self.written += other.written
        self.left_out.update(other.left_out)
        self.stripped.update(other.stripped)

    def summary(self) -> str:
        """`exported N <noun>(s)`, then what was left out and stripped, each with why."""
        line = f"exported {self.written} {self.noun}(s)"
        total = sum(self.left_out.values())
        if total:
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.left_out.items()))
            line += f"; left out {total} ({reasons})"
        if self.stripped:
            fields = ", ".join(f"{name} from {n}" for name, n in sorted(self.stripped.items()))
            line += f"; removed harness-private fields ({fields} call(s))"
        return line
