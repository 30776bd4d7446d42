"""What one session's requests share, made once: the annotation's tail and the row's part.

A harness's turns in one conversation resolve to the same identity (`roller.gateway.
identities` keeps one `Identified` per evidence), the same rows (`roller.gateway.
resolutions` keeps one `Resolution` per plan) and nearly always name the same model, so
the gateway's tape annotation and its call row differ between them only by the request's
own values. `SessionParts.of(...)` gives, per (identity, resolution, model, family,
protocol), a `Shared`:
- `annotation`: the `gateway` annotation's keys after the request's own `method`,
  `path` and `received_ns` (who, family, model, session fields, identity summary), in
  the order the policy writes them: a request's annotation is those three and this tail;
- `row`: the call row's session part, checked and bound for the store once
  (`roller.gateway.store.row_parts.SessionPart`).
Rules kept: a kept `Shared` is found by the identity of the kept objects it was made from
(compared with `is`, each held with it, so an id is never reused while kept) and by equal
model, family and protocol; its values are shared between requests and never mutated (the
annotation is copied into each request's own dict; the tape only serializes it). The
store is bounded: past `MAX_KEPT` entries it is emptied and refills.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Final

from roller.gateway.config import Client
from roller.gateway.identities import Identified
from roller.gateway.store import Resolution
from roller.gateway.store.row_parts import RowMaker, SessionPart
from roller.wire.types import ProtocolName

MAX_KEPT: Final = 4096


class Shared:
    """What the requests of one session, model and endpoint share (module docstring)."""

    __slots__ = ("annotation", "row")

    def __init__(self, annotation: dict[str, Any], row: SessionPart) -> None:
        self.annotation = annotation
        self.row = row


def annotation_tail(
    client: Client,
    family: str | None,
    model: str | None,
    identified: Identified,
    resolution: Resolution,
) -> dict[str, Any]:
    """The `gateway` annotation of a decided request after `method`, `path` and
    `received_ns`."""
    plan = identified.plan
    return {
        "auth": "ok",
        "principal": client.principal,
        "account": client.account,
        "harness": client.harness,
        "family": family,
        "model": model,
        "session_id": resolution.session_id,
        "parent_session_id": resolution.parent_session_id,
        "source_type": resolution.source.source_type,
        "source_id": resolution.source.source_id,
        "rule": plan.rule,
        "participant_unknown": plan.participant_unknown,
        "parent_refused": resolution.parent_refused,
        "identity": identified.summary,
    }


class SessionParts:
    """The `Shared` parts of one gateway's sessions (bounded)."""

    def __init__(self, maker: RowMaker, tape_dir: str) -> None:
        self.maker = maker
        self.tape_dir = tape_dir
        self._kept: dict[Hashable, tuple[Identified, Resolution, Shared]] = {}

    def of(
        self,
        client: Client,
        family: str | None,
        protocol: ProtocolName | None,
        identified: Identified,
        resolution: Resolution,
        model: str | None,
    ) -> Shared:
        """The parts of a request of `client` (its plan's) decided as `identified`,
        resolved to `resolution`, naming `model`."""
        key = (id(identified), id(resolution), model, family, protocol)
        kept = self._kept.get(key)
        if kept is not None and kept[0] is identified and kept[1] is resolution:
            return kept[2]
        plan = identified.plan
        shared = Shared(
            annotation_tail(client, family, model, identified, resolution),
            self.maker.part(
                self.tape_dir,
                resolution.session_id,
                client.account,
                client.principal,
                family,
                protocol,
                model,
                plan.participant_unknown,
                identified.summary,
            ),
        )
        if len(self._kept) >= MAX_KEPT:
            self._kept.clear()
        self._kept[key] = (identified, resolution, shared)
        return shared
