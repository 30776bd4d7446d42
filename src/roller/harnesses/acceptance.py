"""What an acceptance scenario is, what it implies, and how a harness adjusts it: data only.

A `Scenario` names a mock scenario, a prompt and the collect options, and carries an
`Expect`: the facts a correct capture of that run must show. An `AcceptanceProfile`
says, per harness, which scenarios it cannot express (reported `NOT_APPLICABLE`, never
counted as passed) and how the others differ (`ScenarioOverride`: another mock file,
extra launch options, changed expectations).

These types live in the harness layer, below `roller.acceptance` (which drives
`roller collect` and so sits at the top), because each harness package declares its own
acceptance profile (`roller.harnesses.<name>.acceptance`) next to its other facts; the
suite finds it through the registry. The common scenario table itself stays in
`roller.acceptance.scenarios`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roller.capture.models import LifecycleStatus, RelationType


@dataclass(frozen=True)
class ToolResultExpect:
    """A tool result some root call's actual input must carry.

    `contains`: a substring of the result text; `error`: the result's `is_error` must be
    this when the protocol records it (a protocol without the flag is not held to it).
    """

    contains: str
    error: bool | None = None


@dataclass(frozen=True)
class Expect:
    """What a correct capture of the scenario shows (checked by `roller.acceptance.checks`).

    Always checked, whatever the fields: the harness exited 0, the capture validates and
    is complete, every call the harness made is in calls.jsonl (its count equals the
    native count and, against the mock, the number of requests the mock served), every
    call's context is exactly the body on the tape, every generation call is attributed
    and exportable, no relation is `unknown`, no credential value is on disk.
    """

    children: int = 0
    max_depth: int = 0
    # relation type -> minimum number of `established` relations of that type
    relations: Mapping[RelationType, int] = field(default_factory=dict)
    forbidden_relations: frozenset[RelationType] = frozenset()
    lifecycle: LifecycleStatus = "complete"
    # two children got the same prompt: they must still be two participants
    identical_children: bool = False
    root_tool_result: ToolResultExpect | None = None
    # every child call offers exactly these tools (None: not checked)
    child_tools: frozenset[str] | None = None
    # every child call's offered tools / model differ from every root call's
    child_tools_differ: bool = False
    child_model_differs: bool = False
    # the child started from a copy of its parent's history (a fork): its first call
    # carries the root's first prompt, and is still the child's call
    child_forked_from_root: bool = False
    # substrings each of which some `capabilities.notes` entry must contain (a native
    # fact the adapter reports, e.g. a spawn the harness refused)
    capability_notes: tuple[str, ...] = ()
    # every call a child's result was delivered to by notification names the native id of
    # that notification (`native_identity.notification_id`) starting with this (OpenClaw's
    # announce id), and there is at least one
    notification_id_prefix: str | None = None


@dataclass(frozen=True)
class Scenario:
    """One acceptance scenario.

    `mock` is a built-in mock scenario name or a file name under
    `roller/acceptance/scenarios/`. The prompt is plain English so the same scenario
    can run against a real provider (the mock ignores it; it must never contain the
    mock's `ROLLER-SUBTASK` marker, which would make the root look like a child).
    `follow_up`: later prompts, each run as the next turn of the same conversation
    (`roller collect --prompt A --prompt B`; a harness that can resume).
    """

    name: str
    mock: str
    prompt: str
    expect: Expect
    capture_calls: bool = True
    options: Mapping[str, str] = field(default_factory=dict)
    summary: str = ""
    follow_up: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScenarioOverride:
    """A harness's difference from the common scenario (None / empty: unchanged)."""

    mock: str | None = None
    prompt: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    expect: Mapping[str, Any] = field(default_factory=dict)  # Expect field -> value
    follow_up: tuple[str, ...] | None = None

    def apply(self, scenario: Scenario) -> Scenario:
        return dataclasses.replace(
            scenario,
            mock=self.mock or scenario.mock,
            prompt=self.prompt or scenario.prompt,
            follow_up=self.follow_up if self.follow_up is not None else scenario.follow_up,
            options={**scenario.options, **self.options},
            expect=dataclasses.replace(scenario.expect, **self.expect),
        )


@dataclass(frozen=True)
class AcceptanceProfile:
    """How one harness runs the common scenarios.

    `harness`: the harness name. `credential_env`: the variables the harness reads its
    provider key from; against the mock each gets a fresh random test value (then
    searched for on disk), against a real provider the caller names the variables to
    pass (`--credential-env`).
    `mock_model`: the model to ask for against the mock when the caller names none (a
    harness whose default model changes its request shape, e.g. Codex's catalog models).
    `mode` names this way of running the harness when it has several (`other_modes`: the
    others, each a whole profile with its own mode, model and adjustments; the suite
    runs every scenario once per mode and reports each).
    """

    harness: str
    credential_env: tuple[str, ...]
    not_applicable: Mapping[str, str] = field(default_factory=dict)  # scenario -> why
    overrides: Mapping[str, ScenarioOverride] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)  # for every scenario
    timeout_s: float = 120.0
    mock_model: str | None = None
    # A harness without any delegation tool: every scenario that expects a child is not
    # applicable, for this reason.
    no_delegation: str | None = None
    mode: str | None = None
    other_modes: tuple[AcceptanceProfile, ...] = ()
    # Scenarios only this harness runs, after the common ones (a form of delegation
    # only it has, e.g. one call that starts several children).
    extra_scenarios: tuple[Scenario, ...] = ()
    # The profile to use instead when a run sets a launch option to a value that changes
    # what the harness can do: `"KEY=VALUE" -> profile` (DeepSeek `profile=sdk`).
    variants: Mapping[str, AcceptanceProfile] = field(default_factory=dict)

    @property
    def modes(self) -> tuple[AcceptanceProfile, ...]:
        """This profile and its other modes, in that order."""
        return (self, *self.other_modes)

    def for_options(self, options: Mapping[str, str]) -> AcceptanceProfile:
        """This profile, or the variant the run's launch options select."""
        for selector, variant in self.variants.items():
            key, _, value = selector.partition("=")
            if options.get(key) == value:
                return variant
        return self

    def resolve(self, scenario: Scenario) -> Scenario | str:
        """The scenario as this harness runs it, or the reason it is not applicable."""
        reason = self.not_applicable.get(scenario.name)
        if reason is None and scenario.expect.children and self.no_delegation is not None:
            reason = self.no_delegation
        if reason is not None:
            return reason
        resolved = dataclasses.replace(scenario, options={**self.options, **scenario.options})
        override = self.overrides.get(scenario.name)
        return override.apply(resolved) if override is not None else resolved


# The relations every delegation establishes, whatever its mode: the spawn, the result
# reaching the parent, the child's completion, and the result in a later parent input.
# A background delegation adds the launch acknowledgement and its entry into a later
# parent input (never taken for completion).
_DELEGATION: tuple[RelationType, ...] = (
    "spawn",
    "result_delivered",
    "child_completed",
    "result_in_context",
)
_BACKGROUND: tuple[RelationType, ...] = ("launch_acknowledged", "launch_ack_in_context")


def delegation_relations(children: int, background: bool = False) -> dict[RelationType, int]:
    """Minimum established relations for `children` delegations of one kind."""
    types = _DELEGATION + (_BACKGROUND if background else ())
    return dict.fromkeys(types, children)


def background_default(children: int) -> ScenarioOverride:
    """For a harness that delegates in the background unless told otherwise: the
    scenario's delegations also show the launch acknowledgement."""
    return ScenarioOverride(expect={"relations": delegation_relations(children, background=True)})
