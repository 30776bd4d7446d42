"""Validation beside an export: `SideValidation`.

Every export validates its captures and refuses an invalid one, never half exported.
Validating first reads calls.jsonl once more before the export reads it: at 10k calls
of `benchmarks/finalize_scale.py` ~2.4 s of openai-messages' ~10 s, at 100k ~25 s.

For an export to a file (`roller export calls`, `trajectory`, `otel`) of captures whose
formal records hold at least `SIDE_VALIDATION_BYTES` (`ROLLER_SIDE_VALIDATION_BYTES`
when set), the validation runs in a child process (`roller validate --json PATH`, on
the other core) while the export writes a temporary file beside its output
(`publishing`). The output is that file, renamed, only once every attempt is valid;
else it is removed and the error is the one validating first gives. An export that
fails while the validation finds the capture invalid reports the invalid capture, as
validating first would have. Smaller captures (and stdout) are validated first, in
process: a child's start (~0.5 s) would cost more than it saves.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from roller.capture.layout import AttemptPaths
from roller.capture.record_checks import Problem
from roller.errors import IntegrityError

SIDE_VALIDATION_BYTES: Final = 64 << 20
BYTES_VARIABLE: Final = "ROLLER_SIDE_VALIDATION_BYTES"


def beside(attempts: Sequence[AttemptPaths], out: Path | None) -> bool:
    """Whether an export of `attempts` to `out` validates them beside it (module
    docstring)."""
    if out is None:
        return False
    limit = int(os.environ.get(BYTES_VARIABLE, SIDE_VALIDATION_BYTES))
    held = sum(f.stat().st_size for a in attempts for f in (a.calls, a.relations) if f.is_file())
    return held >= limit


def first_problem(attempt: str, problems: Sequence[Problem]) -> IntegrityError:
    """The error an export gives for an attempt that does not validate."""
    first = problems[0] if problems else "unreadable"
    return IntegrityError(f"{attempt} does not validate ({first}); run `roller validate`")


class SideValidation:
    """`roller validate --json PATH` running in a child process (module docstring)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._child = subprocess.Popen(
            [sys.executable, "-m", "roller", "validate", "--json", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def verdict(self) -> None:
        """Wait for the child; an `IntegrityError` for the first attempt that does not
        validate, or when the child gave no verdict."""
        out, err = self._child.communicate()
        try:
            reports = json.loads(out)
        except ValueError:
            said = err.decode("utf-8", "replace").strip().splitlines()
            raise IntegrityError(
                f"validating {self._path} gave no verdict (exit {self._child.returncode})"
                + (f": {said[-1]}" if said else "")
            ) from None
        for report in reports:
            if not report["ok"]:
                problems = [Problem(**p) for p in report["problems"]]
                raise first_problem(report["attempt"], problems)

    def stop(self) -> None:
        if self._child.poll() is None:
            self._child.kill()
        self._child.communicate()

    @contextlib.contextmanager
    def publishing(self, out: Path) -> Iterator[Path]:
        """A temporary path beside `out` to export into; renamed to `out` when the
        export ends and every attempt is valid, removed otherwise."""
        partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
        try:
            try:
                yield partial
            except Exception:
                self.verdict()  # an invalid capture explains the failure, as before
                raise
            self.verdict()
            os.replace(partial, out)
        finally:
            self.stop()
            partial.unlink(missing_ok=True)
