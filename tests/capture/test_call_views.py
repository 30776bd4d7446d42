"""What validate keeps of each call: the facts the checks across calls read, as the
records say them, over every real capture (and one with its calls repeated)."""

from __future__ import annotations

from collections import Counter

from roller.capture.call_views import STATUSES, CallViews
from tests.export.real_captures import RealCaptures


def test_call_views_give_what_the_records_say(real_captures: RealCaptures) -> None:
    for capture in real_captures.values():
        calls = list(capture.calls)
        for records in (calls, calls + calls[:3]):
            views = CallViews()
            for call in records:
                views.add(call)
            assert len(views) == len(records)
            assert views.call_ids() == [c.call_id for c in records]
            for name in STATUSES:
                counted = Counter(getattr(c, name) for c in records)
                for value in (*counted, "no-such-value"):
                    assert views.count(name, value) == counted[value]
                    assert views.all(name, value) == (counted[value] == len(records))
            owned: dict[str, list[str]] = {}
            for c in records:
                if c.participant_id is not None:
                    owned.setdefault(c.participant_id, []).append(c.call_id)
            assert views.by_participant() == owned
            disagree = any(c.attribution.parent_cross_check == "disagree" for c in records)
            assert views.any_disagrees() == disagree
