"""Reading captures: the only way export, view and validate see the data.

Strict: a record with an unknown field, a wrong type or a wrong schema string is an
error naming the file and line. A record written before a later change of its format is
first brought to the current shape by the converter chain (`roller.capture.compat`),
then validated as strictly; the chain runs only when the record does not validate as it
is. `iter_calls` streams; `read_attempt` gives the manifest, `Capture.calls` and
`Capture.relations`, sequences that read calls.jsonl / relations.jsonl again each time
they are iterated (a record at a time, so a reader that goes through them once holds one
record, whatever the capture's length), and read a file whole only when indexed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ValidationError

from roller.capture import manifest_json
from roller.capture.blob_store import BlobStore
from roller.capture.blobs import BlobError
from roller.capture.call_check import unread_context_call, unread_context_json
from roller.capture.compat import Upgrade, upgrade
from roller.capture.context import ParsedContext, context_json, parse_context
from roller.capture.context_reader import ContextReader
from roller.capture.files import sha256_hex
from roller.capture.layout import AttemptPaths
from roller.capture.models import CallRecord, Manifest, RelationRecord, RunConfig, SampleInfo
from roller.errors import CaptureFormatError

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


@dataclass(frozen=True)
class Capture:
    paths: AttemptPaths
    manifest: Manifest
    calls: Sequence[CallRecord]
    relations: Sequence[RelationRecord]


class Records(Sequence[M]):
    """A JSONL file's records as a sequence read from disk: iterating streams the file
    again (`read`, a record at a time); `len` counts its lines; indexing reads every
    record once and keeps them (a reader that needs random access pays for it, no
    other does)."""

    def __init__(self, path: Path, read: Callable[[], Iterator[M]]) -> None:
        self._path = path
        self._read = read
        self._kept: list[M] | None = None
        self._len: int | None = None

    def __iter__(self) -> Iterator[M]:
        return iter(self._kept) if self._kept is not None else self._read()

    def __len__(self) -> int:
        if self._len is None:
            self._len = len(self._kept) if self._kept is not None else _lines(self._path)
        return self._len

    @overload
    def __getitem__(self, index: int) -> M: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[M]: ...
    def __getitem__(self, index: int | slice) -> M | Sequence[M]:
        if self._kept is None:
            self._kept = list(self._read())
        return self._kept[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class CallRecords(Records[CallRecord]):
    """The calls of an attempt (`iter_calls`, contexts rebuilt whatever the layout)."""

    def __init__(self, paths: AttemptPaths) -> None:
        super().__init__(paths.calls, lambda: iter_calls(paths))
        self._paths = paths

    def shared(self) -> Iterator[CallRecord]:
        """The calls again, equal, their contexts read as `iter_calls_shared` reads them
        (those already kept, as they are)."""
        return iter(self._kept) if self._kept is not None else iter_calls_shared(self._paths)


def shared_calls(calls: Sequence[CallRecord]) -> Iterator[CallRecord]:
    """`calls` in order; a capture's on disk (`CallRecords`) with their contexts read once
    per conversation (`iter_calls_shared`)."""
    return calls.shared() if isinstance(calls, CallRecords) else iter(calls)


class RelationRecords(Records[RelationRecord]):
    """The relations of an attempt (`iter_relations`): derived relations grow with the
    square of a conversation's length, so a reader streams them rather than hold them."""

    def __init__(self, paths: AttemptPaths) -> None:
        super().__init__(paths.relations, lambda: iter_relations(paths))

    def read_by(self, read: Callable[[bytes], R]) -> Iterator[R]:
        """The relations again from disk, each line read by `read`, which raises what
        `validate_json(line, RelationRecord)` raises (`iter_jsonl`)."""
        return iter_jsonl(self._path, RelationRecord, read)


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))
    except OSError as exc:
        raise CaptureFormatError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])


def validate_json(data: bytes, model: type[M], context: dict[str, Any] | None = None) -> M:
    """`data` as `model`: as it is, or through the converter chain when it is an older
    shape of the record; otherwise the original `ValidationError`. `context` is the
    validation context (`roller.capture.manifest_json` passes its placeholders)."""
    try:
        return model.model_validate_json(data, context=context)
    except ValidationError:
        upgraded = _upgraded(data)
        if upgraded is None:
            raise
    # JSON mode again, so the converted record is held to exactly the same rules.
    return model.model_validate_json(json.dumps(upgraded.record), context=context)


def _upgraded(data: bytes) -> Upgrade | None:
    try:
        return upgrade(json.loads(data))
    except ValueError:  # not JSON at all: nothing to convert
        return None


def read_json_model(path: Path, model: type[M]) -> M:
    return _validated(path, _read_bytes(path), model, lambda data: validate_json(data, model))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CaptureFormatError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _validated(path: Path, data: bytes, model: type[M], read: Callable[[bytes], M]) -> M:
    try:
        return read(data)
    except ValidationError as exc:
        raise CaptureFormatError(
            f"{path}: not a valid {model.__name__}: {_first_error(exc)}"
        ) from exc


@overload
def iter_jsonl(path: Path, model: type[M]) -> Iterator[M]: ...
@overload
def iter_jsonl(path: Path, model: type[BaseModel], read: Callable[[bytes], R]) -> Iterator[R]: ...
def iter_jsonl(
    path: Path, model: type[BaseModel], read: Callable[[bytes], Any] | None = None
) -> Iterator[Any]:
    """The records of a JSONL file, one line read and validated at a time (by `read`
    when given, which raises what `validate_json(line, model)` raises, and may give a
    view of the record rather than the model: `relation_check`)."""
    read = read or (lambda line: validate_json(line, model))
    try:
        # A 256 KiB buffer: a call line is tens of KB, and the default 8 KiB buffer read
        # it in pieces and joined them (10k calls' 765 MB of lines: 0.61 -> 0.23 s; 1 MiB
        # saved ~0.08 s more, but a reader's memory is held to a fraction of a small file).
        fh = open(path, "rb", buffering=1 << 18)  # noqa: SIM115 (closed below, also when the caller stops)
    except OSError as exc:
        raise CaptureFormatError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                raise CaptureFormatError(f"{path}:{lineno}: last line is not terminated")
            try:
                yield read(line)
            except ValidationError as exc:
                raise CaptureFormatError(
                    f"{path}:{lineno}: not a valid {model.__name__}: {_first_error(exc)}"
                ) from exc


def read_manifest(paths: AttemptPaths) -> Manifest:
    """The manifest, its per-call lists held as numbers (`roller.capture.manifest_json`)."""
    path = paths.manifest

    def read(data: bytes) -> Manifest:
        return manifest_json.load(data, lambda text, ctx: validate_json(text, Manifest, ctx))

    return _validated(path, _read_bytes(path), Manifest, read)


def checked_call(line: bytes) -> CallRecord:
    """A calls.jsonl line read for a check: its context left unread when the fast path
    can (`roller.capture.call_check`), else read in full; the verdict is the same."""
    call = unread_context_call(line)
    return validate_json(line, CallRecord) if call is None else call


def iter_calls(paths: AttemptPaths, *, checking: bool = False) -> Iterator[CallRecord]:
    """The call records, each with its `context`, whatever the storage layout.

    compact/v3 (`context_ref`): the request body is rebuilt from contexts.blobs, must
    have `context_bytes` bytes and hash to `context_sha256`, and `context` is parsed from
    it as finalize parsed it (`roller.capture.context.parse_context`); the record then
    equals its compact/v2 twin. A body that does not rebuild or does not match is a
    `CaptureFormatError` naming the call. `checking`: for a check that looks at no
    context's value (`roller.capture.integrity`): a context inline in the line
    (compact/v2) is left unread, `CONTEXT_NOT_READ` unless null (`checked_call`: the
    same verdict); a stored one (compact/v3), which must be read to know whether it is
    null, is read by one `ContextReader` (a resent transcript parsed for what it adds,
    the contexts sharing their earlier calls' objects: a check changes none)."""
    if not paths.contexts.exists():
        calls = (
            iter_jsonl(paths.calls, CallRecord, checked_call)
            if checking
            else iter_jsonl(paths.calls, CallRecord)
        )
        for call in calls:
            if call.context_ref is not None:
                raise _no_store(paths, call)
            yield call
        return
    # (compact/v3's lines hold no context to skip: read in full, which is cheaper there.)
    parse = ContextReader().parse if checking else parse_context
    with BlobStore(paths.contexts) as store:
        for call in iter_jsonl(paths.calls, CallRecord):
            yield _stored_context(call, store, parse)[0]


def iter_calls_shared(paths: AttemptPaths) -> Iterator[CallRecord]:
    """`iter_calls`' records, equal, each context read by one `ContextReader`
    (`roller.capture.context_reader`): a context that extends a recent call's is parsed
    for what it adds, and holds that call's messages themselves, so a conversation's
    transcript, resent on every call, is read once (and a reader may remember what it
    made of a message by the message object, `roller.wire.item_views`). For a reader
    that changes no context. The contexts are read as finalize read them
    (`parse_context`'s meaning, Python's reader's); a compact/v2 line whose context that
    reader does not take, or that `checked_call`'s fast path leaves, is read as
    `iter_calls` reads it."""
    reader = ContextReader()
    if paths.contexts.exists():
        with BlobStore(paths.contexts) as store:
            for call in iter_jsonl(paths.calls, CallRecord):
                yield _stored_context(call, store, reader.parse)[0]
        return

    def read(line: bytes) -> CallRecord:
        fast = unread_context_json(line)
        if fast is None:
            return validate_json(line, CallRecord)
        checked, raw = fast  # (validated as a record, of the check's own class)
        context = None
        if raw is not None:
            parsed = reader.parse(raw)
            if parsed.error is not None:
                return validate_json(line, CallRecord)
            context = parsed.value
        fields = {**dict(checked), "context": context}
        return CallRecord.model_construct(checked.model_fields_set | {"context"}, **fields)

    for call in iter_jsonl(paths.calls, CallRecord, read):
        if call.context_ref is not None:
            raise _no_store(paths, call)
        yield call


def with_stored_context(call: CallRecord, store: BlobStore) -> CallRecord:
    """A compact/v3 record with its context rebuilt and checked (`iter_calls`)."""
    return _stored_context(call, store)[0]


def _stored_context(
    call: CallRecord, store: BlobStore, parse: Callable[[bytes], ParsedContext] = parse_context
) -> tuple[CallRecord, bytes | None]:
    """`with_stored_context`, and the context's record JSON (`ParsedContext.record_json`);
    `parse` reads the body as `parse_context` does."""
    if call.context_ref is None:
        return call, None if call.context is None else context_json(call.context)
    body = store.body(call.context_ref)
    if len(body) != call.context_bytes or sha256_hex(body) != call.context_sha256:
        raise BlobError(
            f"{store.path}: call {call.call_id}: the stored context does not match context_sha256"
        )
    parsed = parse(body)
    return call.model_copy(update={"context": parsed.value, "context_ref": None}), (
        parsed.record_json()
    )


def iter_context_json(paths: AttemptPaths) -> Iterator[tuple[CallRecord, bytes | None]]:
    """Each call record with its context as JSON, the bytes a compact/v2 record holds
    for it (`roller.capture.context.context_json`; None when it has none), without
    building the context where it is inline: the record's context is then left unread
    (`checked_call`'s fast path; `CONTEXT_NOT_READ`), its JSON taken from the line as it
    is, which finalize wrote by that serializer. A line the fast path leaves is read in
    full (`iter_calls`) and its context's JSON made from it; a compact/v3 record's
    context is read by one `ContextReader` (a resent transcript parsed for what it adds,
    the values sharing earlier calls' objects: for a reader that changes no context).
    What `roller export calls` writes a request from, unparsed."""
    if paths.contexts.exists():
        reader = ContextReader()
        with BlobStore(paths.contexts) as store:
            for call in iter_jsonl(paths.calls, CallRecord):
                yield _stored_context(call, store, reader.parse)
        return
    for call, context in iter_jsonl(paths.calls, CallRecord, _context_json):
        if call.context_ref is not None:
            raise _no_store(paths, call)
        yield call, context


def _no_store(paths: AttemptPaths, call: CallRecord) -> BlobError:
    return BlobError(
        f"{paths.calls}: call {call.call_id} references {paths.contexts.name}, which is missing"
    )


def _context_json(line: bytes) -> tuple[CallRecord, bytes | None]:
    read = unread_context_json(line)
    if read is not None:
        return read
    call = validate_json(line, CallRecord)
    return call, None if call.context is None else context_json(call.context)


class CallLines:
    """calls.jsonl's records by where their lines start, for a reader that needs every
    record's own fields but only a few contexts at a time (`roller.export.atif`):
    `light()` reads each record once with its context left unread (`checked_call`:
    `CONTEXT_NOT_READ` unless null; a compact/v3 line holds none) and says where its
    line starts; `whole(offsets)` reads those lines again in full, contexts included
    (compact/v3's rebuilt from the blob store), as `iter_calls` gives them."""

    def __init__(self, paths: AttemptPaths) -> None:
        self.paths = paths

    def light(self) -> Iterator[tuple[int, CallRecord]]:
        at = 0

        def read(line: bytes) -> tuple[int, CallRecord]:
            nonlocal at
            start, at = at, at + len(line)
            return start, checked_call(line)

        return iter_jsonl(self.paths.calls, CallRecord, read)

    def whole(self, offsets: Sequence[int]) -> list[CallRecord]:
        """The records whose lines start at `offsets` (as `light` gave them), in full."""
        path = self.paths.calls
        calls: list[CallRecord] = []
        try:
            with open(path, "rb") as fh:
                for offset in offsets:
                    fh.seek(offset)
                    line = fh.readline()
                    if not line.endswith(b"\n"):
                        raise CaptureFormatError(
                            f"{path}: no whole line at byte {offset}: the file changed since"
                        )
                    calls.append(_validated(path, line, CallRecord, _read_call))
        except OSError as exc:
            raise CaptureFormatError(f"cannot read {path}: {exc.strerror or exc}") from exc
        if not self.paths.contexts.exists():
            for call in calls:
                if call.context_ref is not None:
                    raise _no_store(self.paths, call)
            return calls
        with BlobStore(self.paths.contexts) as store:
            return [with_stored_context(call, store) for call in calls]


def _read_call(line: bytes) -> CallRecord:
    return validate_json(line, CallRecord)


def iter_relations(paths: AttemptPaths) -> Iterator[RelationRecord]:
    return iter_jsonl(paths.relations, RelationRecord)


def read_attempt(path: Path | AttemptPaths) -> Capture:
    paths = path if isinstance(path, AttemptPaths) else AttemptPaths(Path(path))
    return Capture(
        paths=paths,
        manifest=read_manifest(paths),
        calls=CallRecords(paths),
        relations=RelationRecords(paths),
    )


def read_run_config(path: Path) -> RunConfig:
    return read_json_model(path, RunConfig)


def read_sample_info(path: Path) -> SampleInfo:
    return read_json_model(path, SampleInfo)


def dump_json(model: BaseModel) -> bytes:
    """Pretty JSON for small human-facing files (run.json, sample.json)."""
    return (json.dumps(model.model_dump(by_alias=True, mode="json"), indent=2) + "\n").encode()
