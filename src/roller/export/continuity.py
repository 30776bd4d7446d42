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
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from roller.capture.models import CallRecord
from roller.wire import codec_named


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class _Shape:
    protocol: str
    system: Hashable
    keys: tuple[Hashable, ...]  # the input's compared items
    state: tuple[Hashable, ...]  # input + output: what the next call should extend


def _shape(call: CallRecord) -> _Shape | str:
    codec = codec_named(call.protocol)
    history = codec.history(call.context) if codec is not None else None
    if codec is None or history is None:
        return "unreadable_request"
    if codec.server_state(call.context):
        return "history_not_in_request"
    keys = tuple(k for k in map(codec.item_key, history.items) if k is not None)
    produced = codec.output_items(call.output) if call.output_complete else []
    out = tuple(k for k in map(codec.item_key, produced) if k is not None)
    return _Shape(codec.name, history.system, keys, keys + out)


def _extends(shape: _Shape, earlier: _Shape) -> bool:
    n = len(earlier.state)
    return (
        shape.protocol == earlier.protocol
        and shape.system == earlier.system
        and shape.keys[:n] == earlier.state
    )


def _reason(shape: _Shape, previous: _Shape) -> str:
    if shape.protocol != previous.protocol:
        return "protocol_changed"
    n = len(previous.state)
    if shape.system != previous.system and shape.keys[:n] == previous.state:
        return "system_changed"
    return "not_a_continuation"


def continuity(calls: Sequence[CallRecord]) -> dict[str, Continuity]:
    """call id -> its continuity, for every generation call (module docstring)."""
    out: dict[str, Continuity] = {}
    earlier: dict[str, list[tuple[str, _Shape | str]]] = {}
    for call in sorted(calls, key=lambda c: c.sequence):
        if call.kind != "generation":
            continue
        if call.participant_id is None:
            out[call.call_id] = Continuity(None, False, None, "no_participant")
            continue
        history = earlier.setdefault(call.participant_id, [])
        shape = _shape(call)
        previous = history[-1] if history else None
        history.append((call.call_id, shape))
        if previous is None:
            out[call.call_id] = Continuity(None, False, None, "first_call")
            continue
        if isinstance(shape, str):
            out[call.call_id] = Continuity(previous[0], False, None, shape)
            continue
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
        out[call.call_id] = Continuity(previous[0], extends_previous, extended, reason)
    return out
