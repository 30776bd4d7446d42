"""Differential test: roller's Responses reassembly against the SDK's
`ResponseStreamState`.

A stream that reaches its terminal event must give exactly the SDK's final response
(message, function_call with Codex `namespace`, and reasoning items with
`encrypted_content`; sometimes a terminal response without `output`, which both rebuild
from `output_item.done`). A stream cut early must give, item by item, what the SDK
itself reports for an unfinished stream (tests/wire/oracles.py
`responses_oracle`). Where the generator adds in-flight events the SDK's
snapshot does not track (annotations, reasoning summary deltas: `stream.rich`), roller's
unfinished items hold more; there the fields the SDK does track must still agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.wire import openai_responses
from roller.wire.types import Reassembly
from tests.wire.oracles import (
    RESPONSES_SDK_NULLS,
    ResponsesSDKResult,
    drop_sdk_nulls,
    responses_oracle,
    run_oracles,
)
from tests.wire.settings import BATCH, ORACLE_BATCHES, TIMEOUT
from tests.wire.streams import GeneratedStream, responses_streams, run_roller


@pytest.mark.timeout(TIMEOUT)
@ORACLE_BATCHES
@given(st.lists(responses_streams(), min_size=BATCH, max_size=BATCH))
def test_reassembly_equals_sdk_accumulator(batch: list[GeneratedStream]) -> None:
    oracle = run_oracles(responses_oracle, [stream.chunks for stream in batch])
    ours = [run_roller(openai_responses.CODEC, stream.chunks) for stream in batch]
    for i, (stream, mine, sdk) in enumerate(zip(batch, ours, oracle, strict=True)):
        try:
            check(stream, mine, sdk)
        except AssertionError as err:
            raise AssertionError(f"stream {i} of the batch: {stream!r}") from err


def check(stream: GeneratedStream, ours: Reassembly, sdk: ResponsesSDKResult) -> None:
    if sdk.final is not None:
        assert ours.complete, ours.incomplete_reason
        assert ours.output == drop_sdk_nulls(sdk.final, ours.output, RESPONSES_SDK_NULLS)
        assert ours.unmerged == ()
        return
    assert not ours.complete
    if sdk.partial_items is None:
        assert ours.output is None
        return
    assert ours.output is not None
    assert ours.incomplete_reason is not None
    assert ours.incomplete_reason.startswith("stream ended before response.completed")
    created = stream.events[0][1]["response"]
    assert {k: v for k, v in ours.output.items() if k != "output"} == {
        k: v for k, v in created.items() if k != "output"
    }
    expected = drop_sdk_nulls(sdk.partial_items, ours.output["output"], RESPONSES_SDK_NULLS)
    if not stream.rich:
        assert ours.output["output"] == expected
        return
    assert len(ours.output["output"]) == len(expected)
    for mine, theirs in zip(ours.output["output"], expected, strict=True):
        _assert_tracked_fields_agree(mine, theirs)


def _assert_tracked_fields_agree(mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Everything but reasoning `summary` and content parts' `annotations` (which the
    SDK snapshot does not fill from in-flight events) must be equal."""
    assert {k: v for k, v in mine.items() if k not in ("summary", "content")} == {
        k: v for k, v in theirs.items() if k not in ("summary", "content")
    }
    if "content" in theirs:
        strip = [{k: v for k, v in p.items() if k != "annotations"} for p in theirs["content"]]
        assert [{k: v for k, v in p.items() if k != "annotations"} for p in mine["content"]] == (
            strip
        )
