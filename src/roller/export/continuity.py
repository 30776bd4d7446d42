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
in any order, then sorts. Either holds a few words a call: each call's item keys and
system prompt are kept as digests (`_Digests`: the sha256 of an exact encoding,
one object per distinct digest), not as the keys, which hold every message's text —
holding them (and every call, to sort them) made the openai-messages and Parquet
exports of a 10k-call capture peak at 2.2 and 3.9 GB. Two keys have the same digest
exactly when they are equal; a key holding anything but strings, numbers, None and
tuples (a NaN, say) is kept as it is, compared as before. An item's key is its own, so
its digest is also remembered by the item's exact JSON text (~100 bytes a distinct
item): a conversation resends its items on every call, and keying every item of every
call was most of continuity's time (10k calls of `finalize_scale.py`: 2.9 s beside
the calls' reading, now 1.1).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import orjson

from roller.capture.models import CallRecord
from roller.errors import CaptureFormatError
from roller.wire import Codec, codec_named

_ABSENT = object()


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
    protocol: str
    system: Hashable
    keys: tuple[Hashable, ...]  # the input's compared items
    out: tuple[Hashable, ...]  # the output's: keys + out is what the next call should extend

    def extended_by(self, keys: tuple[Hashable, ...]) -> bool:
        """Whether `keys` begin with this call's input and output (`keys + out`, not
        held twice: a call's keys are most of what continuity holds)."""
        k = len(self.keys)
        n = k + len(self.out)
        return len(keys) >= n and keys[:k] == self.keys and keys[k:n] == self.out


class _Digests:
    """A key as the sha256 of an exact encoding of it (module docstring), each distinct
    digest held once; a key that is not strings, numbers, None and tuples all the way
    down, as it is. The encoding is prefix-free (each value tagged, each string and
    tuple by its length, each number ended), so two encodings are equal exactly when
    the keys are equal."""

    def __init__(self) -> None:
        self._held: dict[bytes, bytes] = {}
        self._items: dict[bytes, Hashable] = {}  # an item's exact JSON text's key -> its digest

    def items(self, codec: Codec, items: Iterable[Any]) -> tuple[Hashable, ...]:
        """The digests of the compared items' keys (`Codec.item_key`; an item whose key
        is None is not compared), each remembered by the item's exact JSON text."""
        out = []
        for item in items:
            try:
                text = orjson.dumps(item)
            except orjson.JSONEncodeError:  # (an integer past 64 bits): not remembered
                digest = self(codec.item_key(item))
            else:
                seen = hashlib.blake2b(codec.name.encode() + b"\0" + text, digest_size=16).digest()
                digest = self._items.get(seen, _ABSENT)
                if digest is _ABSENT:
                    digest = self._items[seen] = self(codec.item_key(item))
            if digest is not None:
                out.append(digest)
        return tuple(out)

    def __call__(self, key: Hashable) -> Hashable:
        if key is None:
            return None
        parts: list[bytes] = []
        if not _encoded(key, parts):
            return key
        digest = hashlib.sha256(b"".join(parts)).digest()
        return self._held.setdefault(digest, digest)


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
    keys = digest.items(codec, history.items)
    out = digest.items(codec, codec.output_items(call.output) if call.output_complete else [])
    return _Shape(codec.name, digest(history.system), keys, out)


def _extends(shape: _Shape, earlier: _Shape) -> bool:
    return (
        shape.protocol == earlier.protocol
        and shape.system == earlier.system
        and earlier.extended_by(shape.keys)
    )


def _reason(shape: _Shape, previous: _Shape) -> str:
    if shape.protocol != previous.protocol:
        return "protocol_changed"
    if shape.system != previous.system and previous.extended_by(shape.keys):
        return "system_changed"
    return "not_a_continuation"


class Flows:
    """Continuity fed the generation calls in arrival order (`next`): each call's as it
    comes, from the digests of its agent's earlier calls. `continuity` feeds it calls
    read in any order, sorted; an export whose calls.jsonl is in sequence order (as
    finalize writes it, and validation tells) feeds it as it reads (`see`)."""

    def __init__(self) -> None:
        self._digest = _Digests()
        self._earlier: dict[str, list[tuple[str, _Shape | str]]] = {}
        self._last: int | None = None  # the sequence `see` was fed last

    def shape(self, call: CallRecord) -> _Shape | str:
        """What continuity compares of a call ("" without a participant)."""
        return "" if call.participant_id is None else _shape(call, self._digest)

    def see(self, call: CallRecord) -> Continuity | None:
        """The continuity of the next call in sequence order (None unless a generation
        call); a call before the last one seen is a `CaptureFormatError`, as its
        agent's later calls were decided without it."""
        if self._last is not None and call.sequence < self._last:
            raise CaptureFormatError(
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
        history.append((call_id, shape))
        if previous is None:
            return Continuity(None, False, None, "first_call")
        if isinstance(shape, str):
            return Continuity(previous[0], False, None, shape)
        extended = next(
            (
                cid
                for cid, s in reversed(history[:-1])
                if isinstance(s, _Shape) and _extends(shape, s)
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
        return Continuity(previous[0], extends_previous, extended, reason)


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
