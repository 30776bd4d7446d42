"""The readers of a capture hold a small index, not every call or relation.

Synthetic captures from `benchmarks/finalize_scale.py` (conversations that resend their
whole transcript each turn, as harnesses do), finalized for real; peak memory measured
with tracemalloc. Holding every call (what the tree and the main trajectory did) peaks
at several times calls.jsonl's size; a pass that holds a call at a time peaks at a few
of the largest records plus a summary per call.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from roller.capture import context_reader
from roller.capture.layout import AttemptPaths
from roller.capture.reader import Capture, read_attempt
from roller.export import continuity, otel, parquet
from roller.export.atif import atif_document
from roller.export.omissions import Omissions
from roller.export.openai_messages import message_records
from roller.export.otel import traces_line
from roller.export.trajectory import build_trajectory
from roller.finalize.attempt import finalize_attempt
from roller.view.tree import build_tree

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import finalize_scale


def _attempt(root: Path, calls: int, shape: finalize_scale.Shape) -> AttemptPaths:
    paths = finalize_scale.build_attempt(root, calls, shape, "on-error")
    finalize_attempt(paths)
    return paths


def _peak(work: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> AttemptPaths:
    """280 calls: four sessions of a 40-call root and three 10-call subagents."""
    shape = finalize_scale.Shape(40, 3, 10, fixed_kb=16, turn_kb=1)
    return _attempt(tmp_path_factory.mktemp("sessions"), 280, shape)


@pytest.fixture(scope="module")
def spawning(tmp_path_factory: pytest.TempPathFactory) -> AttemptPaths:
    """One session: a 40-call root that spawns three 30-call subagents (ATIF is built)."""
    shape = finalize_scale.Shape(40, 3, 30, fixed_kb=48, turn_kb=1)
    return _attempt(tmp_path_factory.mktemp("spawning"), 130, shape)


@pytest.fixture(scope="module")
def one_root(tmp_path_factory: pytest.TempPathFactory) -> AttemptPaths:
    """One root of 80 calls (its main trajectory is built)."""
    shape = finalize_scale.Shape(80, 0, 0, fixed_kb=4, turn_kb=1)
    return _attempt(tmp_path_factory.mktemp("root"), 80, shape)


def test_the_tree_holds_a_summary_per_call(sessions: AttemptPaths) -> None:
    size = sessions.calls.stat().st_size  # ~21 MB; every call held peaked at ~3x that
    assert _peak(lambda: build_tree(read_attempt(sessions))) < size // 8


def test_relations_stream(sessions: AttemptPaths) -> None:
    size = sessions.relations.stat().st_size
    assert _peak(lambda: sum(1 for _ in read_attempt(sessions).relations)) < size // 4
    capture = read_attempt(sessions)
    assert len(capture.relations) == capture.manifest.counts.relations
    assert capture.relations[0] == next(iter(capture.relations))


def test_the_main_trajectory_holds_one_root_call_at_a_time(one_root: AttemptPaths) -> None:
    size = one_root.calls.stat().st_size  # ~8.5 MB; every root call held peaked at ~4x
    record = build_trajectory(read_attempt(one_root))
    assert record.built and len(record.call_ids) == 80
    assert _peak(lambda: build_trajectory(read_attempt(one_root))) < size // 2


def test_the_trajectory_of_calls_out_of_order_is_the_same(one_root: AttemptPaths) -> None:
    """calls.jsonl in arrival order streams; any other order is read whole and sorted:
    both give the same record."""
    capture = read_attempt(one_root)
    shuffled = list(capture.calls)
    shuffled = shuffled[1::2] + shuffled[::2]
    held = Capture(capture.paths, capture.manifest, shuffled, list(capture.relations))
    assert build_trajectory(held) == build_trajectory(capture)


def test_the_tree_of_held_records_is_the_same(sessions: AttemptPaths) -> None:
    capture = read_attempt(sessions)
    held = Capture(capture.paths, capture.manifest, list(capture.calls), list(capture.relations))
    assert build_tree(held) == build_tree(capture)


def _messages(paths: AttemptPaths) -> Iterator[dict[str, Any]]:
    return message_records(read_attempt(paths), True, Omissions("call"))


def test_openai_messages_hold_a_call_at_a_time(sessions: AttemptPaths) -> None:
    # Continuity compares each call with its agent's earlier ones: it holds their item
    # keys as digests, not the keys (every message's text) nor the calls (to sort them),
    # which peaked at ~3x calls.jsonl here. The contexts of the conversations in flight
    # are held too (`ContextReader.KEEP` recent ones, and the messages made of them:
    # `ItemViews.KEEP`), so that a resent transcript is read once: a few of the largest
    # records, whatever the capture's length.
    size = sessions.calls.stat().st_size
    largest = max(len(line) for line in sessions.calls.read_bytes().splitlines())
    assert sum(1 for _ in _messages(sessions)) == 280
    in_flight = context_reader.KEEP * largest * 2  # ~1.8 MB here
    assert _peak(lambda: sum(1 for _ in _messages(sessions))) < size // 8 + in_flight


def test_continuity_holds_a_few_words_a_call(sessions: AttemptPaths) -> None:
    # Each earlier call is held as its protocol, system prompt and the chain value of
    # its items' keys (~250 bytes), whatever its context's length; the items' digests
    # are remembered by their text while in use only (here 64 of them). Holding each
    # call's keys (a digest per item, ~30 items a call here) held ~750 bytes a call.
    calls = list(read_attempt(sessions).calls)
    gc.collect()
    tracemalloc.start()
    try:
        flows = continuity.Flows()
        flows._digest = continuity._Digests(limit=64)
        decided = [flows.see(c) for c in calls]
        del decided
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        # less the recent item lists (`_Digests.prefixes`: `_LISTS` of them, whatever
        # the capture's length), each a list of its items and one chain value an item
        # (the counts beside them are small integers, cached)
        recent = sum(
            sys.getsizeof(items) + sys.getsizeof(values) + sum(map(sys.getsizeof, values))
            for items, _, _, values in flows._digest._lists
        )
    finally:
        tracemalloc.stop()
    assert (held - recent) / len(calls) < 300, (held, recent)


def test_the_parquet_table_is_written_a_row_group_at_a_time(
    sessions: AttemptPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow
    import pyarrow.parquet

    size = sessions.calls.stat().st_size
    monkeypatch.setattr(parquet, "GROUP_BYTES", 4 << 20)
    out = tmp_path / "calls.parquet"
    warm = next(_messages(sessions))  # pyarrow's modules imported before measuring
    parquet.write_calls([warm], tmp_path / "warm.parquet")
    largest = max(len(line) for line in sessions.calls.read_bytes().splitlines())
    in_flight = context_reader.KEEP * largest * 2  # as openai-messages' records hold
    assert _peak(lambda: parquet.write_calls(_messages(sessions), out)) < size // 4 + in_flight
    assert pyarrow.parquet.ParquetFile(out).num_row_groups > 2
    # the table made at once, as before
    rows = [parquet.call_row(r) for r in _messages(sessions)]
    whole = pyarrow.Table.from_pylist(rows, schema=parquet._calls_schema(pyarrow))
    assert pyarrow.parquet.read_table(out).equals(whole)
    empty = tmp_path / "empty.parquet"
    assert parquet.write_calls([], empty) == 0
    assert pyarrow.parquet.read_table(empty).equals(whole.slice(0, 0))


def test_otel_spans_hold_a_call_at_a_time(sessions: AttemptPaths) -> None:
    # An attempt's spans are one line, the calls read one at a time (holding them, to
    # look up each agent's, peaked at ~3x calls.jsonl here).
    size = sessions.calls.stat().st_size
    assert traces_line(read_attempt(sessions)).count('"spanId"') > 280
    assert _peak(lambda: traces_line(read_attempt(sessions))) < size // 8


def test_otel_spans_are_spooled_not_held(
    sessions: AttemptPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each chat span's text is spooled as it is made: once the line's first span is
    # written (every span made by then), none is alive. Holding them made a 100k-call
    # export peak at ~1 GB.
    made: list[weakref.ref[Any]] = []
    real = otel._chat_span

    def kept(*args: Any) -> Any:
        span = real(*args)
        made.append(weakref.ref(span))
        return span

    monkeypatch.setattr(otel, "_chat_span", kept)
    pieces = otel.traces_text(read_attempt(sessions))
    next(pieces), next(pieces)  # the envelope's head, the first agent span
    gc.collect()
    assert len(made) >= 280
    assert [r for r in made if r() is not None] == []
    assert "".join(pieces).count('"spanId"') >= 280


def test_atif_holds_calls_without_their_contexts(spawning: AttemptPaths) -> None:
    # Every call's own fields are held, a context only while it is read (an agent's
    # first call, a spawning call, one subagent's calls): every call held whole peaked
    # at ~2.5x calls.jsonl here; the document itself is most of what is left.
    size = spawning.calls.stat().st_size

    def document() -> dict[str, Any] | None:
        return atif_document(read_attempt(spawning), Omissions("t"), include_blocked=True)

    doc = document()
    assert doc is not None and len(doc["subagent_trajectories"]) == 3
    assert _peak(document) < size * 5 // 4
