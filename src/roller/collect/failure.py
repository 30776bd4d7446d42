"""Attempts roller itself failed on: an exception out of running or finalizing an attempt
that is not the harness's doing (a bug in roller, or its disk failing under it).

Such an error must not end the run, nor reach the user as a traceback: the run driver
(`roller.collect.collection`) records it here — the error and its traceback in
`samples/<id>/failed/attempt-NNNN.json` (`SamplePaths.failure_file`), for a bug report —
and judges the attempt like any other (`roller.collect.verdicts`): it is kept as it was
left (raw/ and all, so `roller finalize` can publish it once the bug is fixed) and
judged like any attempt collected now (`invalid`, with the error, when it has no
manifest).
"""

from __future__ import annotations

import contextlib
import json
import traceback
from dataclasses import dataclass

from roller.capture.files import atomic_write
from roller.capture.layout import SamplePaths
from roller.collect.runs import now_rfc3339
from roller.collect.session import AttemptJob


@dataclass(frozen=True)
class AttemptFailed:
    """Roller's own error on an attempt, as recorded."""

    reason: str  # "ExceptionType: message"


def record_failure(job: AttemptJob, exc: BaseException) -> AttemptFailed:
    """Write the error and its traceback beside the capture; never raises."""
    reason = f"{type(exc).__name__}: {exc}"
    attempt = job.attempt
    sample = SamplePaths(attempt.root.parent.parent)  # samples/<id>/capture/attempt-NNNN
    record = {
        "reason": reason,
        "traceback": traceback.format_exception(exc),
        "recorded_at": now_rfc3339(),
    }
    with contextlib.suppress(OSError):  # the disk failing too: the verdict still says why
        atomic_write(
            sample.failure_file(attempt.attempt_number), (json.dumps(record) + "\n").encode()
        )
    return AttemptFailed(reason)
