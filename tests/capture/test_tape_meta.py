"""The typed tape metas: their tables agree with their fields, JSON round-trips exactly,
and nothing a reader does not understand is ever dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from roller.capture.tape import (
    TAPE_VERSION,
    EndMeta,
    ExchangeError,
    Redaction,
    RequestMeta,
    ResponseMeta,
    SegmentHeader,
    TapeWriter,
    read_tape,
)
from roller.capture.tape.meta import TABLES


def _json(value: Any) -> Any:
    """What a reader gets back for `value` once it was on a tape."""
    return json.loads(json.dumps(value))


def test_each_table_names_every_field_and_every_json_key_once() -> None:
    for record, table in TABLES.items():
        fields = set(record._fields) - {"extra"}
        assert {attr for attr, _ in table.values()} == fields, record.__name__
        assert len({attr for attr, _ in table.values()}) == len(table), record.__name__
        written = set(record(client_body={}).to_json() if record is EndMeta else record().to_json())
        assert written == set(table), record.__name__


texts = st.text(max_size=8)
pairs = st.lists(st.tuples(texts, texts), max_size=3).map(tuple)
names = st.lists(texts, max_size=3).map(tuple)
ints = st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
json_objects = st.dictionaries(texts, st.none() | st.booleans() | st.integers() | texts, max_size=3)
extras = st.dictionaries(
    st.sampled_from(["future", "x-later", "v2-thing"]), json_objects, max_size=2
)

requests = st.builds(
    RequestMeta,
    method=texts,
    path=texts,
    query=pairs,
    headers=pairs,
    redacted=st.builds(Redaction, names, names),
    roller=st.dictionaries(texts, texts, max_size=2),
    upstream=st.none() | texts,
    client=st.none() | texts,
    http_version=st.none() | texts,
    annotations=json_objects,
    extra=extras,
)
responses = st.builds(
    ResponseMeta,
    status=ints,
    reason=st.none() | texts,
    headers=pairs,
    redacted_headers=names,
    http_version=st.none() | texts,
    extra=extras,
)
ends = st.builds(
    EndMeta,
    outcome=st.none() | texts,
    error=st.none() | st.builds(ExchangeError, texts, texts),
    client_status=ints,
    upstream_status=ints,
    request_bytes=ints,
    response_bytes=ints,
    client_bytes=ints,
    client_body=st.none() | json_objects,
    extra=extras,
)


@given(meta=requests | responses | ends)
def test_json_round_trip_is_exact(meta: RequestMeta | ResponseMeta | EndMeta) -> None:
    written = _json(meta.to_json())
    read = type(meta).from_json(written)
    assert read == meta
    assert read.invalid == ()
    assert _json(read.to_json()) == written


def test_unknown_keys_are_kept_and_written_back() -> None:
    raw = {"outcome": "ok", "error": None, "terminal_event": True, "later": {"a": [1]}}
    end = EndMeta.from_json(raw)
    assert end.outcome == "ok" and end.error is None
    assert end.extra == {"terminal_event": True, "later": {"a": [1]}}
    assert end.invalid == ()
    assert _json(end.to_json())["later"] == {"a": [1]}


def test_a_known_key_of_the_wrong_shape_is_kept_as_read_and_named() -> None:
    raw = {
        "status": "200",
        "reason": "OK",
        "headers": [["a", "b", "c"]],
        "redacted": ["set-cookie"],
    }
    resp = ResponseMeta.from_json(raw)
    assert (resp.status, resp.reason, resp.headers, resp.redacted_headers) == (None, "OK", (), ())
    assert set(resp.invalid) == {"status", "headers", "redacted"}
    written = _json(resp.to_json())
    assert {k: written[k] for k in raw} == raw  # the tape's own values, not the defaults


def test_missing_keys_read_as_defaults() -> None:
    assert RequestMeta.from_json({}) == RequestMeta()
    assert ResponseMeta.from_json({"status": 204}) == ResponseMeta(status=204)
    end = EndMeta.from_json({"outcome": "client_disconnected"})
    assert end == EndMeta(outcome="client_disconnected")
    assert "client_body" not in end.to_json()  # roller writes it only when it answered


def test_error_shapes() -> None:
    assert ExchangeError.from_json({"code": "c", "message": "m"}) == ExchangeError("c", "m")
    for bad in ({"code": "c"}, {"code": 1, "message": "m"}, {"code": "c", "message": "m", "x": 1}):
        assert ExchangeError.from_json(bad) is None
        end = EndMeta.from_json({"error": bad})
        assert end.error is None and end.extra == {"error": bad} and end.invalid == ("error",)


def test_segment_header_is_the_frame_the_writer_writes(tmp_path: Path) -> None:
    with TapeWriter(tmp_path, fsync_interval=None) as tape:
        first = tape.segment.read_bytes().split(b"\n", 1)[0]
    header = json.loads(first)
    seg = SegmentHeader.from_json(header)
    assert seg.version == TAPE_VERSION and seg.t == header["t"] and seg.pid == header["pid"]
    assert json.dumps(seg.to_json(), separators=(",", ":")).encode() == first


def test_the_reader_reports_wrong_shapes_and_keeps_them(tmp_path: Path) -> None:
    with TapeWriter(tmp_path, fsync_interval=None) as tape:
        x = tape.begin()
        tape.request(x, {"method": "POST", "path": 7, "annotations": [], "new": 1}, body=b"")
        tape.end(x, {"outcome": "ok", "client_status": "200"})
    result = read_tape(tmp_path)
    (ex,) = result.exchanges
    assert ex.request.method == "POST" and ex.request.path == ""
    assert ex.request.extra == {"path": 7, "annotations": [], "new": 1}
    assert ex.end is not None and ex.end.extra == {"client_status": "200"}
    assert [p.split(f"meta of {x}: ", 1)[1] for p in result.problems] == [
        "'path' has an unexpected shape (kept)",
        "'annotations' has an unexpected shape (kept)",
        "'client_status' has an unexpected shape (kept)",
    ]
