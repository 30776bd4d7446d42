"""`roller view --html`: one self-contained HTML file of a capture, written as a stream.

The page is the template `assets/viewer.html` with its stylesheet and script
(`viewer.css`, `viewer.js`, vanilla JS, no library) inlined, and the capture's page data
(`roller.view.page`) inlined as JSON in a `<script type="application/json">`. Nothing is
fetched: no CDN, no font, no image URL (a Content-Security-Policy of `default-src 'none'`
says so to the browser too), so the file opens offline and can be mailed around.
`<` is written as `\\u003c` inside the JSON, so no value can close the script element.

The JSON is one object, `{"attempt_dir", "summary", "participants", "calls", "order",
"relations", "capture_errors"}`, written value by value as `json.dumps` writes the whole
(compact, UTF-8): each call's detail is built, its base64 blobs elided
(`roller.view.blobs`), dumped and written before the next is read. The summary states
the number of blobs elided over the whole page, which is known only at the end, so
everything after the agents goes to a spool (an anonymous temporary file beside the
page) and is copied in after the summary: memory holds the per-call index and a call at
a time, whatever the capture's length.
"""

from __future__ import annotations

import html
import io
import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from roller.capture.reader import Capture
from roller.view.blobs import elide
from roller.view.page import Page


def _asset(name: str) -> str:
    return resources.files("roller.view").joinpath("assets", name).read_text(encoding="utf-8")


class _Json:
    """Values as the page's JSON (blobs elided, counted; `<` and the JS line separators
    escaped: each is one character, so escaping piece by piece equals escaping the whole)."""

    def __init__(self) -> None:
        self.elided = 0

    def text(self, value: Any) -> str:
        shown, count = elide(value)
        self.elided += count
        return self.raw(shown)

    @staticmethod
    def raw(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return (
            text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        )


def _rest(page: Page, j: _Json, spool: TextIO) -> None:
    """The sections after the agents, into `spool`."""
    spool.write(',"calls":{')
    for i, (call_id, detail) in enumerate(page.calls()):
        spool.write(("," if i else "") + j.raw(call_id) + ":" + j.text(detail))
    spool.write('},"order":' + j.text(page.order) + ',"relations":[')
    for i, relation in enumerate(page.relations()):
        spool.write(("," if i else "") + j.text(relation))
    spool.write('],"capture_errors":' + j.text(page.capture_errors) + "}")


def _spooled(capture: Capture, spool: TextIO) -> tuple[str, str]:
    """The page's sections after the agents into `spool`; the text before them and the
    text after them."""
    m = capture.manifest
    template = _asset("viewer.html")
    # Replaced in this order and each once: a value can never be taken for a placeholder.
    template = template.replace(
        "__TITLE__", html.escape(f"{m.harness.name} {m.sample_id} #{m.attempt}"), 1
    )
    template = template.replace("/*ROLLER_CSS*/", _asset("viewer.css"), 1)
    before, after = template.split("__DATA__", 1)
    j = _Json()
    with Page.open(capture) as page:
        _rest(page, j, spool)
        head = page.head()
    attempt_dir, participants = j.text(head["attempt_dir"]), j.text(head["participants"])
    summary, count = elide(head["summary"])
    summary["elided_blobs"] = j.elided + count
    data = f'{{"attempt_dir":{attempt_dir},"summary":{j.raw(summary)},"participants":{participants}'
    return before + data, after.replace("/*ROLLER_JS*/", _asset("viewer.js"), 1)


def _copy(head: str, spool: TextIO, tail: str, out: TextIO) -> None:
    out.write(head)
    spool.seek(0)
    shutil.copyfileobj(spool, out)
    out.write(tail)


def write_html_file(capture: Capture, target: Path) -> None:
    """The page into `target`, spooled beside it (the same file system, not memory);
    `target` is opened once the capture has been read through, so a capture that fails
    to read leaves it as it was."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", dir=target.parent) as spool:
        head, tail = _spooled(capture, spool)
        with open(target, "w", encoding="utf-8") as out:
            _copy(head, spool, tail, out)


def render_html(capture: Capture) -> str:
    """The whole page of one attempt as a string (held: for tests and small captures)."""
    out, spool = io.StringIO(), io.StringIO()
    head, tail = _spooled(capture, spool)
    _copy(head, spool, tail, out)
    return out.getvalue()
