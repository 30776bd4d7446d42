"""Differential test: roller's Chat Completions reassembly against the SDK's
`ChatCompletionStreamState`.

For every generated stream (one or two choices, content / refusal / reasoning_content
deltas, index-chunked tool calls, logprobs, a usage chunk), split at random byte
positions and sometimes cut short, roller's completion must equal the SDK's snapshot
(tests/wire/oracles.py names the one normalization). The generators stay inside what
the SDK gets right: `role` only in a choice's first delta (the SDK concatenates a
repeated role into "assistantassistant"), a choice's first chunk without logprobs
content (the SDK counts those twice when the choice first appears after chunk 0), every
chunk with the same `system_fingerprint` (the SDK takes the last chunk's, even null).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roller.wire import openai_chat
from roller.wire.types import Reassembly
from tests.wire.oracles import (
    CHAT_SDK_NULLS,
    ChatSDKResult,
    chat_oracle,
    drop_sdk_nulls,
    run_oracles,
)
from tests.wire.settings import BATCH, ORACLE_BATCHES, TIMEOUT
from tests.wire.streams import GeneratedStream, chat_streams, run_roller


@pytest.mark.timeout(TIMEOUT)
@ORACLE_BATCHES
@given(st.lists(chat_streams(), min_size=BATCH, max_size=BATCH))
def test_reassembly_equals_sdk_accumulator(batch: list[GeneratedStream]) -> None:
    oracle = run_oracles(chat_oracle, [stream.chunks for stream in batch])
    ours = [run_roller(openai_chat.CODEC, stream.chunks) for stream in batch]
    for i, (stream, mine, sdk) in enumerate(zip(batch, ours, oracle, strict=True)):
        try:
            check(stream, mine, sdk)
        except AssertionError as err:
            raise AssertionError(f"stream {i} of the batch: {stream!r}") from err


def check(stream: GeneratedStream, ours: Reassembly, sdk: ChatSDKResult) -> None:
    if sdk.completion is None:
        assert ours.output is None
        assert not ours.complete
        return
    assert ours.output == drop_sdk_nulls(sdk.completion, ours.output, CHAT_SDK_NULLS)
    finished = all(choice.get("finish_reason") for choice in sdk.completion["choices"])
    assert ours.complete == (sdk.saw_done or finished), ours.incomplete_reason
    if stream.cut is None:
        assert ours.problems == ()
        assert ours.unmerged == ()
