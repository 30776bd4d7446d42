"""Roller-issued client tokens: minting, hashing, finding them on a request, adding one.

A harness is configured with the gateway's URL and a roller token as its API key; each
SDK puts that key where it always does. Rules this module keeps:
- A token is shown once, when it is minted; only its SHA-256 is stored.
- A token is read from every place an SDK sends an API key: `authorization: Bearer`
  (OpenAI SDKs, OpenCode, Codex), `x-api-key` (Anthropic SDK, Claude Code),
  `x-goog-api-key` (google-genai, Gemini CLI) and the `key` query parameter (Gemini REST).
  When several are present they must carry the same token: two different credentials on
  one request are ambiguous and refused, never resolved by picking one.
- Every one of those places is stripped before forwarding (`CREDENTIAL_HEADERS`,
  `CREDENTIAL_QUERY`): the roller token never reaches an upstream; the policy strips
  every other credential-bearing header and secret query parameter too.
- A token whose bytes were not UTF-8 (aiohttp hands them on as lone surrogates) is no
  token: it is refused as such (401), never hashed.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from multidict import CIMultiDictProxy

from roller.errors import ConfigError
from roller.gateway.config import check_harness, check_name, load_config

TOKEN_PREFIX: Final = "rlr_"
CREDENTIAL_HEADERS: Final = ("authorization", "x-api-key", "x-goog-api-key")
CREDENTIAL_QUERY: Final = ("key",)
_BEARER: Final = re.compile(r"bearer[ \t]+(\S+)", re.IGNORECASE)


def new_token() -> str:
    """A fresh token: 256 random bits, URL-safe, recognisable by its prefix."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class PresentedToken:
    """What a request presented: `token` (None when absent or ambiguous), where it was
    found (names only) and why it cannot be used, if so."""

    token: str | None
    sources: tuple[str, ...]
    problem: str | None = None


def presented_token(
    headers: CIMultiDictProxy[str], query: Iterable[tuple[str, str]]
) -> PresentedToken:
    sent = [(name, value) for name in CREDENTIAL_HEADERS for value in headers.getall(name, ())]
    return presented_in(sent, query)


def presented_in(
    sent: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]]
) -> PresentedToken:
    """`presented_token` over the credential headers already picked out: `sent` holds
    them as (lower-cased name, value), in `CREDENTIAL_HEADERS` order, each name's copies
    in arrival order (`roller.gateway.headers` picks them once per name sequence)."""
    values: list[tuple[str, str]] = []
    for name, value in sent:
        if name == "authorization":
            match = _BEARER.fullmatch(value.strip())
            if match is None:
                return PresentedToken(None, (name,), "authorization is not a Bearer token")
            values.append((name, match.group(1)))
        else:
            values.append((name, value.strip()))
    values.extend((f"?{name}", value) for name, value in query if name.lower() in CREDENTIAL_QUERY)
    sources = tuple(dict.fromkeys(source for source, _ in values))
    if not all(_is_utf8(value) for _, value in values):
        return PresentedToken(None, sources, "the token is not valid UTF-8")
    distinct = {value for _, value in values}
    if not distinct:
        return PresentedToken(None, (), "no token")
    if len(distinct) > 1:
        return PresentedToken(None, sources, "different credentials on one request")
    return PresentedToken(distinct.pop(), sources)


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def toml_string(value: str) -> str:
    """A TOML basic string for a value already restricted to plain characters."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_client(config_path: Path, *, principal: str, account: str, harness: str) -> str:
    """Append a `[[clients]]` entry for a new token to the config file; return the token.

    The file is checked before and after: a file that does not load is not appended to,
    and an append that would leave it unloadable is undone.
    """
    check_name("principal", principal)
    check_name("account", account)
    check_harness(harness)
    load_config(config_path)
    token = new_token()
    original = config_path.read_bytes()
    block = (
        ("" if original.endswith(b"\n") or not original else "\n")
        + "\n[[clients]]\n"
        + f"principal = {toml_string(principal)}\n"
        + f"account = {toml_string(account)}\n"
        + f"harness = {toml_string(harness)}\n"
        + f"token_sha256 = {toml_string(token_sha256(token))}\n"
    )
    with config_path.open("a", encoding="utf-8") as handle:
        handle.write(block)
    try:
        load_config(config_path)
    except ConfigError:
        config_path.write_bytes(original)
        raise
    return token
