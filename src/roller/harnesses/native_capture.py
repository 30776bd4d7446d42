"""What a harness's native-log reader hands finalize: `NativeCapture` and its parts.

`read_native(native_dir) -> NativeCapture` (the adapter contract, `roller.harnesses.base`)
is a pure reader of the copies in `raw/native/`. `NativeCapture` carries facts, not
decisions: finalize (common to all harnesses) joins them to HTTP calls, decides statuses
and relations, and writes the files. An adapter never attributes a call itself and never
guesses from time, text or order.

What a reader cannot read, or finds contradicting itself, is a `NativeProblem`: one of
the codes in `NATIVE_PROBLEM_CODES` (each reader's docstring lists the ones it uses),
a message, and where in the copied logs it was found (`read_native_bytes` reads a copied
file that way, its one problem `unreadable_file`). Finalize turns each into a capture
error; nothing is dropped and nothing raises.

Native logs are JSON, and `json.loads` reads a lone surrogate escape (`"\\ud800"`) into a
str no record can hold (`roller.capture.unicode_text`). `held_native` is finalize's one
gate for that: it shows such text with U+FFFD and adds a `text_not_unicode` problem
naming the fields (finalize records it as a capture error of that code), so the
capture is partial and raw/native/ keeps the exact bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from roller.capture.models import LifecycleStatus, OutputCoverage, RelationType, SubtaskCapability
from roller.capture.unicode_text import held_at

ParticipantState = Literal["completed", "failed", "running", "unknown"]

# What finalize compares to find a call's participant:
# - "response_id": the provider response id of the call's output (`msg_…`, `resp_…`);
# - "wire_participant": the participant key roller.identity derives from the request
#   headers (e.g. OpenCode `x-session-id`, Codex `thread-id`), confirmed by the native log.
JoinBasis = Literal["response_id", "wire_participant"]


NativeProblemCode = Literal[
    "unreadable_file",
    "missing_file",
    "not_json",
    "not_an_object",
    "missing_header",
    "missing_field",
    "unsupported",
    "unexpected_count",
    "unexpected_record",
    "duplicate_id",
    "foreign_record",
    "unknown_reference",
    "missing_record",
    "disagreement",
    "undecodable_record",
    "not_drained",
    "text_not_unicode",
]

# Every code, with what it means; docs/harnesses.md ("Native problems") repeats this table.
NATIVE_PROBLEM_CODES: Mapping[NativeProblemCode, str] = {
    "unreadable_file": "a file or database could not be opened or read as a whole",
    "missing_file": "a file the reader needs, or that another record names, is absent",
    "not_json": "a line, file or stream is not JSON",
    "not_an_object": "a JSON value (a line, a file, a stored row) is not the object expected",
    "missing_header": "a file lacks the header record that names what it holds",
    "missing_field": "a record lacks a field the facts need (an id, a link, a response id)",
    "unsupported": "a format version or a feature the reader was not checked against",
    "unexpected_count": "not the number of records expected (one root, one spawn per child)",
    "unexpected_record": "a record or file where none of its kind can be",
    "duplicate_id": "one id recorded in two places that must each hold it alone",
    "foreign_record": "a record names another session, thread or agent than its file's own",
    "unknown_reference": "a record names an id no record describes, or one it cannot name",
    "missing_record": "an index lacks the row that the logs say it must hold",
    "disagreement": "two pieces of native evidence say different things",
    "undecodable_record": "a stored record's compressed or encoded bytes do not decode",
    "not_drained": "the harness still owed a notification or a child when its logs were taken",
    "text_not_unicode": "text a record cannot hold (a lone surrogate escape), shown with U+FFFD",
}


@dataclass(frozen=True)
class NativeProblem:
    """What a native reader could not read, or found contradicting itself.

    `where` is the place in `raw/native/` it was found, when known: a file path relative
    to it, `path:line`, `path: #ordinal`, or a stored record (`message <id>`, `thread
    <id>`). `str()` gives the text finalize records: `where: message`.
    """

    code: NativeProblemCode
    message: str
    where: str | None = None

    def __str__(self) -> str:
        return self.message if self.where is None else f"{self.where}: {self.message}"


def read_native_bytes(path: Path, rel: str, problems: list[NativeProblem]) -> bytes | None:
    """A copied native file's bytes, or None with an `unreadable_file` problem (`rel`:
    its path relative to `raw/native/`)."""
    try:
        return path.read_bytes()
    except OSError as exc:
        problems.append(
            NativeProblem("unreadable_file", f"unreadable ({exc.strerror or exc})", rel)
        )
        return None


@dataclass(frozen=True)
class NativeEvidence:
    """A native fact's source: a file relative to `raw/native/`, and the id inside it."""

    path: str
    ref: str | None = None


@dataclass(frozen=True)
class InheritedContext:
    """A child that started from a copy of another participant's history (a fork).

    `from_key`: the participant whose conversation was copied; `items`: how many leading
    items of the child's requests are that copy (its own turns come after them), as the
    native log counts them (DeepSeek `seedLength` events, folded into wire messages).
    Finalize records it on the participant and checks it against the child's first
    request; exports leave the copied items out of the child's own turns.
    """

    from_key: str
    items: int
    evidence: tuple[NativeEvidence, ...] = ()


@dataclass(frozen=True)
class NativeParticipant:
    """One native executor as the harness's own logs describe it.

    `key` is the adapter's stable native key (Claude Code: `main` or the agentId;
    OpenCode: the session id; Codex: the thread id). `parent_key` is None for the root.
    """

    key: str
    role: Literal["root", "child"]
    parent_key: str | None
    depth: int
    native_ids: Mapping[str, str]
    name: str | None = None
    state: ParticipantState = "unknown"
    evidence: tuple[NativeEvidence, ...] = ()
    inherited: InheritedContext | None = None


@dataclass(frozen=True)
class NativeRelation:
    """A relation the native logs assert, with what finalize needs to bind it to calls.

    - `tool_call_id`: the native tool-call id (Responses: `call_id|item_id`).
    - `model_tool_ref`: for Responses, the `(call_id, item_id)` pair that must BOTH match
      one function_call item in the parent call's HTTP output.
    - `source_response_id`: the response id of the parent output that emitted the tool
      call, when the native log names it (Claude Code `message.id`); otherwise finalize
      finds the emitting call by `tool_call_id` among the parent participant's calls.
    - `target_response_id` + `delivered_text`: a result delivered by notification is bound
      to the later call whose response id is this, and `delivered_text` must be found in
      that call's actual request; the same text alone proves nothing.
    - `carried_forward`: whether a `result_delivered` notification's result also counts
      as in the context of every later call of the parent whose request still carries
      `delivered_text` (Claude Code). False where the harness binds each call that
      received it by its own native evidence (OpenClaw: the announce run), listed as
      `result_in_context` relations of their own.
    - `target_run_id`: instead of a response id, the harness's own id of the request that
      carried the notification (a call's wire `run_id`, e.g. DeepSeek's log position);
      `delivered_text` must still be in that call's actual request.
    """

    type: RelationType
    parent_key: str | None
    child_key: str | None
    tool_call_id: str | None
    evidence: tuple[NativeEvidence, ...]
    model_tool_ref: tuple[str, str] | None = None
    source_response_id: str | None = None
    target_response_id: str | None = None
    delivered_text: str | None = None
    note: str | None = None
    carried_forward: bool = True
    target_run_id: str | None = None


@dataclass(frozen=True)
class NativeIdentity:
    """How calls join participants: join values per basis -> participant keys.

    A value mapped to more than one participant makes the call `ambiguous`.
    """

    basis: JoinBasis
    keys: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class NativeCoverage:
    """Native outputs finalize must find among the captured calls.

    Per-id bases list the ids per participant; count bases give counts per participant.
    `tool_call_ids` (optional, with a count basis): per participant, the tool-call ids its
    native outputs carry; each must be emitted by one of its captured calls (Hermes
    `messages.tool_calls`, DeepSeek `assistant/message` tool calls).
    """

    basis: OutputCoverage
    ids: Mapping[str, frozenset[str]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    tool_call_ids: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class NativeLifecycle:
    status: LifecycleStatus
    pending_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class AssignedToolId:
    """A tool-call id the harness gave one tool call of an output that carried none.

    Gemini's API usually sends `functionCall` without an `id`; Gemini CLI then mints one
    and sends it back in later requests (the replayed `functionCall.id` and the
    `functionResponse.id`). `id` is that id as it appears on the wire; `name` is the tool
    the output called at that position (finalize uses the id only where the names agree).
    """

    name: str
    id: str


@dataclass(frozen=True)
class NativeCapture:
    """Everything an adapter read from the native logs of one attempt."""

    participants: tuple[NativeParticipant, ...]
    identity: NativeIdentity
    relations: tuple[NativeRelation, ...]
    coverage: NativeCoverage
    lifecycle: NativeLifecycle
    subtasks: SubtaskCapability
    problems: tuple[NativeProblem, ...] = ()
    # Optional cross-check: wire participant key -> native participant key, used to
    # compare what the headers say with what the native log says (never to attribute).
    wire_aliases: Mapping[str, str] = field(default_factory=dict)
    # Provider response id -> the ids the harness assigned to that output's tool calls,
    # in output order, when the HTTP output names none (Gemini). Finalize binds native
    # relations and derives `result_in_context` through them; never used to attribute.
    assigned_tool_ids: Mapping[str, tuple[AssignedToolId, ...]] = field(default_factory=dict)
    # Why the sample's main trajectory (root participant only) may not be exported,
    # per-call export unaffected: e.g. the root loaded tool definitions dynamically
    # (Codex `tool_search_output`), so no static tool list describes its requests.
    # Each entry starts with a fixed code (`dynamic_tools_loaded: …`).
    main_trajectory_blocked_by: tuple[str, ...] = ()
    # Provider response id -> identity facts the harness's store records for that output
    # (OpenClaw: `run_id`), added to the call's `native_identity` once the call is
    # attributed by that response id.
    call_native_ids: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # A tool-call id as outputs carry it -> the id the harness sends it back under in
    # later requests (OpenClaw strips non-alphanumerics for Chat and Messages:
    # `call_probe_1` -> `callprobe1`), by the harness's own rule over its store. Finalize
    # finds a call's results under it and records each mapping it used (`tool_id_map`).
    replayed_tool_ids: Mapping[str, str] = field(default_factory=dict)


def held_native(native: NativeCapture | None) -> NativeCapture | None:
    """`native` with every lone surrogate in its text replaced by U+FFFD and one
    `text_not_unicode` problem naming the fields where; `native` itself when none."""
    if native is None:
        return None
    places: list[str] = []
    kept = held_at(native, "", places)
    if not places:
        return native
    where = ", ".join(sorted(set(places)))
    message = (
        f"{where}: text that is not Unicode (a lone surrogate escape) is shown with U+FFFD "
        "in the record; raw/native/ keeps the exact bytes (kept unless --capture-debug off)"
    )
    problem = NativeProblem("text_not_unicode", message)
    return replace(kept, problems=(*kept.problems, problem))
