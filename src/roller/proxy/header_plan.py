"""Header plans: every header decision for one sequence of header names, taken once.

A harness sends the same header names in the same order turn after turn (the values
change: `content-length`, ids), and an upstream answers with the same names every time.
What the proxy does with a header depends on its name alone, except for the headers a
`connection` header names; so the decisions of every rule — recorded, secret or
`x-roller-*` (`redaction.Redactor`), forwarded upstream, relayed to the client, hop-by-hop,
`accept-encoding` to narrow (`headers`), where `content-length` is — are taken once per
distinct name sequence (and `connection` values) and applied per exchange as index
selections (`operator.itemgetter`, in C) instead of per-header passes in Python.

Rules this module keeps:
- A plan gives exactly what the header-by-header rules give (`Redactor.headers`,
  `roller_evidence`, `headers.upstream_request_headers`, `headers.client_response_headers`;
  the announced body size is the first `content-length`, aiohttp having refused malformed
  ones already): tests compare the two on varied header lists.
- Plans are built from the same per-name decisions those rules use; none is restated here.
- The caches are bounded (names come from clients): past `MAX_PLANS` distinct name
  sequences a plan is built for the exchange and not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Final, NamedTuple, TypeVar, cast

from multidict import CIMultiDict

from roller.proxy.headers import (
    NOT_RELAYED,
    connection_tokens,
    lower_name,
    narrow_accept_encoding,
    not_forwarded,
)
from roller.proxy.redaction import DEFAULT_REDACTOR, Redactor

Pair = tuple[str, str]
Pairs = Sequence[Pair]
Pick = Callable[[Pairs], tuple[Pair, ...]]

MAX_PLANS: Final = 1024
_P = TypeVar("_P", "RequestPlan", "ResponsePlan")
_NAME: Final = itemgetter(0)


def _nothing(pairs: Pairs) -> tuple[Pair, ...]:
    return ()


def _picker(indices: Sequence[int]) -> Pick:
    """The pairs at `indices`, in order, as a tuple (itemgetter: one C call)."""
    if not indices:
        return _nothing
    if len(indices) == 1:
        getter = itemgetter(indices[0])
        return lambda pairs: (getter(pairs),)
    return cast(Pick, itemgetter(*indices))


class RequestPlan(NamedTuple):
    """A request's header decisions (indices into its header pairs, arrival order)."""

    recorded: Pick  # the pairs the `req` frame keeps
    removed: tuple[str, ...]  # lower-cased names of the secrets left out (first seen first)
    roller: tuple[int, ...]  # the `x-roller-*` headers
    forwarded: Pick  # the pairs sent upstream, `accept-encoding` aside
    accept_encoding: tuple[int, ...]  # the client's `accept-encoding` headers
    content_length: int  # the first `content-length` header, -1 without one
    connection: tuple[int, ...]  # the `connection` headers (their values name hop-by-hops)
    names: tuple[str, ...] = ()  # the name sequence it was built for (a request policy's)

    def evidence(self, pairs: Pairs) -> dict[str, str]:
        """`roller_evidence(pairs)`: the `x-roller-*` headers, repeated ones joined."""
        found: dict[str, str] = {}
        for i in self.roller:
            name, value = pairs[i]
            key = lower_name(name)
            found[key] = f"{found[key]}, {value}" if key in found else value
        return found

    def announced(self, pairs: Pairs) -> int | None:
        """The body size the head announces (its first `content-length`), if a number."""
        if self.content_length < 0:
            return None
        value = pairs[self.content_length][1]
        return int(value) if value.isdigit() else None

    def accept_encoding_pair(self, pairs: Pairs) -> Pair:
        """The `accept-encoding` sent upstream: the client's, narrowed."""
        coded = [pairs[i][1] for i in self.accept_encoding]
        return ("Accept-Encoding", narrow_accept_encoding(", ".join(coded) if coded else None))

    def upstream(
        self,
        pairs: Pairs,
        set_headers: Iterable[Pair] = (),
        remove_headers: Iterable[str] = (),
    ) -> list[Pair] | CIMultiDict[str]:
        """`upstream_request_headers(pairs, ...)`: a list when the policy changes nothing
        (the upstream client builds its own multidict from it)."""
        out = [*self.forwarded(pairs), self.accept_encoding_pair(pairs)]
        if not set_headers and not remove_headers:
            return out
        changed: CIMultiDict[str] = CIMultiDict(out)
        for name in remove_headers:
            changed.popall(name, None)
        for name, value in set_headers:
            changed[name] = value
        return changed


class ResponsePlan(NamedTuple):
    """A response's header decisions."""

    recorded: Pick  # the pairs the `resp` frame keeps
    removed: tuple[str, ...]  # lower-cased names of the secrets left out
    relayed: Pick  # the pairs relayed to the client
    connection: tuple[int, ...]  # the `connection` headers


def _kept_after(plan: RequestPlan, setting: Sequence[str], removing: Sequence[str]) -> Pick | None:
    """The forwarded pairs a decision keeps, when it only drops forwarded headers and adds
    ones not forwarded (None: it replaces one in place, or touches `accept-encoding`: the
    multidict's way then, `RequestPlan.upstream`)."""
    if not plan.names:
        return None  # (a plan of a name sequence with `connection` values: not keyed here)
    removed = {lower_name(name) for name in removing}
    added = {lower_name(name) for name in setting}
    if "accept-encoding" in removed or "accept-encoding" in added:
        return None
    # The plan's own pick over (name, its index): which headers it forwards, in order.
    forwarded = plan.forwarded([(name, str(i)) for i, name in enumerate(plan.names)])
    kept = [int(i) for name, i in forwarded if lower_name(name) not in removed]
    if any(lower_name(plan.names[i]) in added for i in kept):
        return None
    return _picker(kept)


def _removed(names: Iterable[str], secret: Callable[[str], bool]) -> tuple[str, ...]:
    out: list[str] = []
    for name in names:
        lowered = lower_name(name)
        if secret(name) and lowered not in out:
            out.append(lowered)
    return tuple(out)


class HeaderPlans:
    """The plans of one redactor's proxy, cached per name sequence (bounded)."""

    __slots__ = (
        "_changed",
        "_plain_requests",
        "_plain_responses",
        "_redactor",
        "_requests",
        "_responses",
    )

    def __init__(self, redactor: Redactor = DEFAULT_REDACTOR) -> None:
        self._redactor = redactor
        self._requests: dict[tuple[object, ...], RequestPlan] = {}
        self._responses: dict[tuple[object, ...], ResponsePlan] = {}
        # The plans of name sequences without a `connection` header, by names alone: the
        # common case, found by one lookup in place (no call, no field read).
        self._plain_requests: dict[tuple[str, ...], RequestPlan] = {}
        self._plain_responses: dict[tuple[str, ...], ResponsePlan] = {}
        # (id(plan), set names, removed names) -> (the plan, the pairs kept, or None)
        self._changed: dict[tuple[object, ...], tuple[RequestPlan, Pick | None]] = {}

    def request(self, pairs: Pairs) -> RequestPlan:
        names = tuple(map(_NAME, pairs))
        plan = self._plain_requests.get(names)
        if plan is None:
            plan = self._plan(self._requests, pairs, self._request_plan)
            if not plan.connection and len(self._plain_requests) < MAX_PLANS:
                self._plain_requests[names] = plan
        return plan

    def response(self, pairs: Pairs) -> ResponsePlan:
        names = tuple(map(_NAME, pairs))  # as `request`
        plan = self._plain_responses.get(names)
        if plan is None:
            plan = self._plan(self._responses, pairs, self._response_plan)
            if not plan.connection and len(self._plain_responses) < MAX_PLANS:
                self._plain_responses[names] = plan
        return plan

    def upstream(
        self,
        plan: RequestPlan,
        pairs: Pairs,
        set_headers: Mapping[str, str],
        remove_headers: tuple[str, ...],
    ) -> list[Pair] | CIMultiDict[str]:
        """`plan.upstream(pairs, set_headers.items(), remove_headers)`, picked in one C
        call where the changes only drop forwarded headers and add headers not forwarded
        (a gateway's: it removes every credential, the one it sets among them): the same
        pairs in the same order, the set ones after `accept-encoding`."""
        if not set_headers and not remove_headers:
            return plan.upstream(pairs)
        key = (id(plan), tuple(set_headers), remove_headers)
        changed = self._changed.get(key)
        if changed is None or changed[0] is not plan:
            changed = (plan, _kept_after(plan, tuple(set_headers), remove_headers))
            if len(self._changed) >= MAX_PLANS:
                self._changed.clear()
            self._changed[key] = changed
        kept = changed[1]
        if kept is None:
            return plan.upstream(pairs, set_headers.items(), remove_headers)
        return [*kept(pairs), plan.accept_encoding_pair(pairs), *set_headers.items()]

    def _plan(
        self,
        cache: dict[tuple[object, ...], _P],
        pairs: Pairs,
        build: Callable[[tuple[str, ...], Iterable[str]], _P],
    ) -> _P:
        """The plan for `pairs`' names; with `connection` headers, for their values too."""
        names = tuple(map(_NAME, pairs))
        cached = cache.get(names)
        plan: _P = self._keep(cache, names, build(names, ())) if cached is None else cached
        connection: tuple[int, ...] = plan.connection
        if not connection:
            return plan
        key = (names, *[pairs[i][1] for i in connection])
        with_tokens = cache.get(key)
        if with_tokens is None:
            with_tokens = self._keep(cache, key, build(names, connection_tokens(pairs)))
        return with_tokens

    @staticmethod
    def _keep(cache: dict[tuple[object, ...], _P], key: tuple[object, ...], plan: _P) -> _P:
        if len(cache) < MAX_PLANS:
            cache[key] = plan
        return plan

    def _request_plan(self, names: tuple[str, ...], dropped: Iterable[str]) -> RequestPlan:
        redactor = self._redactor
        hop = frozenset(dropped)
        lowered = [lower_name(name) for name in names]
        everything = range(len(names))
        content_length = [i for i in everything if lowered[i] == "content-length"]
        return RequestPlan(
            recorded=_picker([i for i in everything if redactor.recorded(names[i])]),
            removed=_removed(names, redactor.secret_header),
            roller=tuple(i for i in everything if redactor.roller_header(names[i])),
            forwarded=_picker(
                [i for i in everything if not not_forwarded(names[i]) and lowered[i] not in hop]
            ),
            accept_encoding=tuple(i for i in everything if lowered[i] == "accept-encoding"),
            content_length=content_length[0] if content_length else -1,
            connection=tuple(i for i in everything if lowered[i] == "connection"),
            names=names,
        )

    def _response_plan(self, names: tuple[str, ...], dropped: Iterable[str]) -> ResponsePlan:
        redactor = self._redactor
        hop = NOT_RELAYED | frozenset(dropped)
        lowered = [lower_name(name) for name in names]
        everything = range(len(names))
        return ResponsePlan(
            recorded=_picker([i for i in everything if redactor.recorded(names[i])]),
            removed=_removed(names, redactor.secret_header),
            relayed=_picker([i for i in everything if lowered[i] not in hop]),
            connection=tuple(i for i in everything if lowered[i] == "connection"),
        )
