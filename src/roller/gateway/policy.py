"""The gateway's request policy and end hook, plugged into the proxy core.

`GatewayPolicy.decide(head)` runs once per model request, with the whole body, before
anything is recorded or forwarded:
1. authenticate the roller token (`roller.gateway.tokens`); an unknown, missing or
   ambiguous token gets a 401, recorded on the tape (the proxy never writes credentials)
   and as a `call` row that belongs to no one;
2. pick the upstream for the request's protocol family and swap the roller token for the
   real upstream key (outgoing headers are never recorded; `?key=` is dropped);
3. derive the session: `roller.harnesses.identify` under the credential's declared harness
   (explicit roller headers, gated native headers, body conversation id), mapped onto
   rows by `roller.gateway.derivation`, else source keying on the principal;
4. find or create the rows and link the parent (`roller.gateway.store`), in a worker
   thread so the event loop never waits on the database;
5. annotate the tape's `req` frame with who and which session (`annotations["gateway"]`).

`on_exchange_end` writes the `call` row pointing at the tape exchange, with the status
rulebook's execution and response-capture statuses (`roller.capture.statuses`, the same
functions finalize uses): for a model call the decision asks the proxy for the response
body (`keep_response`), and the hook reads it with `roller.wire.response.read_response`
after the client has its response, so no decoding happens on the request path. A store
failure during `decide` fails the request (500, recorded by the proxy as `policy_error`):
a call the gateway cannot account for is not forwarded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from roller.capture.models import ExecutionStatus, ResponseCaptureStatus
from roller.capture.statuses import ExchangeFacts, execution_status, response_capture_status
from roller.gateway.config import Client, GatewayConfig
from roller.gateway.derivation import SessionPlan, plan_session
from roller.gateway.store import CallFacts, Resolution, SessionStore
from roller.gateway.tokens import (
    CREDENTIAL_HEADERS,
    CREDENTIAL_QUERY,
    presented_token,
    token_sha256,
)
from roller.harnesses import identify
from roller.identity import WireIdentity
from roller.proxy import ExchangeEnd, PolicyDecision, Rejection, RequestHead
from roller.wire import codec_for
from roller.wire.endpoints import Endpoint, Family, endpoint_for
from roller.wire.response import read_response
from roller.wire.types import ProtocolName

log = logging.getLogger("roller.gateway")

ROUTE_PREFIX: Final = "/roller/"
_FAMILY_BY_SOURCE: Final[Mapping[str, Family]] = {
    "x-api-key": "anthropic",
    "authorization": "openai",
    "x-goog-api-key": "gemini",
    "?key": "gemini",
}
# Where each family's upstream takes its key (header, value prefix).
_KEY_HEADER: Final[Mapping[Family, tuple[str, str]]] = {
    "anthropic": ("x-api-key", ""),
    "openai": ("authorization", "Bearer "),
    "gemini": ("x-goog-api-key", ""),
}


def unauthorized(message: str) -> dict[str, Any]:
    return {"error": {"type": "roller_unauthorized", "message": message}}


def parse_json_body(body: bytes) -> object:
    """The parsed request body, or None when it is empty or not JSON (the identity rules
    then see no body; the bytes stay on the tape either way)."""
    if not body or body[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return None


def requested_model(body: object, endpoint: Endpoint) -> str | None:
    """The model the request names: the body's `model`, else the one its path names
    (Gemini's `models/<m>:method`, a model-info request)."""
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return str(body["model"])[:200]
    return None if endpoint.model is None else endpoint.model[:200] or None


def call_statuses(
    end: ExchangeEnd, protocol: ProtocolName | None
) -> tuple[ExecutionStatus, ResponseCaptureStatus]:
    """A call row's execution and response-capture statuses: the rulebook's, over the same
    facts finalize reads off the tape (the response body is the one the decision kept)."""
    body = end.response_body
    codec = None if protocol is None or body is None else codec_for(protocol)
    reading = read_response(codec, end.upstream_status, end.response_headers, body or b"")
    facts = ExchangeFacts.of(
        outcome=end.outcome,
        status=end.upstream_status,
        streamed=reading.streamed,
        client_bytes=end.client_bytes,
        response_bytes=end.response_bytes,
        body_bytes=end.response_bytes if body is None else len(body),
        terminal=reading.terminal,
    )
    return execution_status(facts), response_capture_status(facts)


def identity_summary(identity: WireIdentity, plan: SessionPlan) -> dict[str, Any]:
    """What the call row keeps of the wire identity (the full evidence is on the tape and
    is derived again by export)."""
    return {
        "rule": identity.rule,
        "session_key": identity.session_key,
        "participant_key": identity.participant_key,
        "parent_key": identity.parent_key,
        "is_child": identity.is_child,
        "rejected": [[r.field, r.reason] for r in identity.rejected],
        "participant_unknown": plan.participant_unknown,
    }


class GatewayPolicy:
    def __init__(
        self,
        config: GatewayConfig,
        store: SessionStore,
        *,
        upstreams: Mapping[Family, str],
        keys: Mapping[Family, str],
        tape_dir: Path,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.config = config
        self.store = store
        self.upstreams = dict(upstreams)
        self.keys = dict(keys)
        self.tape_dir = tape_dir.resolve()
        self.clock = clock
        self.clients = {client.token_sha256: client for client in config.clients}

    def authenticate(self, head: RequestHead) -> tuple[Client | None, str, tuple[str, ...]]:
        presented = presented_token(head.headers, head.query)
        if presented.token is None:
            return None, presented.problem or "no token", presented.sources
        client = self.clients.get(token_sha256(presented.token))
        if client is None:
            return None, "unknown roller token", presented.sources
        return client, "ok", presented.sources

    async def decide(self, head: RequestHead) -> PolicyDecision:
        received = self.clock()
        base: dict[str, Any] = {
            "method": head.method,
            "path": head.path,
            "received_ns": time.time_ns(),
        }
        if head.path.startswith(ROUTE_PREFIX):
            # Gateway routes are served by the gateway itself, never forwarded.
            missing = {"error": {"type": "roller_not_found", "message": "no such gateway route"}}
            return PolicyDecision(reject=Rejection(404, missing), annotations={"gateway": base})
        client, problem, sources = self.authenticate(head)
        if client is None:
            annotation = {**base, "auth": "rejected", "reason": problem, "sources": list(sources)}
            return PolicyDecision(
                reject=Rejection(
                    401, unauthorized(f"{problem}: use a token from roller gateway token add")
                ),
                annotations={"gateway": annotation},
            )
        endpoint = endpoint_for(head.method, head.path, head.query)
        family = endpoint.family or next(
            (_FAMILY_BY_SOURCE[s] for s in sources if s in _FAMILY_BY_SOURCE), None
        )
        body = parse_json_body(head.body)
        identity = identify(client.harness, head.headers, body)
        plan = plan_session(client, identity)
        resolution = await self.store.run(self.store.resolve, plan, received)
        annotation = {
            **base,
            "auth": "ok",
            "principal": client.principal,
            "account": client.account,
            "harness": client.harness,
            "family": family,
            "model": requested_model(body, endpoint),
            **_session_fields(resolution, plan),
            "identity": identity_summary(identity, plan),
        }
        set_headers: dict[str, str] = {}
        key = None if family is None else self.keys.get(family)
        if family is not None and key is not None:
            set_headers = _key_headers(family, key)
        return PolicyDecision(
            set_headers=set_headers,
            remove_headers=CREDENTIAL_HEADERS,
            remove_query=CREDENTIAL_QUERY,
            upstream=None if family is None else self.upstreams.get(family),
            annotations={"gateway": annotation},
            # A model call's row needs to know whether its response ended normally.
            keep_response=endpoint.output_protocol is not None,
        )

    async def on_exchange_end(self, end: ExchangeEnd) -> None:
        gateway = end.annotations.get("gateway")
        if not isinstance(gateway, dict):
            return  # the policy itself failed; the tape has the exchange and its error
        received_ns = gateway.get("received_ns")
        started = (
            datetime.fromtimestamp(received_ns / 1e9, UTC)
            if isinstance(received_ns, int)
            else self.clock()
        )
        method, path = str(gateway.get("method", "")), str(gateway.get("path", ""))
        protocol = endpoint_for(method, path).output_protocol
        if end.response_body is None:
            execution, response_capture = call_statuses(end, protocol)
        else:
            # Reassembly costs ~0.1 ms per KiB: in a thread, so a long stream's decode never
            # holds up the streams the event loop is still relaying.
            execution, response_capture = await asyncio.to_thread(call_statuses, end, protocol)
        facts = CallFacts(
            tape_dir=str(self.tape_dir),
            exchange_id=end.exchange_id,
            session_id=gateway.get("session_id"),
            account=gateway.get("account"),
            principal=gateway.get("principal"),
            method=method,
            path=path,
            family=gateway.get("family"),
            protocol=protocol,
            model=gateway.get("model"),
            participant_unknown=bool(gateway.get("participant_unknown", False)),
            identity=gateway.get("identity"),
            outcome=end.outcome,
            client_status=end.client_status,
            upstream_status=end.upstream_status,
            execution_status=execution,
            response_capture_status=response_capture,
            error_code=None if end.error is None else end.error.code,
            started_at=started,
            ended_at=self.clock(),
        )
        await self.store.run(self.store.record_call, facts)


def _session_fields(resolution: Resolution, plan: SessionPlan) -> dict[str, Any]:
    return {
        "session_id": resolution.session_id,
        "parent_session_id": resolution.parent_session_id,
        "source_type": resolution.source.source_type,
        "source_id": resolution.source.source_id,
        "rule": plan.rule,
        "participant_unknown": plan.participant_unknown,
        "parent_refused": resolution.parent_refused,
    }


def _key_headers(family: Family, key: str) -> dict[str, str]:
    name, prefix = _KEY_HEADER[family]
    return {name: f"{prefix}{key}"}
