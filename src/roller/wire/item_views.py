"""Each message's chat form, remembered across a conversation's calls (`ItemViews`).

A harness resends its whole transcript on every call, so an export that shows every
call's request as chat messages (`roller export calls --format openai-messages`, and
Parquet, made of those records) read every item again on every call: its time grew with
the square of a conversation's length (10k calls of `finalize_scale.py`: ~330 µs a
call, docs/benchmarks.md, round 22). Where a protocol's view is made item by
item (`ChatForm.item`: its system prompt's messages, then each item's, from that item
and its index alone), `ItemViews().view(form, system, items)` reads only the items after
the first ones that are the very objects of a recent call's list (`shared_count`): a
reader that parses a conversation's contexts with one `ContextReader`
(`roller.capture.reader.iter_calls_shared`) gets the earlier call's items back, as the
first elements of each later context's list (all of them, or all but the last few,
which Claude Code sends again changed).

Rules kept:
- The view is the form's own: `view(form, system, items)` equals `form.view(system,
  items, ())` (tests/wire/test_item_views.py compares them), because an item's messages
  are reused only for the same object at the same index (held, so changed by no
  reader: the exports only read contexts).
- Items that are not the same objects (contexts parsed apart) are read each time, as
  without it.
- Memory: the item lists of `KEEP` recent calls with their messages (which share their
  strings), and `KEEP` recent `tools` values with their views (`tools`): the
  conversations in flight, as `ContextReader` holds them.
- The messages are shared by every view that reuses them: their readers must not change
  them (the exports only write them out).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import islice
from operator import is_
from typing import Any

from roller.wire.chat import ChatForm, ChatView, ItemMessages, joined

KEEP = 8  # recent item lists a later one may begin with (conversations interleave)


def shared_count(earlier: Sequence[Any], later: Sequence[Any]) -> int:
    """How many of `later`'s first elements are `earlier`'s very objects, in order."""
    n = min(len(earlier), len(later))
    # the usual answers first, compared without a Python step per element: all of
    # them (a transcript that grew), all but the last (Claude Code's re-sent message)
    if all(map(is_, earlier, later)):
        return n
    if n > 1 and all(map(is_, islice(earlier, n - 1), later)):
        return n - 1
    for k, (a, b) in enumerate(zip(earlier, later, strict=False)):
        if a is not b:
            return k
    return n  # (not reached: some element differs)


class ItemViews:
    """Items' chat messages remembered across calls (module docstring)."""

    def __init__(self) -> None:
        # (form, a call's items, each item's messages)
        self._recent: deque[tuple[ChatForm, list[Any], list[ItemMessages]]] = deque(maxlen=KEEP)
        self._tools: deque[tuple[ChatForm, Any, ChatView]] = deque(maxlen=KEEP)

    def view(self, form: ChatForm, system: Any, items: Sequence[Any]) -> ChatView:
        """`form.view(system, items, ())`, the messages of the first items that are a
        recent list's very objects taken from it; `form` reads items alone
        (`ChatForm.item`)."""
        read_item = form.item
        if read_item is None:
            raise ValueError("this protocol's chat view reads its items together")
        items = list(items)
        for kept in self._recent:
            kept_form, earlier, read = kept
            n = shared_count(earlier, items) if kept_form is form else 0
            if n:
                self._recent.remove(kept)
                read = read[:n] + [read_item(i, items[i]) for i in range(n, len(items))]
                break
        else:
            read = [read_item(i, item) for i, item in enumerate(items)]
        self._recent.appendleft((form, items, read))
        return joined(form.view(system, (), ()), read)

    def tools(self, form: ChatForm, tools: Any) -> ChatView:
        """`form.tools_view(tools)`, the view of a recent call's very `tools` value taken
        from it (a conversation's calls resend one: a `ContextReader`'s contexts share
        it), so its tools are the same objects too."""
        for kept_form, kept, view in self._tools:
            if kept is tools and kept_form is form:
                return view
        view = form.tools_view(tools)
        self._tools.appendleft((form, tools, view))
        return view
