"""Injected-message wrappers: how a harness marks input it wrote itself, as data.

Some input items of a root call were not written by a person: a harness delivers a
background child's completion, or its own reminders, as input, inside a wrapper of its
own. Each harness package declares its wrappers (`InjectionWrappers`);
`roller.export.injections` recognizes them, for the declared harness only — never by
guessing from free text.

Shapes (each names the `InjectionKind` it marks and how the injection binds to the
relation that delivered it: `tool_call_id` — the id the wrapper names is the delivered
tool call's; `child` — the id names an agent among the child participant's native ids;
None — it binds to nothing):
- `TypedItem`: an input item of its own `type`, naming the string in `names_field`;
- `ElementPart`: a text part that is one whole element `<open>…</close>`, whose content is
  JSON naming the string under `names_key` (or names nothing);
- `NotificationPart`: a text part opening with one of `openings` and holding a whole
  `element` (a `trailer` after it is allowed), naming what `names` (a regex, group 1)
  finds inside;
- `MarkedPart`: a text part whose start matches `marker` (a regex: OpenClaw stamps its
  announce block with a date first), naming what `names` (group 1) finds inside. With
  `bars_unbound`, such a notification that binds to no delivered result bars the main
  trajectory (`notification_unbound`): the harness's own store is the only proof of which
  run it belongs to, so an unbound one cannot be placed.
Only top-level parts of a message whose role is in `roles` (and, with `message_type`,
whose item `type`, absent meaning `message`, is that) are examined; the first part
shape that matches a part wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from roller.capture.trajectory_record import InjectionKind

Binding = Literal["tool_call_id", "child"]


@dataclass(frozen=True)
class TypedItem:
    kind: InjectionKind
    item_type: str
    names_field: str
    binds: Binding | None = None


@dataclass(frozen=True)
class ElementPart:
    kind: InjectionKind
    open: str
    close: str
    names_key: str | None = None
    binds: Binding | None = None


@dataclass(frozen=True)
class NotificationPart:
    kind: InjectionKind
    element: tuple[str, str]
    openings: tuple[str, ...]
    names: re.Pattern[str]
    trailer: str = ""
    binds: Binding | None = None


@dataclass(frozen=True)
class MarkedPart:
    kind: InjectionKind
    marker: re.Pattern[str]
    names: re.Pattern[str]
    binds: Binding | None = None
    bars_unbound: bool = False


PartShape = ElementPart | NotificationPart | MarkedPart


@dataclass(frozen=True)
class InjectionWrappers:
    """One harness's wrappers (see the module docstring); empty: it injects nothing."""

    items: tuple[TypedItem, ...] = ()
    roles: tuple[str, ...] = ()
    message_type: str | None = None
    parts: tuple[PartShape, ...] = ()
