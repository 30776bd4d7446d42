"""The HTML page of every checked-in real run, and of a synthetic 1,000-call capture, is
exactly the bytes it was before.

The goldens in tests/data/view-page-goldens.json were made by the page builder that held
the whole capture (main at 8424e22) before the page was written as a stream; a change of
the builder that changes any byte of a page fails here. The fixtures' pages are rendered
to a string (`render_html`), the synthetic one is written to a file through its spool
(`write_html_file`), as `roller view --html` writes it. The attempt directory the page
names is fixed (`/attempt`), so the bytes do not depend on where the test runs.

An intended change of the page regenerates the file:
    ROLLER_UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/view/test_page_goldens.py
and the diff of that file is reviewed with the change that caused it.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from roller.capture.layout import AttemptPaths
from roller.capture.reader import Capture, read_attempt
from roller.finalize.attempt import finalize_attempt
from roller.view.html import render_html, write_html_file
from tests.finalize.test_fixture_goldens import FIXTURES
from tests.harnesses.fixture_capture import DATA, finalize_fixture
from tests.support.goldens import check_golden

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import finalize_scale

GOLDENS = DATA.parent / "view-page-goldens.json"
HERE = AttemptPaths(Path("/attempt"))


def _page(capture: Capture) -> bytes:
    return render_html(capture).encode("utf-8")


def _check(key: str, page: bytes) -> None:
    check_golden(GOLDENS, key, hashlib.sha256(page).hexdigest())


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_the_page_of_a_fixture_is_byte_identical(harness: str, name: str, tmp_path: Path) -> None:
    f = finalize_fixture(harness, name, tmp_path)
    _check(f"{harness}/{name}", _page(Capture(HERE, f.manifest, f.calls, f.relations)))


def test_the_page_of_a_synthetic_capture_is_byte_identical(tmp_path: Path) -> None:
    """1,000 calls: sessions of a 10-call root and three 5-call subagents, read from disk."""
    shape = finalize_scale.Shape(10, 3, 5, fixed_kb=1, turn_kb=1)
    paths = finalize_scale.build_attempt(tmp_path, 1000, shape, "on-error")
    finalize_attempt(paths)
    c = read_attempt(paths)
    assert len(c.calls) == 1000
    target = tmp_path / "page.html"
    write_html_file(Capture(HERE, c.manifest, c.calls, c.relations), target)
    _check("synthetic/1000", target.read_bytes())
