"""What `roller validate` keeps of each call record across records: a column per fact.

The checks across calls (`roller.capture.integrity`) need, of every call, its id, its
participant, kind and statuses and whether its wire parent disagreed. Kept as a record
per call, with the id and participant id as strings, that was ~0.3 KB a call; here the
ids are numbered (`roller.capture.models.numbered.IdsBuilder`: 8 bytes a call), the
participant a 4-byte index into the few participant ids, and each status a byte (a
code into the few values the record's literals allow). Memory: ~17 bytes a call.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from roller.capture.models import CallRecord
from roller.capture.models.numbered import IdsBuilder, NumberedIds, selected_ids

# the columns holding a status, by the record field they come from
STATUSES = ("kind", "identity_status", "capture_status", "export_status")


class CallViews:
    """Each call record's checked facts, in file order (`add`)."""

    def __init__(self) -> None:
        self._ids = IdsBuilder()
        self._owners: dict[str | None, int] = {None: -1}
        self._owner = array("i")  # per call: its participant's index, -1 for none
        self._words: dict[str, int] = {}  # status value -> its code
        self._statuses = {name: bytearray() for name in STATUSES}
        self._disagrees = bytearray()
        self._last = -1  # the last sequence added
        self.in_sequence = True  # whether every call came at or after the one before

    def add(self, call: CallRecord) -> None:
        self._ids.append(call.call_id)
        owner = self._owners.setdefault(call.participant_id, len(self._owners) - 1)
        self._owner.append(owner)
        for name, column in self._statuses.items():
            column.append(self._words.setdefault(getattr(call, name), len(self._words)))
        self._disagrees.append(call.attribution.parent_cross_check == "disagree")
        if call.sequence < self._last:
            self.in_sequence = False
        self._last = call.sequence

    def __len__(self) -> int:
        return len(self._owner)

    def call_ids(self) -> NumberedIds:
        """Every call's id, in order."""
        return self._ids.ids()

    def count(self, name: str, value: str) -> int:
        """How many calls have `value` in status `name` (one of `STATUSES`)."""
        code = self._words.get(value)
        return 0 if code is None else self._statuses[name].count(code)

    def all(self, name: str, value: str) -> bool:
        return self.count(name, value) == len(self)

    def any_disagrees(self) -> bool:
        return any(self._disagrees)

    def by_participant(self) -> dict[str, Sequence[str]]:
        """Each participant's call ids, in order (participants with no call absent)."""
        positions: dict[int, array[int]] = {}
        for i, owner in enumerate(self._owner):
            if owner >= 0:
                positions.setdefault(owner, array("q")).append(i)
        ids = self.call_ids()
        return {
            pid: selected_ids(ids, positions[k])
            for pid, k in self._owners.items()
            if pid is not None and k in positions
        }
