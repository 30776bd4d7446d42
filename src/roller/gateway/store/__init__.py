"""The gateway's session store: SQLAlchemy models, alembic-migrated engines, repository.

`open_engine(url)` (SQLite file or PostgreSQL URL, migrated to head), `SessionStore`
(resolve a request's `SessionPlan` to rows, record calls and notes, lineage walks),
`lineage` (parent links and their audit), `calls` (call rows and their batched insert),
`row_parts` (a row made per session and per request on the gateway's hot path),
`values` (strings made storable).
"""

from __future__ import annotations

from roller.gateway.store.calls import CallFacts, CallRow
from roller.gateway.store.engine import StoreError, open_engine, safe_url
from roller.gateway.store.lineage import MAX_ANCESTORS, RequestRef
from roller.gateway.store.models import Call, Note, ParentAssignment, RuntimeSession
from roller.gateway.store.repository import Resolution, SessionStore

__all__ = [
    "MAX_ANCESTORS",
    "Call",
    "CallFacts",
    "CallRow",
    "Note",
    "ParentAssignment",
    "RequestRef",
    "Resolution",
    "RuntimeSession",
    "SessionStore",
    "StoreError",
    "open_engine",
    "safe_url",
]
