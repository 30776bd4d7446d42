"""`roller view --html`: one self-contained HTML file of a capture, written as a stream.

The page is the template `assets/viewer.html` with its stylesheet and script
(`viewer.css`, `viewer.js`, vanilla JS, no library) inlined, and the capture's page data
(`roller.view.page`) inlined as JSON in `<script type="application/json">` elements.
Nothing is fetched: no CDN, no font, no image URL (a Content-Security-Policy of
`default-src 'none'` says so to the browser too), so the file opens offline and can be
mailed around. `<` is written as `\\u003c` inside the JSON, so no value can close a
script element.

The data is one object, `{"attempt_dir", "summary", "participants", "calls", "order",
"relations", "capture_errors", "values"}`, in the element `#capture-data` with its bulky
members empty — `calls` (call id to detail), `relations.rows` and `values` (the value
table) — and those members' contents in part elements (`roller.view.page_json.Parts`,
~32 MiB each, which `viewer.js` puts back in place). Each call's detail is built, its
request's values put in the value table and named by their place
(`roller.view.page_json.Values`: a value already there is not written again, so a
conversation that resends its transcript gives a page that grows with its new content,
not with the square of its length; relations are `{"rows", "fields", "literal",
"nested"}`, a row a relation's fields as places in the table, but those named in
`literal` written as they are and an evidence entry a row of the places of the fields
`nested` names), its base64 blobs elided (`roller.view.blobs`), dumped and written before the
next is read, as `json.dumps` writes (compact, UTF-8). The summary states the number of
blobs elided over the whole page, which is known only at the end, so the parts go to a
spool and the table's to another (anonymous temporary files beside the page), copied in
after the data element: memory holds the per-call index, a digest per distinct value and
a call at a time, whatever the capture's length.
"""

from __future__ import annotations

import html
import io
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import TextIO

from roller.capture.models import Evidence
from roller.capture.reader import Capture
from roller.view.blobs import elide
from roller.view.page import Page
from roller.view.page_json import PageJson, Parts, Values


def _asset(name: str) -> str:
    return resources.files("roller.view").joinpath("assets", name).read_text(encoding="utf-8")


_OWN = frozenset({"relation_id"})  # a relation's fields unique to it: written as they are
# A relation's evidence entries as rows of their fields' places.
_NESTED = {"evidence": [f.alias or name for name, f in Evidence.model_fields.items()]}


def _parts(page: Page, j: PageJson, spool: TextIO, values: Values) -> list[str]:
    """The calls and the relations' rows into `spool` as part elements, their values into
    `values`; the relations' field names."""
    calls = Parts(spool, "calls", array=False)
    for call_id, detail in page.calls():
        detail["request"] = values.request(detail["request"])
        calls.add(j.raw(call_id) + ":" + j.text(detail))
    calls.close()
    rows, fields = Parts(spool, "relations.rows", array=True), list[str]()
    for relation in page.relations():
        fields = fields or list(relation)  # one model: every relation has these keys
        rows.add(j.raw(values.row(relation, _OWN, _NESTED)))
    rows.close()
    return fields


def _spooled(capture: Capture, spool: TextIO, table: TextIO) -> tuple[str, str]:
    """The page's part elements into `spool`, the value table's into `table`; the text
    before them (the template's, then the data element) and the text after them."""
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
        values = Parts(table, "values", array=True)
        fields = _parts(page, j, spool, Values(j, values))
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
        f'"order":{order},"relations":{relations},"capture_errors":{errors},"values":[]}}'
        "</script>"
    )
    return before + data, after.replace("/*ROLLER_JS*/", _asset("viewer.js"), 1)


def _copy(head: str, spool: TextIO, table: TextIO, tail: str, out: TextIO) -> None:
    out.write(head)
    for part in (spool, table):
        part.seek(0)
        shutil.copyfileobj(part, out)
    out.write(tail)


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
