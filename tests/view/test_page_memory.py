"""`roller view --html` holds a small index and a call at a time, not the capture.

Synthetic captures from `benchmarks/finalize_scale.py` (conversations that resend their
whole transcript each turn, as harnesses do), finalized for real; peak memory measured
with tracemalloc while the page is written to a file (`write_html_file`, what the CLI
runs). Building the page whole held every record, every call's detail and the page as
one string: a peak of about five times calls.jsonl.
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from roller.capture.layout import AttemptPaths
from roller.capture.reader import Capture, read_attempt
from roller.errors import CaptureFormatError
from roller.finalize.attempt import finalize_attempt
from roller.view.html import render_html, write_html_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import finalize_scale

from tests.view import page_data


def _attempt(root: Path, calls: int) -> AttemptPaths:
    shape = finalize_scale.Shape(40, 3, 10, fixed_kb=16, turn_kb=1)
    paths = finalize_scale.build_attempt(root, calls, shape, "on-error")
    finalize_attempt(paths)
    return paths


def _peak(paths: AttemptPaths, target: Path) -> int:
    tracemalloc.start()
    try:
        write_html_file(read_attempt(paths), target)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> AttemptPaths:
    """280 calls: four sessions of a 40-call root and three 10-call subagents."""
    return _attempt(tmp_path_factory.mktemp("sessions"), 280)


def test_the_page_holds_a_call_at_a_time(sessions: AttemptPaths, tmp_path: Path) -> None:
    size = sessions.calls.stat().st_size  # ~21 MB
    target = tmp_path / "page.html"
    peak = _peak(sessions, target)
    assert 'data-key="values">' in target.read_text()[-2 * 1024 * 1024 :]  # written through
    assert peak < size // 10, (peak, size)


def _conversation(root: Path, turns: int) -> tuple[int, int]:
    """calls.jsonl's size and the page's without its relations' rows, for one
    conversation of `turns` calls."""
    shape = finalize_scale.Shape(turns, 0, 0, fixed_kb=16, turn_kb=4)
    paths = finalize_scale.build_attempt(root, turns, shape, "on-error")
    finalize_attempt(paths)
    target = root / "page.html"
    write_html_file(read_attempt(paths), target)
    text = target.read_text()
    return paths.calls.stat().st_size, len(text) - page_data.part_chars(text, "relations.rows")


def test_a_conversation_s_page_grows_with_its_new_content(tmp_path: Path) -> None:
    """A conversation resends its transcript each turn, so calls.jsonl grows with the
    square of its length; the page stores each request value once and a request's item
    list by what the previous call began with, so its requests grow with the new content
    alone. Twice the turns: calls.jsonl ~3.4×, the page without its relations' rows (the
    protocol's one `result_in_context` per later call, which grow with the square too, a
    few dozen bytes each) ~1.9×. The page that wrote each request whole was ~1.1×
    calls.jsonl, so it grew ~3.4×; the one that listed every item's place, ~2.1×."""
    small_calls, small_page = _conversation(tmp_path / "a", 60)
    large_calls, large_page = _conversation(tmp_path / "b", 120)
    assert large_calls > 3.2 * small_calls
    assert small_page < small_calls / 10, (small_page, small_calls)
    assert large_page < 2.02 * small_page, (small_page, large_page)


def test_the_peak_grows_by_the_index_alone(sessions: AttemptPaths, tmp_path: Path) -> None:
    """Twice the calls: the peak grows by ~1.4 KB a call (each call's token counts, its
    id in the order, the digests of its new values and items, its results' ids), not by
    the ~75 KB a call of calls.jsonl. The tree's summary of each call, which the page
    kept for its token counts, took it to ~2.2 KB."""
    larger = _attempt(tmp_path / "larger", 560)
    _peak(sessions, tmp_path / "warm.html")  # what a first page makes once is not counted
    small, large = _peak(sessions, tmp_path / "a.html"), _peak(larger, tmp_path / "b.html")
    assert larger.calls.stat().st_size > 1.9 * sessions.calls.stat().st_size
    assert (large - small) / 280 < 1800, (small, large)


def test_calls_out_of_sequence_order_give_the_same_page(sessions: AttemptPaths) -> None:
    """calls.jsonl in sequence order streams; any other order is read whole and sorted."""
    capture = read_attempt(sessions)
    calls = list(capture.calls)
    shuffled = Capture(capture.paths, capture.manifest, calls[1::2] + calls[::2], capture.relations)
    assert render_html(shuffled) == render_html(capture)


def test_a_capture_that_fails_to_read_leaves_the_page_as_it_was(
    sessions: AttemptPaths, tmp_path: Path
) -> None:
    broken = AttemptPaths(tmp_path / "attempt")
    broken.root.mkdir()
    broken.manifest.write_bytes(sessions.manifest.read_bytes())
    broken.relations.write_bytes(sessions.relations.read_bytes())
    with open(sessions.calls, "rb") as fh:
        lines = fh.readlines()
    broken.calls.write_bytes(b"".join(lines[:-1]) + b'{"not": "a call"}\n')
    target = tmp_path / "page.html"
    target.write_text("before")
    with pytest.raises(CaptureFormatError, match=r"calls\.jsonl:280"):
        write_html_file(read_attempt(broken), target)
    assert target.read_text() == "before"
    assert list(tmp_path.iterdir()) == [broken.root, target] or sorted(
        tmp_path.iterdir()
    ) == sorted([broken.root, target])


@pytest.fixture(scope="module")
def thirty_turns(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    """One conversation of 30 calls, each resending the transcript before it."""
    shape = finalize_scale.Shape(30, 0, 0, fixed_kb=1, turn_kb=1)
    paths = finalize_scale.build_attempt(tmp_path_factory.mktemp("thirty"), 30, shape, "on-error")
    finalize_attempt(paths)
    return read_attempt(paths)


def _resent(capture: Capture, outputs: bool) -> tuple[int, int]:
    """How many input items (and, with `outputs`, output items) the calls carry, and how
    many distinct ones."""
    from roller.wire import codec_named

    carried, distinct = 0, set()
    for call in capture.calls:
        codec = codec_named(call.protocol)
        assert codec is not None and codec.chat.results_alone
        items = codec.history(call.context).items
        items = [*items, *codec.output_items(call.output)] if outputs else items
        carried += len(items)
        distinct |= {json.dumps(i) for i in items}
    return carried, len(distinct)


def test_an_item_s_chat_form_is_made_once(
    thirty_turns: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation resends its items on every call: each distinct item (and output)
    is converted to its chat form once, however many calls carry it."""
    from roller.view import page

    made: list[Any] = []
    real = page._chat_digest
    monkeypatch.setattr(
        page, "_chat_digest", lambda codec, item: made.append(item) or real(codec, item)
    )
    render_html(thirty_turns)
    carried, distinct = _resent(thirty_turns, outputs=True)
    assert len(made) == distinct < carried / 10, (len(made), distinct, carried)


def test_tool_results_are_looked_for_in_new_items_only(
    thirty_turns: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anthropic's results come from their own items (`results_alone`): each distinct
    input item is viewed once for the results it carries, however many calls resend it,
    and every tool call but the last still finds its result, in the next call."""
    from roller.view.answers import Answers

    viewed: list[Any] = []
    real = Answers._new
    monkeypatch.setattr(Answers, "_new", lambda self, m: viewed.append(m) or real(self, m))
    shown = page_data.resolved(render_html(thirty_turns))
    carried, distinct = _resent(thirty_turns, outputs=False)
    assert len(viewed) == distinct < carried / 10, (len(viewed), distinct, carried)
    order = shown["order"]
    tools = [shown["calls"][c]["tool_calls"] for c in order]
    assert all(len(t) == 1 for t in tools)
    assert [t[0]["result_in"] for t in tools] == [*order[1:], None]
    assert all(isinstance(t[0]["result"], str) and t[0]["result"] for t in tools[:-1])
