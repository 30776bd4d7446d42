"""The gateway's own HTTP routes under `/roller/`: notes and session inspection.

- `POST /roller/notes` `{"target": "<session id>", "body": "..."}`: the author is the
  calling session, derived from the request exactly as a model call's session is (roller
  token, then `X-Roller-Session-Id` or the declared harness's native headers, else the
  principal's source-keyed session). Allowed by `roller.gateway.scope.note_allowed`:
  201 with the note, or 403 saying why.
- `GET /roller/sessions/{id}/notes`: the notes addressed to `{id}`; the recipient sees
  them all, anyone else only those it wrote.
- `GET /roller/sessions/{id}/tree`: the session and its descendants as JSON.

Rules kept: every route needs a roller token (401 otherwise); a session outside the
caller's account is answered exactly like a session that does not exist (404), so ids of
other accounts cannot be probed; these routes are never forwarded upstream and never
recorded on the tape (they carry no model traffic).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final

from aiohttp import web

from roller.gateway.config import Client
from roller.gateway.derivation import plan_session
from roller.gateway.inspection import note_json, session_tree
from roller.gateway.policy import GatewayPolicy, unauthorized
from roller.gateway.scope import SessionRef, note_allowed
from roller.gateway.store import RuntimeSession, StoreError
from roller.harnesses import identify
from roller.proxy import RequestHead

MAX_NOTE_BYTES: Final = 64 * 1024
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ClientHandler = Callable[[web.Request, Client], Awaitable[web.StreamResponse]]


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"error": {"type": kind, "message": message}}, status=status)


class GatewayRoutes:
    def __init__(self, policy: GatewayPolicy) -> None:
        self.policy = policy
        self.store = policy.store

    def add_to(self, app: web.Application) -> None:
        app.router.add_post("/roller/notes", self._guard(self.post_note))
        app.router.add_get("/roller/sessions/{id}/notes", self._guard(self.get_notes))
        app.router.add_get("/roller/sessions/{id}/tree", self._guard(self.get_tree))

    def _guard(self, handler: ClientHandler) -> Handler:
        """Every route: a roller token first (401), a store failure as 503."""

        async def run(request: web.Request) -> web.StreamResponse:
            try:
                client = self._client(request)
                if client is None:
                    return web.json_response(unauthorized("a roller token is required"), status=401)
                return await handler(request, client)
            except StoreError as exc:
                return _error(503, "roller_store_unavailable", str(exc))

        return run

    def _client(self, request: web.Request) -> Client | None:
        head = RequestHead(
            method=request.method,
            path=request.path,
            query=tuple(request.query.items()),
            headers=request.headers,
            client=request.remote,
        )
        client, _, _ = self.policy.authenticate(head)
        return client

    async def _caller_session(self, request: web.Request, client: Client) -> str:
        identity = identify(client.harness, request.headers)
        plan = plan_session(client, identity)
        resolution = await self.store.run(self.store.resolve, plan, datetime.now(UTC))
        return resolution.session_id

    async def _visible(self, client: Client, session_id: str) -> RuntimeSession | None:
        row = await self.store.run(self.store.get, session_id)
        return row if row is not None and row.account == client.account else None

    async def post_note(self, request: web.Request, client: Client) -> web.StreamResponse:
        raw = await request.content.read(MAX_NOTE_BYTES + 1)
        if len(raw) > MAX_NOTE_BYTES:
            return _error(413, "roller_note_too_large", f"a note is at most {MAX_NOTE_BYTES} bytes")
        try:
            payload = json.loads(raw)
        except (UnicodeDecodeError, ValueError):
            return _error(400, "roller_bad_note", "the body must be JSON")
        if not isinstance(payload, dict) or set(payload) != {"target", "body"}:
            return _error(
                400, "roller_bad_note", 'expected {"target": "<session id>", "body": "..."}'
            )
        target_id, text = payload["target"], payload["body"]
        if not isinstance(target_id, str) or not isinstance(text, str) or not text:
            return _error(400, "roller_bad_note", "target and body must be non-empty strings")
        author_id = await self._caller_session(request, client)
        target = await self._visible(client, target_id)
        if target is None:
            return _error(404, "roller_no_such_session", "no such session")
        lineage = await self.store.run(self.store.lineage, target.id)
        decision = note_allowed(
            SessionRef(author_id, client.account),
            SessionRef(target.id, target.account),
            self.policy.config.grants.get(client.account),
            lineage,
        )
        if not decision.allowed:
            return _error(403, "roller_note_denied", decision.detail)
        note = await self.store.run(
            self.store.add_note,
            account=client.account,
            author_id=author_id,
            target_id=target.id,
            body=text,
            allowed_by=decision.reason,
            now=datetime.now(UTC),
        )
        return web.json_response({"note": note_json(note)}, status=201)

    async def get_notes(self, request: web.Request, client: Client) -> web.StreamResponse:
        target = await self._visible(client, request.match_info["id"])
        if target is None:
            return _error(404, "roller_no_such_session", "no such session")
        caller = await self._caller_session(request, client)
        notes = await self.store.run(self.store.notes_for, target.id)
        if caller != target.id:
            notes = [n for n in notes if n.author_session_id == caller]
        return web.json_response(
            {"session": target.id, "caller": caller, "notes": [note_json(n) for n in notes]}
        )

    async def get_tree(self, request: web.Request, client: Client) -> web.StreamResponse:
        target = await self._visible(client, request.match_info["id"])
        if target is None:
            return _error(404, "roller_no_such_session", "no such session")
        tree: dict[str, Any] = await self.store.run(session_tree, self.store, target)
        return web.json_response({"tree": tree})
