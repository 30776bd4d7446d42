"""What the proxy must never write to disk, and roller's own headers.

Redaction applies only to the *recorded* copy of a request or response; what is forwarded
upstream is untouched (the upstream needs the caller's credentials), except that
`x-roller-*` headers are removed before forwarding (`split_roller_headers`).

Rules this module keeps (docs/architecture.md, "Redaction"):
- A header is secret when its lower-cased name is one of `SECRET_HEADERS`, or when its
  name, split on `-`/`_`, contains a secret word (`token`, `secret`, `password`,
  `credential(s)`, `apikey`, `authorization`, `cookie`, `auth`) or a secret pair
  (`api key`, `access key`, `private key`, `subscription key`). Parts are matched whole,
  so rate-limit headers such as `anthropic-ratelimit-tokens-remaining` are kept.
- A query parameter is secret by the same word rule, or when its whole normalized name is
  one of `SECRET_QUERY_NAMES` (`key`, `sig`, `signature`, ...), case-insensitively.
- Only the *names* of what was removed are recorded, never values.
- Response `set-cookie` (and any response header the header rule marks) is removed too.
- A `Redactor` adds names an operator configured (`--redact-header`, `--redact-query`,
  the gateway's `redact_headers`/`redact_query`: keys in places no rule knows, such as
  `x-key` or `?k=`), matched case-insensitively, to those rules; it never removes one.
  Request bodies are recorded as sent: a key inside a body is not redacted.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from typing import NamedTuple

ROLLER_HEADER_PREFIX = "x-roller-"

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "set-cookie2",
    }
)
_SECRET_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "credentials",
        "apikey",
        "authorization",
        "auth",
        "cookie",
    }
)
_SECRET_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("subscription", "key")}
)
SECRET_QUERY_NAMES = frozenset({"key", "sig", "signature", "code", "jwt", "bearer", "pass", "pwd"})
_SPLIT = re.compile(r"[-_.\s]+")


def _parts(name: str) -> list[str]:
    return [p for p in _SPLIT.split(name.lower()) if p]


def _has_secret_words(parts: list[str]) -> bool:
    if any(p in _SECRET_WORDS for p in parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(parts))


# Header and parameter names repeat on every request of a harness: decide each name once.
@functools.lru_cache(maxsize=4096)
def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_HEADERS or _has_secret_words(_parts(lowered))


@functools.lru_cache(maxsize=1024)
def is_secret_query_param(name: str) -> bool:
    parts = _parts(name)
    return "-".join(parts) in SECRET_QUERY_NAMES or _has_secret_words(parts)


@functools.lru_cache(maxsize=4096)
def is_roller_header(name: str) -> bool:
    return name.lower().startswith(ROLLER_HEADER_PREFIX)


_KEEP, _ROLLER, _SECRET = 0, 1, 2


@functools.lru_cache(maxsize=4096)
def _recorded_kind(name: str) -> int:
    """How a header name is recorded, decided once per name (the hot path's only test)."""
    if is_roller_header(name):
        return _ROLLER
    return _SECRET if is_secret_header(name) else _KEEP


class Redacted(NamedTuple):
    """A header or query list with secrets removed, and the names that were removed.

    Tuples all the way: they go into the tape's typed metas as they are (a NamedTuple,
    like those metas, because the proxy builds three of these per exchange)."""

    kept: tuple[tuple[str, str], ...]
    removed: tuple[str, ...]


class Redactor:
    """The redaction rules plus the header and query names an operator added.

    Immutable; every decision is cached per name (names repeat on every request)."""

    __slots__ = ("_header_kind", "_query_secret", "extra_headers", "extra_query")

    def __init__(self, extra_headers: Iterable[str] = (), extra_query: Iterable[str] = ()):
        self.extra_headers = frozenset(name.lower() for name in extra_headers)
        self.extra_query = frozenset(name.lower() for name in extra_query)
        self._header_kind: dict[str, int] = {}
        self._query_secret: dict[str, bool] = {}

    def _kind(self, name: str) -> int:
        kind = self._header_kind.get(name)
        if kind is None:
            kind = _recorded_kind(name)
            if kind == _KEEP and name.lower() in self.extra_headers:
                kind = _SECRET
            if len(self._header_kind) < 4096:  # bounded: names come from clients
                self._header_kind[name] = kind
        return kind

    def secret_header(self, name: str) -> bool:
        """Whether `name` carries a credential (never recorded; a gateway strips it)."""
        return self._kind(name) == _SECRET

    def recorded(self, name: str) -> bool:
        """Whether a header of this name is recorded with its value."""
        return self._kind(name) == _KEEP

    def roller_header(self, name: str) -> bool:
        """Whether `name` is one of roller's own (`x-roller-*`): identity evidence."""
        return self._kind(name) == _ROLLER

    def secret_query(self, name: str) -> bool:
        secret = self._query_secret.get(name)
        if secret is None:
            secret = is_secret_query_param(name) or name.lower() in self.extra_query
            if len(self._query_secret) < 1024:
                self._query_secret[name] = secret
        return secret

    def headers(self, headers: Iterable[tuple[str, str]]) -> Redacted:
        """Headers as `(name, value)` pairs in arrival order, secrets and `x-roller-*`
        removed. `x-roller-*` headers are dropped without being listed in `removed`: they
        are not secrets, and their values are recorded separately (`roller_evidence`)."""
        kept: list[tuple[str, str]] = []
        removed: list[str] = []
        kind_of = self._kind
        for name, value in headers:
            kind = kind_of(name)
            if kind == _KEEP:
                kept.append((name, value))
            elif kind == _SECRET:
                lowered = name.lower()
                if lowered not in removed:
                    removed.append(lowered)
        return Redacted(tuple(kept), tuple(removed))

    def query(self, pairs: Iterable[tuple[str, str]]) -> Redacted:
        """Query parameters as `(name, value)` pairs, secret ones removed (names kept)."""
        kept: list[tuple[str, str]] = []
        removed: list[str] = []
        for name, value in pairs:
            if self.secret_query(name):
                if name not in removed:
                    removed.append(name)
                continue
            kept.append((name, value))
        return Redacted(tuple(kept), tuple(removed))


DEFAULT_REDACTOR = Redactor()


def redact_headers(headers: Iterable[tuple[str, str]]) -> Redacted:
    """`DEFAULT_REDACTOR.headers`: the rules without operator-added names."""
    return DEFAULT_REDACTOR.headers(headers)


def redact_query(pairs: Iterable[tuple[str, str]]) -> Redacted:
    """`DEFAULT_REDACTOR.query`: the rules without operator-added names."""
    return DEFAULT_REDACTOR.query(pairs)


def roller_evidence(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The `x-roller-*` headers, lower-cased name -> value (repeated ones joined by ", ")."""
    found: dict[str, str] = {}
    for name, value in headers:
        if _recorded_kind(name) == _ROLLER:  # cached per name: the hot path's only test
            key = name.lower()
            found[key] = f"{found[key]}, {value}" if key in found else value
    return found
