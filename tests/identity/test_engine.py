"""The identity engine is generic: its rule kinds work under any header names.

`roller.identity` names no harness; a harness is a `WireProfile` of rule kinds
parametrized by its header names. Shown here two ways: (1) each registered profile,
renamed (every header it reads gets another name, the harness another name), derives
the same keys from the same requests with the headers renamed; (2) made-up profiles gate
each other exactly as registered ones do, and `derive` without a gate knows only its
own profile. (That no engine module names a harness is tests/harnesses/test_harness_literals.py.)
"""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from roller.harnesses.registry import BUILTIN
from roller.identity import (
    AgentScoped,
    BodyField,
    Gate,
    SessionHeader,
    WireIdentity,
    WireProfile,
    derive,
)
from roller.identity.lineage import BodyLineage
from roller.identity.threads import ThreadSession

from .invariants import assert_invariants

WITH_RULES = [h.wire for h in BUILTIN if h.wire.rule is not None]
KEYS = (
    "session_key",
    "participant_key",
    "parent_key",
    "is_child",
    "session_key_is_root",
    "agent_id",
    "parent_agent_id",
    "thread_id",
    "agent_name",
)


def _renamed(name: str) -> str:
    return f"x-alt-{name}"


def renamed_profile(profile: WireProfile) -> WireProfile:
    """The same profile with every header it reads renamed (and another harness name)."""
    rule = profile.rule
    assert rule is not None
    changes: dict[str, Any] = {}
    for f in fields(rule):  # type: ignore[arg-type]
        value = getattr(rule, f.name)
        if f.name == "name":
            changes[f.name] = "alt-headers"
        elif isinstance(value, str) and value in rule.headers():
            changes[f.name] = _renamed(value)
        elif isinstance(value, tuple) and value and all(v in rule.headers() for v in value):
            changes[f.name] = tuple(_renamed(v) for v in value)
        elif f.name == "metadata":
            changes[f.name] = replace(value, header=_renamed(value.header))
    return replace(profile, harness="alt", rule=replace(rule, **changes))  # type: ignore[type-var]


def _field(name: str, headers: tuple[str, ...]) -> str:
    # Evidence and rejection fields start with the header they came from (or `body.`).
    for header in sorted(headers, key=len, reverse=True):
        if name == header or name.startswith(f"{header}."):
            return _renamed(header) + name[len(header) :]
    return name


def comparable(identity: WireIdentity, headers: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        **{k: getattr(identity, k) for k in KEYS},
        "evidence": {_field(k, headers): v for k, v in identity.evidence.items()},
        "rejected": sorted(_field(r.field, headers) for r in identity.rejected),
    }


pool = st.sampled_from(["s1", "s2", "a1", "t1", "", "a:b", "x" * 201])
json_ids = st.fixed_dictionaries(
    {}, optional={k: pool for k in ("session_id", "thread_id", "parent_thread_id", "agent_name")}
)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), profile=st.sampled_from(WITH_RULES))
def test_a_renamed_profile_derives_the_same_keys(data: st.DataObject, profile: WireProfile) -> None:
    own = profile.rule.headers()  # type: ignore[union-attr]
    names = data.draw(st.lists(st.sampled_from(own), max_size=len(own) + 1))
    headers = {}
    for name in names:
        headers[name] = (
            data.draw(json_ids.map(json.dumps)) if "metadata" in name else data.draw(pool)
        )
    session = data.draw(
        st.fixed_dictionaries(
            {}, optional={"id": pool, "parentSession": pool, "delegationDepth": st.integers(0, 2)}
        )
    )
    body = {"dsh_session_log": {"session": session}, "prompt_cache_key": data.draw(pool)}
    original = derive(profile, headers, body)
    renamed = derive(renamed_profile(profile), {_renamed(k): v for k, v in headers.items()}, body)
    assert_invariants(renamed)
    assert comparable(renamed) == comparable(original, own)
    assert renamed.harness == "alt"
    assert renamed.rule == ("alt-headers" if original.rule == profile.rule.name else original.rule)  # type: ignore[union-attr]


def test_every_rule_kind_is_renamable() -> None:
    kinds = {type(p.rule) for p in WITH_RULES}
    assert {AgentScoped, ThreadSession, BodyLineage, SessionHeader} <= kinds
    for profile in WITH_RULES:
        renamed = renamed_profile(profile).headers()
        assert renamed == tuple(_renamed(h) for h in profile.headers())


ONE = WireProfile(
    "one", rule=SessionHeader("one-header", "x-one"), install_scoped=("x-one-install",)
)
TWO = WireProfile(
    "two",
    rule=AgentScoped("two-headers", "x-two-session", "x-two-agent", "x-two-parent"),
    body=BodyField(("conversation",), prefix="two:"),
)
GATE = Gate.of((ONE, TWO))


def test_made_up_profiles_gate_each_other() -> None:
    request = {"x-one": "s1", "x-two-session": "s2", "x-one-install": "i"}
    one = derive(ONE, request, gate=GATE)
    assert (one.rule, one.session_key) == ("one-header", "s1")
    assert dict(one.rejected) == {
        "x-two-session": "header of two, not trusted for declared harness one",
        "x-one-install": "install-scoped id, never a session key",
    }
    two = derive(TWO, request, {"conversation": "two:c1"}, gate=GATE)
    assert (two.rule, two.session_key, two.participant_key) == ("two-headers", "s2", "s2")
    assert dict(two.rejected)["x-one"] == "header of one, not trusted for declared harness two"
    assert dict(two.rejected)["body.conversation"] == "differs from the session the headers name"
    body_only = derive(TWO, {}, {"conversation": "two:c1"}, gate=GATE)
    assert (body_only.rule, body_only.session_key) == ("body-conversation-id", "c1")


def test_a_name_the_gate_does_not_know_reads_only_roller_headers() -> None:
    stranger = derive(WireProfile("three"), {"x-one": "s1", "x-roller-session-id": "r"}, gate=GATE)
    assert (stranger.rule, stranger.session_key) == ("roller-headers", "r")
    assert ("harness", "unknown harness name; only roller headers are read") in stranger.rejected


def test_without_a_gate_only_the_profile_itself_is_known() -> None:
    alone = derive(ONE, {"x-one": "s1", "x-two-session": "s2"})
    assert alone.session_key == "s1"
    assert alone.rejected == ()  # it has never heard of `two`
