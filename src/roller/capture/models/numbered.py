"""The manifest's per-call lists, kept as numbers: `NumberedIds` and `NumberedEvidence`.

A participant lists every call it made (`call_ids`) and, for a participant known from
its calls, one `call:<call_id>` evidence per call; a turn lists its calls. Held as
Python strings and pydantic records these cost ~0.8 KB a call in every reader and in
finalize (docs/benchmarks.md, "Finalize at scale, round 4"). Roller numbers its calls
`call-<scope>-NNNNN`, so such a list is a prefix and numbers: an `array` of 8-byte
integers, an item rebuilt as a string or an `Evidence` when asked. Anything else in a
list (another form of id, native evidence) is kept as it is, at its position.

Both are immutable `Sequence`s equal to any sequence of the same items (a list read by
pydantic included), and the manifest's fields are typed `Sequence` (`IdList`,
`EvidenceList`): pydantic validates JSON into lists and `roller.capture.manifest_json`
puts these in their place; pydantic serializes them as the lists they stand for (the
same JSON), and `manifest_json` writes them without making every item.

Only a prefix of printable ASCII without `"` or `\\` is kept so, so that an item's JSON
is the item between quotes (`json_items`); an id is numbered when it is exactly
`f"{prefix}{number:05d}"` (the form `roller.finalize.ids.call_id` makes).
"""

from __future__ import annotations

import re
import secrets
from abc import abstractmethod
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import pairwise
from typing import Annotated, Any, Generic, TypeVar, overload

from pydantic import (
    PlainSerializer,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from roller.capture.lazy_sequence import LazySequence
from roller.capture.models.call import Evidence

T = TypeVar("T")
# written in JSON as it is, between quotes; not ending in a digit (the number's start)
_SAFE = re.compile(r"(?:[ !#-\[\]-~]*[ !#-/:-\[\]-~])?")
_TAIL = re.compile(r"[0-9]{5,}\Z")
_OTHER = -1  # a position holding an item that is not numbered (kept in `_others`)
_NONE: dict[int, Any] = {}
_NO_ANSWERS: dict[object, bool] = {}  # never written: a list's own is made when asked


def number_of(item: str) -> tuple[str, int] | None:
    """(prefix, number) of an id written `f"{prefix}{number:05d}"` with a safe prefix."""
    tail = _TAIL.search(item)
    if tail is None:
        return None
    prefix, digits = item[: tail.start()], tail.group()
    if (len(digits) > 5 and digits[0] == "0") or not _SAFE.fullmatch(prefix):
        return None
    return prefix, int(digits)


def number_with(prefix: str, item: str) -> int | None:
    """The number of `item` when it is numbered with `prefix`, a safe one (as `number_of`
    finds it, without its two regular expressions: a safe prefix does not end in a
    digit, so the tail is all the item's last digits)."""
    if not item.startswith(prefix):
        return None
    tail = item[len(prefix) :]
    if len(tail) < 5 or not (tail.isascii() and tail.isdigit()):
        return None
    return None if len(tail) > 5 and tail[0] == "0" else int(tail)


class _Numbered(LazySequence[T]):
    """Items as a prefix and numbers; the other items by position."""

    __slots__ = ("_numbers", "_others", "_prefix")

    def __init__(self, prefix: str, numbers: array[int], others: dict[int, T]) -> None:
        self._prefix = prefix
        self._numbers = numbers
        self._others = others or _NONE  # never changed: one empty dict for all

    @abstractmethod
    def _item(self, number: int) -> T:
        """The numbered item `number` (its text is `_text(number)`)."""

    def _text(self, number: int) -> str:
        return f"{self._prefix}{number:05d}"

    def __len__(self) -> int:
        return len(self._numbers)

    def _make(self, i: int) -> T:
        n = self._numbers[i]
        return self._others[i] if n == _OTHER else self._item(n)

    def __iter__(self) -> Iterator[T]:
        for i, n in enumerate(self._numbers):
            yield self._others[i] if n == _OTHER else self._item(n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, type(self)) and (other._prefix, other._numbers, other._others) == (
            self._prefix,
            self._numbers,
            self._others,
        ):
            return True  # else the same items may still be held another way
        return super().__eq__(other)

    __hash__ = None

    def unnumbered(self) -> list[T]:
        """The items not held as numbers, in order."""
        return [self._others[i] for i in sorted(self._others)]

    def json_items(self, write: Callable[[T], bytes], batch: int = 4096) -> Iterator[bytes]:
        """The items' JSON, comma-separated, in pieces of up to `batch` items: a numbered
        item written here, any other by `write`."""
        numbers, others = self._numbers, self._others
        form = self._json_form()
        for start in range(0, len(numbers), batch):
            chunk = numbers[start : start + batch]
            if not others:  # the common case: the whole batch formatted as one text
                text = ",".join([form % n for n in chunk]).encode()
            else:
                part = [
                    (form % n).encode() if n != _OTHER else write(others[start + k])
                    for k, n in enumerate(chunk)
                ]
                text = b",".join(part)
            yield (b"," if start else b"") + text

    @abstractmethod
    def _json_form(self) -> str:
        """A numbered item's JSON as a `%` format of its number (`%05d`, as `_text`
        writes it): printable ASCII (the prefix is), so its text is its bytes."""

    def _escaped_prefix(self) -> str:
        return self._prefix.replace("%", "%%")


class NumberedIds(_Numbered[str]):
    """A list of ids (`ParticipantRecord.call_ids`, `TurnRecord.call_ids`, the ids
    validate reads); `in` is a binary search (over a sorted copy of the numbers when
    they are not in order, made once), its answers for the last few thousand items
    asked kept (relations name the calls of one conversation again and again)."""

    __slots__ = ("_answers", "_sorted")

    def __init__(self, prefix: str, numbers: array[int], others: dict[int, str]) -> None:
        super().__init__(prefix, numbers, others)
        self._sorted: array[int] | None = None
        self._answers = _NO_ANSWERS  # its own made when first asked

    def _item(self, number: int) -> str:
        return self._text(number)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, int):  # the common case, made here (an item is asked for often)
            n = self._numbers[i]
            if n != _OTHER:
                return f"{self._prefix}{n:05d}"
        return super().__getitem__(i)

    def _json_form(self) -> str:
        return '"' + self._escaped_prefix() + '%05d"'

    def _ordered(self) -> array[int]:
        if self._sorted is None:
            numbers = self._numbers
            ascending = all(a < b for a, b in pairwise(numbers))
            self._sorted = numbers if ascending else array("q", sorted(numbers))
        return self._sorted

    def __contains__(self, item: object) -> bool:
        try:  # one lookup for an item asked before (validate asks ~4 per relation)
            return self._answers[item]
        except (KeyError, TypeError):  # not asked yet, or not hashable
            return self._answer(item)

    def _answer(self, item: object) -> bool:
        if not isinstance(item, str):
            return item in self._others.values()
        answers = self._answers
        if answers is _NO_ANSWERS:
            answers = self._answers = {}
        if len(answers) >= 4096:
            answers.clear()
        found = answers[item] = self._holds(item)
        return found

    def _holds(self, item: object) -> bool:
        number = self._number(item)
        if number is not None:
            ordered = self._ordered()
            at = bisect_left(ordered, number)
            return at < len(ordered) and ordered[at] == number
        return item in self._others.values()

    def _number(self, item: object) -> int | None:
        """The number of `item` when it is numbered with this prefix."""
        return number_with(self._prefix, item) if isinstance(item, str) else None

    def duplicates(self) -> list[str]:
        """The ids held more than once, sorted."""
        ordered = self._ordered()
        twice = {a for a, b in pairwise(ordered) if a == b != _OTHER}
        counted = Counter(self._others.values())
        return sorted([self._text(n) for n in twice] + [x for x, k in counted.items() if k > 1])


class NumberedEvidence(_Numbered[Evidence]):
    """A list of evidence whose `call:` items (ref null, retained) are numbered."""

    __slots__ = ()

    def _item(self, number: int) -> Evidence:
        return Evidence.model_construct(source=self._text(number), ref=None, retained=True)

    def _json_form(self) -> str:
        return '{"source":"' + self._escaped_prefix() + '%05d","ref":null,"retained":true}'


class IdsBuilder:
    """Ids appended one at a time (`append`), numbered when they can be (`ids`)."""

    def __init__(self) -> None:
        self._b = _Builder[str]()

    def append(self, item: str) -> None:
        if not self._b.numbered(item):
            self._b.other(item)

    def ids(self) -> NumberedIds:
        b = self._b
        return NumberedIds(b.prefix or "", b.numbers, b.others)


class _Builder(Generic[T]):
    """Items appended one at a time, numbered while they share the first prefix."""

    def __init__(self) -> None:
        self.prefix: str | None = None
        self.numbers = array("q")
        self.others: dict[int, T] = {}

    def numbered(self, text: str) -> bool:
        if self.prefix is not None:  # one per id of a long list: no regular expression
            number = number_with(self.prefix, text)
            if number is None:
                return False
            self.numbers.append(number)
            return True
        found = number_of(text)
        if found is None:
            return False
        self.prefix = found[0]
        self.numbers.append(found[1])
        return True

    def other(self, item: T) -> None:
        self.others[len(self.numbers)] = item
        self.numbers.append(_OTHER)


def numbered_ids(ids: Iterable[str]) -> Sequence[str]:
    """`ids` as `NumberedIds`, or as a list when none is numbered."""
    b = _Builder[str]()
    for x in ids:
        if not b.numbered(x):
            b.other(x)
    if b.prefix is None:
        return list(b.others.values())
    return NumberedIds(b.prefix, b.numbers, b.others)


def numbered_evidence(items: Iterable[Evidence]) -> Sequence[Evidence]:
    """`items` as `NumberedEvidence`, or as a list when none is a plain `call:` item."""
    b = _Builder[Evidence]()
    for e in items:
        if not (e.ref is None and e.retained and b.numbered(e.source)):
            b.other(e)
    if b.prefix is None:
        return list(b.others.values())
    return NumberedEvidence(b.prefix, b.numbers, b.others)


Make = Callable[[str, str | None, bool], Evidence]  # an item from its fields


def evidence_of(fields: Iterable[tuple[str, str | None, bool]], make: Make) -> Sequence[Evidence]:
    """`numbered_evidence` of the items with these fields (source, ref, retained), `make`
    called for each item not numbered only (a reader makes no record for the others)."""
    b = _Builder[Evidence]()
    for source, ref, retained in fields:
        if not (ref is None and retained and b.numbered(source)):
            b.other(make(source, ref, retained))
    if b.prefix is None:
        return list(b.others.values())
    return NumberedEvidence(b.prefix, b.numbers, b.others)


def call_ids_of(prefix: str, numbers: Iterable[int]) -> Sequence[str]:
    """The ids `f"{prefix}{n:05d}"` of `numbers` (finalize's call ids)."""
    if not _SAFE.fullmatch(prefix):
        return [f"{prefix}{n:05d}" for n in numbers]
    return NumberedIds(prefix, array("q", numbers), {})


def selected_ids(ids: Sequence[str], indices: Iterable[int]) -> Sequence[str]:
    """`[ids[i] for i in indices]`, numbered when `ids` is."""
    if isinstance(ids, NumberedIds) and not ids._others:
        numbers = ids._numbers
        return NumberedIds(ids._prefix, array("q", (numbers[i] for i in indices)), {})
    return [ids[i] for i in indices]


def call_evidence(
    ids: Sequence[str],
    indices: Iterable[int],
    before: Sequence[Evidence] = (),
    after: Sequence[Evidence] = (),
) -> Sequence[Evidence]:
    """`before`, then `call:<ids[i]>` evidence (retained, no ref) for each of `indices`,
    then `after`; numbered when `ids` is."""
    if not (isinstance(ids, NumberedIds) and not ids._others):
        calls = [Evidence(source=f"call:{ids[i]}", ref=None, retained=True) for i in indices]
        return [*before, *calls, *after]
    numbers = array("q", [_OTHER] * len(before))
    numbers.extend(ids._numbers[i] for i in indices)
    others = dict(enumerate(before))
    others.update((len(numbers) + k, e) for k, e in enumerate(after))
    numbers.extend([_OTHER] * len(after))
    return NumberedEvidence(f"call:{ids._prefix}", numbers, others)


class Placeholders:
    """Numbered lists standing in a manifest's text as one-item placeholder arrays, taken
    in their place by the validator of the fields (`roller.capture.manifest_json`): pass
    it as the validation context's `PLACEHOLDERS`. Placeholders carry a random nonce, so
    no text of a manifest is taken for one."""

    def __init__(self) -> None:
        self.nonce = f"roller-numbered-{secrets.token_hex(8)}-"
        self._lists: dict[str, NumberedIds | NumberedEvidence] = {}
        self.taken = 0

    def add(self, items: NumberedIds | NumberedEvidence) -> str:
        """A new placeholder's token for `items`."""
        token = f"{self.nonce}{len(self._lists)}"
        self._lists[token] = items
        return token

    def __len__(self) -> int:
        return len(self._lists)

    def take(self, value: object) -> _Numbered[Any] | None:
        """The list a placeholder array (as JSON gives it) stands for, else None."""
        if not isinstance(value, list) or len(value) != 1:
            return None
        item = value[0]
        if isinstance(item, dict) and item == {"source": item.get("source"), "ref": None,
                                               "retained": True}:  # fmt: skip
            item = item["source"]
        found = self._lists.get(item) if isinstance(item, str) else None
        if found is not None:
            self.taken += 1
        return found


PLACEHOLDERS = "roller.capture.numbered"  # the validation context's key for `Placeholders`


def _kept(items: object, validate: ValidatorFunctionWrapHandler, info: ValidationInfo) -> object:
    if isinstance(items, _Numbered):
        return items
    context = info.context
    placeholders = context.get(PLACEHOLDERS) if isinstance(context, dict) else None
    found = placeholders.take(items) if isinstance(placeholders, Placeholders) else None
    return found if found is not None else validate(items)


def _listed(items: Sequence[T]) -> list[T]:
    return items if isinstance(items, list) else list(items)


# Field types: validated as lists (a numbered sequence, made here, is taken as it is),
# serialized as the lists they stand for. The JSON Schema is a list's.
IdList = Annotated[
    Sequence[str], WrapValidator(_kept), PlainSerializer(_listed, return_type=list[str])
]
EvidenceList = Annotated[
    Sequence[Evidence], WrapValidator(_kept), PlainSerializer(_listed, return_type=list[Evidence])
]
