"""`roller view --html`: one self-contained HTML file of a capture.

The page is the template `assets/viewer.html` with its stylesheet and script
(`viewer.css`, `viewer.js`, vanilla JS, no library) inlined, and the capture's page data
(`roller.view.page`) inlined as JSON in a `<script type="application/json">`. Nothing is
fetched: no CDN, no font, no image URL (a Content-Security-Policy of `default-src 'none'`
says so to the browser too), so the file opens offline and can be mailed around.
`<` is written as `\\u003c` inside the JSON, so no value can close the script element.
"""

from __future__ import annotations

import html
import json
from importlib import resources

from roller.capture.reader import Capture
from roller.view.page import page_data


def _asset(name: str) -> str:
    return resources.files("roller.view").joinpath("assets", name).read_text(encoding="utf-8")


def render_html(capture: Capture) -> str:
    """The whole page of one attempt."""
    data = json.dumps(page_data(capture), ensure_ascii=False, separators=(",", ":"))
    data = data.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    m = capture.manifest
    page = _asset("viewer.html")
    # Replaced in this order and each once: a value can never be taken for a placeholder.
    page = page.replace("__TITLE__", html.escape(f"{m.harness.name} {m.sample_id} #{m.attempt}"), 1)
    page = page.replace("/*ROLLER_CSS*/", _asset("viewer.css"), 1)
    head, tail = page.split("__DATA__", 1)
    tail = tail.replace("/*ROLLER_JS*/", _asset("viewer.js"), 1)
    return head + data + tail
