"""The one registry of harnesses, and the lookups every other layer derives from it.

`BUILTIN` lists each harness package's `HARNESS` once (`roller.harnesses.harness`). What
used to be a table per consumer is derived from the current `registry()`:
`harness_names()` (what `--harness` and a gateway credential may declare), `adapters()`
and `adapter_for` (what `roller collect` can launch), the identity `gate` and
`identify` (the wire identity under a declared harness), and, in their own modules, the
mock's tool roles (`roller.mock.roles`), export's injection wrappers
(`roller.export.injections`) and the acceptance profiles (`roller.acceptance.profiles`).
Tables that cannot be derived at run time (the import-linter independence list in
pyproject.toml, the tests' own per-harness tables) are checked against it by
completeness tests (tests/harnesses/test_registry.py).

`register(harness)` / `unregister(name)` add or remove a harness at run time (a plugin,
or a test's throwaway harness); every derived table follows, because each is computed
once per `Registry` value (`Registry.derived`) and a registration makes a new value.
Registration order is lookup order (the mock's tool preference across harnesses).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import Any, Final, TypeVar, cast

from roller.errors import UsageError
from roller.harnesses import (
    claude_code,
    codex,
    deepseek,
    gemini_cli,
    generic,
    hermes,
    openclaw,
    opencode,
    pi,
    qwen_code,
)
from roller.harnesses.base import HarnessAdapter
from roller.harnesses.harness import Harness
from roller.identity import BodyConversation, Gate, WireIdentity, WireProfile
from roller.identity import body_conversation_id as _body_conversation_id
from roller.identity import derive as _derive
from roller.identity.evidence import HeaderInput

T = TypeVar("T")

BUILTIN: Final[tuple[Harness, ...]] = (
    generic.HARNESS,
    claude_code.HARNESS,
    opencode.HARNESS,
    gemini_cli.HARNESS,
    pi.HARNESS,
    codex.HARNESS,
    deepseek.HARNESS,
    hermes.HARNESS,
    openclaw.HARNESS,
    qwen_code.HARNESS,
)
# The harness assumed where none was declared (a gateway call without a session row):
# any program, only roller's own headers read.
UNDECLARED: Final = generic.HARNESS.name


class Registry:
    """An immutable set of harnesses and what is derived from it (cached per value)."""

    def __init__(self, harnesses: Iterable[Harness]):
        self.harnesses: tuple[Harness, ...] = tuple(harnesses)
        self._by_name: dict[str, Harness] = {}
        for harness in self.harnesses:
            if harness.name in self._by_name:
                raise ValueError(f"harness {harness.name!r} is registered twice")
            self._by_name[harness.name] = harness
        self._derived: dict[Callable[[Registry], Any], Any] = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def get(self, name: str) -> Harness | None:
        return self._by_name.get(name)

    def adapters(self) -> tuple[HarnessAdapter, ...]:
        return tuple(h.adapter for h in self.harnesses if h.adapter is not None)

    def adapter(self, name: str) -> HarnessAdapter:
        harness = self._by_name.get(name)
        if harness is not None and harness.adapter is not None:
            return harness.adapter
        known = ", ".join(a.name for a in self.adapters())
        if harness is not None:
            raise UsageError(
                f"harness {name!r} is known on the wire only: roller cannot launch it "
                f"(launchable: {known})"
            )
        raise UsageError(f"unknown harness {name!r} (known: {known})")

    def wire(self, name: str) -> WireProfile:
        """The declared harness's wire profile; an unknown name gets an empty one (the
        gate then notes it as unknown and reads roller's headers only)."""
        harness = self._by_name.get(name)
        return harness.wire if harness is not None else WireProfile(harness=name)

    @cached_property
    def gate(self) -> Gate:
        return Gate.of(h.wire for h in self.harnesses)

    def derived(self, build: Callable[[Registry], T]) -> T:
        """`build(self)`, computed once for this registry value."""
        if build not in self._derived:
            self._derived[build] = build(self)
        return cast(T, self._derived[build])


# The current registry value; `register`/`unregister` replace it (never mutate it).
_CURRENT: list[Registry] = [Registry(BUILTIN)]


def registry() -> Registry:
    return _CURRENT[0]


def builtin() -> bool:
    """Whether the registry is the built-in one, as any fresh process has it (no harness
    registered or removed in this one)."""
    return _CURRENT[0].harnesses == BUILTIN


def register(harness: Harness) -> None:
    """Add a harness (ValueError when its name is taken)."""
    _CURRENT[0] = Registry((*_CURRENT[0].harnesses, harness))


def unregister(name: str) -> None:
    """Remove a registered harness (ValueError when there is none of that name)."""
    current = _CURRENT[0]
    if current.get(name) is None:
        raise ValueError(f"no harness {name!r} is registered")
    _CURRENT[0] = Registry(h for h in current.harnesses if h.name != name)


def harness_names() -> tuple[str, ...]:
    return registry().names


def adapters() -> tuple[HarnessAdapter, ...]:
    return registry().adapters()


def adapter_for(name: str) -> HarnessAdapter:
    return registry().adapter(name)


def identify(
    harness: str,
    headers: HeaderInput | None,
    body: object = None,
    roller: Mapping[str, str] | None = None,
    *,
    trust_roller: bool = True,
) -> WireIdentity:
    """`roller.identity.derive` under the declared `harness`, gated over every harness
    (`trust_roller`: whether roller's own `x-roller-*` headers may decide)."""
    current = registry()
    return _derive(
        current.wire(harness), headers, body, roller, gate=current.gate, trust_roller=trust_roller
    )


def body_conversation(harness: str, body: object) -> BodyConversation | None:
    """The body-level conversation id `body` carries for the declared `harness`."""
    return _body_conversation_id(registry().wire(harness), body)
