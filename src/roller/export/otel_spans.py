"""OTLP JSON spans (`roller export otel`): the span record and its encoding, ids, times.

A `Span` is written as the OpenTelemetry file exporter writes one (`Span.json`): ids
as hex, times as nanosecond strings, enums as integers, int64 attribute values as
strings. Ids are derived from the capture's scope and record ids (`derived_id`), so a
re-export is identical; times come from the call records (`call_times`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from roller.capture.models import CallRecord

KIND_INTERNAL = 1
KIND_CLIENT = 3
STATUS_OK = 1
STATUS_ERROR = 2


def derived_id(*parts: str, length: int) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()[:length]


def unix_ns(stamp: str | None) -> int | None:
    if stamp is None:
        return None
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def attribute(key: str, value: Any) -> dict[str, Any]:
    """One OTLP JSON `KeyValue` (int64 as a string, as the JSON mapping writes it)."""
    return {"key": key, "value": _any_value(value)}


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


@dataclass
class Span:
    span_id: str
    name: str
    kind: int
    start: int
    end: int
    parent: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def json(self, trace_id: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start),
            "endTimeUnixNano": str(max(self.end, self.start)),
            "attributes": [attribute(k, v) for k, v in self.attributes.items() if v is not None],
            "status": {"code": STATUS_ERROR, "message": self.error}
            if self.error
            else {"code": STATUS_OK},
        }
        if self.parent:
            out["parentSpanId"] = self.parent
        return out


def call_times(call: CallRecord, fallback: int) -> tuple[int, int]:
    start = unix_ns(call.request.received_at) or fallback
    return start, unix_ns(call.response.ended_at) or start
