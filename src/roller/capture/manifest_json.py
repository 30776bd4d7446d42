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
placeholder array; pydantic then validates the rest as strictly as ever, the fields'
validator taking each placeholder's sequence in its place (`numbered.Placeholders`,
the validation context: no record is copied). The arrays so read are exactly what
pydantic would make of them (strings of those characters; evidence with a string
source, a null or string ref and a boolean), so the manifest validates so exactly
when it validates whole; on any failure (or a placeholder not taken: a key given
twice) the whole text is validated again, so an error is the one it gives. A
`"call_ids":[` whose quote is not escaped can only be an object key in valid JSON (a
closing quote is never followed by a letter), and what is not valid JSON stays
invalid with an array replaced.

Writing (`chunks`): the manifest is serialized without its participants, then each
participant with its numbered lists replaced by placeholders, one at a time, and each
list's items are written in its placeholder's place, a batch at a time: the bytes
`model_dump_json` gives for the whole manifest (tests/capture/test_manifest_json.py),
without a copy of every participant or a string per call. Placeholders carry a random
nonce, so no text of the manifest can be taken for one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pydantic import TypeAdapter

from roller.capture.models import Evidence, Manifest, ParticipantRecord
from roller.capture.models.numbered import (
    PLACEHOLDERS,
    NumberedEvidence,
    NumberedIds,
    Placeholders,
    evidence_of,
    numbered_ids,
)

COMPACT_FROM = 2  # items: a single item stays a list
_S = rb'"[ !#-\[\]-~]*"'  # a string of printable ASCII without `"` or `\`
_EVIDENCE = rb'\{"source":"([ !#-\[\]-~]*)","ref":(null|' + _S + rb'),"retained":(true|false)\}'
# possessive: a long array is matched without a backtracking state per item (13 MB for
# 100,000 ids with a greedy `*`, measured)
_ARRAYS = {
    b"call_ids": re.compile(rb"\[(?:" + _S + rb"(?:," + _S + rb")*+)?+\]"),
    b"evidence": re.compile(rb"\[(?:" + _EVIDENCE + rb"(?:," + _EVIDENCE + rb")*+)?+\]"),
}
_KEY = re.compile(rb'"(call_ids|evidence)":\[')
_ID = re.compile(_S)
_ITEM = re.compile(_EVIDENCE)
_STR = TypeAdapter(str)


def _structural(data: bytes, at: int) -> bool:
    """Whether the quote at `at` is not escaped (an even run of backslashes before it)."""
    run = 0
    while at - run > 0 and data[at - run - 1] == 0x5C:
        run += 1
    return run % 2 == 0


def _items(key: bytes, data: bytes, span: tuple[int, int]) -> int:
    """How many items an array matched by `_ARRAYS[key]` at `span` holds (its strings
    have no `"` and no `}`)."""
    if key == b"call_ids":
        return data.count(b'"', *span) // 2
    return data.count(b"}", *span)


def _numbered(
    key: bytes, data: bytes, span: tuple[int, int]
) -> NumberedIds | NumberedEvidence | None:
    """The array of `data` at `span` (matched by `_ARRAYS[key]`) as a numbered list."""
    if key == b"call_ids":
        ids = numbered_ids(m.group()[1:-1].decode() for m in _ID.finditer(data, *span))
        return ids if isinstance(ids, NumberedIds) else None
    fields = (
        (m[1].decode(), None if m[2] == b"null" else m[2][1:-1].decode(), m[3] == b"true")
        for m in _ITEM.finditer(data, *span)
    )
    evidence = evidence_of(fields, _evidence)
    return evidence if isinstance(evidence, NumberedEvidence) else None


def _evidence(source: str, ref: str | None, retained: bool) -> Evidence:
    return Evidence(source=source, ref=ref, retained=retained)


def compact(data: bytes) -> tuple[bytes, Placeholders]:
    """The manifest text with its long per-call arrays replaced by placeholders."""
    placeholders = Placeholders()
    pieces: list[bytes] = []
    done = 0
    for key in _KEY.finditer(data):
        start = key.end() - 1
        array = _ARRAYS[key[1]].match(data, start) if key.start() >= done else None
        if array is None or not _structural(data, key.start()):
            continue
        span = array.span()
        long = _items(key[1], data, span) >= COMPACT_FROM
        found = _numbered(key[1], data, span) if long else None
        if found is None:
            continue
        token = placeholders.add(found)
        pieces += [data[done:start], _placeholder(token, isinstance(found, NumberedEvidence))]
        done = array.end()
    return b"".join([*pieces, data[done:]]), placeholders


def _placeholder(token: str, evidence: bool) -> bytes:
    if evidence:
        return b'[{"source":"%s","ref":null,"retained":true}]' % token.encode()
    return b'["%s"]' % token.encode()


def load(data: bytes, validate: Callable[[bytes, dict[str, Any]], Manifest]) -> Manifest:
    """The manifest of `data`, validated by `validate(text, context)`, its long lists
    numbered."""
    text, placeholders = compact(data)
    if not placeholders:
        return validate(data, {})
    try:
        manifest = validate(text, {PLACEHOLDERS: placeholders})
    except ValueError:  # the whole text's error, not the compacted one's
        return validate(data, {})
    if placeholders.taken != len(placeholders):  # a key given twice: pydantic's reading
        return validate(data, {})
    return manifest


def chunks(manifest: Manifest) -> Iterator[bytes]:
    """`manifest.model_dump_json(by_alias=True)` and a newline, in pieces: the manifest
    without its participants, each participant spliced in where their list stands (as
    pydantic writes a list: the items' JSON between `[`, `,` and `]`), and each numbered
    list's items a batch at a time (module docstring). The participants are not copied
    all at once: each is copied with its placeholders, written and let go."""
    splice = _Splice()
    turns = manifest.turns and [
        t.model_copy(update={"call_ids": splice.placed(t.call_ids, False)}) for t in manifest.turns
    ]
    head = manifest.model_copy(update={"participants": [], "turns": turns})
    text = head.model_dump_json(by_alias=True).encode()
    at = text.index(_PARTICIPANTS) + len(_PARTICIPANTS) - 1  # the only such key
    yield from splice.spliced(text[:at])
    for k, p in enumerate(manifest.participants):
        yield b"," if k else b""
        yield from splice.spliced(splice.participant(p).model_dump_json(by_alias=True).encode())
    yield from splice.spliced(text[at:] + b"\n")


_PARTICIPANTS = b'"participants":[]'  # in the text of a manifest without participants


class _Splice:
    """Numbered lists put in a record as placeholders (`placed`), and the record's text
    with each placeholder replaced by its list's items (`spliced`)."""

    def __init__(self) -> None:
        self._placeholders = Placeholders()
        self._lists: dict[str, NumberedIds | NumberedEvidence] = {}
        self._token = re.compile(re.escape(self._placeholders.nonce.encode()) + rb"[0-9]+")

    def placed(self, items: Sequence[Any], evidence: bool) -> Sequence[Any]:
        """A numbered list as a one-item placeholder list; any other list as it is."""
        if not isinstance(items, NumberedIds | NumberedEvidence):
            return items
        token = self._placeholders.add(items)
        self._lists[token] = items
        return [Evidence(source=token, ref=None, retained=True)] if evidence else [token]

    def participant(self, p: ParticipantRecord) -> ParticipantRecord:
        update: dict[str, Any] = {
            "call_ids": self.placed(p.call_ids, False),
            "evidence": self.placed(p.evidence, True),
        }
        if p.inherited_context is not None:
            ctx = p.inherited_context
            update["inherited_context"] = ctx.model_copy(
                update={"evidence": self.placed(ctx.evidence, True)}
            )
        return p.model_copy(update=update)

    def spliced(self, text: bytes) -> Iterator[bytes]:
        done = 0
        for found in self._token.finditer(text):
            token = found.group().decode()
            items = self._lists.pop(token)
            marker = _placeholder(token, isinstance(items, NumberedEvidence))
            at = text.index(marker, done)
            yield text[done:at] + b"["
            yield from items.json_items(_writer(items))
            yield b"]"
            done = at + len(marker)
        yield text[done:]


def _writer(items: NumberedIds | NumberedEvidence) -> Callable[[Any], bytes]:
    if isinstance(items, NumberedIds):
        return _STR.dump_json
    return lambda e: e.model_dump_json(by_alias=True).encode()
