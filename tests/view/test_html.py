"""`roller view --html`: one self-contained page, checked as a file and in a real browser
(Debian's chromium driven by Playwright; scripts/lib/chromium.sh installs it in CI, and
the test fails rather than skips without it)."""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from roller.capture.reader import Capture
from roller.view import page_json
from roller.view.html import render_html, write_html_file
from roller.wire import codec_named
from tests.export.real_captures import RealCaptures
from tests.support.captures import REPO, roller
from tests.view import page_data

CHROMIUM = os.environ.get("ROLLER_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="module")
def pages(
    real_captures: RealCaptures, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Capture, Path]]:
    base = tmp_path_factory.mktemp("html")
    out = {}
    for harness, name in [("claude-code", "nested-background"), ("codex", "v2-fork")]:
        target = base / f"{harness}-{name}.html"
        result = roller("view", "--html", str(real_captures.run(harness, name)), "-o", str(target))
        assert result.returncode == 0, result.stderr
        out[harness] = (real_captures[(harness, name)], target)
    # The same claude-code page in parts of 2 KiB: the browser puts the pieces together.
    capture, _ = out["claude-code"]
    small = base / "claude-code-parts.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page_json, "PART_CHARS", 2048)
        write_html_file(capture, small)
    assert len(page_data.parts(small.read_text())) > 10
    out["claude-code-parts"] = (capture, small)
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run scripts/lib/chromium.sh"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _open(browser: Browser, path: Path) -> tuple[Page, list[str], list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    # Anything but the page itself is refused before it leaves: a fetch would show here.
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url == path.as_uri() else route.abort(),
    )
    page.goto(path.as_uri())
    return page, requests, errors


def _matching(path: Path, term: str) -> list[str]:
    """The calls whose detail, each request value in place, holds `term` (any case)."""
    data = page_data.resolved(path.read_text())
    return [
        call_id
        for call_id in data["order"]
        if term.lower() in json.dumps(data["calls"][call_id], ensure_ascii=False).lower()
    ]


def test_the_file_is_self_contained(pages: dict[str, tuple[Capture, Path]]) -> None:
    for capture, path in pages.values():
        text = path.read_text()
        assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text)
        assert "default-src 'none'" in text
        data = page_data.data(text)
        assert set(data["calls"]) == {c.call_id for c in capture.calls}


def test_base64_blobs_are_elided(pages: dict[str, tuple[Capture, Path]]) -> None:
    capture, _ = pages["claude-code"]
    blob = base64.b64encode(os.urandom(3000)).decode()
    first = capture.calls[0]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": blob}}
    context = {
        **first.context,
        "messages": [*first.context["messages"], {"role": "user", "content": [image]}],
    }
    changed = Capture(
        capture.paths,
        capture.manifest,
        [first.model_copy(update={"context": context}), *capture.calls[1:]],
        capture.relations,
    )
    page = render_html(changed)
    assert blob not in page
    assert "base64 elided: 4000 chars" in page


def test_click_a_child_agent_shows_its_calls_without_any_network(
    pages: dict[str, tuple[Capture, Path]], browser: Browser
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    for harness, (capture, path) in pages.items():
        page, requests, errors = _open(browser, path)
        children = [p for p in capture.manifest.participants if p.role == "child"]
        assert children
        for child in children:
            page.locator(f".agent[data-participant='{child.participant_id}']").click()
            shown = page.locator("#calls .call").evaluate_all(
                "rows => rows.map(r => r.dataset.call)"
            )
            assert shown == child.call_ids
            assert (
                page.locator(f".agent[data-participant='{child.participant_id}']").get_attribute(
                    "class"
                )
                == "agent selected"
            )
        # The child's first call: its exact request, item by item, diffed and collapsible.
        child = children[-1]
        if child.call_ids:
            page.locator(f"#calls .call[data-call='{child.call_ids[0]}']").click()
            assert page.locator("#detail h2").inner_text().startswith("#")
            items = page.locator("#detail details.item")
            assert items.count() >= 3
            items.first.click()
            # `toggle` fires after the click returns: wait for the body it adds: the
            # item itself, from the page's value table.
            expect(items.first.locator("pre")).to_have_count(1)
            call = next(c for c in capture.calls if c.call_id == child.call_ids[0])
            codec = codec_named(call.protocol)
            assert codec is not None
            history = codec.history(call.context)
            system = codec.system_prompt(history.config)  # shown first, when there is one
            first = history.items[0] if system is None else system
            shown = items.first.locator("pre").inner_text()
            assert (shown if isinstance(first, str) else json.loads(shown)) == first
        # Search narrows the calls to those whose content matches: every call whose
        # detail, requests included, holds the text, as when each request was inlined.
        # A prompt's text is in the value table, a call id in the calls' own fields.
        for term in ("ROLLER-SUBTASK", "roller-subtask", capture.calls[-1].call_id):
            page.fill("#search", term)
            expect(page.locator("#search-count")).to_contain_text("match")
            hits = page.locator("#calls .call").evaluate_all(
                "rows => rows.map(r => r.dataset.call)"
            )
            assert hits == _matching(path, term), term
            assert hits, (harness, term)
        page.screenshot(path=str(ARTIFACTS / f"viewer-{harness}.png"), full_page=True)
        assert (ARTIFACTS / f"viewer-{harness}.png").stat().st_size > 10_000
        assert requests == [path.as_uri()], requests
        assert errors == []
        page.close()


def test_timeline_has_a_lane_per_agent(
    pages: dict[str, tuple[Capture, Path]], browser: Browser
) -> None:
    capture, path = pages["claude-code"]
    page, _, errors = _open(browser, path)
    lanes = page.locator("#timeline .lane").evaluate_all("ls => ls.map(l => l.dataset.lane)")
    assert lanes == [p.participant_id for p in capture.manifest.participants]
    bars = page.locator("#timeline .bar")
    assert bars.count() == len(capture.calls)
    # A bar selects its call, across agents; relations link to other calls.
    last = capture.calls[-1]
    page.locator(f"#timeline .bar[data-call='{last.call_id}']").click()
    assert (
        page.locator(f"#calls .call[data-call='{last.call_id}']").get_attribute("class")
        == "call selected"
    )
    # Its relations, read back from the page's rows of references, each once.
    for call in capture.calls:
        page.locator(f"#timeline .bar[data-call='{call.call_id}']").click()
        mine = [
            r for r in capture.relations if call.call_id in (r.source_call_id, r.target_call_id)
        ]
        rows = page.locator("#detail .relation").all_inner_texts()
        assert [row.startswith(r.type) for r, row in zip(mine, rows, strict=True)] == [True] * len(
            mine
        )
        assert [r.status in row for r, row in zip(mine, rows, strict=True)] == [True] * len(mine)
    assert any(r.child_participant_id for r in capture.relations)
    assert errors == []
    page.close()


def _first_results(capture: Capture) -> dict[str, tuple[int, Any]]:
    """Tool-call id -> (the sequence of the first call, in sequence order, whose input
    carries its result, the result), read from each whole request's chat form."""
    found: dict[str, tuple[int, Any]] = {}
    for call in sorted(capture.calls, key=lambda c: c.sequence):
        codec = codec_named(call.protocol)
        view = codec.chat.request(call.context) if codec else None
        for m in view.plain() if view else []:
            if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
                found.setdefault(m["tool_call_id"], (call.sequence, m.get("content")))
    return found


def test_each_tool_call_shows_the_result_a_later_input_carried(
    pages: dict[str, tuple[Capture, Path]], browser: Browser
) -> None:
    """The page keeps the results in a table of their own, written with the call that
    first carries each; the browser puts each back under the tool call that asked for
    it: the same call and result as the first later input that carries its id."""
    for key in ("claude-code", "claude-code-parts", "codex"):
        capture, path = pages[key]
        expected = _first_results(capture)
        page, _, errors = _open(browser, path)
        shown = 0
        for call in capture.calls:
            tools = call.tool_refs.emitted
            if not tools:
                continue
            page.locator(f"#timeline .bar[data-call='{call.call_id}']").click()
            rows = page.locator("#detail .tools").all_inner_texts()
            assert len(rows) == len(tools), (key, call.call_id)
            blocks = page.locator("#detail details.tool-result")
            n = 0
            for tool, row in zip(tools, rows, strict=True):
                found = expected.get(tool.id or tool.ref or "")
                if found is None:
                    assert row.endswith("result: not seen in a later input"), row
                    continue
                assert row.endswith(f"result: #{found[0]}"), (row, found[0])
                blocks.nth(n).locator("summary").click()
                expect(blocks.nth(n).locator("pre")).to_have_count(1)
                text = blocks.nth(n).locator("pre").inner_text()
                assert (text if isinstance(found[1], str) else json.loads(text)) == found[1]
                n += 1
                shown += 1
            assert blocks.count() == n
        assert shown, key
        assert errors == []
        page.close()


def test_each_call_shows_its_whole_item_list(
    pages: dict[str, tuple[Capture, Path]], browser: Browser
) -> None:
    """A request's item list is written as the places its agent's previous call began
    with, then its own; the browser shows every call's items in order, with their diff
    tags, and its last item is the request's own."""
    for key in ("claude-code", "claude-code-parts", "codex"):
        capture, path = pages[key]
        data = page_data.resolved(path.read_text())
        page, _, errors = _open(browser, path)
        kept = 0
        for call in capture.calls:
            items = data["calls"][call.call_id]["request"].get("items")
            if not items:
                continue
            page.locator(f"#timeline .bar[data-call='{call.call_id}']").click()
            shown = page.locator("#detail details.item[class*='tag-']")
            tags = shown.evaluate_all("ds => ds.map(d => d.className.split('tag-')[1])")
            assert tags == [i["tag"] for i in items], (key, call.call_id)
            last = shown.nth(len(items) - 1)
            last.locator("summary").click()
            expect(last.locator("pre")).to_have_count(1)
            codec = codec_named(call.protocol)
            assert codec is not None
            want = codec.history(call.context).items[-1]
            text = last.locator("pre").inner_text()
            assert (text if isinstance(want, str) else json.loads(text)) == want
            kept += "same" in tags
        assert kept, key  # some call's list came partly from an earlier call's
        assert errors == []
        page.close()
