"""manifest.json with its per-call lists kept as numbers: read (`load`) and written
(`chunks`) without a string or a record per call.

A manifest lists every call id of each participant (and of each turn) and, for a
participant known from its calls, one `call:` evidence per call: ~0.8 KB a call once
pydantic has read it, held by every reader for as long as the manifest (validate, the
exports, the viewer), and made by finalize to write it (docs/benchmarks.md, "Finalize
at scale, round 5"). In memory such a list is a `roller.capture.models.numbered`
sequence (8 bytes a call); this module is where the JSON text meets it.

Reading (`load`): each `"call_ids":[…]` and `"evidence":[…]` array of at least
`COMPACT_FROM` items, written as roller writes them (compact JSON, printable ASCII
strings without `"` or `\\`, evidence keys in the record's order), is read by regular
expressions into a numbered sequence and replaced in the text by a one-item
placeholder array; pydantic then validates the rest as strictly as ever, and the
placeholders are swapped for the sequences. The arrays so read are exactly what
pydantic would make of them (strings of those characters; evidence with a string
source, a null or string ref and a boolean), so the manifest validates after the
swap exactly when it validates whole; on any failure the whole text is validated
again, so an error is the one the whole text gives. A `"call_ids":[` whose quote is
not escaped can only be an object key in valid JSON (a closing quote is never followed
by a letter), and what is not valid JSON stays invalid with an array swapped.

Writing (`chunks`): the manifest is serialized with each numbered sequence replaced by a
placeholder, and the sequence's items are written in its place, a batch at a time: the
bytes `model_dump_json` gives for the whole manifest (tests/capture/test_manifest_json.py).
Placeholders carry a random nonce, so no text of the manifest can be taken for one.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter

from roller.capture.models import Evidence, Manifest
from roller.capture.models.numbered import (
    NumberedEvidence,
    NumberedIds,
    numbered_evidence,
    numbered_ids,
)

COMPACT_FROM = 2  # items: a single item stays a list
_S = rb'"[ !#-\[\]-~]*"'  # a string of printable ASCII without `"` or `\`
_EVIDENCE = rb'\{"source":"([ !#-\[\]-~]*)","ref":(null|' + _S + rb'),"retained":(true|false)\}'
_ARRAYS = {
    b"call_ids": re.compile(rb"\[(?:" + _S + rb"(?:," + _S + rb")*)?\]"),
    b"evidence": re.compile(rb"\[(?:" + _EVIDENCE + rb"(?:," + _EVIDENCE + rb")*)?\]"),
}
_KEY = re.compile(rb'"(call_ids|evidence)":\[')
_ID = re.compile(_S)
_ITEM = re.compile(_EVIDENCE)
_STR = TypeAdapter(str)

Lists = dict[str, NumberedIds | NumberedEvidence]  # placeholder -> the list it stands for


def _structural(data: bytes, at: int) -> bool:
    """Whether the quote at `at` is not escaped (an even run of backslashes before it)."""
    run = 0
    while at - run > 0 and data[at - run - 1] == 0x5C:
        run += 1
    return run % 2 == 0


def _items(key: bytes, array_text: bytes) -> int:
    """How many items an array matched by `_ARRAYS[key]` holds (its strings have no `"`
    and no `}`)."""
    return array_text.count(b'"') // 2 if key == b"call_ids" else array_text.count(b"}")


def _numbered(key: bytes, array_text: bytes) -> NumberedIds | NumberedEvidence | None:
    if key == b"call_ids":
        ids = numbered_ids(m.group()[1:-1].decode() for m in _ID.finditer(array_text))
        return ids if isinstance(ids, NumberedIds) else None
    items = (
        Evidence(
            source=m[1].decode(),
            ref=None if m[2] == b"null" else m[2][1:-1].decode(),
            retained=m[3] == b"true",
        )
        for m in _ITEM.finditer(array_text)
    )
    evidence = numbered_evidence(items)
    return evidence if isinstance(evidence, NumberedEvidence) else None


def compact(data: bytes) -> tuple[bytes, Lists]:
    """The manifest text with its long per-call arrays replaced by placeholders."""
    nonce = f"roller-numbered-{secrets.token_hex(8)}-"
    pieces: list[bytes] = []
    lists: Lists = {}
    done = 0
    for key in _KEY.finditer(data):
        start = key.end() - 1
        array = _ARRAYS[key[1]].match(data, start) if key.start() >= done else None
        if array is None or not _structural(data, key.start()):
            continue
        text = array.group()
        found = _numbered(key[1], text) if _items(key[1], text) >= COMPACT_FROM else None
        if found is None:
            continue
        token = f"{nonce}{len(lists)}"
        lists[token] = found
        pieces += [data[done:start], _placeholder(token, isinstance(found, NumberedEvidence))]
        done = array.end()
    return b"".join([*pieces, data[done:]]), lists


def _placeholder(token: str, evidence: bool) -> bytes:
    if evidence:
        return b'[{"source":"%s","ref":null,"retained":true}]' % token.encode()
    return b'["%s"]' % token.encode()


def load(data: bytes, validate: Callable[[bytes], Manifest]) -> Manifest:
    """The manifest of `data`, validated by `validate`, its long lists numbered."""
    text, lists = compact(data)
    if not lists:
        return validate(data)
    try:
        manifest = validate(text)
    except ValueError:  # the whole text's error, not the compacted one's
        return validate(data)
    swapped = _swap(manifest, lists)
    return swapped if swapped is not None else validate(data)


def _taken(items: Sequence[Any], lists: Lists, used: set[str]) -> Sequence[Any] | None:
    """The list a placeholder-only `items` stands for (None: not a placeholder)."""
    if len(items) != 1:
        return None
    first = items[0]
    token = first if isinstance(first, str) else getattr(first, "source", None)
    found = lists.get(token) if isinstance(token, str) else None
    if found is None or (isinstance(first, Evidence) and first.ref is not None):
        return None
    used.add(str(token))
    return found


def _swap(manifest: Manifest, lists: Lists) -> Manifest | None:
    """`manifest` with every placeholder replaced; None when one is left over."""
    used: set[str] = set()

    def fields(record: Any, names: tuple[str, ...]) -> dict[str, Any]:
        out = {}
        for name in names:
            found = _taken(getattr(record, name), lists, used)
            if found is not None:
                out[name] = found
        return out

    participants = []
    for p in manifest.participants:
        update = fields(p, ("call_ids", "evidence"))
        if p.inherited_context is not None:
            inherited = fields(p.inherited_context, ("evidence",))
            if inherited:
                update["inherited_context"] = p.inherited_context.model_copy(update=inherited)
        participants.append(p.model_copy(update=update) if update else p)
    turns = [
        t.model_copy(update=fields(t, ("call_ids",))) for t in manifest.turns or ()
    ] or manifest.turns
    if used != lists.keys():
        return None
    return manifest.model_copy(update={"participants": participants, "turns": turns})


def chunks(manifest: Manifest) -> Iterator[bytes]:
    """`manifest.model_dump_json(by_alias=True)` and a newline, in pieces: a numbered
    list's items written a batch at a time (module docstring)."""
    nonce = f"roller-numbered-{secrets.token_hex(8)}-"
    lists: Lists = {}

    def placed(items: Sequence[Any], evidence: bool) -> Sequence[Any]:
        if not isinstance(items, NumberedIds | NumberedEvidence):
            return items
        token = f"{nonce}{len(lists)}"
        lists[token] = items
        if evidence:
            return [Evidence(source=token, ref=None, retained=True)]
        return [token]

    text = _placeholdered(manifest, placed).model_dump_json(by_alias=True).encode()
    done = 0
    for token, items in lists.items():
        marker = _placeholder(token, isinstance(items, NumberedEvidence))
        at = text.index(marker, done)
        yield text[done:at] + b"["
        yield from items.json_items(_writer(items))
        yield b"]"
        done = at + len(marker)
    yield text[done:] + b"\n"


def _writer(items: NumberedIds | NumberedEvidence) -> Callable[[Any], bytes]:
    if isinstance(items, NumberedIds):
        return _STR.dump_json
    return lambda e: e.model_dump_json(by_alias=True).encode()


def _placeholdered(
    manifest: Manifest, placed: Callable[[Sequence[Any], bool], Sequence[Any]]
) -> Manifest:
    participants = []
    for p in manifest.participants:
        update: Mapping[str, Any] = {
            "call_ids": placed(p.call_ids, False),
            "evidence": placed(p.evidence, True),
        }
        if p.inherited_context is not None:
            ctx = p.inherited_context
            ctx = ctx.model_copy(update={"evidence": placed(ctx.evidence, True)})
            update = {**update, "inherited_context": ctx}
        participants.append(p.model_copy(update=update))
    turns = manifest.turns and [
        t.model_copy(update={"call_ids": placed(t.call_ids, False)}) for t in manifest.turns
    ]
    return manifest.model_copy(update={"participants": participants, "turns": turns})
