"""The typed meta of tape frames: `RequestMeta` (`req`), `ResponseMeta` (`resp`),
`EndMeta` (`end`), `SegmentHeader` (`seg`), and `ExchangeError` (`end.meta.error`).

Rules this module keeps:
- The metas are `NamedTuple`s: typed and immutable like a frozen dataclass, and built
  with about half the instructions (measured with callgrind; the proxy builds three per
  exchange). Compare them as records, never index or unpack them — except `to_json`
  itself, which unpacks its own record: a field read by name is a descriptor call on
  Python 3.11 (not specialized: ~2.5x a slot's read, measured), unpacking is one C step,
  and the test of each record's table against its fields keeps the two in step.
- `to_json()` is the meta exactly as the tape holds it, keys in the order the proxy writes
  them (docs/architecture.md, "roller.capture.tape"); sequences may be tuples (orjson and
  `json` encode both as arrays). It is built by hand, not by reflection, for the same
  reason.
- `from_json(obj)` never raises and never drops anything. A key it does not know, and a
  known key whose value has the wrong shape, are kept in `extra` exactly as read, so
  `to_json()` writes them back unchanged; the known field then keeps its default, and
  `invalid` names it for the reader to report. A missing key reads as its default
  (hand-written tapes, optional keys): `""`, `()`, `{}` or None.
- One table per record (`_REQUEST`, `_RESPONSE`, `_END`) says which JSON key fills which
  field and how its shape is checked; a test checks each table against its record's
  fields and its `to_json()` keys, so the three cannot drift.
- These are the shapes of the current `TAPE_VERSION`; frames of an older version are
  converted before they are typed (`compat`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

JSONObject = dict[str, Any]
Pairs = tuple[tuple[str, str], ...]


class _Invalid:
    """The parse result of a value whose shape is wrong (kept in `extra` instead)."""


_INVALID = _Invalid()
Parse = Callable[[Any], Any]  # a JSON value -> the field's value, or _INVALID


@dataclass(frozen=True, slots=True)
class ExchangeError:
    """Why an exchange did not end normally: a stable code and a message for people."""

    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}

    @classmethod
    def from_json(cls, obj: object) -> ExchangeError | None:
        """The error of `{"code": str, "message": str}` (exactly those keys), else None."""
        if isinstance(obj, dict) and obj.keys() == {"code", "message"}:
            code, message = obj["code"], obj["message"]
            if isinstance(code, str) and isinstance(message, str):
                return cls(code, message)
        return None


_NOTHING: Mapping[str, Any] = {}  # the shared default of mapping fields: never mutated


class Redaction(NamedTuple):
    """The names of what redaction removed from a request (never values)."""

    headers: tuple[str, ...] = ()  # lower-cased header names
    query: tuple[str, ...] = ()  # query parameter names as sent


class RequestMeta(NamedTuple):
    """The `req` frame's meta: the request head as recorded (secrets removed)."""

    method: str = ""
    path: str = ""  # raw, percent-encoding kept, no query
    query: Pairs = ()  # decoded (name, value) pairs, secret ones removed
    headers: Pairs = ()  # in arrival order, duplicates kept, secrets and x-roller-* removed
    redacted: Redaction = Redaction()
    roller: Mapping[str, str] = _NOTHING  # the x-roller-* headers
    upstream: str | None = None  # base URL routed to
    client: str | None = None  # peer host:port
    http_version: str | None = None
    annotations: Mapping[str, Any] = _NOTHING  # the request policy's
    extra: Mapping[str, Any] = _NOTHING

    def to_json(self) -> JSONObject:
        (method, path, query, headers, redacted, roller, upstream, client, version,
         annotations, extra) = self  # fmt: skip
        redacted_headers, redacted_query = redacted
        out: JSONObject = {
            "method": method,
            "path": path,
            "query": query,
            "headers": headers,
            "redacted": {"headers": redacted_headers, "query": redacted_query},
            "roller": roller,
            "upstream": upstream,
            "client": client,
            "http_version": version,
            "annotations": annotations,
        }
        return {**out, **extra} if extra else out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RequestMeta:
        return cls(**_fields(obj, _REQUEST))

    @property
    def invalid(self) -> tuple[str, ...]:
        return _invalid(self.extra, _REQUEST)


class ResponseMeta(NamedTuple):
    """The `resp` frame's meta: the upstream response head as recorded."""

    status: int | None = None
    reason: str | None = None
    headers: Pairs = ()  # as received, hop-by-hop included, secrets removed
    redacted_headers: tuple[str, ...] = ()  # `redacted.headers`: lower-cased names
    http_version: str | None = None
    extra: Mapping[str, Any] = _NOTHING

    def to_json(self) -> JSONObject:
        status, reason, headers, redacted_headers, version, extra = self  # see the rules
        out: JSONObject = {
            "status": status,
            "reason": reason,
            "headers": headers,
            "redacted": {"headers": redacted_headers},
            "http_version": version,
        }
        return {**out, **extra} if extra else out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ResponseMeta:
        return cls(**_fields(obj, _RESPONSE))

    @property
    def invalid(self) -> tuple[str, ...]:
        return _invalid(self.extra, _RESPONSE)


class EndMeta(NamedTuple):
    """The `end` frame's meta: how the exchange ended (docs/architecture.md, outcomes).

    `outcome` is one of `OUTCOMES` on tapes roller wrote; a reader keeps whatever string
    it finds (None when the frame named none)."""

    outcome: str | None = None
    error: ExchangeError | None = None
    client_status: int | None = None  # None: the client went away before a status
    upstream_status: int | None = None
    request_bytes: int | None = None
    response_bytes: int | None = None  # bytes in this exchange's chunk frames
    client_bytes: int | None = None  # bytes handed to the client
    client_body: Mapping[str, Any] | None = None  # roller's own answer, when it answered
    extra: Mapping[str, Any] = _NOTHING

    def to_json(self) -> JSONObject:
        (outcome, error, client_status, upstream_status, request_bytes, response_bytes,
         client_bytes, client_body, extra) = self  # fmt: skip
        out: JSONObject = {
            "outcome": outcome,
            "error": None if error is None else error.to_json(),
            "client_status": client_status,
            "upstream_status": upstream_status,
            "request_bytes": request_bytes,
            "response_bytes": response_bytes,
            "client_bytes": client_bytes,
        }
        if client_body is not None:
            out["client_body"] = client_body
        return {**out, **extra} if extra else out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> EndMeta:
        return cls(**_fields(obj, _END))

    @staticmethod
    def response_bytes_of(obj: Mapping[str, Any]) -> int | None:
        """`from_json(obj).response_bytes`, without typing the rest."""
        _, parse = _END["response_bytes"]
        value = parse(obj["response_bytes"]) if "response_bytes" in obj else None
        return None if value is _INVALID else value

    @property
    def invalid(self) -> tuple[str, ...]:
        return _invalid(self.extra, _END)


class SegmentHeader(NamedTuple):
    """The `seg` frame that opens every segment: the tape version its frames follow."""

    version: int | None  # `v`; None when missing or not an integer
    t: int
    pid: int | None = None
    extra: Mapping[str, Any] = _NOTHING

    def to_json(self) -> JSONObject:
        """The whole frame header (`k`, `v`, `t`, `n`, `pid`), not only a meta."""
        out: JSONObject = {"k": "seg", "v": self.version, "t": self.t, "n": 0, "pid": self.pid}
        return {**out, **self.extra} if self.extra else out

    @classmethod
    def from_json(cls, header: Mapping[str, Any]) -> SegmentHeader:
        known = ("k", "v", "t", "n", "pid")
        return cls(
            version=_int_or_none(header.get("v")),
            t=_int_or_none(header.get("t")) or 0,
            pid=_int_or_none(header.get("pid")),
            extra={k: v for k, v in header.items() if k not in known},
        )


# -- shapes -----------------------------------------------------------------------------


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> Any:
    return value if isinstance(value, str) else _INVALID


def _text_or_none(value: object) -> Any:
    return value if value is None or isinstance(value, str) else _INVALID


def _int_value_or_none(value: object) -> Any:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return _INVALID


def _names(value: object) -> Any:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return _INVALID


def _pairs(value: object) -> Any:
    if not isinstance(value, list):
        return _INVALID
    pairs = []  # one pass: a request's headers are typed twice per finalize (index, load)
    for p in value:
        if not (isinstance(p, list) and len(p) == 2):
            return _INVALID
        name, text = p
        if not (isinstance(name, str) and isinstance(text, str)):
            return _INVALID
        pairs.append((name, text))
    return tuple(pairs)


def _object(value: object) -> Any:
    return value if isinstance(value, dict) else _INVALID


def _text_map(value: object) -> Any:
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return value
    return _INVALID


def _error(value: object) -> Any:
    if value is None:
        return None
    error = ExchangeError.from_json(value)
    return _INVALID if error is None else error


def _redaction(value: object) -> Any:
    if isinstance(value, dict) and value.keys() <= {"headers", "query"}:
        headers, query = _names(value.get("headers", [])), _names(value.get("query", []))
        if headers is not _INVALID and query is not _INVALID:
            return Redaction(headers, query)
    return _INVALID


def _header_redaction(value: object) -> Any:
    if isinstance(value, dict) and value.keys() <= {"headers"}:
        return _names(value.get("headers", []))
    return _INVALID


# JSON key -> (field name, shape). The order is irrelevant: to_json() fixes the order.
Table = Mapping[str, tuple[str, Parse]]

_REQUEST: Table = {
    "method": ("method", _text),
    "path": ("path", _text),
    "query": ("query", _pairs),
    "headers": ("headers", _pairs),
    "redacted": ("redacted", _redaction),
    "roller": ("roller", _text_map),
    "upstream": ("upstream", _text_or_none),
    "client": ("client", _text_or_none),
    "http_version": ("http_version", _text_or_none),
    "annotations": ("annotations", _object),
}
_RESPONSE: Table = {
    "status": ("status", _int_value_or_none),
    "reason": ("reason", _text_or_none),
    "headers": ("headers", _pairs),
    "redacted": ("redacted_headers", _header_redaction),
    "http_version": ("http_version", _text_or_none),
}
_END: Table = {
    "outcome": ("outcome", _text_or_none),
    "error": ("error", _error),
    "client_status": ("client_status", _int_value_or_none),
    "upstream_status": ("upstream_status", _int_value_or_none),
    "request_bytes": ("request_bytes", _int_value_or_none),
    "response_bytes": ("response_bytes", _int_value_or_none),
    "client_bytes": ("client_bytes", _int_value_or_none),
    # An explicit null lands in `extra` too: roller writes the key only with a body.
    "client_body": ("client_body", _object),
}
TABLES: Mapping[type, Table] = {RequestMeta: _REQUEST, ResponseMeta: _RESPONSE, EndMeta: _END}


def _fields(obj: Mapping[str, Any], table: Table) -> dict[str, Any]:
    """Constructor arguments for the record of `table` from a JSON meta (see the rules)."""
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        spec = table.get(key)
        parsed = _INVALID if spec is None else spec[1](value)
        if parsed is _INVALID:
            extra[key] = value
        else:
            assert spec is not None
            values[spec[0]] = parsed
    values["extra"] = extra
    return values


def _invalid(extra: Mapping[str, Any], table: Table) -> tuple[str, ...]:
    return tuple(key for key in extra if key in table) if extra else ()


TapeMeta = RequestMeta | ResponseMeta | EndMeta
