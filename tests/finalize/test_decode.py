"""The decode stage: one tape exchange in, the wire facts of one call out."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from tests.finalize.synthetic import BODY, Exchange, decoded
from tests.support.tapes import anthropic_reply

GZIP = (("content-type", "application/json"), ("content-encoding", "gzip"))


def test_a_completed_json_call(tmp_path: Path) -> None:
    (call,) = decoded(tmp_path, [Exchange(reply=anthropic_reply("msg_1"))])
    assert (call.kind, call.protocol) == ("generation", "anthropic-messages")
    assert (call.execution_status, call.response_capture_status) == ("completed", "complete")
    assert (call.response_id, call.model, call.errors) == ("msg_1", "mock-model", ())
    assert call.context == BODY and call.context_ok
    assert call.context_sha256 == hashlib.sha256(call.exchange.request_body).hexdigest()


def test_a_request_body_that_is_not_json_is_kept_and_reported(tmp_path: Path) -> None:
    (call,) = decoded(tmp_path, [Exchange(body=b"{not json")])
    assert call.context is None and not call.context_ok
    assert [code for code, _ in call.errors] == ["context_not_json"]
    assert call.context_sha256 == hashlib.sha256(b"{not json").hexdigest()


def test_a_body_no_record_can_hold_is_kept_and_reported(tmp_path: Path) -> None:
    # JSON Python reads, with a lone surrogate escape pydantic cannot write: it used to
    # raise out of finalize; now it is the call's data, like a body that is not JSON
    body = b'{"model":"mock-model","messages":[{"role":"user","content":"a \\ud800 b"}]}'
    (call,) = decoded(tmp_path, [Exchange(body=body)])
    assert call.context is None and not call.context_ok
    assert [code for code, _ in call.errors] == ["context_not_json"]
    assert call.context_sha256 == hashlib.sha256(body).hexdigest()


def test_a_compressed_response_is_decoded_before_it_is_read(tmp_path: Path) -> None:
    reply = gzip.compress(anthropic_reply("msg_gz"))
    (call,) = decoded(tmp_path, [Exchange(reply=reply, response_headers=GZIP)])
    assert call.response_id == "msg_gz" and call.content_encoding == "gzip"
    assert call.exchange.body == reply  # the tape keeps the bytes as received


def test_a_body_that_cannot_be_decoded_is_an_error_not_an_output(tmp_path: Path) -> None:
    broken = (("content-type", "application/json"), ("content-encoding", "br"))
    (call,) = decoded(tmp_path, [Exchange(response_headers=broken)])
    assert call.reassembly is None and call.response_id is None
    assert call.errors == (("response_not_decodable", "content-encoding br is not decodable"),)


def test_an_exchange_the_tape_left_in_flight_is_interrupted(tmp_path: Path) -> None:
    (call,) = decoded(tmp_path, [Exchange(ended=False)])
    assert call.outcome == "in_flight"
    assert (call.execution_status, call.response_capture_status) == ("interrupted", "partial")


def test_an_upstream_error_status_is_a_failed_call_fully_captured(tmp_path: Path) -> None:
    error = b'{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}'
    (call,) = decoded(tmp_path, [Exchange(reply=error, status=529)])
    assert (call.execution_status, call.response_capture_status) == ("failed", "complete")


def test_side_requests_are_not_generation_calls(tmp_path: Path) -> None:
    count = Exchange(path="/v1/messages/count_tokens", reply=b'{"input_tokens": 3}')
    (call,) = decoded(tmp_path, [count])
    assert (call.kind, call.protocol) == ("token_count", None)
