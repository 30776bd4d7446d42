"""One request's frames on the tape: the `req` frame, its body in parts, later annotations.

`RequestRecord` is the request half of an exchange's record and the base of the recorder
(`recorder.Recorder`, itself the base of the aiohttp glue's `exchange.Exchange`): one
object per exchange carries the request record, the state machine and the sockets' glue,
each defined in its own module. The recorder decides *when* the request is recorded;
this module owns *how*:
- The `req` frame is built once, redacted here (`Redactor`), never from the head as is.
- The body streams to the tape as it is read: parts pile up until `FLUSH_BYTES` (or
  `FLUSH_PARTS` parts) are waiting, then go out as `body` frames in one write, the `req`
  frame first if it is not on the tape yet. A request that fits (nearly every model
  request) is written whole at the decision: its `req` and `body` frames in one write,
  with the decision's annotations in the `req` frame, as cheap as before.
- Annotations decided after the `req` frame was written go in an `ann` frame (readers
  merge them into the request's: `roller.capture.tape.reader`).
- The body itself is kept, as the parts read, until it is joined for the policy and the
  upstream (`join_body()`): the tape never needs it whole, only the forwarded request does,
  and the request body limit bounds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from roller.capture.tape import EndMeta, Redaction, RequestMeta, ResponseMeta
from roller.proxy.redaction import Redacted, Redactor

if TYPE_CHECKING:
    from roller.proxy.header_plan import RequestPlan

# Waiting body bytes (or parts) that are written out before the decision: what a crash
# mid-upload may lose at most, and the largest single write a body costs.
FLUSH_BYTES: Final = 256 * 1024
FLUSH_PARTS: Final = 256

Pairs = Sequence[tuple[str, str]]
_NO_QUERY: Final = Redacted((), ())
_NO_EXTRA: Final[Mapping[str, Any]] = {}  # a RequestMeta's `extra`: roller writes none
_new_meta = tuple.__new__  # a record from all its fields, in order


class ReceivedHead(NamedTuple):
    """A request head as received, secrets included: held in memory, never recorded as is.

    Like the tape metas, a NamedTuple: immutable and cheap to build once per request."""

    t: int  # when it arrived (wall-clock ns): the `req` frame's time
    method: str
    target: str  # path and query exactly as sent
    path: str  # `target` without the query
    headers: Pairs
    query: Pairs  # decoded
    client: str | None  # peer host:port
    http_version: str


class FrameSink(Protocol):
    """Where frames go: `TapeWriter` satisfies it."""

    def request(
        self, exchange_id: str, meta: RequestMeta, *, t: int, body: Sequence[bytes]
    ) -> None: ...
    def request_body(self, exchange_id: str, data: Sequence[bytes]) -> None: ...
    def annotate(self, exchange_id: str, annotations: Mapping[str, Any], *, t: int) -> None: ...
    def response(
        self, exchange_id: str, meta: ResponseMeta, *, t: int, first: bytes = b""
    ) -> None: ...
    def chunk(self, exchange_id: str, data: bytes) -> None: ...
    def end(self, exchange_id: str, meta: EndMeta, *, t: int) -> None: ...


class RequestRecord:
    """The `req` frame and the body of one exchange, written to `sink` when told."""

    __slots__ = (
        "_parts",
        "_pending",
        "_redactor",
        "_sink",
        "_unwritten",
        "exchange_id",
        "head",
        "plan",
        "recorded",
        "request_bytes",
        "roller",
        "unrecorded",
    )

    def __init__(
        self,
        sink: FrameSink,
        exchange_id: str,
        head: ReceivedHead,
        redactor: Redactor,
        roller: Mapping[str, str],
        plan: RequestPlan,
    ) -> None:
        self._sink = sink
        self.plan = plan  # every header decision about the request
        self.exchange_id = exchange_id
        self.head = head
        self._redactor = redactor
        self.roller = roller  # the `x-roller-*` evidence, as recorded
        self._parts: list[bytes] = []
        self._unwritten = 0  # index of the first part not on the tape yet
        self._pending = 0  # bytes in those parts
        self.recorded = False  # the `req` frame is on the tape
        self.unrecorded = True  # something of the request is not on the tape yet
        self.request_bytes = 0  # body bytes read so far

    def add_part(self, data: bytes, upstream: str | None, annotations: Mapping[str, Any]) -> None:
        """A part of the body, read; written out once enough is waiting (with the `req`
        frame, from `upstream` and `annotations`, if that is not out yet)."""
        self._parts.append(data)
        self.unrecorded = True
        self.request_bytes += len(data)
        self._pending += len(data)
        if self._pending >= FLUSH_BYTES or len(self._parts) - self._unwritten >= FLUSH_PARTS:
            self.write_request(upstream, annotations)

    def write_request(
        self,
        upstream: str | None,
        annotations: Mapping[str, Any],
        later: Mapping[str, Any] | None = None,
    ) -> None:
        """Everything not on the tape yet, in one write: the `req` frame (with `upstream`
        and `annotations`) and the waiting parts; once the `req` frame is out, the waiting
        parts and an `ann` frame of `later` (annotations decided since), if any."""
        if not self.unrecorded and not later:
            return  # nothing new for the tape (the common ending)
        waiting = self._parts[self._unwritten :]
        self._unwritten = len(self._parts)
        self._pending = 0
        self.unrecorded = False
        x = self.exchange_id
        if not self.recorded:
            self.recorded = True
            meta = self._request_meta(upstream, annotations)
            self._sink.request(x, meta, t=self.head.t, body=waiting)
            return
        if waiting:
            self._sink.request_body(x, waiting)
        if later:
            self._sink.annotate(x, later, t=self.head.t)

    def join_body(self, upstream: str | None, annotations: Mapping[str, Any]) -> bytes:
        """The whole body, joined once; the parts are released. Parts already on the tape
        with some still waiting: the waiting ones are written first (so the join never
        has to remember which of its bytes are on the tape)."""
        parts = self._parts
        if 0 < self._unwritten < len(parts):
            self.write_request(upstream, annotations)
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        written = self._unwritten > 0
        self._parts = [body] if body else []
        self._unwritten = len(self._parts) if written else 0
        return body

    def _request_meta(self, upstream: str | None, annotations: Mapping[str, Any]) -> RequestMeta:
        """The `req` frame's meta: the head, redacted."""
        head, plan = self.head, self.plan
        query = self._redactor.query(head.query) if head.query else _NO_QUERY
        # Every field, in RequestMeta's (and Redaction's) order, by tuple.__new__: no
        # NamedTuple __new__ in Python (~2.3k instructions a record, callgrind); a test
        # checks the recorder's metas against ones built by keyword.
        return _new_meta(
            RequestMeta,
            (
                head.method,
                head.path,
                query.kept,
                plan.recorded(head.headers),
                _new_meta(Redaction, (plan.removed, query.removed)),
                self.roller,
                upstream,
                head.client,
                head.http_version,
                annotations,
                _NO_EXTRA,
            ),
        )
