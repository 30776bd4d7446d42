"""The capture errors of one attempt, collected from every stage in one fixed order.

Each stage reports what it could not establish as messages under a stable code (tape
problems, native log problems, unattributed calls, parent disagreements, a coverage
mismatch, a launch error, turns not run, relations not bound); the pipeline feeds them
here in the order the manifest lists them, so re-finalizing gives the same bytes. Any
error makes the capture `partial` (`roller.finalize.status`).

`where` (a native problem's place in `raw/native/`) has no field of its own in
`CaptureErrorRecord`: a record renders it as the message's prefix, `where: message`,
the text such errors have always had.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from roller.capture.models import CaptureErrorRecord


@dataclass(frozen=True)
class CaptureError:
    """One capture error; `text` is its message as the record carries it."""

    code: str
    message: str
    where: str | None = None

    @property
    def text(self) -> str:
        return self.message if self.where is None else f"{self.where}: {self.message}"


class CaptureErrors:
    """An append-only list of capture errors; the pipeline owns the order."""

    def __init__(self) -> None:
        self._errors: list[CaptureError] = []

    def add(self, code: str, message: str, where: str | None = None) -> None:
        self._errors.append(CaptureError(code, message, where))

    def extend(self, code: str, messages: Iterable[str]) -> None:
        for message in messages:
            self.add(code, message)

    def __bool__(self) -> bool:
        return bool(self._errors)

    @property
    def errors(self) -> tuple[CaptureError, ...]:
        return tuple(self._errors)

    def records(self) -> list[CaptureErrorRecord]:
        return [CaptureErrorRecord(code=e.code, message=e.text) for e in self._errors]
