"""Result ids kept per conversation: each call's view is its own tuple of ids, and asking
whether it carries an id answers as `in` on that tuple."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from roller.finalize.result_ids import ResultLists

ID = st.text(max_size=6) | st.sampled_from(["toolu_1", "toolu_12", "1", "", "\ud800", "é"])


@st.composite
def calls(draw: st.DrawFn) -> list[tuple[str, ...]]:
    """Interleaved conversations that grow, repeat a call, or start over (a fork)."""
    conversations: list[list[str]] = [[] for _ in range(draw(st.integers(1, 12)))]
    out = []
    for _ in range(draw(st.integers(0, 40))):
        c = draw(st.integers(0, len(conversations) - 1))
        how = draw(st.sampled_from(["grow", "grow", "same", "shorter", "fork"]))
        ids = conversations[c]
        if how == "grow":
            ids = ids + [x for x in draw(st.lists(ID, max_size=3)) if x not in ids]
        elif how == "shorter":
            ids = ids[: draw(st.integers(0, len(ids)))]
        elif how == "fork":
            ids = draw(st.lists(ID, max_size=4, unique=True))
        conversations[c] = ids
        out.append(tuple(ids))
    return out


@given(calls=calls(), probe=ID)
def test_each_view_is_its_calls_ids(calls: list[tuple[str, ...]], probe: str) -> None:
    lists = ResultLists()
    kept: list[tuple[int, int]] = []
    for call in calls:  # asked after every call kept: a later one changes no answer
        kept.append(lists.add(call))
        for ids, (number, n) in zip(calls, kept, strict=False):
            view = lists.view(number, n)
            assert view == ids and list(view) == list(ids) and len(view) == len(ids)
            assert [view[k] for k in range(-len(ids), len(ids))] == [*ids, *ids]
            for x in (*ids, probe, "toolu_", "oolu_1", *call):
                assert lists.carries(number, n, x) == (x in ids) == (x in view)


@given(calls=calls(), probe=ID)
def test_carrying_picks_the_calls_whose_ids_hold_it(
    calls: list[tuple[str, ...]], probe: str
) -> None:
    lists = ResultLists()
    kept = [lists.add(call) for call in calls]
    numbers, counts = [k[0] for k in kept], [k[1] for k in kept]
    every = range(len(calls))
    for x in {probe, "toolu_1", *(x for call in calls for x in call)}:
        for asked in (every, every[::2], every[::-1]):
            want = [j for j in asked if x in calls[j]]
            assert lists.carrying(numbers, counts, asked, x) == want
