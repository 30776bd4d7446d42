"""Session derivation through a running gateway, driven by the official SDKs, on SQLite and
PostgreSQL: the wire headers of Claude Code, OpenCode and Gemini CLI as probed, and the
hostile-input suite (bad ids, foreign headers, races, self-parents, parent rewrites)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import openai
import pytest

from roller.gateway.store.lineage import REFUSED_REWRITE
from tests.gateway.conftest import GatewayFactory, RunningGateway

S = "ebd4605d-7099-4c54-bd01-747f7a720e1b"
CC = "x-claude-code-session-id"
CC_AGENT = "x-claude-code-agent-id"
CC_PARENT = "x-claude-code-parent-agent-id"


def claude(gw: RunningGateway, headers: dict[str, str], token: str = "cc", **body: Any) -> Any:
    client = anthropic.Anthropic(
        base_url=gw.url, api_key=gw.tokens[token], default_headers=headers, max_retries=0
    )
    return client.messages.create(
        model="fake-model",
        max_tokens=32,
        messages=[{"role": "user", "content": "ROLLER-SUBTASK depth=1 reply"}],
        **body,
    )


def opencode(gw: RunningGateway, headers: dict[str, str], token: str = "oc") -> Any:
    client = openai.OpenAI(
        base_url=gw.url + "/v1", api_key=gw.tokens[token], default_headers=headers, max_retries=0
    )
    return client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "ROLLER-SUBTASK depth=1 go"}]
    )


def post_json(url: str, body: object, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def gemini(
    gw: RunningGateway, headers: dict[str, str] | None = None, *, query: bool = False
) -> int:
    url = gw.url + "/v1beta/models/gemini-2.5-flash:generateContent"
    auth = {"x-goog-api-key": gw.tokens["gemini"]}
    if query:
        auth = {}
        url += "?" + urllib.parse.urlencode({"key": gw.tokens["gemini"]})
    body = {"contents": [{"role": "user", "parts": [{"text": "ROLLER-SUBTASK depth=1 hi"}]}]}
    return post_json(url, body, {**auth, **(headers or {})})


def annotations(gw: RunningGateway) -> list[dict[str, Any]]:
    return [ex.request.annotations["gateway"] for ex in gw.tape().exchanges]


def test_claude_code_children_are_keyed_session_colon_agent(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    claude(gw, {CC: S})
    claude(gw, {CC: S, CC_AGENT: "a1e37403a36fc420c"})
    claude(gw, {CC: S, CC_AGENT: "a48fe9b1db3fc6abc", CC_PARENT: "a1e37403a36fc420c"})
    claude(gw, {CC: S})
    root, child, grandchild = (
        gw.row(S),
        gw.row(f"{S}:a1e37403a36fc420c"),
        gw.row(f"{S}:a48fe9b1db3fc6abc"),
    )
    assert (root.role, root.parent_session_id, root.source_type) == ("root", None, "claude-code")
    assert (child.role, child.parent_session_id) == ("child", root.id)
    assert grandchild.parent_session_id == child.id
    assert len(gw.rows()) == 3
    # Every call has its row, and its tape exchange says the same.
    calls = gw.store.calls()
    assert [c.session_id for c in calls] == [root.id, child.id, grandchild.id, root.id]
    assert [a["session_id"] for a in annotations(gw)] == [c.session_id for c in calls]
    assert {c.execution_status for c in calls} == {"completed"} and calls[0].model == "fake-model"


def test_opencode_children_take_their_parent_from_the_header(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_parent", "x-session-affinity": "ses_parent"})
    opencode(gw, {"x-session-id": "ses_child1", "x-parent-session-id": "ses_parent"})
    opencode(gw, {"x-session-id": "ses_child2", "x-parent-session-id": "ses_parent"})
    parent = gw.row("ses_parent")
    assert parent.parent_session_id is None and parent.role == "root"
    for name in ("ses_child1", "ses_child2"):
        assert gw.row(name).parent_session_id == parent.id


def test_gemini_cli_is_source_keyed_without_a_parent(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    # Gemini CLI sends no session id; an install id and generic names prove nothing.
    assert gemini(gw, {"x-gemini-api-privileged-user-id": "install-1"}) == 200
    assert gemini(gw, {"x-session-id": "ses_forged", "x-parent-session-id": "ses_parent"}) == 200
    assert gemini(gw, query=True) == 200
    (row,) = gw.rows()
    assert (row.source_type, row.source_id, row.parent_session_id) == (
        "source",
        "gemini-cli#1",
        None,
    )
    assert [c.session_id for c in gw.store.calls()] == [row.id] * 3


def test_explicit_session_id_wins_and_never_gets_a_derived_parent(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    # A credential configured to send roller's headers (only those count: issue 15 item 2).
    lineage = {"x-roller-session-id": "run-42", CC: S, CC_AGENT: "a1e37403a36fc420c"}
    claude(gw, lineage, token="cc_roller")
    (row,) = gw.rows()
    assert (row.source_type, row.source_id, row.parent_session_id) == ("roller", "run-42", None)
    # A framework may declare its own agents explicitly.
    claude(gw, {"x-roller-session-id": "run-42", "x-roller-agent-id": "worker1"}, token="cc_roller")
    assert gw.row("run-42:worker1").parent_session_id == row.id


def test_body_conversation_id_keys_a_session_when_headers_say_nothing(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    user_id = json.dumps({"device_id": "dev", "account_uuid": "", "session_id": S})
    claude(gw, {}, metadata={"user_id": user_id})
    claude(gw, {CC: S})  # the same conversation by its header: the same row
    (row,) = gw.rows()
    assert (row.source_type, row.source_id) == ("claude-code", S)
    first, _ = gw.store.calls()
    assert first.participant_unknown and first.identity["rule"] == "body-conversation-id"  # type: ignore[index]


@pytest.mark.parametrize(
    "bad",
    ["has space", "ünïcode", "x" * 201, "..", "a,b", "ses/../x", "%2e%2e"],
)
def test_hostile_session_ids_fall_back_to_source_keying(
    start_gateway: GatewayFactory, bad: str
) -> None:
    gw = start_gateway()
    # Sent raw (urllib writes header values as latin-1 bytes), as a hostile client would.
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": f"Bearer {gw.tokens['oc']}", "x-session-id": bad}
    assert post_json(gw.url + "/v1/chat/completions", body, headers) == 200
    headers["x-parent-session-id"] = bad
    headers["x-session-id"] = "ses_fine"
    assert post_json(gw.url + "/v1/chat/completions", body, headers) == 200
    assert gw.row("ses_fine").parent_session_id is None  # a bad parent costs the lineage
    row = gw.row("opencode#1")
    assert row.source_type == "source" and row.parent_session_id is None
    assert len(gw.rows()) == 2


def test_a_bad_agent_id_costs_the_lineage_not_the_session(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    claude(gw, {CC: S})
    claude(gw, {CC: S, CC_AGENT: "a:b"})  # colon: the composite key would split two ways
    claude(gw, {CC: S, CC_AGENT: "a1", CC_PARENT: "bad id"})
    root = gw.row(S)
    assert gw.row(f"{S}:a1").parent_session_id is None  # the child kept, its lineage lost
    calls = gw.store.calls()
    assert calls[1].session_id == root.id and calls[1].participant_unknown
    assert len(gw.rows()) == 2


def test_native_headers_of_another_harness_are_never_read(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    # A Claude Code credential sending OpenCode's generic names: keyed by its own header.
    claude(gw, {CC: S, "x-session-id": "ses_x", "x-parent-session-id": "ses_y"})
    # An OpenCode credential sending Claude Code's headers: they are not trusted.
    opencode(gw, {CC: S, CC_AGENT: "a1"})
    # A generic credential sending Codex' generic `session-id`: not trusted either.
    opencode(gw, {"session-id": "s1", "thread-id": "t1"}, token="generic")
    keys = sorted((r.principal, r.source_type, r.source_id) for r in gw.rows())
    assert keys == [
        ("alice", "claude-code", S),
        ("alice", "source", "opencode#1"),
        ("carol", "source", "generic#1"),
    ]
    rejected = [a["identity"]["rejected"] for a in annotations(gw)]
    assert [
        "x-parent-session-id",
        "header of opencode, not trusted for declared harness claude-code",
    ] in rejected[0]


def test_child_before_parent_race_over_http_makes_one_parent(
    start_gateway: GatewayFactory,
) -> None:
    gw = start_gateway()
    n = 10
    barrier = threading.Barrier(n)

    def child(i: int) -> None:
        barrier.wait()
        opencode(gw, {"x-session-id": f"ses_c{i}", "x-parent-session-id": "ses_late_parent"})

    with ThreadPoolExecutor(n) as pool:
        list(pool.map(child, range(n)))
    parent = gw.row("ses_late_parent")
    assert {gw.row(f"ses_c{i}").parent_session_id for i in range(n)} == {parent.id}
    opencode(gw, {"x-session-id": "ses_late_parent"})
    assert gw.row("ses_late_parent").role == "root" and len(gw.rows()) == n + 1


def test_self_parent_and_parent_rewrites_are_refused(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    opencode(gw, {"x-session-id": "ses_self", "x-parent-session-id": "ses_self"})
    assert gw.row("ses_self").parent_session_id is None
    opencode(gw, {"x-session-id": "ses_kid", "x-parent-session-id": "ses_p1"})
    opencode(gw, {"x-session-id": "ses_kid", "x-parent-session-id": "ses_p2"})
    assert gw.row("ses_kid").parent_session_id == gw.row("ses_p1").id
    assert annotations(gw)[-1]["parent_refused"] == REFUSED_REWRITE
    # A cycle through the wire: p1's own request names its child as its parent.
    opencode(gw, {"x-session-id": "ses_p1", "x-parent-session-id": "ses_kid"})
    assert gw.row("ses_p1").parent_session_id is None


def test_principals_never_share_a_session_by_sending_its_id(start_gateway: GatewayFactory) -> None:
    gw = start_gateway()
    claude(gw, {CC: S})
    claude(gw, {CC: S, CC_AGENT: "a1"}, token="bob")  # bob claims to be alice's subagent
    alice, bob_root = sorted((r for r in gw.rows() if r.source_id == S), key=lambda r: r.principal)
    assert (alice.principal, bob_root.principal) == ("alice", "bob")
    assert gw.row(f"{S}:a1").parent_session_id == bob_root.id
