"""`roller view --html`: one self-contained HTML file of a capture, written as a stream.

The page is the template `assets/viewer.html` with its stylesheet and script
(`viewer.css`, `viewer.js`, vanilla JS, no library) inlined, and the capture's page data
(`roller.view.page`) inlined as JSON in a `<script type="application/json">`. Nothing is
fetched: no CDN, no font, no image URL (a Content-Security-Policy of `default-src 'none'`
says so to the browser too), so the file opens offline and can be mailed around.
`<` is written as `\\u003c` inside the JSON, so no value can close the script element.

The JSON is one object, `{"attempt_dir", "summary", "participants", "calls", "order",
"relations", "capture_errors", "values"}`, written value by value as `json.dumps` writes
the whole (compact, UTF-8): each call's detail is built, its request's values put in the
page's value table and named by their place (`roller.view.page_json.Values`: a value
already there is not written again, so a conversation that resends its transcript gives
a page that grows with its new content, not with the square of its length; relations are
`{"rows", "fields", "literal"}`, a row a relation's fields as places in the table but
those named in `literal`, written as they are), its base64
blobs elided (`roller.view.blobs`), dumped and written before the next is read. The
summary states the number of blobs elided over the whole page, which is known only at
the end, so everything after the agents goes to a spool and the table to another
(anonymous temporary files beside the page), copied in after the summary: memory holds
the per-call index, a digest per distinct value and a call at a time, whatever the
capture's length.
"""

from __future__ import annotations

import html
import io
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import TextIO

from roller.capture.reader import Capture
from roller.view.blobs import elide
from roller.view.page import Page
from roller.view.page_json import PageJson, Values


def _asset(name: str) -> str:
    return resources.files("roller.view").joinpath("assets", name).read_text(encoding="utf-8")


_OWN = frozenset({"relation_id"})  # a relation's fields unique to it: written as they are


def _rest(page: Page, j: PageJson, spool: TextIO, values: Values) -> None:
    """The sections after the agents, into `spool`, but the value table's elements, into
    `values`: requests and relations name their values there (relations as rows of
    places, with their field names once)."""
    spool.write(',"calls":{')
    for i, (call_id, detail) in enumerate(page.calls()):
        detail["request"] = values.request(detail["request"])
        spool.write(("," if i else "") + j.raw(call_id) + ":" + j.text(detail))
    spool.write('},"order":' + j.text(page.order) + ',"relations":{"rows":[')
    fields: list[str] = []
    for i, relation in enumerate(page.relations()):
        fields = fields or list(relation)  # one model: every relation has these keys
        spool.write(("," if i else "") + j.raw(values.row(relation, _OWN)))
    spool.write(f'],"fields":{j.raw(fields)},"literal":{j.raw(sorted(_OWN))}}}')
    spool.write(',"capture_errors":' + j.text(page.capture_errors))


def _spooled(capture: Capture, spool: TextIO, table: TextIO) -> tuple[str, str]:
    """The page's sections after the agents into `spool`, the value table's elements into
    `table`; the text before them and the text after them."""
    m = capture.manifest
    template = _asset("viewer.html")
    # Replaced in this order and each once: a value can never be taken for a placeholder.
    template = template.replace(
        "__TITLE__", html.escape(f"{m.harness.name} {m.sample_id} #{m.attempt}"), 1
    )
    template = template.replace("/*ROLLER_CSS*/", _asset("viewer.css"), 1)
    before, after = template.split("__DATA__", 1)
    j = PageJson()
    with Page.open(capture) as page:
        _rest(page, j, spool, Values(j, table))
        head = page.head()
    attempt_dir, participants = j.text(head["attempt_dir"]), j.text(head["participants"])
    summary, count = elide(head["summary"])
    summary["elided_blobs"] = j.elided + count
    data = f'{{"attempt_dir":{attempt_dir},"summary":{j.raw(summary)},"participants":{participants}'
    return before + data, after.replace("/*ROLLER_JS*/", _asset("viewer.js"), 1)


def _copy(head: str, spool: TextIO, table: TextIO, tail: str, out: TextIO) -> None:
    out.write(head)
    spool.seek(0)
    shutil.copyfileobj(spool, out)
    out.write(',"values":[')
    table.seek(0)
    shutil.copyfileobj(table, out)
    out.write("]}" + tail)


def write_html_file(capture: Capture, target: Path) -> None:
    """The page into `target`, spooled beside it (the same file system, not memory);
    `target` is opened once the capture has been read through, so a capture that fails
    to read leaves it as it was."""
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8", dir=target.parent) as spool,
        tempfile.TemporaryFile("w+", encoding="utf-8", dir=target.parent) as table,
    ):
        head, tail = _spooled(capture, spool, table)
        with open(target, "w", encoding="utf-8") as out:
            _copy(head, spool, table, tail, out)


def render_html(capture: Capture) -> str:
    """The whole page of one attempt as a string (held: for tests and small captures)."""
    out, spool, table = io.StringIO(), io.StringIO(), io.StringIO()
    head, tail = _spooled(capture, spool, table)
    _copy(head, spool, table, tail, out)
    return out.getvalue()
