"""What roller answers itself, and the recorder's other instructions to the glue.

`Reply` (roller's own JSON answer), `Forward` (send upstream), `ABORT` (cut the client's
connection), and `OWN_ANSWERS`: for each error code roller answers itself, the outcome it
is recorded with, the status and the `error.type` of the JSON body (upstream failures are
named by `roller.proxy.upstream.classify` instead). Pure values, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from roller.capture.tape import Outcome

JSONObject = dict[str, Any]


class Reply(NamedTuple):
    """Answer the client with roller's own JSON response, then report `replied`."""

    status: int
    body: JSONObject


class Forward(NamedTuple):
    """Send the request to `upstream`, then report `upstream_head` or `upstream_failed`."""

    upstream: str


class Abort:
    """Close the client's connection: a response started that cannot be finished (a chunked
    body then lacks its terminating chunk, a sized one is short, so the client can tell)."""


ABORT: Final = Abort()


@dataclass(frozen=True, slots=True)
class OwnAnswer:
    outcome: Outcome
    status: int
    error_type: str  # `error.type` in the JSON body


# Roller's own answers, by error code (upstream failures: roller.proxy.upstream.classify).
OWN_ANSWERS: Mapping[str, OwnAnswer] = {
    "request_too_large": OwnAnswer("rejected", 413, "roller_request_too_large"),
    "bad_request_target": OwnAnswer("rejected", 400, "roller_bad_request"),
    "no_upstream": OwnAnswer("no_upstream", 502, "roller_no_upstream"),
    "policy_error": OwnAnswer("proxy_error", 500, "roller_policy_error"),
    "proxy_error": OwnAnswer("proxy_error", 502, "roller_proxy_error"),
}


def error_body(error_type: str, message: str) -> JSONObject:
    return {"error": {"type": error_type, "message": message}}
