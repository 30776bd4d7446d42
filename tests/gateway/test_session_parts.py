"""What a session's requests share is made once (`roller.gateway.session_parts`): each
decided request still gets its whole `gateway` annotation, in order, and its call row the
part of its own identity, rows and model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from roller.gateway.policy import GatewayPolicy
from roller.gateway.store import SessionStore
from roller.gateway.store.bound_values import utc_from_ns
from roller.proxy import ExchangeEnd, PolicyDecision, RequestHead
from tests.gateway.conftest import one_client_policy

KEYS = [
    "method", "path", "received_ns", "auth", "principal", "account", "harness", "family",
    "model", "session_id", "parent_session_id", "source_type", "source_id", "rule",
    "participant_unknown", "parent_refused", "identity",
]  # fmt: skip


async def _decide(
    policy: GatewayPolicy, token: str, n: int, session: str, model: str, agent: str | None = None
) -> PolicyDecision:
    headers = {"x-api-key": token, "x-claude-code-session-id": session}
    if agent is not None:
        headers["x-claude-code-agent-id"] = agent
    head = RequestHead(
        "POST", "/v1/messages", (), CIMultiDictProxy(CIMultiDict(headers)), None, b"", f"x:{n}"
    )
    admission = await policy.admit(head)
    body = json.dumps({"model": model, "messages": []}).encode()
    return await policy.decide(head.with_body(body), admission)


def test_requests_share_their_sessions_parts_and_get_the_whole_annotation(
    store: SessionStore, tmp_path: Path
) -> None:
    policy, token = one_client_policy(store, tmp_path)

    async def main() -> list[PolicyDecision]:
        plan = [("s0", "m"), ("s0", "m"), ("s0", "n"), ("s1", "m"), ("s0", "m")]
        decisions = [await _decide(policy, token, n, s, m) for n, (s, m) in enumerate(plan)]
        decisions.append(await _decide(policy, token, 9, "s0", "m", agent="a1"))  # a child
        for n in (2, 9):  # two of them end: their rows are written from their parts
            policy.on_exchange_end(
                ExchangeEnd(f"x:{n}", "POST", "/v1/messages", "ok", 200, 200, None, {}, {})
            )
        await policy.close()
        return decisions

    decisions = asyncio.run(main())
    notes: list[dict[str, Any]] = [d.annotations["gateway"] for d in decisions]
    for note, n in zip(notes, range(len(notes)), strict=True):
        assert list(note) == KEYS, n
        assert (note["method"], note["path"], note["auth"]) == ("POST", "/v1/messages", "ok")
        assert (note["principal"], note["account"], note["harness"]) == (
            "alice",
            "acme",
            "claude-code",
        )
        assert note["family"] == "anthropic" and isinstance(note["received_ns"], int)
    assert [n["model"] for n in notes] == ["m", "m", "n", "m", "m", "m"]
    sessions = [n["session_id"] for n in notes]
    assert sessions[0] == sessions[1] == sessions[2] == sessions[4] != sessions[3]
    assert notes[5]["parent_session_id"] == sessions[0] != notes[5]["session_id"]
    assert notes[5]["source_id"] == "s0:a1" and notes[0]["source_id"] == "s0"
    assert notes[0]["identity"]["session_key"] == "s0"
    # One part per session and model: s0/m, s0/n, s1/m, the child's.
    assert len(policy.parts._kept) == 4
    assert notes[0] is not notes[1]  # each request its own dict, its tail shared
    rows = {c.exchange_id: c for c in store.calls()}
    assert sorted(rows) == ["x:2", "x:9"]
    assert (rows["x:2"].model, rows["x:2"].session_id) == ("n", sessions[0])
    assert (rows["x:9"].model, rows["x:9"].session_id) == ("m", notes[5]["session_id"])
    assert rows["x:9"].identity == notes[5]["identity"] != notes[0]["identity"]
    assert rows["x:2"].started_at == utc_from_ns(notes[2]["received_ns"])
