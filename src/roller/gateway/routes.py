"""The gateway's own HTTP routes under `/roller/`: notes and session inspection.

- `POST /roller/notes` `{"target": "<session id>", "body": "..."}`: the author is the
  calling session, looked up from the request exactly as a model call's session is
  derived (roller token, then roller's headers when the credential may send them, or the
  declared harness's native headers, else the principal's source-keyed session). Allowed
  by `roller.gateway.scope.note_allowed`: 201 with the note, or 403 saying why.
- `GET /roller/sessions/{id}/notes`: the notes addressed to `{id}`; the recipient sees
  them all, anyone else only those it wrote.
- `GET /roller/sessions/{id}/tree`: the session and its descendants as JSON, when the
  caller's scope allows it (`roller.gateway.scope.tree_visible`), else 404.

Rules kept:
- One canonical route match (`roller.gateway.paths.own_route`), asked by the proxy's
  handler before anything else (`GatewayRoutes` is its `roller.proxy.LocalRoutes`):
  however a client spells `/roller/` (percent-encoded, another case, doubled slashes) it
  reaches these routes or the gateway's 404, never the upstream. `ROUTES` is the table; a
  path word matches case-insensitively.
- These routes only look sessions up (`SessionStore.find_session`): a note or a tree
  never creates a session or sets a parent, whatever lineage its headers claim; a caller
  whose session does not exist yet is unknown (it may note no one, it sees no tree).
- Every route needs a roller token (401 otherwise); a session outside the caller's
  account, or outside its scope, is answered exactly like one that does not exist (404),
  so ids cannot be probed; these routes are never forwarded upstream and never recorded
  on the tape (they carry no model traffic).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from aiohttp import web

from roller.gateway.config import Client
from roller.gateway.derivation import plan_session
from roller.gateway.inspection import note_json, session_tree
from roller.gateway.paths import own_route
from roller.gateway.policy import GatewayPolicy, unauthorized
from roller.gateway.scope import SessionRef, note_allowed, tree_visible
from roller.gateway.store import RuntimeSession, StoreError
from roller.harnesses import identify
from roller.proxy import RequestHead

MAX_NOTE_BYTES: Final = 64 * 1024
RouteHandler = Callable[[web.Request, Client, tuple[str, ...]], Awaitable[web.StreamResponse]]
ID: Final = None  # a path segment that is a session id


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    words: tuple[str | None, ...]  # after `/roller/`; ID captures a segment
    handler: str  # the GatewayRoutes method serving it


ROUTES: Final = (
    Route("POST", ("notes",), "post_note"),
    Route("GET", ("sessions", ID, "notes"), "get_notes"),
    Route("GET", ("sessions", ID, "tree"), "get_tree"),
)


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"error": {"type": kind, "message": message}}, status=status)


def match(method: str, segments: tuple[str, ...]) -> tuple[Route | None, tuple[str, ...], bool]:
    """The route for `segments` (the path after the namespace), its captured ids, and
    whether some route has that path under another method."""
    other_method = False
    for route in ROUTES:
        if len(route.words) != len(segments):
            continue
        if all(w is ID or w == s.lower() for w, s in zip(route.words, segments, strict=True)):
            if route.method != method:
                other_method = True
                continue
            ids = tuple(s for w, s in zip(route.words, segments, strict=True) if w is ID)
            return route, ids, False
    return None, (), other_method


class GatewayRoutes:
    def __init__(self, policy: GatewayPolicy) -> None:
        self.policy = policy
        self.store = policy.store

    def serves(self, raw_path: str) -> bool:
        """Whether a request target is the gateway's own (`LocalRoutes`)."""
        return own_route(raw_path) is not None

    async def serve(self, request: web.Request) -> web.StreamResponse:
        """Answer one of the gateway's own routes (`serves` said it is one)."""
        segments = own_route(request.raw_path)
        if segments is None:  # (the proxy asks `serves` first)
            return _error(404, "roller_not_found", "no such gateway route")
        route, ids, other_method = match(request.method, segments)
        if route is None:
            if other_method:
                return _error(405, "roller_method_not_allowed", "method not allowed here")
            return _error(404, "roller_not_found", "no such gateway route")
        serve: RouteHandler = getattr(self, route.handler)
        try:
            client = self._client(request)
            if client is None:
                return web.json_response(unauthorized("a roller token is required"), status=401)
            return await serve(request, client, ids)
        except StoreError as exc:
            return _error(503, "roller_store_unavailable", str(exc))

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

    async def _caller(self, request: web.Request, client: Client) -> str | None:
        """The calling session's row, if it exists (looked up, never created)."""
        identity = identify(client.harness, request.headers, trust_roller=client.roller_headers)
        plan = plan_session(client, identity)
        return await self.store.run(self.store.find_session, plan, datetime.now(UTC))

    async def _visible(self, client: Client, session_id: str) -> RuntimeSession | None:
        row = await self.store.run(self.store.get, session_id)
        return row if row is not None and row.account == client.account else None

    async def post_note(
        self, request: web.Request, client: Client, ids: tuple[str, ...]
    ) -> web.StreamResponse:
        raw = await request.content.read(MAX_NOTE_BYTES + 1)
        if len(raw) > MAX_NOTE_BYTES:
            return _error(413, "roller_note_too_large", f"a note is at most {MAX_NOTE_BYTES} bytes")
        try:
            payload = json.loads(raw)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return _error(400, "roller_bad_note", "the body must be JSON")
        if not isinstance(payload, dict) or set(payload) != {"target", "body"}:
            return _error(
                400, "roller_bad_note", 'expected {"target": "<session id>", "body": "..."}'
            )
        target_id, text = payload["target"], payload["body"]
        if not isinstance(target_id, str) or not isinstance(text, str) or not text:
            return _error(400, "roller_bad_note", "target and body must be non-empty strings")
        target = await self._visible(client, target_id)
        if target is None:
            return _error(404, "roller_no_such_session", "no such session")
        author_id = await self._caller(request, client)
        if author_id is None:
            return _error(403, "roller_note_denied", "the calling session is unknown")
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

    async def get_notes(
        self, request: web.Request, client: Client, ids: tuple[str, ...]
    ) -> web.StreamResponse:
        target = await self._visible(client, ids[0])
        if target is None:
            return _error(404, "roller_no_such_session", "no such session")
        caller = await self._caller(request, client)
        notes = await self.store.run(self.store.notes_for, target.id)
        if caller != target.id:
            notes = [n for n in notes if n.author_session_id == caller]
        return web.json_response(
            {"session": target.id, "caller": caller, "notes": [note_json(n) for n in notes]}
        )

    async def get_tree(
        self, request: web.Request, client: Client, ids: tuple[str, ...]
    ) -> web.StreamResponse:
        target = await self._visible(client, ids[0])
        if target is None:
            return _error(404, "roller_no_such_session", "no such session")
        caller = await self._caller(request, client)
        lineage = await self.store.run(self.store.lineage, target.id)
        visible = tree_visible(
            None if caller is None else SessionRef(caller, client.account),
            SessionRef(target.id, target.account),
            self.policy.config.grants.get(client.account),
            lineage,
        )
        if not visible.allowed:
            return _error(404, "roller_no_such_session", "no such session")
        tree: dict[str, Any] = await self.store.run(session_tree, self.store, target)
        return web.json_response({"tree": tree})
