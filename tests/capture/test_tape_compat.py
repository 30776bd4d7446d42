"""Older tapes still read: a version 1 tape as the proxy wrote it, every fixture tape, and
the converter chain that will carry today's tapes into the next version."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from roller.capture.tape import (
    TAPE_VERSION,
    EndMeta,
    ExchangeError,
    Redaction,
    RequestMeta,
    ResponseMeta,
    compat,
    read_tape,
    segment_name,
)

DATA = Path(__file__).parents[1] / "data"
V1 = DATA / "tapes" / "v1"
CONNECT_ERROR = (
    "cannot connect to http://127.0.0.1:9: Cannot connect to host 127.0.0.1:9 ssl:default "
    "[Connect call failed ('127.0.0.1', 9)]"
)


def _metas(data: bytes) -> list[tuple[str, str, dict[str, Any]]]:
    """(exchange id, kind, meta) of every meta frame, straight from the bytes."""
    out = []
    pos = 0
    while pos < len(data):
        newline = data.index(b"\n", pos)
        header = json.loads(data[pos:newline])
        pos = newline + 1 + header["n"] + 1
        if "meta" in header:
            out.append((header["x"], header["k"], header["meta"]))
    return out


def test_a_v1_tape_reads_into_the_typed_records() -> None:
    result = read_tape(V1)
    assert result.problems == ()
    ok, refused = result.exchanges
    assert ok.request == RequestMeta(
        method="POST",
        path="/v1/messages",
        query=(("beta", "true"),),
        headers=(
            ("Host", "127.0.0.1:44005"),
            ("anthropic-version", "2023-06-01"),
            ("Accept", "*/*"),
            ("Accept-Encoding", "gzip, deflate"),
            ("User-Agent", "Python/3.11 aiohttp/3.14.5"),
            ("Content-Length", "14"),
            ("Content-Type", "application/json"),
        ),
        redacted=Redaction(headers=("x-api-key",), query=("key",)),
        roller={"x-roller-sample": "s1"},
        upstream="http://127.0.0.1:43763",
        client="127.0.0.1:39874",
        http_version="1.1",
        annotations={},
    )
    assert ok.response == ResponseMeta(
        status=200,
        reason="OK",
        headers=(
            ("request-id", "r1"),
            ("Content-Type", "application/json; charset=utf-8"),
            ("Content-Length", "15"),
            ("Date", "Tue, 01 Dec 2026 19:11:42 GMT"),
            ("Server", "Python/3.11 aiohttp/3.14.5"),
        ),
        redacted_headers=("set-cookie",),
        http_version="1.1",
    )
    assert ok.end == EndMeta(
        outcome="ok",
        client_status=200,
        upstream_status=200,
        request_bytes=14,
        response_bytes=15,
        client_bytes=15,
    )
    assert (ok.request_body, ok.body) == (b'{"model": "m"}', b'{"id": "msg_1"}')
    assert refused.response is None and refused.request.upstream == "http://127.0.0.1:9"
    assert refused.end == EndMeta(
        outcome="upstream_connect_error",
        error=ExchangeError("connect_failed", CONNECT_ERROR),
        client_status=502,
        request_bytes=2,
        response_bytes=0,
        client_bytes=0,
        client_body={"error": {"type": "roller_upstream_unreachable", "message": CONNECT_ERROR}},
    )


def _fixture_tapes() -> list[Path]:
    recorded = [
        *DATA.glob("harnesses/*/*/tape/*.rtape.gz"),
        *DATA.glob("harnesses/*/*/tape/*.rtape"),
    ]
    return [*sorted(recorded), V1 / segment_name(1)]


@pytest.mark.parametrize("path", _fixture_tapes(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_recorded_meta_comes_back_exactly_from_its_record(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    data = gzip.decompress(data) if path.suffix == ".gz" else data
    (tmp_path / segment_name(1)).write_bytes(data)
    result = read_tape(tmp_path)
    assert result.problems == ()
    by_id = result.by_id()
    typed = {"req": "request", "resp": "response", "end": "end"}
    for x, kind, meta in _metas(data):
        record = getattr(by_id[x], typed[kind])
        assert record.extra == {} and record.invalid == ()
        assert json.loads(json.dumps(record.to_json())) == meta


# -- the chain ------------------------------------------------------------------------


def _v0_to_v1(header: dict[str, Any]) -> dict[str, Any]:
    """A made-up version 0 (none was issued) that called `client_status` `status` and
    held `redacted` as one list of header names: the kind of change a version marks."""
    meta = header.get("meta")
    if header["k"] == "end" and isinstance(meta, dict):
        meta = {("client_status" if k == "status" else k): v for k, v in meta.items()}
    if header["k"] == "req" and isinstance(meta, dict):
        meta = {**meta, "redacted": {"headers": meta["redacted"], "query": []}}
    return {**header, "meta": meta}


def _v0_tape(directory: Path, version: int = 0) -> None:
    directory.mkdir()
    frames: list[dict[str, Any]] = [
        {"k": "seg", "v": version, "t": 1, "n": 0, "pid": 1},
        {"k": "req", "x": "a:1", "t": 2, "n": 0, "meta": {"method": "GET", "redacted": ["x"]}},
        {"k": "end", "x": "a:1", "t": 3, "n": 0, "meta": {"outcome": "ok", "status": 200}},
    ]
    data = b"".join(json.dumps(f).encode() + b"\n\n" for f in frames)
    (directory / segment_name(1)).write_bytes(data)


def test_the_chain_converts_an_older_version_before_typing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # v2 added the `bref` frame; a v1 frame is a v2 frame as it is
    assert TAPE_VERSION == 2 and set(compat.CONVERTERS) == {1}
    _v0_tape(tmp_path / "v0")
    assert read_tape(tmp_path / "v0").problems == (
        f"{segment_name(1)}: unsupported tape version 0",
    )
    monkeypatch.setattr(compat, "CONVERTERS", {0: _v0_to_v1, 1: compat.CONVERTERS[1]})
    result = read_tape(tmp_path / "v0")
    assert result.problems == ()
    (ex,) = result.exchanges
    assert ex.request == RequestMeta(method="GET", redacted=Redaction(headers=("x",)))
    assert ex.end == EndMeta(outcome="ok", client_status=200)


def test_a_newer_version_is_reported_not_guessed(tmp_path: Path) -> None:
    _v0_tape(tmp_path / "newer", version=TAPE_VERSION + 1)
    result = read_tape(tmp_path / "newer")
    assert result.exchanges == ()
    assert result.problems == (f"{segment_name(1)}: unsupported tape version {TAPE_VERSION + 1}",)


def test_a_converter_that_fails_costs_its_frame_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails_on_end(header: dict[str, Any]) -> dict[str, Any]:
        if header["k"] == "end":
            raise KeyError("nothing to convert")
        return _v0_to_v1(header)

    monkeypatch.setattr(compat, "CONVERTERS", {0: fails_on_end, 1: compat.CONVERTERS[1]})
    _v0_tape(tmp_path / "v0")
    result = read_tape(tmp_path / "v0")
    (ex,) = result.exchanges
    assert ex.request.method == "GET" and ex.end is None
    (problem,) = result.problems
    assert problem.startswith(f"{segment_name(1)} byte ") and "tape version 0" in problem
