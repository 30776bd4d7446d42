"""The data of a page `roller view --html` wrote, read back as `viewer.js` reads it: the
`#capture-data` element with the part elements put in place (`data`), and with each
reference into the value table replaced by its value (`resolved`): the form the page
had when it carried every request and relation whole."""

from __future__ import annotations

import json
import re
from typing import Any

_MAIN = re.compile(r'<script type="application/json" id="capture-data">(.*?)</script>', re.S)
_PART = re.compile(
    r'<script type="application/json" class="capture-part" data-key="([a-z.]+)">(.*?)</script>',
    re.S,
)


def data(page: str) -> dict[str, Any]:
    main = _MAIN.search(page)
    assert main is not None, "the page has no #capture-data element"
    out: dict[str, Any] = json.loads(main.group(1))
    for part in _PART.finditer(page):
        into = out
        for key in part.group(1).split("."):
            into = into[key]
        piece = json.loads(part.group(2))
        if isinstance(piece, list):
            into.extend(piece)  # type: ignore[attr-defined]
        else:
            into.update(piece)
    return out


def parts(page: str) -> list[str]:
    """The keys of the page's part elements, in order."""
    return [m.group(1) for m in _PART.finditer(page)]


def part_chars(page: str, key: str) -> int:
    """The characters of the page's part elements of `key`, their tags included."""
    return sum(len(m.group(0)) for m in _PART.finditer(page) if m.group(1) == key)


def resolved(page: str) -> dict[str, Any]:
    shown = data(page)
    if "values" not in shown:  # a page from before the value table: as it is
        return shown
    values = shown.pop("values")
    results = {row[0]: row[1:] for row in shown.pop("results", [])}
    for call_id in shown["order"]:  # an item list names an earlier call's places
        items = shown["calls"][call_id]["request"].get("items")
        if isinstance(items, dict):  # a page from before the lists by their base: as it is
            base = shown["calls"][items["from"]]["request"]["items"] if items["from"] else []
            refs = [i["ref"] for i in base[: items["keep"]]] + items["refs"]
            tags = [tag for tag, n in items["tags"] for _ in range(n)]
            shown["calls"][call_id]["request"]["items"] = [
                {"tag": tag, "ref": ref} for tag, ref in zip(tags, refs, strict=True)
            ]
    for call in shown["calls"].values():
        for tool in call["tool_calls"]:
            if "result_id" in tool:  # a page from before the results table: as it is
                result_in, result = results.get(tool.pop("result_id"), (None, None))
                tool.update(result_in=result_in, result=result)
        request = call["request"]
        for key, ref in request.items():
            if key == "items":
                request[key] = [{"tag": i["tag"], "value": values[i["ref"]]} for i in ref]
            else:
                request[key] = values[ref]
    relations = shown["relations"]
    literal = {i for i, f in enumerate(relations["fields"]) if f in relations["literal"]}
    full: list[list[Any]] = []
    for row in relations["rows"]:  # -1: the row before's field or entry (`RowChanges`)
        was = full[-1] if full else None
        full.append(
            row
            if was is None or len(row) != len(was)
            else [
                v
                if i in literal
                else was[i]
                if v == -1
                else [was[i][j] if e == -1 else e for j, e in enumerate(v)]
                if isinstance(v, list)
                else v
                for i, v in enumerate(row)
            ]
        )
    relations["rows"] = full

    def entry(field: str, e: Any) -> Any:
        if isinstance(e, list):
            return dict(zip(relations["nested"][field], [values[p] for p in e], strict=True))
        return values[e]

    shown["relations"] = [
        {
            field: place
            if field in relations["literal"]
            else [entry(field, e) for e in place]
            if isinstance(place, list)
            else values[place]
            for field, place in zip(relations["fields"], row, strict=True)
        }
        for row in relations["rows"]
    ]
    return shown
