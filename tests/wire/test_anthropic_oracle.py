"""Differential test: roller's Anthropic reassembly against the SDK's accumulator.

For every generated stream (tests/wire/streams.py), split at random byte positions and
sometimes cut short, roller's output must equal what `anthropic` 2.14.0 accumulates
(tests/wire/oracles.py names the one normalization). A stream cut inside a tool_use
block is the one place the two differ by design: the SDK partial-parses the unfinished
input JSON, roller keeps the raw string unless it parses, and says so in `problems`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.wire import anthropic
from roller.wire.types import Reassembly
from tests.wire.oracles import (
    ANTHROPIC_SDK_NULLS,
    AnthropicSDKResult,
    anthropic_oracle,
    drop_sdk_nulls,
    run_oracles,
)
from tests.wire.settings import BATCH, ORACLE_BATCHES, TIMEOUT
from tests.wire.streams import GeneratedStream, anthropic_streams, run_roller


@pytest.mark.timeout(TIMEOUT)
@ORACLE_BATCHES
@given(st.lists(anthropic_streams(), min_size=BATCH, max_size=BATCH))
def test_reassembly_equals_sdk_accumulator(batch: list[GeneratedStream]) -> None:
    oracle = run_oracles(anthropic_oracle, [stream.chunks for stream in batch])
    ours = [run_roller(anthropic.CODEC, stream.chunks) for stream in batch]
    for i, (stream, mine, sdk) in enumerate(zip(batch, ours, oracle, strict=True)):
        try:
            check(stream, mine, sdk)
        except AssertionError as err:
            raise AssertionError(f"stream {i} of the batch: {stream!r}") from err


def check(stream: GeneratedStream, ours: Reassembly, sdk: AnthropicSDKResult) -> None:
    if sdk.message is None:
        assert ours.output is None
        assert not ours.complete
        return
    assert ours.output is not None
    assert ours.complete == ("message_stop" in sdk.events), ours.incomplete_reason
    expected: dict[str, Any] = drop_sdk_nulls(sdk.message, ours.output, ANTHROPIC_SDK_NULLS)
    actual = ours.output
    for index in sdk.open_blocks:
        ours_block, sdk_block = actual["content"][index], expected["content"][index]
        if "input" in ours_block and ours_block["input"] != sdk_block.get("input"):
            # Unfinished tool input: roller keeps the raw text and reports it.
            assert isinstance(ours_block["input"], str)
            assert any("input JSON does not parse" in p for p in ours.problems)
            actual = _without_input(actual, index)
            expected = _without_input(expected, index)
    assert actual == expected
    if stream.cut is None:
        assert ours.problems == ()
        assert ours.unmerged == ()


def _without_input(message: dict[str, Any], index: int) -> dict[str, Any]:
    content = list(message["content"])
    content[index] = {k: v for k, v in content[index].items() if k != "input"}
    return {**message, "content": content}
