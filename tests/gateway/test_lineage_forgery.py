"""Issue 15 item 2, lineage forgery: only a model request carrying the declared harness's
own, gated lineage evidence creates sessions or sets a parent; the note and tree routes
only look sessions up; `x-roller-*` identity counts only for credentials configured to
send it; every parent assignment is an audit event; a refused parent leaves no row; a
tree shows only what the caller's scope allows."""

from __future__ import annotations

from tests.gateway.conftest import GatewayFactory
from tests.gateway.test_notes_http import as_oc, call, note
from tests.gateway.test_sessions_http import gemini, opencode

ROLLER_CHILD = {
    "x-roller-session-id": "forged-root",
    "x-roller-agent-id": "forged-child",
}


def test_note_and_tree_routes_never_set_a_parent_or_create_a_session(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_root"})
    opencode(gw, {"x-session-id": "ses_victim"})  # a root of its own
    ids = {r.source_id: r.id for r in gw.rows()}
    lineage = {"x-session-id": "ses_victim", "x-parent-session-id": "ses_root"}
    # Every route, refused or not, with a lineage claim and with sessions never seen.
    call(gw, "GET", f"/roller/sessions/{ids['ses_root']}/notes", "oc", lineage)
    call(gw, "GET", f"/roller/sessions/{ids['ses_root']}/tree", "oc", lineage)
    call(gw, "POST", "/roller/notes", "oc", lineage, {"target": ids["ses_root"], "body": "x"})
    call(gw, "POST", "/roller/notes", "oc", lineage, {"target": "nope", "body": "x"})
    call(gw, "GET", "/roller/sessions/nope/notes", "oc", {"x-session-id": "ses_new"})
    note(gw, {"x-session-id": "ses_new2", "x-parent-session-id": "ses_root"}, ids["ses_root"])
    rows = {r.source_id: r for r in gw.rows()}
    assert set(rows) == {"ses_root", "ses_victim"}
    assert rows["ses_victim"].parent_session_id is None
    # So the root still cannot note the victim as its "descendant".
    assert note(gw, as_oc("ses_root"), ids["ses_victim"])[0] == 403
    assert gw.store.parent_assignments() == []


def test_roller_headers_count_only_for_credentials_configured_to_send_them(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    # A Gemini CLI credential forging a child through roller's own headers.
    assert gemini(gw, ROLLER_CHILD) == 200
    assert gemini(gw, {"x-roller-session-id": "forged-root"}) == 200
    (row,) = gw.rows()
    assert (row.source_type, row.parent_session_id) == ("source", None)
    rejected = gw.tape().exchanges[0].request.annotations["gateway"]["identity"]["rejected"]
    assert ["x-roller-session-id", "roller header, not trusted for this credential"] in rejected
    status, _ = call(
        gw,
        "POST",
        "/roller/notes",
        "gemini",
        {"x-goog-api-key": gw.tokens["gemini"], "x-roller-session-id": "forged-root"},
        {"target": row.id, "body": "x"},
    )
    assert status == 403
    # A generic credential is configured to send them (harness = "generic").
    opencode(gw, {"x-roller-session-id": "run-1"}, token="generic")
    opencode(gw, {"x-roller-session-id": "run-1", "x-roller-agent-id": "w1"}, token="generic")
    assert gw.row("run-1:w1").parent_session_id == gw.row("run-1").id


def test_every_parent_assignment_is_an_audit_event_and_refusals_leave_no_rows(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_kid", "x-parent-session-id": "ses_p1"})
    opencode(gw, {"x-session-id": "ses_kid", "x-parent-session-id": "ses_p1"})  # already so
    opencode(gw, {"x-session-id": "ses_kid", "x-parent-session-id": "ses_p2"})  # a rewrite
    opencode(gw, {"x-session-id": "ses_p1", "x-parent-session-id": "ses_kid"})  # a cycle
    rows = {r.source_id: r for r in gw.rows()}
    assert set(rows) == {"ses_kid", "ses_p1"}  # no placeholder for the refused ses_p2
    exchanges = [ex.exchange_id for ex in gw.tape().exchanges]
    events = gw.store.parent_assignments()
    assert [(e.session_id, e.parent_session_id, e.exchange_id, e.outcome) for e in events] == [
        (rows["ses_kid"].id, rows["ses_p1"].id, exchanges[0], "assigned"),
        (rows["ses_kid"].id, None, exchanges[2], "refused_rewrite"),
        (rows["ses_p1"].id, rows["ses_kid"].id, exchanges[3], "refused_cycle"),
    ]
    assert all(e.tape_dir == str(gw.tape_dir.resolve()) for e in events)
    assert {e.rule for e in events} == {"opencode-headers"}


def test_a_tree_shows_only_what_the_caller_s_scope_allows(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_root"})
    opencode(gw, {"x-session-id": "ses_a", "x-parent-session-id": "ses_root"})
    opencode(gw, {"x-session-id": "ses_other"})
    opencode(gw, {"x-session-id": "ses_g"}, token="granted")
    ids = {r.source_id: r.id for r in gw.rows()}
    tree = f"/roller/sessions/{ids['ses_root']}/tree"
    status, body = call(gw, "GET", tree, "oc", as_oc("ses_root"))
    assert status == 200 and [c["source_id"] for c in body["tree"]["children"]] == ["ses_a"]
    assert (
        call(gw, "GET", f"/roller/sessions/{ids['ses_a']}/tree", "oc", as_oc("ses_root"))[0] == 200
    )
    # Another principal of the same account, a sibling, a descendant, nobody in particular.
    assert call(gw, "GET", tree, "bob", {})[0] == 404
    assert call(gw, "GET", tree, "oc", as_oc("ses_other"))[0] == 404
    assert call(gw, "GET", tree, "oc", as_oc("ses_a"))[0] == 404
    assert call(gw, "GET", tree, "oc", {})[0] == 404
    # An account grant widens it to the account, never beyond.
    granted = f"/roller/sessions/{ids['ses_g']}/tree"
    assert call(gw, "GET", granted, "granted", {"x-session-id": "nobody"})[0] == 200
    assert call(gw, "GET", tree, "granted", {})[0] == 404
