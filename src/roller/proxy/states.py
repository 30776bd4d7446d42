"""The states of an exchange's record and the events each state accepts.

The recorder (`recorder.Recorder`) is the state machine; this module is its table.
States and the events that move between them (any other event is `IllegalTransition`):

    ADMITTING ─admitted→ RECEIVING_BODY ─body_complete→ DECIDING ─decided→ FORWARDING
      │ admitted: refuse      │ body_part: over the limit   │ decided: answer   │  │
      └──────────────→ REPLYING ←───────────────────────────┴─────── upstream_failed │
                          │ replied                                  upstream_head │
                          ▼                                                        ▼
                        ENDED ←──── response_complete, upstream_failed ──── RELAYING
                          ▲ body_failed, client_gone, shutdown, failed: from any other state

Facts it relies on: `State.X` goes through EnumType's `__getattr__` hook on Python 3.11
(a Python-level class attribute lookup, ~500 instructions, measured), so the recorder's
events read the module constants below (`RELAYING`, ...) instead; and `in` on a tuple
of members compares identities, where a set would call `Enum.__hash__`, a Python
function.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final


class State(enum.Enum):
    ADMITTING = "admitting"  # the head arrived; the policy judges it; nothing is on the tape
    RECEIVING_BODY = "receiving_body"  # admitted; the body is read (and streams to the tape)
    DECIDING = "deciding"  # the body is whole; the request policy is deciding
    FORWARDING = "forwarding"  # req+body recorded, sent upstream, no response head yet
    RELAYING = "relaying"  # resp recorded; the response is being relayed chunk by chunk
    REPLYING = "replying"  # roller is sending its own answer
    ENDED = "ended"  # the end frame is on the tape


class IllegalTransition(RuntimeError):
    """An event the exchange's state does not allow: a bug in the glue, not an I/O state."""


LIVE: Final = tuple(state for state in State if state is not State.ENDED)
# The members as module constants, for the recorder's events (see the facts above).
ADMITTING: Final = State.ADMITTING
RECEIVING: Final = State.RECEIVING_BODY
DECIDING: Final = State.DECIDING
FORWARDING: Final = State.FORWARDING
RELAYING: Final = State.RELAYING
REPLYING: Final = State.REPLYING
ENDED: Final = State.ENDED

# The states each event is accepted in (the diagram above); anything else is illegal.
# Tuples, not sets: `in` then compares identities, where a set would call Enum.__hash__,
# a Python function. The events every exchange sees test their one state inline
# (`is RELAYING`, ...): a call saved per event, measured; a test checks every event in
# every state against this table.
ALLOWED: Mapping[str, tuple[State, ...]] = {
    "admitted": (State.ADMITTING,),
    "body_part": (State.RECEIVING_BODY,),
    "body_complete": (State.RECEIVING_BODY,),
    "body_failed": (State.RECEIVING_BODY,),
    "decided": (State.DECIDING,),
    "upstream_head": (State.FORWARDING,),
    "chunk": (State.RELAYING,),
    "relayed": (State.RELAYING,),
    "response_complete": (State.RELAYING,),
    "upstream_failed": (State.FORWARDING, State.RELAYING),
    "replied": (State.REPLYING,),
    "client_gone": LIVE,
    "shutdown": LIVE,
    "failed": LIVE,
    "end_event": (State.ENDED,),
}
