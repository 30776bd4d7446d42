"""Finalize's first pass over one call: what is kept of it between the two passes.

`FirstPass(harness, capture_scope, tool_ids)` (`tool_ids`: the native capture's,
`NativeToolIds.of(native)`) decodes calls one at a time, in tape order,
`first.call(n, exchange)` giving a `Passed` record: the call's facts as plain values
(`roller.finalize.kept_facts.facts_values`), its shell JSON (`shell_json`: the record
with `context: null`), its `context_sha256`, whether its response has a body, and how
its context is held (`roller.finalize.spill.held_context`). Plain values, so a worker
process can make them (`roller.finalize.workers`) and the finalizing process keep
them exactly as if it had decoded the call itself (`KeptFacts.add_values`,
`Spill.put_entry`).

It holds the per-conversation readers (`ContextReader`: a resent transcript parsed for
what it adds; `ContextResults`: only its new messages' tool results read): caches, each
giving what a fresh reading gives, so a run of calls decoded by another `FirstPass`
(another process's) gives the same records.
"""

from __future__ import annotations

from typing import NamedTuple

from roller.capture.context_reader import ContextReader
from roller.capture.tape import TapeExchange
from roller.finalize.context_results import ContextResults
from roller.finalize.decode import decode_exchange
from roller.finalize.ids import call_id
from roller.finalize.kept_facts import FactsValues, facts_values
from roller.finalize.shell import shell_json
from roller.finalize.spill import held_context
from roller.finalize.tool_ids import NativeToolIds, call_tool_ids


class Passed(NamedTuple):
    """What the first pass keeps of one call (module docstring)."""

    facts: FactsValues
    shell: bytes
    context_sha256: str
    has_body: bool  # its response has a body: the shell's `raw_sha256` is set
    context_how: int  # `held_context`'s
    context: bytes | None  # the context's record JSON when it is spilled


class FirstPass:
    def __init__(self, harness: str, capture_scope: str, tool_ids: NativeToolIds | None) -> None:
        self.harness = harness
        self.capture_scope = capture_scope
        self.tool_ids = tool_ids
        self._bodies = ContextReader()
        self._results = ContextResults()

    def call(self, n: int, exchange: TapeExchange) -> Passed:
        """Call `n` of the capture (the tape's exchange `n`)."""
        call = decode_exchange(n, exchange, self.harness, self._bodies.parse, self._results.of)
        tool_ids, _ = call_tool_ids(call.response_id, call.emitted, self.tool_ids)
        shell = shell_json(call, call_id(self.capture_scope, n), tool_ids)
        how, context = held_context(call.exchange.request_body, call.context_json)
        has_body = call.exchange.response is not None
        return Passed(facts_values(call), shell, call.context_sha256, has_body, how, context)
