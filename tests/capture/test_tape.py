"""The tape writer and reader: round trips, rotation, restarts, and damaged tapes."""

from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from roller.capture.tape import (
    EndMeta,
    ExchangeError,
    RequestMeta,
    ResponseMeta,
    TapeExchange,
    TapeOpenError,
    TapeWriter,
    framing,
    index_tape,
    read_tape,
    segment_name,
)
from roller.capture.tape import reader as reader_module
from roller.capture.tape.format import OUTCOMES, dumps_header


def _write_exchange(
    tape: TapeWriter, *, body: bytes, chunks: list[bytes], finish: bool = True
) -> str:
    x = tape.begin()
    tape.request(x, {"method": "POST", "path": "/v1/messages", "headers": [["a", "b"]]})
    tape.request_body(x, body)
    tape.response(x, {"status": 200, "reason": "OK", "headers": []})
    for c in chunks:
        tape.chunk(x, c)
    if finish:
        size = sum(len(c) for c in chunks)
        tape.end(x, {"outcome": "ok", "error": None, "response_bytes": size})
    return x


def test_round_trip_keeps_bytes_order_and_times(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        chunks = [b"data: 1\n\n", b"", b"\n\n\n"]
        a = _write_exchange(tape, body=b'{"x":1}\n\x00\xff', chunks=chunks)
        b = _write_exchange(tape, body=b"", chunks=[])
    result = read_tape(tmp_path)
    assert result.problems == ()
    assert [e.exchange_id for e in result.exchanges] == [a, b]
    first = result.exchanges[0]
    assert first.request.path == "/v1/messages"
    assert first.request_body == b'{"x":1}\n\x00\xff'
    assert [c for _, c in first.chunks] == [b"data: 1\n\n", b"", b"\n\n\n"]
    assert first.body == b"data: 1\n\n\n\n\n"
    assert first.response == ResponseMeta(status=200, reason="OK")
    assert first.outcome == "ok"
    times = [first.request_time_ns, first.response_time_ns, *(t for t, _ in first.chunks)]
    assert times == sorted(times)
    assert result.exchanges[1].body == b""


def test_interleaved_exchanges_are_separated(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        xs = [tape.begin() for _ in range(3)]
        for i, x in enumerate(xs):
            tape.request(x, {"i": i})
        for round_ in range(4):
            for x in reversed(xs):
                if round_ == 0:
                    tape.response(x, {"status": 200})
                tape.chunk(x, f"{x}-{round_};".encode())
        for x in xs:
            tape.end(x, {"outcome": "ok"})
    result = read_tape(tmp_path)
    assert result.problems == ()
    for x, ex in zip(xs, result.exchanges, strict=True):
        assert ex.exchange_id == x
        assert ex.body == "".join(f"{x}-{r};" for r in range(4)).encode()


def test_ids_stay_unique_across_restarts_and_writers(tmp_path: Path) -> None:
    seen: list[str] = []
    for _ in range(3):
        tape = TapeWriter(tmp_path, fsync_interval=None)
        seen += [_write_exchange(tape, body=b"", chunks=[b"x"]) for _ in range(2)]
        tape.close()
    # Two writers open at once never share a segment or an id.
    one, two = TapeWriter(tmp_path), TapeWriter(tmp_path)
    assert one.segment != two.segment
    seen += [_write_exchange(one, body=b"", chunks=[]), _write_exchange(two, body=b"", chunks=[])]
    one.close()
    two.close()
    assert len(set(seen)) == len(seen) == 8
    result = read_tape(tmp_path)
    assert result.problems == ()
    assert sorted(e.exchange_id for e in result.exchanges) == sorted(seen)
    assert len(result.segments) == 5


def test_restart_never_appends_after_a_torn_tail(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        _write_exchange(tape, body=b"abc", chunks=[b"1"])
        x = tape.begin()
        tape.request(x, {"m": 1})
    seg = tmp_path / segment_name(1)
    with seg.open("ab") as fh:
        fh.write(b'{"k":"chunk","x":"' + x.encode() + b'","t":1,"n":50}\npartial')
    with TapeWriter(tmp_path) as tape:
        later = _write_exchange(tape, body=b"", chunks=[b"after"])
    result = read_tape(tmp_path)
    assert len(result.problems) == 1 and "torn frame" in result.problems[0]
    ids = result.by_id()
    assert ids[x].end is None and ids[x].chunks == ()
    assert ids[later].body == b"after" and ids[later].outcome == "ok"


def test_segments_rotate_and_exchanges_span_them(tmp_path: Path) -> None:
    with TapeWriter(tmp_path, segment_max_bytes=300) as tape:
        x = tape.begin()
        tape.request(x, {"m": 1})
        for i in range(20):
            tape.chunk(x, b"%d-" % i * 5)
        tape.end(x, {"outcome": "ok"})
        y = _write_exchange(tape, body=b"b", chunks=[b"y"])
    result = read_tape(tmp_path)
    assert result.problems == ()
    assert len(result.segments) > 5
    assert result.by_id()[x].body == b"".join(b"%d-" % i * 5 for i in range(20))
    assert x.split(":")[0] != y.split(":")[0]  # a new id takes the stem of the new segment
    sizes = [(tmp_path / s).stat().st_size for s in result.segments]
    assert max(sizes) < 300 + 200  # rotation happens at the first frame past the limit


def test_in_flight_exchange_has_no_end(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        done = _write_exchange(tape, body=b"", chunks=[b"a"])
        live = _write_exchange(tape, body=b"q", chunks=[b"b", b"c"], finish=False)
        assert tape.open_exchanges == [live]
    result = read_tape(tmp_path)
    assert result.problems == ()
    assert result.by_id()[done].end is not None
    assert result.by_id()[live].end is None and result.by_id()[live].body == b"bc"


def test_frames_for_unknown_or_ended_exchanges_are_programming_errors(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        x = _write_exchange(tape, body=b"", chunks=[])
        with pytest.raises(ValueError):
            tape.chunk(x, b"late")
        with pytest.raises(ValueError):
            tape.response("nope:1", {})
    with pytest.raises(ValueError):
        tape.begin()


def test_mismatched_response_bytes_is_a_problem(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        x = tape.begin()
        tape.request(x, {})
        tape.chunk(x, b"12345")
        tape.end(x, {"outcome": "ok", "response_bytes": 9})
    assert any("says 9" in p for p in read_tape(tmp_path).problems)


def test_reader_reports_nonsense_frames_and_keeps_going(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        x = _write_exchange(tape, body=b"", chunks=[b"a"])
    seg = tmp_path / segment_name(1)
    with seg.open("ab") as fh:
        fh.write(b'{"k":"chunk","x":"ghost:1","t":1,"n":1}\nz\n')
        fh.write(b'{"k":"wat","x":"a","t":1,"n":0}\n\n')
        fh.write(b'{"k":"req","x":"' + x.encode() + b'","t":1,"n":0,"meta":{}}\n\n')
        fh.write(b'{"k":"req","x":"new:1","t":5,"n":0,"meta":{"ok":1}}\n\n')
        fh.write(b'{"k":"body","x":"new:1","t":6,"n":3}\nabcX')  # no terminator
        fh.write(b'{"k":"end","x":"new:1","t":7,"n":0,"meta":{}}\n\n')
    result = read_tape(tmp_path)
    assert [e.exchange_id for e in result.exchanges] == [x, "new:1"]
    assert result.by_id()["new:1"].request_body == b""  # frames after the corruption are dropped
    text = "\n".join(result.problems)
    for expected in ("unknown exchange ghost:1", "'wat'", "second req", "no terminator"):
        assert expected in text


@pytest.mark.parametrize("t", [2**63, -(2**63), -(2**63) + 1, 2**63 - 1, 10**30])
def test_frame_times_of_any_size_read_back_exactly(tmp_path: Path, t: int) -> None:
    # indexing keeps a frame's time in 64 bits where it fits, else reads its header again
    with TapeWriter(tmp_path) as tape:
        x = tape.begin()
        tape.request(x, {"method": "POST", "path": "/v1/messages"})
    with (tmp_path / segment_name(1)).open("ab") as fh:
        for kind, n, meta in (("resp", 0, {"status": 200}), ("chunk", 1, None)):
            header = {"k": kind, "x": x, "t": t, "n": n} | ({"meta": meta} if meta else {})
            fh.write(dumps_header(header) + b"\n" + b"a" * n + b"\n")
        fh.write(dumps_header({"k": "end", "x": x, "t": t, "n": 0, "meta": {}}) + b"\n\n")
    (exchange,) = read_tape(tmp_path).exchanges
    assert (exchange.response_time_ns, exchange.chunks, exchange.end_time_ns) == (
        t,
        ((t, b"a"),),
        t,
    )


def test_missing_directory_and_foreign_files(tmp_path: Path) -> None:
    assert read_tape(tmp_path / "nope").problems
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / segment_name(3)).write_bytes(b'{"k":"seg","v":99,"t":1,"n":0}\n\n')
    (tmp_path / segment_name(4)).write_bytes(b'{"k":"req","x":"a","t":1,"n":0,"meta":{}}\n\n')
    result = read_tape(tmp_path)
    assert result.exchanges == ()
    assert result.segments == (segment_name(3), segment_name(4))
    assert any("version 99" in p for p in result.problems)
    assert any("segment header" in p for p in result.problems)


def test_unwritable_directory_is_a_roller_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TapeOpenError):
        TapeWriter(blocker / "tape")


def test_write_failure_is_recorded_and_the_writer_moves_on(tmp_path: Path) -> None:
    tape = TapeWriter(tmp_path, fsync_interval=None)
    x = tape.begin()
    tape.request(x, {})
    real = tape._fd
    tape._fd = os.open(os.devnull, os.O_RDONLY)  # the next write fails with EBADF
    tape.chunk(x, b"lost")
    assert tape.errors and "write failed" in tape.errors[0]
    tape.chunk(x, b"kept")
    tape.end(x, {"outcome": "ok"})
    tape.close()
    os.close(real)
    result = read_tape(tmp_path)
    assert result.by_id()[x].body == b"kept"
    assert len(result.segments) == 2


def test_fsync_timer_runs_beside_writes(tmp_path: Path) -> None:
    tape = TapeWriter(tmp_path, segment_max_bytes=2000, fsync_interval=0.001)
    stop = threading.Event()
    x = tape.begin()
    tape.request(x, {})
    for i in range(3000):
        tape.chunk(x, b"%d," % i)
    stop.set()
    tape.end(x, {"outcome": "ok"})
    tape.close()
    tape.close()  # idempotent
    assert tape.errors == []
    result = read_tape(tmp_path)
    assert result.problems == ()
    assert result.by_id()[x].body == b"".join(b"%d," % i for i in range(3000))


# -- damaged tapes: truncation at any byte ------------------------------------------------


def _build_tape(tmp: Path, spec: list[tuple[bytes, list[bytes], bool]]) -> bytes:
    with TapeWriter(tmp, fsync_interval=None) as tape:
        for body, chunks, finish in spec:
            _write_exchange(tape, body=body, chunks=chunks, finish=finish)
    (segment,) = sorted(tmp.iterdir())
    return segment.read_bytes()


def _assert_prefix_of(truncated_dir: Path, whole: dict[str, TapeExchange]) -> None:
    part = read_tape(truncated_dir)
    for ex in part.exchanges:
        ref = whole[ex.exchange_id]
        assert ex.request == ref.request
        assert ref.request_body.startswith(ex.request_body)
        assert ex.chunks == ref.chunks[: len(ex.chunks)]
        assert ex.end in (None, ref.end)
        assert ex.response in (None, ref.response)
    ids = [e.exchange_id for e in part.exchanges]
    assert ids == list(whole)[: len(ids)]


def test_truncation_at_every_byte(tmp_path: Path) -> None:
    full = tmp_path / "full"
    data = _build_tape(full, [(b"req\nbody", [b"data: a\n\n", b"\n"], True), (b"", [b"z"], False)])
    whole = read_tape(full).by_id()
    cut = tmp_path / "cut"
    cut.mkdir()
    boundaries = 0
    for size in range(len(data) + 1):
        (cut / segment_name(1)).write_bytes(data[:size])
        result = read_tape(cut)
        _assert_prefix_of(cut, whole)
        if not result.problems:
            boundaries += 1
    assert boundaries == 1 + 11  # the empty file, then after each of the 11 frames


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    spec=st.lists(
        st.tuples(
            st.binary(max_size=40),
            st.lists(st.binary(max_size=30), max_size=4),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    ),
    cut=st.floats(min_value=0, max_value=1),
    junk=st.binary(max_size=60),
)
def test_any_truncation_or_trailing_junk_never_raises(
    tmp_path_factory: pytest.TempPathFactory,
    spec: list[tuple[bytes, list[bytes], bool]],
    cut: float,
    junk: bytes,
) -> None:
    full = tmp_path_factory.mktemp("full")
    data = _build_tape(full, spec)
    damaged = tmp_path_factory.mktemp("cut")
    (damaged / segment_name(1)).write_bytes(data[: int(len(data) * cut)] + junk)
    _assert_prefix_of(damaged, read_tape(full).by_id())


def test_request_with_body_writes_both_frames_together(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        with_body = tape.begin()
        tape.request(with_body, {"method": "POST", "path": "/v1/messages"}, body=b'{"a":1}\n')
        tape.end(with_body, {"outcome": "ok"})
        empty = tape.begin()
        tape.request(empty, {"method": "GET", "path": "/v1/models"}, body=b"")
        tape.end(empty, {"outcome": "ok"})
    result = read_tape(tmp_path)
    assert result.problems == ()
    first, second = result.exchanges
    assert first.request_body == b'{"a":1}\n'
    assert second.request_body == b""
    assert second.request == RequestMeta(method="GET", path="/v1/models")


def test_response_with_its_first_bytes_is_one_write_and_reads_as_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[int] = []
    real = os.writev

    def counting(fd: int, parts: list[bytes]) -> int:
        writes.append(len(parts))
        return real(fd, parts)

    with TapeWriter(tmp_path) as tape:
        x = tape.begin()
        tape.request(x, {"method": "POST"}, body=b"{}")
        monkeypatch.setattr(os, "writev", counting)
        tape.response(x, {"status": 200}, first=b"data: 1\n\n")
        tape.chunk(x, b"data: 2\n\n")
        monkeypatch.setattr(os, "writev", real)
        tape.end(x, {"outcome": "ok"})
    assert len(writes) == 2  # resp with its first chunk, then the second chunk
    result = read_tape(tmp_path)
    assert result.problems == ()
    (exchange,) = result.exchanges
    assert exchange.response is not None and exchange.response.status == 200
    assert [data for _, data in exchange.chunks] == [b"data: 1\n\n", b"data: 2\n\n"]


# Typed metas, and a JSON one with what orjson refuses (the json fallback encodes it).
METAS = [
    RequestMeta(method="POST", path="/v1/messages", headers=(("a", "b"),)),
    ResponseMeta(status=200, reason="OK", headers=(("x", "y"),)),
    EndMeta(outcome="ok", client_status=200),
    {"headers": [["x-odd", b"caf\xe9".decode("utf-8", "surrogateescape")]], "big": 2**70},
]


@pytest.mark.parametrize("meta", METAS)
def test_meta_frame_headers_are_the_whole_header_encoded(meta: object) -> None:
    # The fixed keys come from a template; the bytes must be what encoding the whole
    # header gives (orjson, or the json fallback for what orjson refuses).
    typed = (RequestMeta, ResponseMeta, EndMeta)
    body = meta.to_json() if isinstance(meta, typed) else meta
    whole = {"k": "resp", "x": "tape-000001:7", "t": 123, "n": 0, "meta": body}
    built = TapeWriter._meta_header("resp", "tape-000001:7", meta, 123)  # type: ignore[arg-type]
    assert built == dumps_header(whole) + b"\n"


@pytest.mark.parametrize("meta", METAS)
def test_each_kinds_frame_template_gives_the_whole_header(tmp_path: Path, meta: object) -> None:
    # `request`, `response` and `end` format their frames from per-kind templates (not
    # through `_meta_header`): each frame's bytes must be the whole header encoded, then
    # its empty payload's newline; the body and chunk frames after them as before.
    typed = (RequestMeta, ResponseMeta, EndMeta)
    body = meta.to_json() if isinstance(meta, typed) else meta
    with TapeWriter(tmp_path, fsync_interval=None) as tape:
        x = tape.begin()
        start = tape.segment.stat().st_size
        tape.request(x, meta, t=11, body=[b"ab"])  # type: ignore[arg-type]
        tape.response(x, meta, t=12, first=b"cd")  # type: ignore[arg-type]
        tape.end(x, meta, t=13)  # type: ignore[arg-type]
        written = tape.segment.read_bytes()[start:]
    lines = written.split(b"\n")
    for kind, t, line in (("req", 11, lines[0]), ("resp", 12, lines[4]), ("end", 13, lines[8])):
        assert line == dumps_header({"k": kind, "x": x, "t": t, "n": 0, "meta": body})
    assert lines[1] == lines[5] == lines[9] == b""  # the empty payloads
    assert lines[2].startswith(b'{"k":"body","x":"%b","t":' % x.encode())
    assert lines[2].endswith(b',"n":2}') and lines[3] == b"ab"
    assert lines[6].startswith(b'{"k":"chunk","x":"%b","t":' % x.encode())
    assert lines[6].endswith(b',"n":2}') and lines[7] == b"cd"
    assert lines[10:] == [b""]


# Mostly what the template takes (ints, no error, no body, no extra), and each way out.
_COUNTS = st.one_of(
    st.integers(), st.integers(min_value=2**63), st.none(), st.booleans(), st.just(200)
)
_ERRORS = st.builds(ExchangeError, st.text(max_size=5), st.text(max_size=9))


@settings(max_examples=400, deadline=None)
@given(
    outcome=st.one_of(st.sampled_from(OUTCOMES), st.none(), st.text(max_size=8)),
    error=st.one_of(st.none(), st.none(), st.none(), _ERRORS),
    counts=st.one_of(
        st.tuples(*[st.integers()] * 5), st.tuples(_COUNTS, _COUNTS, _COUNTS, _COUNTS, _COUNTS)
    ),
    client_body=st.one_of(st.none(), st.none(), st.just({"error": {"type": "x", "m": "é\n"}})),
    extra=st.one_of(st.just({}), st.just({}), st.just({"later": [1, "two"]})),
)
@example(outcome="ok", error=None, counts=(200, 200, 1024, 600, 600), client_body=None, extra={})
def test_the_end_frames_template_gives_the_whole_header(
    outcome: str | None,
    error: ExchangeError | None,
    counts: tuple[Any, ...],
    client_body: dict[str, Any] | None,
    extra: dict[str, Any],
) -> None:
    # The common ending is formatted from a template, every other one through its JSON
    # form: either way the frame must be the whole header encoded (then its newline).
    client, upstream, request, response, relayed = counts
    meta = EndMeta(
        outcome=outcome,
        error=error,
        client_status=client,
        upstream_status=upstream,
        request_bytes=request,
        response_bytes=response,
        client_bytes=relayed,
        client_body=client_body,
        extra=extra,
    )
    with (
        tempfile.TemporaryDirectory() as directory,
        TapeWriter(directory, fsync_interval=None) as tape,
    ):
        x = tape.begin()
        start = tape.segment.stat().st_size
        tape.end(x, meta, t=17)
        written = tape.segment.read_bytes()[start:]
    whole = {"k": "end", "x": x, "t": 17, "n": 0, "meta": meta.to_json()}
    assert written == dumps_header(whole) + b"\n\n"


def test_meta_values_orjson_refuses_are_still_recorded(tmp_path: Path) -> None:
    # A header value that was not valid UTF-8 reaches the proxy as lone surrogates
    # (surrogateescape); integers may exceed 64 bits. Both must land on the tape intact.
    odd = b"caf\xe9 \xff".decode("utf-8", "surrogateescape")
    meta = {"headers": [["x-odd", odd], ["x-text", "héllo ✓"]], "big": 2**70}
    with TapeWriter(tmp_path) as tape:
        x = tape.begin()
        tape.request(x, meta, body=b"{}")
        tape.end(x, {"outcome": "ok"})
    result = read_tape(tmp_path)
    assert result.problems == ()
    recorded = result.exchanges[0].request
    assert recorded.headers == (("x-odd", odd), ("x-text", "héllo ✓"))
    assert recorded.extra == {"big": 2**70}


def test_a_body_in_parts_and_annotations_before_and_after_the_end(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        x = tape.begin()
        tape.request(x, {"method": "POST", "annotations": {"a": 1, "b": 2}}, body=[b"ab", b"cd"])
        tape.request_body(x, [b"e", b"", b"fg"])
        tape.annotate(x, {"b": 3, "c": {"d": 4}})
        tape.end(x, {"outcome": "ok"})
        tape.annotate(x, {"end_hook_error": {"code": "StoreError", "message": "down"}})
        head_only = tape.begin()
        tape.request(head_only, {"method": "POST"}, body=())
        tape.end(head_only, {"outcome": "rejected"})
        with pytest.raises(ValueError, match="not begun"):
            tape.annotate("tape-999999:1", {"x": 1})
        with pytest.raises(ValueError, match="not begun"):
            tape.annotate(x.rsplit(":", 1)[0] + ":99", {"x": 1})
    result = read_tape(tmp_path)
    assert result.problems == ()
    ex, refused = result.exchanges
    assert ex.request_body == b"abcdefg" and refused.request_body == b""
    assert ex.request.annotations == {
        "a": 1,
        "b": 3,
        "c": {"d": 4},
        "end_hook_error": {"code": "StoreError", "message": "down"},
    }


def test_an_annotation_for_an_unknown_exchange_is_a_problem(tmp_path: Path) -> None:
    with TapeWriter(tmp_path) as tape:
        x = tape.begin()
        tape.request(x, {"method": "GET"}, body=b"")
        tape.end(x, {"outcome": "ok"})
    segment = tmp_path / segment_name(1)
    segment.write_bytes(
        segment.read_bytes() + b'{"k":"ann","x":"nope:1","t":1,"n":0,"meta":{}}\n\n'
    )
    (problem,) = read_tape(tmp_path).problems
    assert "ann frame for unknown exchange nope:1" in problem


def test_more_body_parts_than_one_write_takes(tmp_path: Path) -> None:
    parts = [bytes([i % 256]) for i in range(3000)]  # over IOV_MAX buffers
    with TapeWriter(tmp_path) as tape:
        x = tape.begin()
        tape.request(x, {"method": "POST"}, body=parts)
        tape.end(x, {"outcome": "ok"})
        assert tape.errors == []
    assert read_tape(tmp_path).exchanges[0].request_body == b"".join(parts)


def test_reading_from_a_segment_on(tmp_path: Path) -> None:
    for n in range(3):
        with TapeWriter(tmp_path) as tape:  # each writer opens its own segment
            x = tape.begin()
            tape.request(x, {"method": "GET", "path": f"/{n}"}, body=b"")
            tape.end(x, {"outcome": "ok"})
    assert [e.request.path for e in read_tape(tmp_path, from_segment=2).exchanges] == ["/1", "/2"]


# -- the framing pass: its fast path for data frames is the JSON path --------------------

_DATA_HEADERS = [
    b'{"k":"body","x":"%b","t":5,"n":1}\na\n',
    b'{"k":"chunk","x":"%b","t":-0,"n":0}\n\n',
    b'{"k":"chunk","x":"%b","t":07,"n":1}\na\n',  # a leading zero: not JSON
    b'{"k":"chunk","x":"%b","t":123456789012345678901,"n":1}\na\n',
    b'{"k":"chunk","x":"%b","t":9999999999999999999,"n":1}\na\n',  # past 64 bits
    b'{"k":"chunk","x":"%b","t":-9223372036854775808,"n":1}\na\n',
    b'{"k":"chunk","x":"%b","n":1,"t":1}\na\n',  # other key order
    b'{"k":"chunk", "x":"%b","t":1,"n":1}\na\n',
    b'{"k":"chunk","x":"%b\\u0041","t":1,"n":1}\na\n',
    b'{"k":"chunk","x":"ghost:9","t":1,"n":1}\na\n',
    b'{"k":"chunk","x":"%b","t":1,"n":3}\nab\n',  # no terminator
    b'{"k":"chunk","x":"%b","t":1,"n":30}\nab\n',  # torn
    b'{"k":"chunk","x":"%b","t":1,"n":1}\na\n{"k":"chunk","x":"%b","t":2,"n":1}\nb\n',
]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    frames=st.lists(st.sampled_from(_DATA_HEADERS) | st.binary(max_size=8), max_size=8),
    finish_at=st.integers(min_value=0, max_value=8),
)
def test_data_frame_fast_path_indexes_as_the_json_path(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    frames: list[bytes],
    finish_at: int,
) -> None:
    root = tmp_path_factory.mktemp("tape")
    with TapeWriter(root, fsync_interval=None) as tape:
        x = tape.begin()
        tape.request(x, {"method": "POST", "path": "/v1/messages"}, body=b"abc")
        tape.response(x, {"status": 200})
        tape.chunk(x, b"data: a\n\n")
    xb = x.encode()
    with (root / segment_name(1)).open("ab") as fh:
        for i, frame in enumerate(frames):
            if i == finish_at:
                fh.write(b'{"k":"end","x":"%b","t":9,"n":0,"meta":{"outcome":"ok"}}\n\n' % xb)
            fh.write(frame.replace(b"%b", xb))

    def indexed() -> tuple[object, ...]:
        with index_tape(root) as index:
            refs = [(r.exchange_id, r.request_time_ns, r.frames.tolist()) for r in index.exchanges]
            return refs, index.problems, [index.load(r) for r in index.exchanges]

    fast = indexed()
    monkeypatch.setattr(framing, "_DATA_HEADER", re.compile(rb"(?!)"))  # never matches
    assert indexed() == fast


def test_the_writers_data_frames_take_the_fast_path(tmp_path: Path) -> None:
    with TapeWriter(tmp_path, fsync_interval=None) as tape:
        _write_exchange(tape, body=b"abc", chunks=[b"data: a\n\n", b""])
    lines = (tmp_path / segment_name(1)).read_bytes().split(b"\n")
    data = [line for line in lines if line.startswith((b'{"k":"body"', b'{"k":"chunk"'))]
    assert len(data) == 3
    assert all(framing._DATA_HEADER.fullmatch(line) for line in data)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=0, max_value=400), empty=st.integers(min_value=1, max_value=4))
def test_a_mapped_tape_indexes_as_one_read_into_memory(
    tmp_path_factory: pytest.TempPathFactory, cut: int, empty: int
) -> None:
    """index_tape maps each segment; keep_data reads it whole: torn, empty or whole, the
    same exchanges, frames and problems."""
    root = tmp_path_factory.mktemp("tape")
    with TapeWriter(root, fsync_interval=None, segment_max_bytes=300) as tape:
        for n in range(3):
            _write_exchange(tape, body=b"b" * n * 50, chunks=[b"data: %d\n\n" % n, b"x" * 90])
    segments = sorted(root.iterdir())
    torn = segments[cut % len(segments)]
    data = torn.read_bytes()
    torn.write_bytes(data[: cut % (len(data) + 1)])
    segments[empty % len(segments)].write_bytes(b"")

    def indexed(keep: bool) -> tuple[object, ...]:
        with index_tape(root, keep_data=keep) as index:
            refs = [(r.exchange_id, r.request_time_ns, r.frames.tolist()) for r in index.exchanges]
            return refs, index.problems, [index.load(r) for r in index.exchanges]

    assert indexed(keep=False) == indexed(keep=True)


def test_a_segment_that_cannot_be_mapped_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without mmap: the segments are read instead, to the same index."""
    with TapeWriter(tmp_path, fsync_interval=None, segment_max_bytes=300) as tape:
        for n in range(3):
            _write_exchange(tape, body=b"b" * n * 50, chunks=[b"data: %d\n\n" % n])

    def indexed() -> tuple[object, ...]:
        with index_tape(tmp_path) as index:
            refs = [(r.exchange_id, r.frames.tolist()) for r in index.exchanges]
            return refs, index.problems, [index.load(r) for r in index.exchanges]

    mapped = indexed()

    def no_mmap(*_args: object, **_kwargs: object) -> object:
        raise OSError(19, "No such device")  # ENODEV: what mmap says where it cannot

    monkeypatch.setattr(reader_module.mmap, "mmap", no_mmap)
    assert indexed() == mapped
    assert len(mapped[0]) == 3
