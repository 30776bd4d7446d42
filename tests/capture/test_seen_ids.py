"""`SeenIds` names exactly the ids added more than once, whatever their order or form."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from roller.capture.seen_ids import SeenIds

PREFIX = "rel-0123456789ab-"

# Numbered ids near each other (so runs form, break and resume), their look-alikes that
# must not be read as the same number (fewer or more leading zeros, another prefix,
# non-ASCII digits), and arbitrary text.
_numbered = st.integers(0, 40).map(lambda n: f"{PREFIX}{n:05d}")
_look_alikes = st.integers(0, 40).flatmap(
    lambda n: st.sampled_from(
        [
            f"{PREFIX}{n}",
            f"{PREFIX}{n:06d}",
            f"rel-other-{n:05d}",
            f"{PREFIX}{n:05d} ",
            f"{PREFIX}٠٠٠٠{n % 10}",
        ]
    )
)
_ids = st.lists(st.one_of(_numbered, _numbered, _look_alikes, st.text(max_size=8)), max_size=60)


def _expected(ids: list[str]) -> list[str]:
    return sorted(k for k, n in Counter(ids).items() if n > 1)


@given(_ids)
def test_the_duplicates_are_the_counted_ones(ids: list[str]) -> None:
    seen = SeenIds(PREFIX)
    for rid in ids:
        seen.add(rid)
    assert seen.duplicates() == _expected(ids)


@given(st.integers(0, 200), st.integers(1, 300))
def test_ids_in_their_numbered_order_are_kept_as_a_run(start: int, n: int) -> None:
    seen = SeenIds(PREFIX)
    for k in range(start, start + n):
        seen.add(f"{PREFIX}{k:05d}")
    assert seen.duplicates() == []
    assert seen.kept() == 0
    seen.add(f"{PREFIX}{start + n // 2:05d}")
    assert seen.duplicates() == [f"{PREFIX}{start + n // 2:05d}"]
