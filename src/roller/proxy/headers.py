"""Which headers cross the proxy, in each direction, and how `accept-encoding` is narrowed.

Rules this module keeps:
- Hop-by-hop headers (RFC 9110 7.6.1: `connection` and every header it names,
  `keep-alive`, `proxy-connection`, `transfer-encoding`, `te`, `trailer`, `upgrade`) never
  cross; nor do `host` (the client rewrites it for the upstream), `content-length` (set
  again from the exact body bytes) and `expect` (answered by the proxy's own server).
- `x-roller-*` headers never go upstream. Every other header, including harness identity
  headers such as Codex `thread-id`, is forwarded untouched, in order, duplicates kept.
- Outgoing `accept-encoding` is narrowed to what the standard library can decode
  (`gzip`, `deflate`), keeping the client's order; when nothing decodable is acceptable,
  or the client sent none, it becomes `identity`. This is a deliberate change so every
  recorded body can be decoded later; the tape keeps the client's original value.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from multidict import CIMultiDict

from roller.proxy.redaction import is_roller_header

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
    }
)
_NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length", "expect", "accept-encoding"}
NOT_RELAYED = HOP_BY_HOP
DECODABLE_ENCODINGS = ("gzip", "deflate")


@functools.lru_cache(maxsize=4096)
def lower_name(name: str) -> str:
    return name.lower()


@functools.lru_cache(maxsize=4096)
def not_forwarded(name: str) -> bool:
    """Never forwarded whatever `connection` names: decided once per header name."""
    lowered = name.lower()
    return lowered in _NOT_FORWARDED or is_roller_header(lowered)


def connection_tokens(headers: Iterable[tuple[str, str]]) -> set[str]:
    """The header names (lower-cased) the `connection` headers list: hop-by-hop too."""
    named: set[str] = set()
    for name, value in headers:
        if lower_name(name) == "connection":
            named.update(t.strip().lower() for t in value.split(",") if t.strip())
    return named


@functools.lru_cache(maxsize=256)
@functools.lru_cache(maxsize=256)
def narrow_accept_encoding(value: str | None) -> str:
    """The outgoing `accept-encoding` for a client's value (None: the client sent none).

    Cached (bounded): a harness sends the same value on every request."""
    if value is None:
        return "identity"
    chosen: list[str] = []
    for item in value.split(","):
        token, _, params = item.partition(";")
        coding = token.strip().lower()
        if coding == "x-gzip":
            coding = "gzip"
        if _q_is_zero(params):
            continue
        offered = DECODABLE_ENCODINGS if coding == "*" else (coding,)
        chosen.extend(c for c in offered if c in DECODABLE_ENCODINGS and c not in chosen)
    return ", ".join(chosen) if chosen else "identity"


def _q_is_zero(params: str) -> bool:
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value.strip()) == 0.0
            except ValueError:
                return False
    return False


def upstream_request_headers(
    headers: Sequence[tuple[str, str]],
    *,
    set_headers: Iterable[tuple[str, str]] = (),
    remove_headers: Iterable[str] = (),
) -> CIMultiDict[str]:
    """The headers to send upstream for a client request's headers (arrival order).

    `set_headers` replace (or add) a header after filtering; `remove_headers` drop one.
    Both come from a request policy and are never recorded.
    """
    dropped = connection_tokens(headers)
    out: CIMultiDict[str] = CIMultiDict()
    accept_encoding: list[str] = []
    for name, value in headers:
        if not_forwarded(name):
            if lower_name(name) == "accept-encoding":
                accept_encoding.append(value)
            continue
        if dropped and lower_name(name) in dropped:
            continue
        out.add(name, value)
    out["Accept-Encoding"] = narrow_accept_encoding(
        ", ".join(accept_encoding) if accept_encoding else None
    )
    for name in remove_headers:
        out.popall(name, None)
    for name, value in set_headers:
        out[name] = value
    return out


def client_response_headers(headers: Iterable[tuple[str, str]]) -> CIMultiDict[str]:
    """The upstream's response headers as relayed to the client (hop-by-hop removed).

    `content-length` and `content-encoding` are relayed as received: the body is relayed
    byte for byte, never decoded.
    """
    pairs = list(headers)
    dropped = connection_tokens(pairs)
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in pairs:
        lowered = lower_name(name)
        if lowered in NOT_RELAYED or lowered in dropped:
            continue
        out.add(name, value)
    return out
