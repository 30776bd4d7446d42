"""The endpoint table: every row, prefixes, escapes, the query, methods, and its docs copy."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from roller.capture.models import CallKind
from roller.wire import PROTOCOL_NAMES, codec_for
from roller.wire.endpoints import (
    RECORD_KINDS,
    ROUTES,
    EndpointKind,
    endpoint_for,
    family_for,
    path_segments,
    route_for,
)

# One real request per row: (method, path, the model the path names).
EXAMPLES: dict[str, tuple[str, str, str | None]] = {
    "anthropic.count_tokens": ("POST", "/v1/messages/count_tokens?beta=true", None),
    "anthropic.messages": ("POST", "/v1/messages?beta=true", None),
    "anthropic.other": ("GET", "/v1/messages/batches/msgbatch_1/results", None),
    "openai.chat": ("POST", "/v1/chat/completions", None),
    "openai.responses": ("POST", "/v1/responses", None),
    "openai.responses.compact": ("POST", "/v1/responses/compact", None),
    "openai.responses.input_tokens": ("POST", "/v1/responses/input_tokens", None),
    "openai.responses.get": ("GET", "/v1/responses/resp_1", None),
    "openai.responses.other": ("POST", "/v1/responses/resp_1/cancel", None),
    "openai.completions": ("POST", "/v1/completions", None),
    "openai.embeddings": ("POST", "/v1/embeddings", None),
    "openai.threads": ("POST", "/v1/threads/thread_1/messages", None),
    "gemini.generate": (
        "POST",
        "/v1beta/models/gemini-3.5-flash-lite:generateContent",
        "gemini-3.5-flash-lite",
    ),
    "gemini.stream": (
        "POST",
        "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse",
        "gemini-3.8-flash",
    ),
    "gemini.count_tokens": ("POST", "/v1beta/models/gemini-2.5-pro:countTokens", "gemini-2.5-pro"),
    "gemini.embed": (
        "POST",
        "/v1beta/models/text-embedding-004:embedContent",
        "text-embedding-004",
    ),
    "gemini.batch_embed": (
        "POST",
        "/v1beta/models/text-embedding-004:batchEmbedContents",
        "text-embedding-004",
    ),
    "gemini.models": ("GET", "/v1beta/models", None),
    "gemini.model": ("GET", "/v1beta/models/gemini-2.5-pro", "gemini-2.5-pro"),
    "gemini.other": ("GET", "/v1beta/files/f1", None),
    "models": ("GET", "/v1/models", None),
    "model": ("GET", "/v1/models/claude-sonnet-4-5", "claude-sonnet-4-5"),
}
ROUTE_BY_NAME = {r.name: r for r in ROUTES}


def test_every_row_has_an_example_and_names_are_unique() -> None:
    assert len(ROUTE_BY_NAME) == len(ROUTES)
    assert set(EXAMPLES) == set(ROUTE_BY_NAME)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_row_matches_its_example_with_its_facts(name: str) -> None:
    method, path, model = EXAMPLES[name]
    row = ROUTE_BY_NAME[name]
    endpoint = endpoint_for(method, path)
    assert endpoint.route == row  # no earlier row shadows it
    assert endpoint.method_allowed
    assert (endpoint.family, endpoint.protocol, endpoint.kind) == (
        row.family,
        row.protocol,
        row.kind,
    )
    assert endpoint.model == model
    assert endpoint.stream == row.stream
    assert endpoint.record_kind == RECORD_KINDS[row.kind]
    assert endpoint.output_protocol == (row.protocol if row.kind == "generation" else None)
    assert family_for(path) == row.family


@pytest.mark.parametrize("name", list(EXAMPLES))
@pytest.mark.parametrize(
    "prefix", ["/anthropic", "/openai/deployments/gpt", "/api/proxy/v2", "/a%20b"]
)
def test_any_base_path_prefix_is_accepted(name: str, prefix: str) -> None:
    method, path, model = EXAMPLES[name]
    endpoint = endpoint_for(method, prefix + path)
    assert endpoint.route == ROUTE_BY_NAME[name]
    assert endpoint.model == model


@pytest.mark.parametrize("name", [n for n, r in ROUTE_BY_NAME.items() if r.method is not None])
def test_a_wrong_method_keeps_the_family_but_is_no_call(name: str) -> None:
    _, path, _ = EXAMPLES[name]
    row = ROUTE_BY_NAME[name]
    other = "GET" if row.method == "POST" else "POST"
    endpoint = endpoint_for(other, path)
    assert endpoint.route == row and not endpoint.method_allowed
    assert (endpoint.family, endpoint.kind, endpoint.record_kind) == (row.family, "other", "other")
    assert endpoint.output_protocol is None and not endpoint.stream and not endpoint.sse


def test_method_case_does_not_matter() -> None:
    assert endpoint_for("post", "/v1/messages").kind == "generation"


@pytest.mark.parametrize(
    ("path", "name", "model"),
    [
        # %3A is the colon of `models/M:method`; a decoded colon matches the same row.
        (
            "/v1beta/models/gemini-2.5-pro%3AstreamGenerateContent",
            "gemini.stream",
            "gemini-2.5-pro",
        ),
        ("/v1beta/models/gemini%2D2.5:generateContent", "gemini.generate", "gemini-2.5"),
        ("/v1/%6Dessages", "anthropic.messages", None),
        # %2F stays inside its segment: no row has a model with a slash in it.
        ("/v1/models/a%2Fb", "model", "a/b"),
        ("/v1beta/models/a%2Fb:generateContent", "gemini.generate", "a/b"),
        # Empty segments, a trailing slash and a fragment change nothing.
        ("//v1/messages", "anthropic.messages", None),
        ("/proxy/v1/responses/", "openai.responses", None),
        ("/v1/chat/completions#x", "openai.chat", None),
        # A Gemini model name has no colon; an OpenAI fine-tune id (model info) may.
        ("/v1/models/ft:gpt-4o-mini:org:abc", "model", "ft:gpt-4o-mini:org:abc"),
        ("/v1beta/tunedModels/mine:generateContent", "gemini.generate", "mine"),
        (
            "/v1/projects/p/locations/l/publishers/google/models/m:generateContent",
            "gemini.generate",
            "m",
        ),
        ("/v1beta/openai/chat/completions", "openai.chat", None),  # Gemini's OpenAI layer
    ],
)
def test_paths_are_segmented_then_decoded(path: str, name: str, model: str | None) -> None:
    method = ROUTE_BY_NAME[name].method or "POST"
    endpoint = endpoint_for(method, path)
    assert endpoint.route is not None and endpoint.route.name == name
    assert endpoint.model == model


def test_segments() -> None:
    assert path_segments("/a//b%2Fc/?q=1#f") == ("a", "b/c")
    assert path_segments("") == ()


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "",
        "/api/show",
        "/v2/whatever",
        "/V1/Messages",  # paths are case-sensitive
        "/foo:generateContent",  # a Gemini method without `models/M`
        "/v1beta/models/a:b:generateContent",  # a Gemini model has no colon
    ],
)
def test_paths_no_row_claims_for_a_call(path: str) -> None:
    endpoint = endpoint_for("POST", path)
    assert endpoint.kind == "other" and endpoint.output_protocol is None


def test_unknown_paths_have_no_row_no_family() -> None:
    endpoint = endpoint_for("POST", "/api/show")
    assert endpoint.route is None and endpoint.family is None and endpoint.protocol is None
    assert not endpoint.method_allowed


def test_assistants_messages_are_not_anthropic() -> None:
    endpoint = endpoint_for("POST", "/v1/threads/thread_1/messages")
    assert (endpoint.family, endpoint.protocol, endpoint.kind) == ("openai", None, "other")


@pytest.mark.parametrize(
    ("target", "query", "sse"),
    [
        ("/v1beta/models/m:streamGenerateContent?alt=sse", (), True),
        ("/v1beta/models/m:streamGenerateContent", (("alt", "sse"),), True),
        ("/v1beta/models/m:streamGenerateContent?key=k&alt=sse", (), True),
        ("/v1beta/models/m:streamGenerateContent?alt=json", (), False),
        ("/v1beta/models/m:streamGenerateContent", (), False),
        ("/v1beta/models/m:streamGenerateContent", (("ALT", "sse"),), False),
        ("/v1beta/models/m:generateContent?alt=sse", (), False),  # not a stream endpoint
    ],
)
def test_only_gemini_alt_sse_reads_the_query(
    target: str, query: tuple[tuple[str, str], ...], sse: bool
) -> None:
    endpoint = endpoint_for("POST", target, query)
    assert endpoint.sse is sse
    assert endpoint.stream is (":streamGenerateContent" in target)


def test_the_query_never_changes_the_row() -> None:
    for _, path, _ in EXAMPLES.values():
        bare = path.split("?", 1)[0]
        assert route_for(bare) == route_for(bare + "?beta=true&alt=sse&key=x")


def test_an_endpoint_without_a_query_is_kept_and_equal_to_one_read_with_a_query() -> None:
    for method, path, _ in EXAMPLES.values():
        bare = path.split("?", 1)[0]
        for verb in (method, method.lower(), "PATCH"):
            kept = endpoint_for(verb, bare)
            assert kept is endpoint_for(verb, bare)  # kept per method and path
            # the same endpoint as the uncached reading (an empty query as an iterator)
            read = endpoint_for(verb, bare, iter(()))
            assert read == kept and read is not kept


def test_record_kinds_are_the_capture_call_kinds() -> None:
    assert set(RECORD_KINDS) == set(get_args(EndpointKind))
    assert set(RECORD_KINDS.values()) == set(get_args(CallKind))
    assert all(RECORD_KINDS[k] == k for k in get_args(CallKind))


def test_every_protocol_has_one_generation_row_per_endpoint_shape() -> None:
    generating = {r.protocol for r in ROUTES if r.kind == "generation"}
    assert generating == set(PROTOCOL_NAMES)
    for row in ROUTES:
        if row.protocol is not None:
            assert codec_for(row.protocol).name == row.protocol


def test_the_architecture_doc_renders_this_table() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    cells = r"^\| `([a-z_.]+)` \| (\S+) \| `([^`]+)` \| (\S+) \| (\S+) \| (\S+) \|$"
    rows = [
        (n, m, p.replace("\\|", "|"), f, pr, k)
        for n, m, p, f, pr, k in re.findall(cells, doc, re.M)
    ]
    expected = [
        (
            r.name,
            r.method or "any",
            r.pattern,
            r.family or "-",
            f"`{r.protocol}`" if r.protocol else "-",
            r.kind,
        )
        for r in ROUTES
    ]
    assert rows == expected
