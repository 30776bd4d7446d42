"""The oracle drivers in tests/wire/oracles.py give what the real SDK clients give.

The differential tests call the SDKs' accumulators directly (a real HTTP round trip per
stream would make 10,000 streams take many minutes). Here generated streams are served
from a real loopback server, chunk by chunk, to the official clients' `.stream()`
helpers, and their final objects must equal the drivers' results, and roller's.
"""

from __future__ import annotations

import anthropic
import openai
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roller.wire import anthropic as anthropic_codec
from roller.wire import openai_chat, openai_responses
from tests.support.servers import BackgroundLoop
from tests.wire.oracles import (
    ANTHROPIC_SDK_NULLS,
    CHAT_SDK_NULLS,
    RESPONSES_SDK_NULLS,
    anthropic_oracle,
    chat_oracle,
    drop_sdk_nulls,
    responses_oracle,
    sdk_dict,
)
from tests.wire.streams import (
    GeneratedStream,
    anthropic_streams,
    chat_streams,
    responses_streams,
    run_roller,
)

CLIENT_SETTINGS = settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PER_PROTOCOL = 15


class Served:
    """A loopback server that answers every POST with the current stream's chunks."""

    def __init__(self, loop: BackgroundLoop) -> None:
        self.chunks: list[bytes] = []
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self.url = loop.serve(app)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for chunk in self.chunks:
            await response.write(chunk)
        await response.write_eof()
        return response


@CLIENT_SETTINGS
@given(st.lists(anthropic_streams(may_cut=False), min_size=PER_PROTOCOL, max_size=PER_PROTOCOL))
def test_anthropic_client(bg_loop: BackgroundLoop, batch: list[GeneratedStream]) -> None:
    served = Served(bg_loop)
    client = anthropic.Anthropic(base_url=served.url, api_key="sk-test", max_retries=0)
    for stream in batch:
        served.chunks = stream.chunks
        with client.beta.messages.stream(
            model="m", max_tokens=1, messages=[{"role": "user", "content": "hi"}]
        ) as response:
            final = sdk_dict(response.get_final_message())
        assert final == anthropic_oracle(stream.chunks).message
        ours = run_roller(anthropic_codec.CODEC, stream.chunks).output
        assert ours == drop_sdk_nulls(final, ours, ANTHROPIC_SDK_NULLS)


@CLIENT_SETTINGS
@given(st.lists(chat_streams(may_cut=False), min_size=PER_PROTOCOL, max_size=PER_PROTOCOL))
def test_openai_chat_client(bg_loop: BackgroundLoop, batch: list[GeneratedStream]) -> None:
    served = Served(bg_loop)
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="sk-test", max_retries=0)
    for stream in batch:
        served.chunks = stream.chunks
        with client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "hi"}]
        ) as response:
            response.until_done()
            final = sdk_dict(response.current_completion_snapshot)
        assert final == chat_oracle(stream.chunks).completion
        ours = run_roller(openai_chat.CODEC, stream.chunks).output
        assert ours == drop_sdk_nulls(final, ours, CHAT_SDK_NULLS)


@CLIENT_SETTINGS
@given(st.lists(responses_streams(may_cut=False), min_size=PER_PROTOCOL, max_size=PER_PROTOCOL))
def test_openai_responses_client(bg_loop: BackgroundLoop, batch: list[GeneratedStream]) -> None:
    served = Served(bg_loop)
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="sk-test", max_retries=0)
    for stream in batch:
        served.chunks = stream.chunks
        with client.responses.stream(model="m", input="hi") as response:
            last = None
            for event in response:
                last = event
            assert last is not None
            if last.type == "response.completed":
                final = sdk_dict(response.get_final_response())
            else:  # get_final_response() raises for response.incomplete
                assert last.type == "response.incomplete"
                final = sdk_dict(last.response)
        assert final == responses_oracle(stream.chunks).final
        ours = run_roller(openai_responses.CODEC, stream.chunks).output
        assert ours == drop_sdk_nulls(final, ours, RESPONSES_SDK_NULLS)
