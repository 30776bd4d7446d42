"""Notes between agents through the gateway's routes, on SQLite and PostgreSQL: the author
is the calling session; own child allowed; sibling, parent, unrelated and lineage-None
(Gemini CLI, generic) denied; a grant widens the scope; other accounts see nothing."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tests.gateway.conftest import GatewayFactory, RunningGateway
from tests.gateway.test_sessions_http import gemini, opencode


def call(
    gw: RunningGateway,
    method: str,
    path: str,
    token: str,
    headers: dict[str, str],
    body: Any = None,
) -> tuple[int, Any]:
    request = urllib.request.Request(
        gw.url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": f"Bearer {gw.tokens[token]}", **headers},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())


def note(
    gw: RunningGateway, author: dict[str, str], target: str, token: str = "oc"
) -> tuple[int, Any]:
    return call(gw, "POST", "/roller/notes", token, author, {"target": target, "body": "hello"})


def as_oc(session: str) -> dict[str, str]:
    return {"x-session-id": session}


def family(gw: RunningGateway) -> dict[str, str]:
    """root -> (a, b); a -> a1 via OpenCode headers; returns source id -> row id."""
    opencode(gw, {"x-session-id": "ses_root"})
    opencode(gw, {"x-session-id": "ses_a", "x-parent-session-id": "ses_root"})
    opencode(gw, {"x-session-id": "ses_b", "x-parent-session-id": "ses_root"})
    opencode(gw, {"x-session-id": "ses_a1", "x-parent-session-id": "ses_a"})
    opencode(gw, {"x-session-id": "ses_other"})
    return {r.source_id: r.id for r in gw.rows()}


def test_note_scope_through_the_routes(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    ids = family(gw)
    gemini(gw)
    gemini_row = gw.row("gemini-cli#1")

    status, body = note(gw, as_oc("ses_root"), ids["ses_a"])
    assert status == 201 and body["note"]["allowed_by"] == "descendant"
    assert body["note"]["author_session_id"] == ids["ses_root"]
    assert note(gw, as_oc("ses_root"), ids["ses_a1"])[0] == 201  # a grandchild
    for author, target in [
        ("ses_a", "ses_b"),  # sibling
        ("ses_a", "ses_root"),  # parent
        ("ses_a1", "ses_a"),  # parent
        ("ses_other", "ses_a"),  # unrelated
        ("ses_a", "ses_a"),  # itself
    ]:
        status, body = note(gw, as_oc(author), ids[target])
        assert status == 403, (author, target)
        assert body["error"]["type"] == "roller_note_denied"
    # Lineage None: a Gemini CLI session is outside everyone's subtree, and its own
    # (source-keyed) session has no descendants to note.
    status, body = note(gw, as_oc("ses_root"), gemini_row.id)
    assert status == 403 and "unknown" in body["error"]["message"]
    headers = {"x-goog-api-key": gw.tokens["gemini"]}
    assert (
        call(gw, "POST", "/roller/notes", "gemini", headers, {"target": ids["ses_a"], "body": "x"})[
            0
        ]
        == 403
    )

    # The recipient reads its notes; another session sees only what it wrote.
    status, body = call(gw, "GET", f"/roller/sessions/{ids['ses_a']}/notes", "oc", as_oc("ses_a"))
    assert status == 200 and [n["body"] for n in body["notes"]] == ["hello"]
    status, body = call(gw, "GET", f"/roller/sessions/{ids['ses_a']}/notes", "oc", as_oc("ses_b"))
    assert status == 200 and body["notes"] == []


def test_a_grant_allows_notes_anywhere_in_its_account_only(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_g1"}, token="granted")
    opencode(gw, {"x-session-id": "ses_g2"}, token="granted")
    status, body = note(gw, as_oc("ses_g1"), gw.row("ses_g2").id, token="granted")
    assert status == 201 and body["note"]["allowed_by"] == "grant:account"
    # Without a grant the same shape is denied; across accounts it is not even visible.
    opencode(gw, {"x-session-id": "ses_x1"})
    opencode(gw, {"x-session-id": "ses_x2"})
    assert note(gw, as_oc("ses_x1"), gw.row("ses_x2").id)[0] == 403
    status, body = note(gw, as_oc("ses_g1"), gw.row("ses_x2").id, token="granted")
    assert status == 404 and body["error"]["type"] == "roller_no_such_session"


def test_routes_need_a_token_and_hide_other_accounts(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    ids = family(gw)
    request = urllib.request.Request(gw.url + f"/roller/sessions/{ids['ses_root']}/tree")
    try:
        urllib.request.urlopen(request, timeout=30)
        raise AssertionError("expected 401")
    except urllib.error.HTTPError as exc:
        assert exc.code == 401
    status, body = call(gw, "GET", f"/roller/sessions/{ids['ses_root']}/tree", "eve", {})
    assert status == 404
    # The tree of the caller's own session (issue 15 item 2: only what its scope allows).
    status, body = call(
        gw, "GET", f"/roller/sessions/{ids['ses_root']}/tree", "oc", as_oc("ses_root")
    )
    tree = body["tree"]
    assert status == 200 and tree["source_id"] == "ses_root" and tree["calls"] == 1
    assert sorted(c["source_id"] for c in tree["children"]) == ["ses_a", "ses_b"]
    (a,) = [c for c in tree["children"] if c["source_id"] == "ses_a"]
    assert [c["source_id"] for c in a["children"]] == ["ses_a1"]
    # Gateway routes are never forwarded upstream nor recorded as model traffic.
    assert all(not ex.request.path.startswith("/roller/") for ex in gw.tape().exchanges)
    status, body = call(gw, "POST", "/roller/nope", "oc", {}, {})
    assert status == 404
