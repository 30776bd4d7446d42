"""The HTML page of every checked-in real run, of one with base64 blobs put in, and of a
synthetic 1,000-call capture, is exactly the bytes it was before, and shows exactly the
data the page showed when it carried every request whole, in one element.

tests/data/view-page-goldens.json holds the sha256 of each page; a change of the builder
that changes any byte of a page fails here. tests/data/view-data-goldens.json holds the
sha256 of each page's data, its parts put together and every value put back in place of
its reference into the page's value table (`page_data.resolved`), canonically encoded:
those were made by the builder that wrote each request whole (main at c0b091a), so the table loses
nothing, and the blob count of the summary is still per call shown. The page goldens
before them were made by the builder that held the whole capture (main at 8424e22),
before the page was written as a stream. The fixtures' pages are rendered to a string
(`render_html`), the synthetic one is written to a file through its spools
(`write_html_file`), as `roller view --html` writes it (imported in that test only, so
the others run on the old builder too: that is how the blob golden was made). The
attempt directory the page names is fixed (`/attempt`), so the bytes do not depend on
where the test runs.

An intended change of the page regenerates the files:
    ROLLER_UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/view/test_page_goldens.py
and their diffs are reviewed with the change that caused them (a change of the page's
form alone leaves view-data-goldens.json as it was).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord
from roller.capture.reader import Capture, read_attempt
from roller.finalize.attempt import finalize_attempt
from roller.view.html import render_html
from tests.finalize.test_fixture_goldens import FIXTURES
from tests.harnesses.fixture_capture import DATA, finalize_fixture
from tests.support.goldens import check_golden
from tests.view import page_data

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import finalize_scale

GOLDENS = DATA.parent / "view-page-goldens.json"
DATA_GOLDENS = DATA.parent / "view-data-goldens.json"
HERE = AttemptPaths(Path("/attempt"))


def _page(capture: Capture) -> bytes:
    return render_html(capture).encode("utf-8")


def _check(key: str, page: bytes) -> None:
    check_golden(GOLDENS, key, hashlib.sha256(page).hexdigest())
    text = page.decode("utf-8")
    shown = json.dumps(
        page_data.resolved(text), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    digest = hashlib.sha256(shown.encode("utf-8", "surrogatepass")).hexdigest()
    check_golden(DATA_GOLDENS, key, digest)


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_the_page_of_a_fixture_is_byte_identical(harness: str, name: str, tmp_path: Path) -> None:
    f = finalize_fixture(harness, name, tmp_path)
    _check(f"{harness}/{name}", _page(Capture(HERE, f.manifest, f.calls, f.relations)))


def test_the_page_of_a_synthetic_capture_is_byte_identical(tmp_path: Path) -> None:
    """1,000 calls: sessions of a 10-call root and three 5-call subagents, read from disk."""
    shape = finalize_scale.Shape(10, 3, 5, fixed_kb=1, turn_kb=1, transcript_last=True)
    paths = finalize_scale.build_attempt(tmp_path, 1000, shape, "on-error")
    finalize_attempt(paths)
    c = read_attempt(paths)
    assert len(c.calls) == 1000
    from roller.view.html import write_html_file  # not in the builder the goldens came from

    target = tmp_path / "page.html"
    write_html_file(Capture(HERE, c.manifest, c.calls, c.relations), target)
    _check("synthetic/1000", target.read_bytes())


BLOB = base64.b64encode(bytes(range(256)) * 12).decode()  # 4,096 characters


def _blobbed(value: Any, tool_id: str) -> Any:
    """`value` with the result of tool call `tool_id` replaced by a blob, wherever it is."""
    if isinstance(value, list):
        return [_blobbed(v, tool_id) for v in value]
    if isinstance(value, dict):
        if value.get("type") == "tool_result" and value.get("tool_use_id") == tool_id:
            return {**value, "content": BLOB}
        return {k: _blobbed(v, tool_id) for k, v in value.items()}
    return value


def test_the_page_of_a_capture_with_blobs_is_byte_identical(tmp_path: Path) -> None:
    """No fixture carries a base64 blob: here a claude-code run does, as a tool result (shown
    under the call that asked for it), an image, a data URL, a dict key and an output."""
    f = finalize_fixture("claude-code", "nested-background", tmp_path)
    calls = sorted(f.calls, key=lambda c: c.sequence)
    tool_id = calls[0].tool_refs.emitted[0].id
    assert tool_id

    def changed(c: CallRecord) -> CallRecord:
        context = _blobbed(c.context, tool_id)
        if c.sequence == 1:
            image = {"type": "image", "source": {"type": "base64", "data": BLOB}}
            url = {"type": "text", "text": "data:text/plain;base64," + "QUJD" * 20}
            extra = {"role": "user", "content": [image, url]}
            context = {**context, "messages": [*context["messages"], extra], "metadata": {BLOB: 1}}
        output = {**c.output, "note": BLOB} if c.sequence == 2 else c.output
        return c.model_copy(update={"context": context, "output": output})

    page = _page(Capture(HERE, f.manifest, [changed(c) for c in f.calls], f.relations))
    assert BLOB.encode() not in page.replace(b'"' + BLOB.encode() + b'":1', b"")
    assert b'"elided_blobs":0' not in page
    _check("blobs/claude-code/nested-background", page)


def test_a_page_in_many_parts_shows_the_same_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts of 4 KiB: the synthetic capture's calls, relation rows and value table each
    split over many elements, put back to the same data."""
    from roller.view import page_json
    from roller.view.html import write_html_file

    monkeypatch.setattr(page_json, "PART_CHARS", 4096)
    shape = finalize_scale.Shape(10, 3, 5, fixed_kb=1, turn_kb=1, transcript_last=True)
    paths = finalize_scale.build_attempt(tmp_path, 1000, shape, "on-error")
    finalize_attempt(paths)
    c = read_attempt(paths)
    target = tmp_path / "page.html"
    write_html_file(Capture(HERE, c.manifest, c.calls, c.relations), target)
    text = target.read_text()
    keys = page_data.parts(text)
    assert {k: keys.count(k) > 10 for k in ("calls", "relations.rows", "values")} == dict.fromkeys(
        ("calls", "relations.rows", "values"), True
    )
    shown = json.dumps(
        page_data.resolved(text), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    digest = hashlib.sha256(shown.encode("utf-8", "surrogatepass")).hexdigest()
    check_golden(DATA_GOLDENS, "synthetic/1000", digest)
