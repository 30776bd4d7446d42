"""Whether each call's context extends the same agent's previous call.

Trainers that merge the calls of one agent into one sample (each call a prefix-extension
of the previous) need to know where to cut: a compaction, stripped thinking the API
does not keep, a side request (title generation) or a rewritten history all make a
call whose input is not the previous call's input plus its output. This is decided
from the actual contexts with the main trajectory's definition of "the same message"
(`Codec.item_key`, rules in `roller.wire.history`), per participant, in arrival order:

- `extends_previous`: the call's input extends, item by item, the previous generation
  call's input plus its output (when that output completed), with the same system
  prompt and protocol;
- `extends_call_id`: the latest earlier call of the participant it extends (it may
  continue an earlier call after a side request), or null;
- `break_reason` when it does not extend the previous call: `first_call`,
  `not_a_continuation`, `system_changed`, `protocol_changed`, `unreadable_request` (no
  readable item list), `history_not_in_request` (Responses `previous_response_id`),
  `no_participant` (unattributed: no agent to compare with).

`Flows` decides a call's continuity as the calls come in arrival order (an export whose
calls.jsonl is in sequence order, as finalize writes it, reads the file once: 10k calls
of `finalize_scale.py` to openai-messages, 12.9 → 10.8 s); `continuity` reads them once
in any order, then sorts.

What is held of an earlier call is a few words, whatever its context's length: its
protocol, its system prompt's digest (one object per distinct prompt) and one chain
value over its input's and output's item keys (`_Shape`, `_step`). Each key is first
made a digest (`_Digests`: the sha256 of an exact encoding; two keys have the same
digest exactly when they are equal), and a prefix's chain value is the sha256 of the
shorter prefix's value and the next digest, so two prefixes of one length have equal
values exactly when their keys are equal: "does this input begin with that call's input
and output" is one comparison at that call's length. A key holding anything but
strings, numbers, None and tuples (a NaN, say) is kept as it is, and a chain through
it is the pair itself, compared as the keys are. Holding the keys themselves (every
message's text) made the openai-messages and Parquet exports of a 10k-call capture
peak at 2.2 and 3.9 GB; holding a digest per item of every call, ~750 bytes a call at
`finalize_scale.py`'s shape (now ~250).

An item's key is its own, so its digest is also remembered by the item's exact JSON text
while in use (two generations of at most 16,384 items): a conversation resends its
items on every call, and keying every item of every call was most of continuity's time
(10k calls of `finalize_scale.py`: 2.9 s beside the calls' reading, now 1.1).
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import orjson
import pydantic_core

from roller.capture.models import CallRecord
from roller.capture.models.numbered import IdsBuilder
from roller.errors import CaptureFormatError
from roller.wire import Codec, codec_named
from roller.wire.item_views import shared_count

_ABSENT = object()
_LISTS = 8  # recent item lists a later one may begin with (conversations interleave)


class OutOfSequence(CaptureFormatError):
    """A call fed to `Flows.see` after a call of a later sequence."""


@dataclass(frozen=True, slots=True)
class Continuity:
    """How one call's context relates to its agent's earlier calls (module docstring)."""

    previous_call_id: str | None
    extends_previous: bool
    extends_call_id: str | None
    break_reason: str | None

    def as_json(self) -> dict[str, object]:
        return {
            "previous_call_id": self.previous_call_id,
            "extends_previous": self.extends_previous,
            "extends_call_id": self.extends_call_id,
            "break_reason": self.break_reason,
        }


@dataclass(frozen=True, slots=True)
class _Shape:
    """What continuity compares of a call: its protocol and system prompt, and its
    compared items' keys as chain values (`_step`): `whole` over its input's and its
    output's (what the next call should begin with), `prefixes` over each prefix of its
    input's, kept only until the call is decided (`held`)."""

    protocol: str
    system: Hashable
    n: int  # how many keys its input and output hold
    whole: Hashable
    prefixes: tuple[Hashable, ...] = ()  # [i]: the chain value over its input's first i keys

    def extended_by(self, later: _Shape) -> bool:
        """Whether `later`'s input begins with this call's input and output."""
        return self.n < len(later.prefixes) and later.prefixes[self.n] == self.whole

    def held(self) -> _Shape:
        """What later calls compare with: the shape without its prefixes."""
        return _Shape(self.protocol, self.system, self.n, self.whole)


def _step(prefix: Hashable, key: Hashable) -> Hashable:
    """The chain value of a prefix one key longer: the sha256 of the prefix's value and
    the key's digest, or the pair itself when either is not a digest (a key kept as it
    is). Two prefixes of one length have equal values exactly when their keys are."""
    if type(prefix) is bytes and type(key) is bytes:
        return hashlib.sha256(prefix + key).digest()
    return (prefix, key)


def _chain(start: Hashable, keys: Iterable[Hashable]) -> list[Hashable]:
    """`start` and the value after each key."""
    out = [start]
    for key in keys:
        out.append(_step(out[-1], key))
    return out


class _Digests:
    """A key as the sha256 of an exact encoding of it (module docstring); a key that is
    not strings, numbers, None and tuples all the way down, as it is. The encoding is
    prefix-free (each value tagged, each string and tuple by its length, each number
    ended), so two encodings are equal exactly when the keys are equal. A system
    prompt's digest is held once however many calls carry it (`__call__`).

    What is remembered while in use:
    - a few recent item lists with their chain values (`prefixes`): a list that begins
      with some of the very objects of one of them takes its values for that part
      (`shared_count`; a reader that parses contexts with one `ContextReader`,
      `roller.capture.reader.iter_calls_shared`, gets an earlier call's items back);
    - an item's digest by its exact JSON text (`items`: two generations of at most
      `limit`, the conversations in flight), for items parsed apart (a context read
      whole, an output); a text holding `null` only when it is the record's own writing
      of the item (orjson writes NaN and Infinity as `null`, pydantic as themselves), so
      items whose orjson texts are equal have equal keys;
    - a few recent system prompts' digests by the object itself (`system`)."""

    def __init__(self, limit: int = 1 << 14) -> None:
        self._held: dict[bytes, bytes] = {}
        self._limit = limit
        self._items: dict[bytes, Hashable] = {}  # an item's exact JSON text's key -> its digest
        self._older: dict[bytes, Hashable] = {}  # the generation before
        # (a call's items, its codec's name, digests before each item, chain values)
        self._lists: deque[tuple[list[Any], str, list[int], list[Hashable]]] = deque(maxlen=_LISTS)
        self._systems: deque[tuple[Any, str, Hashable]] = deque(maxlen=_LISTS)

    def prefixes(self, codec: Codec, items: list[Any]) -> list[Hashable]:
        """`_chain(b"", self.items(codec, items))`, a recent list's values taken for
        the part of `items` that holds its very objects."""
        for kept in self._lists:
            earlier, name, counted, values = kept
            n = shared_count(earlier, items) if name == codec.name else 0
            if n:
                self._lists.remove(kept)
                # the values of those items' keys (a key that is None adds none), extended
                kept_values = values[: counted[n] + 1]
                counted = counted[: n + 1]
                digests = self.items(codec, items[n:], counted)
                values = kept_values + _chain(kept_values[-1], digests)[1:]
                break
        else:
            counted = [0]
            values = _chain(b"", self.items(codec, items, counted))
        self._lists.appendleft((items, codec.name, counted, values))
        return values

    def items(
        self, codec: Codec, items: Iterable[Any], counted: list[int] | None = None
    ) -> tuple[Hashable, ...]:
        """The digests of the compared items' keys (`Codec.item_key`; an item whose key
        is None is not compared), each remembered (above). `counted` (how many digests
        the items before each gave, from its last) is extended for each item."""
        out = []
        for item in items:
            digest = self._item_digest(codec, item)
            if digest is not None:
                out.append(digest)
            if counted is not None:
                counted.append(counted[-1] + (digest is not None))
        return tuple(out)

    def system(self, codec: Codec, system: Any) -> Hashable:
        """The digest of a system prompt (`__call__`), a few recent ones' kept by the
        object itself (a `ContextReader`'s contexts share it)."""
        for prompt, name, digest in self._systems:
            if prompt is system and name == codec.name:
                return digest
        digest = self(system)
        self._systems.appendleft((system, codec.name, digest))
        return digest

    def _item_digest(self, codec: Codec, item: Any) -> Hashable:
        try:
            text = orjson.dumps(item)
        except orjson.JSONEncodeError:  # (an integer past 64 bits): not remembered
            return _digest(codec.item_key(item))
        if b"null" in text and pydantic_core.to_json(item) != text:  # a NaN or Infinity
            return _digest(codec.item_key(item))
        seen = hashlib.blake2b(codec.name.encode() + b"\0" + text, digest_size=16).digest()
        digest = self._items.get(seen, _ABSENT)
        if digest is _ABSENT:
            digest = self._older.get(seen, _ABSENT)
            if digest is _ABSENT:
                digest = _digest(codec.item_key(item))
            if len(self._items) >= self._limit:
                self._older, self._items = self._items, {}
            self._items[seen] = digest
        return digest

    def __call__(self, key: Hashable) -> Hashable:
        digest = _digest(key)
        return self._held.setdefault(digest, digest) if type(digest) is bytes else digest


def _digest(key: Hashable) -> Hashable:
    """The sha256 of `key`'s encoding (`_encoded`), or `key` when it cannot be encoded;
    None for None."""
    if key is None:
        return None
    parts: list[bytes] = []
    if not _encoded(key, parts):
        return key
    return hashlib.sha256(b"".join(parts)).digest()


def _encoded(value: object, out: list[bytes]) -> bool:
    """Append `value`'s encoding to `out`; False when it holds another type."""
    if value is None:
        out.append(b"N")
        return True
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")  # (a lone surrogate, as json reads it)
        out.append(b"S%d:" % len(data))
        out.append(data)
        return True
    if isinstance(value, tuple):
        out.append(b"T%d:" % len(value))
        return all(_encoded(item, out) for item in value)
    # Numbers as Python compares them (True == 1 == 1.0, -0.0 == 0): a whole one by its
    # integer, any other by its repr (exact for a float); NaN, equal to nothing else, kept.
    if isinstance(value, float) and not value.is_integer():
        if math.isnan(value):
            return False
        out.append(b"F%b:" % repr(value).encode())
        return True
    if isinstance(value, int | float):  # (bool is an int)
        out.append(b"I%d:" % int(value))
        return True
    return False


def _shape(call: CallRecord, digest: _Digests) -> _Shape | str:
    codec = codec_named(call.protocol)
    history = codec.history(call.context) if codec is not None else None
    if codec is None or history is None:
        return "unreadable_request"
    if codec.server_state(call.context):
        return "history_not_in_request"
    prefixes = digest.prefixes(codec, list(history.items))
    out = digest.items(codec, codec.output_items(call.output) if call.output_complete else [])
    whole = _chain(prefixes[-1], out)[-1]
    n = len(prefixes) - 1 + len(out)
    return _Shape(codec.name, digest.system(codec, history.system), n, whole, tuple(prefixes))


def _extends(shape: _Shape, earlier: _Shape) -> bool:
    return (
        shape.protocol == earlier.protocol
        and shape.system == earlier.system
        and earlier.extended_by(shape)
    )


def _reason(shape: _Shape, previous: _Shape) -> str:
    if shape.protocol != previous.protocol:
        return "protocol_changed"
    if shape.system != previous.system and previous.extended_by(shape):
        return "system_changed"
    return "not_a_continuation"


class Flows:
    """Continuity fed the generation calls in arrival order (`next`): each call's as it
    comes, from the digests of its agent's earlier calls. `continuity` feeds it calls
    read in any order, sorted; an export whose calls.jsonl is in sequence order (as
    finalize writes it, and validation tells) feeds it as it reads (`see`)."""

    def __init__(self) -> None:
        self._digest = _Digests()
        # each participant's calls so far: (the call's number in `_ids`, its shape held)
        self._earlier: dict[str, list[tuple[int, _Shape | str]]] = {}
        self._ids = IdsBuilder()  # the calls' ids, numbered (8 bytes an id like call-…-00012)
        self._count = 0
        self._last: int | None = None  # the sequence `see` was fed last

    def shape(self, call: CallRecord) -> _Shape | str:
        """What continuity compares of a call ("" without a participant)."""
        return "" if call.participant_id is None else _shape(call, self._digest)

    def see(self, call: CallRecord) -> Continuity | None:
        """The continuity of the next call in sequence order (None unless a generation
        call); a call before the last one seen is a `CaptureFormatError`, as its
        agent's later calls were decided without it."""
        if self._last is not None and call.sequence < self._last:
            raise OutOfSequence(
                f"call {call.call_id} (sequence {call.sequence}) comes after sequence "
                f"{self._last}: calls.jsonl is not in sequence order"
            )
        self._last = call.sequence
        if call.kind != "generation":
            return None
        return self.next(call.call_id, call.participant_id, self.shape(call))

    def next(self, call_id: str, participant_id: str | None, shape: _Shape | str) -> Continuity:
        """The continuity of the next generation call in arrival order."""
        if participant_id is None:
            return Continuity(None, False, None, "no_participant")
        history = self._earlier.setdefault(participant_id, [])
        previous = history[-1] if history else None
        self._ids.append(call_id)
        history.append((self._count, shape.held() if isinstance(shape, _Shape) else shape))
        self._count += 1
        if previous is None:
            return Continuity(None, False, None, "first_call")
        ids = self._ids.ids()
        if isinstance(shape, str):
            return Continuity(ids[previous[0]], False, None, shape)
        extended = next(
            (
                ids[history[i][0]]
                for i in range(len(history) - 2, -1, -1)
                if isinstance(s := history[i][1], _Shape) and _extends(shape, s)
            ),
            None,
        )
        prev_shape = previous[1]
        extends_previous = isinstance(prev_shape, _Shape) and _extends(shape, prev_shape)
        if extends_previous:
            reason = None
        elif isinstance(prev_shape, _Shape):
            reason = _reason(shape, prev_shape)
        else:
            reason = "not_a_continuation"
        return Continuity(ids[previous[0]], extends_previous, extended, reason)


def continuity(calls: Iterable[CallRecord]) -> dict[str, Continuity]:
    """call id -> its continuity, for every generation call, the calls in any order
    (module docstring)."""
    flows = Flows()
    read = [  # (sequence, id, participant, shape): the calls read once, their keys digested
        (c.sequence, c.call_id, c.participant_id, flows.shape(c))
        for c in calls
        if c.kind == "generation"
    ]
    read.sort(key=itemgetter(0))  # arrival order (stable, as sorting the calls was)
    return {call_id: flows.next(call_id, pid, shape) for _, call_id, pid, shape in read}
