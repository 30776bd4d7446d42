"""`roller view --html`: one self-contained HTML file of a capture, written as a stream.

The page is the template `assets/viewer.html` with its stylesheet and script
(`viewer.css`, `viewer.js`, vanilla JS, no library) inlined, and the capture's page data
(`roller.view.page`) inlined as JSON in `<script type="application/json">` elements.
Nothing is fetched: no CDN, no font, no image URL (a Content-Security-Policy of
`default-src 'none'` says so to the browser too), so the file opens offline and can be
mailed around. `<` is written as `\\u003c` inside the JSON, so no value can close a
script element.

The data is one object, `{"attempt_dir", "summary", "participants", "calls", "results",
"order", "relations", "capture_errors", "values"}`, in the element `#capture-data` with
its bulky members empty — `calls` (call id to detail), `results` (the tool results),
`relations.rows` and `values` (the value table) — and those members' contents in part
elements (`roller.view.page_json.Parts`, ~32 MiB each, which `viewer.js` puts back in
place). The calls are read once, in sequence order (`Page.calls()`). Each call's detail
is built, its request's values put in the value table and named by their place
(`roller.view.page_json.Values`: a value already there is not written again, so a
conversation that resends its transcript gives a page that grows with its new content,
not with the square of its length; a request's items are `{"from", "keep", "refs",
"tags"}`, the places its agent's previous call began with and then its own, `ItemLists`;
relations are `{"rows", "fields", "literal",
"nested"}`, a row a relation's fields as places in the table, but those named in
`literal` written as they are and an evidence entry a row of the places of the fields
`nested` names; a field, or an evidence entry, the row before holds too is -1,
`RowChanges`), its base64 blobs elided (`roller.view.blobs`), dumped and written before
the next is read. A tool call names its result by an id (`result_id`); the results are
rows `[tool-call id, call id, result]`, written with the call whose input first carries
them (a later call than the one that asked), and `viewer.js` puts each back under its
tool call as `result_in` and `result`. The summary states the number of blobs elided over
the whole page, a result's counted for each tool call that shows it, which is known only
at the end, so the parts go to three spools (anonymous temporary files beside the page:
the calls and relation rows, the results, the table), copied in after the data element:
memory holds each call's token counts and id, a digest per distinct value and item, and
a call at a time, whatever the capture's length. Calls that calls.jsonl does not hold in sequence
order (finalize writes them so) stop the pass; the spools are emptied and the calls read
whole and sorted.
"""

from __future__ import annotations

import html
import io
import shutil
import tempfile
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from roller.capture.models import Evidence
from roller.capture.reader import Capture
from roller.view.blobs import elide
from roller.view.page import OutOfOrder, Page
from roller.view.page_json import ItemLists, PageJson, Parts, RowChanges, Values


def _asset(name: str) -> str:
    return resources.files("roller.view").joinpath("assets", name).read_text(encoding="utf-8")


_OWN = frozenset({"relation_id"})  # a relation's fields unique to it: written as they are
# A relation's evidence entries as rows of their fields' places.
_NESTED = {"evidence": [f.alias or name for name, f in Evidence.model_fields.items()]}


@dataclass(frozen=True)
class _Spools:
    """Where the part elements go until the data element before them is known: the
    calls and the relations' rows, the tool results, the value table."""

    calls: TextIO
    results: TextIO
    table: TextIO

    def all(self) -> tuple[TextIO, ...]:
        return (self.calls, self.results, self.table)

    def clear(self) -> None:
        for spool in self.all():
            spool.seek(0)
            spool.truncate()


class _Results:
    """The tool results as rows `[tool-call id, call id, result]` of one part member,
    their blobs elided once and counted for each tool call that shows the result, as
    when each call carried its results."""

    def __init__(self, j: PageJson, out: TextIO) -> None:
        self._j = j
        self._parts = Parts(out, "results", array=True)
        self._blobs: dict[str, int] = {}  # tool-call id -> blobs its result holds, when any
        self._shown: Counter[str] = Counter()  # tool-call id -> tool calls that show it

    def add(self, call_id: str, results: list[tuple[str, Any]]) -> None:
        for tool_id, result in results:
            shown, count = elide(result)
            if count:
                self._blobs[tool_id] = count
            self._parts.add(self._j.raw([tool_id, call_id, shown]))

    def show(self, tool_calls: list[dict[str, Any]]) -> None:
        self._shown.update(t["result_id"] for t in tool_calls)

    def close(self) -> None:
        self._parts.close()
        self._j.elided += sum(n * self._shown[tool_id] for tool_id, n in self._blobs.items())


def _parts(page: Page, j: PageJson, spools: _Spools, values: Values) -> list[str]:
    """The calls, their tool results and the relations' rows into `spools` as part
    elements, their values into `values`; the relations' field names."""
    calls = Parts(spools.calls, "calls", array=False)
    results = _Results(j, spools.results)
    lists = ItemLists()
    for shown in page.calls():
        detail = shown.detail
        request = detail["request"] = values.request(detail["request"])
        if "items" in request:
            request["items"] = lists.of(shown.call_id, detail["participant_id"], request["items"])
        calls.add(j.raw(shown.call_id) + ":" + j.text(detail))
        results.add(shown.call_id, shown.results)
        results.show(detail["tool_calls"])
    calls.close()
    results.close()
    rows, fields = Parts(spools.calls, "relations.rows", array=True), list[str]()
    changes: RowChanges | None = None
    for relation in page.relations():
        if changes is None:  # one model: every relation has these keys
            fields = list(relation)
            changes = RowChanges(frozenset(i for i, f in enumerate(fields) if f in _OWN))
        rows.add(j.raw(changes.of(values.row(relation, _OWN, _NESTED))))
    rows.close()
    return fields


def _spooled(capture: Capture, spools: _Spools) -> tuple[str, str]:
    """The page's part elements into `spools`; the text before them (the template's,
    then the data element) and the text after them. Calls out of sequence order (not as
    finalize writes them) are read again, whole, and sorted."""
    try:
        return _spooled_in(capture, spools, ordered=False)
    except OutOfOrder:
        spools.clear()
        return _spooled_in(capture, spools, ordered=True)


def _spooled_in(capture: Capture, spools: _Spools, ordered: bool) -> tuple[str, str]:
    m = capture.manifest
    template = _asset("viewer.html")
    # Replaced in this order and each once: a value can never be taken for a placeholder.
    template = template.replace(
        "__TITLE__", html.escape(f"{m.harness.name} {m.sample_id} #{m.attempt}"), 1
    )
    template = template.replace("/*ROLLER_CSS*/", _asset("viewer.css"), 1)
    before, after = template.split("__DATA__", 1)
    j = PageJson()
    with Page.open(capture, ordered) as page:
        values = Parts(spools.table, "values", array=True)
        fields = _parts(page, j, spools, Values(j, values))
        values.close()
        head = page.head()
        order = j.text(page.order)
    attempt_dir, participants = j.text(head["attempt_dir"]), j.text(head["participants"])
    errors = j.text(page.capture_errors)
    summary, count = elide(head["summary"])
    summary["elided_blobs"] = j.elided + count
    relations = (
        f'{{"fields":{j.raw(fields)},"literal":{j.raw(sorted(_OWN))},'
        f'"nested":{j.raw(_NESTED)},"rows":[]}}'
    )
    data = (
        f'<script type="application/json" id="capture-data">{{"attempt_dir":{attempt_dir},'
        f'"summary":{j.raw(summary)},"participants":{participants},"calls":{{}},'
        f'"results":[],"order":{order},"relations":{relations},"capture_errors":{errors},'
        '"values":[]}</script>'
    )
    return before + data, after.replace("/*ROLLER_JS*/", _asset("viewer.js"), 1)


def _copy(head: str, spools: _Spools, tail: str, out: TextIO) -> None:
    out.write(head)
    for spool in spools.all():
        spool.seek(0)
        shutil.copyfileobj(spool, out)
    out.write(tail)


def write_html_file(capture: Capture, target: Path) -> None:
    """The page into `target`, spooled beside it (the same file system, not memory);
    `target` is opened once the capture has been read through, so a capture that fails
    to read leaves it as it was."""
    with ExitStack() as stack:
        spools = _Spools(
            *(
                stack.enter_context(
                    tempfile.TemporaryFile("w+", encoding="utf-8", dir=target.parent)
                )
                for _ in range(3)
            )
        )
        head, tail = _spooled(capture, spools)
        with open(target, "w", encoding="utf-8") as out:
            _copy(head, spools, tail, out)


def render_html(capture: Capture) -> str:
    """The whole page of one attempt as a string (held: for tests and small captures)."""
    out, spools = io.StringIO(), _Spools(io.StringIO(), io.StringIO(), io.StringIO())
    head, tail = _spooled(capture, spools)
    _copy(head, spools, tail, out)
    return out.getvalue()
