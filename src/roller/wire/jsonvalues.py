"""Total functions over parsed JSON values, shared by the protocol codecs.

Codecs read recordings of arbitrary bytes, so nothing here raises on a value of the
wrong shape: accessors return None or an empty list, parsers return the failure as a
string. JSON is parsed strictly (no NaN/Infinity, which are not JSON and could not be
written back out), and nesting deep enough to exhaust the stack is a parse failure, not
a crash.

`parse_json` gives exactly what the standard library's decoder gives (value or failure
message); orjson parses the documents where the two cannot differ, for less CPU (orjson
takes about a third of the decoder's time; the two C passes over the bytes that guard
it, below, about as much again). The gateway's end hook reads every model response
through a codec, and finalize every recorded one. Facts this relies on
(`tests/wire/test_jsonvalues.py` checks them): orjson accepts a subset of what the
decoder accepts (it refuses NaN, infinities, lone surrogates, invalid UTF-8, a BOM and
nesting past 1,024), and gives the same values for it, except an integer outside 64
bits (it gives a float). So a document with a run of 19 or more digits, or so many
brackets that its nesting could reach the decoder's recursion limit, goes to the decoder
alone, and so does any document orjson refuses: its failure message is the decoder's.
`json_values(parts, within)` and `parse_all(texts, within)` parse many documents cut
from one body (an SSE stream's events) with the guard run once over the body: a run of
digits or a bracket count of a part is at most the body's (a decoded event's data is
the text of some of the body's bytes, joined by newlines, with U+FFFD for bytes that are
not UTF-8: neither a digit nor a bracket).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, Final

import orjson

from roller.wire.types import JSONObject, Parsed


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
# Integers of up to 18 digits fit in 64 bits, where orjson and the decoder agree: a run of
# 19 is found as 19 zeros once every digit is one (a C translate and a C search, where a
# regular expression costs ~20 ns a byte).
_DIGITS_TO_ZERO: Final = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_DIGITS: Final = b"0" * 19
# Brackets below which no nesting can reach the decoder's recursion limit (1,000 frames,
# less the caller's stack).
MAX_FAST_BRACKETS: Final = 400


def orjson_fails_alike(raw: bytes) -> bool:
    """Whether orjson parses `raw` only if the decoder does (their values may still
    differ, by an integer past 64 bits): nesting that could reach the decoder's recursion
    limit and an integer past Python's digit limit are what orjson takes and the decoder
    refuses. A whole document nests at most half its length deep, and holds no integer
    longer than itself, so a short one needs no pass over its bytes."""
    if len(raw) < 2 * MAX_FAST_BRACKETS:
        return True
    if raw.count(b"[") + raw.count(b"{") >= MAX_FAST_BRACKETS:
        return False
    limit = sys.get_int_max_str_digits()
    return (
        not limit or len(raw) <= limit or b"0" * (limit + 1) not in raw.translate(_DIGITS_TO_ZERO)
    )


def orjson_agrees(raw: bytes) -> bool:
    """Whether orjson's answer for `raw`, if it has one, is the decoder's."""
    return raw.count(b"[") + raw.count(
        b"{"
    ) < MAX_FAST_BRACKETS and _LONG_DIGITS not in raw.translate(_DIGITS_TO_ZERO)


def parse_json(text: str | bytes) -> tuple[Any, str | None]:
    """Parse a whole JSON document. Returns (value, None) or (None, why it failed)."""
    try:
        raw = text.encode() if isinstance(text, str) else text
    except UnicodeEncodeError:  # a lone surrogate: orjson refuses it
        raw = b""
    if raw and orjson_agrees(raw):
        try:
            return orjson.loads(raw), None
        except orjson.JSONDecodeError:
            pass  # the decoder's own answer, and its message
    return decoded(text)


def parse_all(texts: Sequence[str | bytes], within: bytes) -> list[Parsed]:
    """`parse_json(text)` for each of `texts`, documents cut from `within` (an SSE
    stream's events, each data the text or the bytes of some of its bytes): the guard
    runs once, over `within`, and orjson reads a text as it reads its UTF-8 encoding
    (one it cannot encode, a lone surrogate, it refuses: the decoder answers)."""
    if not orjson_agrees(within):
        return [parse_json(text) for text in texts]
    out: list[Parsed] = []
    for text in texts:
        try:
            out.append((orjson.loads(text), None))
        except orjson.JSONDecodeError:
            out.append(decoded(text))
    return out


def json_values(parts: Sequence[bytes], within: bytes) -> list[Any]:
    """`parse_json(part)`'s value for each of `parts`, slices of `within` (None where it
    fails, as for a JSON null: for a caller that needs only the values' shapes)."""
    return [value for value, _ in parse_all(parts, within)]


def decoded(text: str | bytes) -> tuple[Any, str | None]:
    """`parse_json` by the standard library's decoder alone (bytes decoded as UTF-8 with
    replacement): the answer `parse_json` gives."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        return _DECODER.decode(text), None
    except RecursionError:
        return None, "JSON nested too deeply"
    except ValueError as err:  # json.JSONDecodeError is a ValueError
        return None, str(err)


def as_object(value: Any) -> JSONObject | None:
    """`value` if it is a JSON object, else None."""
    return value if isinstance(value, dict) else None


def as_list(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    """`value` if it is a string, else None."""
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """`value` if it is an integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def get_path(value: Any, *keys: str | int) -> Any:
    """Follow object keys / array indexes; None as soon as the shape does not fit."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(value, list) or not -len(value) <= key < len(value):
                return None
            value = value[key]
        else:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
    return value


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """Tool-call arguments as sent on the wire (a JSON string) parsed into a value.

    A non-string is returned as is. An empty string means "no arguments" and parses to
    `{}` (Chat and Responses send "" for argument-less calls). Otherwise returns
    (parsed value, None), or (the raw string, why it did not parse).
    """
    if not isinstance(raw, str):
        return raw, None
    if not raw.strip():
        return {}, None
    value, err = parse_json(raw)
    if err is not None:
        return raw, err
    return value, None


def flatten_text(value: Any) -> str:
    """The textual content of a tool result or message content, flattened.

    A string is itself; a list joins the texts of its string items and its items with a
    string `text` (text blocks, `input_text`/`output_text` parts) with "\\n", skipping the
    rest (images, files); an object with a string `text` gives it; any other value is
    written as compact JSON so that its text can still be searched for.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        texts: list[str] = []
        for item in value:
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(item["text"])
        return "\n".join(texts)
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return str(value["text"])
    return compact_json(value)


def compact_json(value: Any) -> str:
    """Compact, key-order-preserving JSON text of a value parsed from JSON."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, ValueError, TypeError):
        return repr(value)


def describe_error(error: Any) -> str:
    """One line naming a provider error object: `type: message` when it has them."""
    obj = as_object(error)
    if obj is None:
        return compact_json(error)[:300]
    kind = next(
        (
            v
            for k in ("type", "code", "status")
            if isinstance(v := obj.get(k), str | int) and v != "error"
        ),
        None,
    )
    message = as_str(obj.get("message"))
    if kind is not None and message is not None:
        return f"{kind}: {message}"
    if message is not None:
        return message
    return compact_json(obj)[:300]


def text_snippet(body: bytes, limit: int = 120) -> str:
    """The first characters of a body, for a human-readable reason."""
    text = body[: limit * 4].decode("utf-8", errors="replace")
    return text[:limit] + ("…" if len(text) > limit or len(body) > limit * 4 else "")
