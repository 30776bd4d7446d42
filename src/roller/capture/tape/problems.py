"""A tape index's problems, in the order reading the tape once reports them.

Three kinds arrive at three times: the framing problems, each with its frame's place
(`framing.Place`), while indexing; a meta whose known key has the wrong shape, when the
exchange's metas are typed — once, when `TapeIndex` loads it (the framing pass does not
type them a second time) —, put in the place of its frame; the chunk byte counts that
do not match their end frames (after all of those, in exchange order); then each body
reference that did not resolve, as loading finds it. `TapeProblems` keeps which
exchanges' metas were checked (a byte each) so each is reported once.
"""

from __future__ import annotations

from heapq import merge

from roller.capture.tape.framing import Place


class TapeProblems:
    def __init__(self, framing: list[tuple[Place, str]], mismatched: list[str], exchanges: int):
        self._framing = framing
        self._mismatched = mismatched
        self._shapes: dict[Place, list[str]] = {}
        self._checked = bytearray(exchanges)  # per exchange: its metas' shapes checked
        self._late: list[str] = []

    def checked(self, number: int) -> bool:
        """Whether exchange `number`'s metas were checked (a ref of no number: never)."""
        return 0 <= number < len(self._checked) and bool(self._checked[number])

    def unchecked(self) -> list[int]:
        return [i for i, done in enumerate(self._checked) if not done]

    def shapes(self, number: int, found: list[tuple[Place, str]]) -> None:
        """Exchange `number`'s metas are checked: `found` are their problems."""
        if 0 <= number < len(self._checked):
            self._checked[number] = 1
        for place, message in found:  # a place reported again (an unnumbered ref) once
            messages = self._shapes.setdefault(place, [])
            if message not in messages:
                messages.append(message)

    def found_shapes(self) -> list[tuple[Place, str]]:
        """The metas' shape problems found so far, each with its place."""
        return [(place, m) for place, ms in self._shapes.items() for m in ms]

    def adopt(self, numbers: range, found: list[tuple[Place, str]]) -> None:
        """Exchanges `numbers` were checked by another index over the same tape (a
        worker process's, `TapeIndex.reopen`), which found `found`."""
        numbers = range(max(numbers.start, 0), min(numbers.stop, len(self._checked)))
        self._checked[numbers.start : numbers.stop] = b"\x01" * len(numbers)
        for place, message in found:
            messages = self._shapes.setdefault(place, [])
            if message not in messages:
                messages.append(message)

    def late(self, message: str) -> None:
        self._late.append(message)

    def all(self) -> tuple[str, ...]:
        """Every problem so far, in order (the metas' shapes checked first: see above)."""
        shapes = sorted(
            ((place, m) for place, ms in self._shapes.items() for m in ms),
            key=lambda item: item[0],  # stable: a meta's keys in their order
        )
        in_place = merge(self._framing, shapes, key=lambda item: item[0])
        return (*(m for _, m in in_place), *self._mismatched, *self._late)
