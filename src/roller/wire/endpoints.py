"""The one table of HTTP endpoints roller knows: `(method, path, query) -> Endpoint`.

Every part of roller that asks "what is this request?" asks `endpoint_for`: the proxy
(which upstream family), finalize (is it a model call, of which protocol), the gateway
(family, requested model) and the mock (what to answer). The answer comes from the
endpoint alone, never from the body.

Matching rules:
- The path is split on `/` first and each segment percent-decoded after (so `%3A` is a
  colon, and `%2F` stays inside its segment, as RFC 3986 says); empty segments, a query
  string and a fragment are ignored, so `/v1/messages?beta=true`, `//v1/messages` and
  `/v1/responses/` all match. Literal segments match case-sensitively, as HTTP paths do.
- A pattern matches the END of the path, so any base-path prefix before it is accepted
  (`/anthropic/v1/messages`, Azure's `/openai/deployments/D/chat/completions`). A
  pattern ending in `**` matches anywhere in the path, followed by any segments.
  `a|b` is either literal.
- The first row whose pattern matches the path decides, whatever the method: a wrong
  method still names the row's family (the proxy routes by path alone) but its `kind`
  is `other` and `method_allowed` is False (the mock answers 405).
- `{model}` captures a segment as the model (model info); `{model}:method` is a Gemini
  `models/M:method` segment, whose model has no colon. `{id}` is any one segment.
- The query changes nothing but Gemini's `alt=sse`, which makes a stream SSE (without
  it `streamGenerateContent` answers one JSON array of chunks).

`kind` separates model calls (`generation`) from side requests. What a capture records
is `Endpoint.record_kind`, the `CallKind` of `roller.capture.models` (a test checks they
agree), and a call's protocol is `Endpoint.output_protocol`: only a generation
endpoint's response is decoded as its protocol's output. A row's `protocol` names the
API whose shapes its bodies use (the mock answers errors in that shape), side endpoints
included; `None` when no codec describes it. No family means every family serves it
(the model list): the proxy sends it to the default upstream.

`ROUTES` below is the table, in matching order; docs/architecture.md renders it (a test
checks the two agree).

`gemini.stream` streams by its endpoint (`Endpoint.stream`); every other protocol asks
for a stream in the body (the codec's `is_streaming_request`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final, Literal
from urllib.parse import parse_qsl, unquote

from roller.wire.types import ProtocolName

Family = Literal["anthropic", "openai", "gemini"]
FAMILIES: tuple[Family, ...] = ("anthropic", "openai", "gemini")

EndpointKind = Literal[
    "generation",
    "token_count",
    "model_list",
    "model_info",
    "compaction",
    "response_lookup",
    "embedding",
    "legacy_completion",
    "other",
]
# The four kinds a capture records (`roller.capture.models.CallKind`).
RecordKind = Literal["generation", "token_count", "model_list", "other"]
RECORD_KINDS: Final[Mapping[EndpointKind, RecordKind]] = {
    "generation": "generation",
    "token_count": "token_count",
    "model_list": "model_list",
    "model_info": "other",
    "compaction": "other",
    "response_lookup": "other",
    "embedding": "other",
    "legacy_completion": "other",
    "other": "other",
}


@dataclass(frozen=True, slots=True)
class _Segment:
    """One compiled pattern segment: literals, `{id}`/`{model}`, or `{model}:method`."""

    literals: frozenset[str] | None = None  # None: any segment
    method: str | None = None  # `{model}:method`: the segment is `<model>:<method>`
    captures: bool = False  # the segment (or its model part) is the model

    def match(self, segment: str) -> tuple[bool, str | None]:
        if self.method is not None:
            model, colon, method = segment.rpartition(":")
            ok = bool(colon) and method == self.method and bool(model) and ":" not in model
            return ok, model if ok else None
        if self.literals is not None and segment not in self.literals:
            return False, None
        return True, segment if self.captures else None


def _compile(pattern: str) -> tuple[tuple[_Segment, ...], bool]:
    parts = pattern.split("/")
    anywhere = parts[-1] == "**"
    compiled: list[_Segment] = []
    for part in parts[:-1] if anywhere else parts:
        if part.startswith("{model}:"):
            compiled.append(_Segment(method=part.removeprefix("{model}:"), captures=True))
        elif part in ("{model}", "{id}"):
            compiled.append(_Segment(captures=part == "{model}"))
        else:
            compiled.append(_Segment(literals=frozenset(part.split("|"))))
    return tuple(compiled), anywhere


@dataclass(frozen=True, slots=True)
class Route:
    """One row of the endpoint table (see the module docstring for the pattern syntax)."""

    name: str
    method: str | None  # None: any method
    pattern: str
    family: Family | None
    protocol: ProtocolName | None
    kind: EndpointKind
    stream: bool = False  # the endpoint itself streams its answer (Gemini)
    _compiled: tuple[tuple[_Segment, ...], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", _compile(self.pattern))

    def match(self, segments: tuple[str, ...]) -> tuple[bool, str | None]:
        """Whether the path's segments match, and the model the path names (if any)."""
        compiled, anywhere = self._compiled
        size = len(compiled)
        starts = range(len(segments) - size + 1) if anywhere else (len(segments) - size,)
        for start in starts:
            if start < 0:
                break
            model: str | None = None
            for seg, text in zip(compiled, segments[start : start + size], strict=True):
                ok, captured = seg.match(text)
                if not ok:
                    break
                model = captured if captured is not None else model
            else:
                return True, model
        return False, None


_GEMINI_MODEL = "models|tunedModels/{model}"

ROUTES: Final[tuple[Route, ...]] = (
    Route(
        "anthropic.count_tokens",
        "POST",
        "v1/messages/count_tokens",
        "anthropic",
        "anthropic-messages",
        "token_count",
    ),
    Route(
        "anthropic.messages", "POST", "v1/messages", "anthropic", "anthropic-messages", "generation"
    ),
    # Message batches and whatever else lives under /v1/messages.
    Route("anthropic.other", None, "v1/messages/**", "anthropic", "anthropic-messages", "other"),
    Route(
        "openai.chat", "POST", "chat/completions", "openai", "openai-chat-completions", "generation"
    ),
    Route("openai.responses", "POST", "responses", "openai", "openai-responses", "generation"),
    Route(
        "openai.responses.compact",
        "POST",
        "responses/compact",
        "openai",
        "openai-responses",
        "compaction",
    ),
    Route(
        "openai.responses.input_tokens",
        "POST",
        "responses/input_tokens",
        "openai",
        "openai-responses",
        "token_count",
    ),
    Route(
        "openai.responses.get",
        "GET",
        "responses/{id}",
        "openai",
        "openai-responses",
        "response_lookup",
    ),
    # Cancel, input items, delete: still the Responses API, never a model call.
    Route("openai.responses.other", None, "responses/**", "openai", "openai-responses", "other"),
    Route("openai.completions", "POST", "completions", "openai", None, "legacy_completion"),
    Route("openai.embeddings", "POST", "embeddings", "openai", None, "embedding"),
    # Assistants: `/v1/threads/T/messages` ends in `/messages` but is not Anthropic.
    Route("openai.threads", None, "v1/threads/**", "openai", None, "other"),
    Route(
        "gemini.generate",
        "POST",
        f"{_GEMINI_MODEL}:generateContent",
        "gemini",
        "gemini",
        "generation",
    ),
    Route(
        "gemini.stream",
        "POST",
        f"{_GEMINI_MODEL}:streamGenerateContent",
        "gemini",
        "gemini",
        "generation",
        stream=True,
    ),
    Route(
        "gemini.count_tokens",
        "POST",
        f"{_GEMINI_MODEL}:countTokens",
        "gemini",
        "gemini",
        "token_count",
    ),
    Route("gemini.embed", "POST", "models/{model}:embedContent", "gemini", "gemini", "embedding"),
    Route(
        "gemini.batch_embed",
        "POST",
        "models/{model}:batchEmbedContents",
        "gemini",
        "gemini",
        "embedding",
    ),
    Route("gemini.models", "GET", "v1beta|v1alpha/models", "gemini", "gemini", "model_list"),
    Route("gemini.model", "GET", "v1beta|v1alpha/models/{model}", "gemini", "gemini", "model_info"),
    # Every family lists its models at `…/models` (Gemini's OpenAI-compatible
    # `/v1beta/openai/models` too): no family, the default upstream.
    Route("models", "GET", "models", None, None, "model_list"),
    Route("model", "GET", "models/{model}", None, None, "model_info"),
    # Files, cached contents, operations: the Gemini API, under its version segment.
    Route("gemini.other", None, "v1beta|v1alpha/**", "gemini", "gemini", "other"),
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What a request's endpoint says about it (see the module docstring)."""

    family: Family | None
    protocol: ProtocolName | None
    kind: EndpointKind
    stream: bool = False  # the endpoint streams its answer (Gemini streamGenerateContent)
    sse: bool = False  # …as SSE events (`alt=sse`); without it, one JSON array
    model: str | None = None  # the model the path names
    route: Route | None = None  # the row that matched the path; None: no row did
    method_allowed: bool = False  # the row matched and takes this method

    @property
    def record_kind(self) -> RecordKind:
        """The `kind` a capture's call record carries."""
        return RECORD_KINDS[self.kind]

    @property
    def output_protocol(self) -> ProtocolName | None:
        """The protocol a response is decoded as: a generation endpoint's, else None."""
        return self.protocol if self.kind == "generation" else None


UNKNOWN: Final = Endpoint(family=None, protocol=None, kind="other")


def path_segments(path: str) -> tuple[str, ...]:
    """The decoded, non-empty segments of a path (a query or fragment is dropped)."""
    bare = path.split("?", 1)[0].split("#", 1)[0]
    return tuple(unquote(s) for s in bare.split("/") if s)


@lru_cache(maxsize=4096)
def route_for(path: str) -> tuple[Route | None, str | None]:
    """The first row matching `path` (a query is ignored) and the model the path names.

    Cached: a proxy sees the same few paths again and again."""
    segments = path_segments(path)
    for route in ROUTES:
        matched, model = route.match(segments)
        if matched:
            return route, model
    return None, None


def endpoint_for(method: str, path: str, query: Iterable[tuple[str, str]] = ()) -> Endpoint:
    """The endpoint of `method path` (path may carry `?query`; `query` adds pairs).

    Without a query, cached per method and path (an `Endpoint` is immutable): a gateway
    asks once per request, and a proxy sees the same few paths again and again."""
    if not query and "?" not in path:
        return _endpoint_without_query(method, path)
    return _endpoint(method, path, query)


@lru_cache(maxsize=4096)
def _endpoint_without_query(method: str, path: str) -> Endpoint:
    return _endpoint(method, path, ())


def _endpoint(method: str, path: str, query: Iterable[tuple[str, str]]) -> Endpoint:
    route, model = route_for(path)
    if route is None:
        return UNKNOWN
    allowed = route.method is None or route.method == method.upper()
    sse = False
    if route.stream:
        pairs = list(query)
        if "?" in path:
            pairs += parse_qsl(path.split("?", 1)[1].split("#", 1)[0], keep_blank_values=True)
        sse = ("alt", "sse") in pairs
    return Endpoint(
        family=route.family,
        protocol=route.protocol,
        kind=route.kind if allowed else "other",
        stream=route.stream and allowed,
        sse=sse and allowed,
        model=model,
        route=route,
        method_allowed=allowed,
    )


@lru_cache(maxsize=4096)
def family_for(path: str) -> Family | None:
    """The upstream family of a path, whatever the method (the proxy routes by path).

    Cached as `route_for` is (the proxy asks once per exchange)."""
    route, _ = route_for(path)
    return None if route is None else route.family
