"""A harness declared only in the test tree is registered, gated, launched and finalized.

`tests/harnesses/throwaway_harness/` is a harness package like those under
`roller/harnesses/`: a wire profile, tool hints, a wrapper, option descriptors and an
adapter. Registering it (and nothing else: no source file is edited) makes every
harness-keyed table of roller know it: the names a gateway credential may declare, the
identity gate, `roller collect`'s adapters, the mock's tool roles and export's injection
wrappers. The collect test runs its agent as a real subprocess against the mock model,
through the proxy, and finalize attributes the calls from its profile alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roller.capture.integrity import validate_attempt
from roller.capture.reader import read_attempt
from roller.collect.collection import RunRequest, collect_run
from roller.collect.runs import RunSpec
from roller.collect.session import AttemptDone
from roller.collect.tasks import Task
from roller.errors import ConfigError, UsageError
from roller.gateway.config import check_harness
from roller.harnesses import adapter_for, harness_names, identify, register, registry, unregister
from roller.harnesses.base import LaunchRequest, ScratchDirs
from roller.mock.roles import CallSpec, resolve_call, role_of
from tests.harnesses import throwaway_harness as throwaway
from tests.mock import views


@pytest.fixture
def registered() -> Iterator[None]:
    before = registry()
    register(throwaway.HARNESS)
    try:
        yield
    finally:
        unregister(throwaway.NAME)
    assert registry().names == before.names


def test_unregistered_it_is_unknown_everywhere() -> None:
    assert throwaway.NAME not in harness_names()
    with pytest.raises(UsageError, match="unknown harness 'throwaway'"):
        adapter_for(throwaway.NAME)
    with pytest.raises(ConfigError):
        check_harness(throwaway.NAME)
    identity = identify(throwaway.NAME, {throwaway.SESSION_HEADER: "s1"})
    assert identity.rule == "none"
    assert ("harness", "unknown harness name; only roller headers are read") in identity.rejected


def test_registered_every_harness_table_knows_it(registered: None) -> None:
    assert harness_names()[-1] == throwaway.NAME
    assert adapter_for(throwaway.NAME) is throwaway.HARNESS.adapter
    assert check_harness(throwaway.NAME) == throwaway.NAME
    gate = registry().gate
    for header in (throwaway.SESSION_HEADER, throwaway.AGENT_HEADER, throwaway.PARENT_HEADER):
        assert gate.owners[header] == frozenset({throwaway.NAME})
    assert throwaway.INSTALL_HEADER in gate.install_scoped
    assert role_of(throwaway.SPAWN_TOOL) == "spawn"


def test_its_headers_are_trusted_for_it_and_rejected_for_every_other(registered: None) -> None:
    headers = {
        throwaway.SESSION_HEADER: "s1",
        throwaway.AGENT_HEADER: "a1",
        throwaway.INSTALL_HEADER: "install-1",
    }
    own = identify(throwaway.NAME, headers)
    assert (own.rule, own.session_key, own.participant_key, own.parent_key) == (
        throwaway.RULE,
        "s1",
        "s1:a1",
        "s1",
    )
    assert "install-1" not in own.evidence.values()
    assert dict(own.rejected) == {
        throwaway.INSTALL_HEADER: "install-scoped id, never a session key"
    }
    for other in harness_names():
        if other == throwaway.NAME:
            continue
        foreign = identify(other, headers)
        assert foreign.session_key is None and foreign.rule == "none", other
        assert dict(foreign.rejected)[throwaway.SESSION_HEADER] == (
            f"header of {throwaway.NAME}, not trusted for declared harness {other}"
        )
    # and the other way round: another harness's header is rejected under it
    claude = identify(throwaway.NAME, {"x-claude-code-session-id": "s2"})
    assert claude.rule == "none"
    assert (
        "not trusted for declared harness throwaway"
        in dict(claude.rejected)["x-claude-code-session-id"]
    )


def test_the_mock_resolves_its_spawn_tool_with_its_constants(registered: None) -> None:
    tool = {"type": "function", "name": throwaway.SPAWN_TOOL, "parameters": _schema()}
    view = views.responses("go", tools=[tool])
    call = resolve_call(CallSpec(role="spawn", params={"prompt": "p"}), view)
    assert call is not None and call.name == throwaway.SPAWN_TOOL
    assert call.arguments == {"prompt": "p", "kind": "helper"}


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"prompt": {"type": "string"}, "kind": {"type": "string"}},
        "required": ["prompt"],
    }


def test_its_launch_plan_comes_from_its_option_descriptors(
    registered: None, tmp_path: Path
) -> None:
    adapter = adapter_for(throwaway.NAME)
    dirs = ScratchDirs(tmp_path / "home", tmp_path / "tmp", tmp_path / "work")

    def plan(**options: str) -> Any:
        return adapter.launch_plan(
            LaunchRequest(
                prompt="p",
                command=(),
                dirs=dirs,
                base_urls={"openai": "http://127.0.0.1:9/v1"},
                credentials={"OPENAI_API_KEY": "k"},
                model=None,
                capture_calls=False,
                timeout_s=10.0,
                install_dir=None,
                options=options,
            )
        )

    default = plan()
    assert default.argv[-2:] == ("--depth", "1")
    assert default.env["THROWAWAY_GREETING"] == "hello"
    chosen = plan(greeting="hi", depth="3")
    assert chosen.argv[-2:] == ("--depth", "3") and chosen.env["THROWAWAY_GREETING"] == "hi"
    assert chosen.secret_env == frozenset({"OPENAI_API_KEY"})
    with pytest.raises(UsageError, match="throwaway option depth must be an integer from 0 to 3"):
        plan(depth="9")
    with pytest.raises(UsageError, match=r"unknown throwaway option\(s\) colour"):
        plan(colour="red")


@pytest.fixture
def collected(registered: None, tmp_path: Path) -> AttemptDone:
    spec = RunSpec(
        harness=throwaway.NAME,
        harness_version=None,
        api_base="mock:plain",
        capture_calls=False,
        capture_debug="on-error",
        options={"greeting": "bonjour", "depth": "2"},
        timeout_s=60.0,
    )
    request = RunRequest(tmp_path / "run", spec, task=Task("sample-0001", ("Say done.",)))
    (sample,) = asyncio.run(collect_run(request)).samples
    assert sample.last is not None
    return sample.last


def test_collected_through_roller_collect_and_attributed_by_its_profile(
    collected: AttemptDone,
) -> None:
    assert (collected.launch.exit_code, collected.manifest.execution_status) == (0, "completed")
    assert collected.manifest.capture_status == "complete"
    assert collected.manifest.harness.name == throwaway.NAME
    assert validate_attempt(collected.attempt).ok
    capture = read_attempt(collected.attempt)
    assert len(capture.calls) == 3
    assert all(c.identity_status == "attributed" for c in capture.calls)
    assert {c.attribution.basis for c in capture.calls} == {f"wire:{throwaway.RULE}"}
    by_key = {c.attribution.key: c.participant_id for c in capture.calls}
    root, child1, child2 = (
        by_key["throwaway-session-1"],
        by_key["throwaway-session-1:child1"],
        by_key["throwaway-session-1:child2"],
    )
    parents = {
        p.participant_id: (p.role, p.depth, p.parent_participant_id)
        for p in capture.manifest.participants
    }
    assert parents == {
        root: ("root", 0, None),
        child1: ("child", 1, root),
        child2: ("child", 2, child1),
    }
    # the option reached the process: the greeting is in what the children sent
    assert capture.calls[1].context["messages"][0]["content"] == "bonjour from child1"


def test_its_wrapper_is_recognized_in_the_main_trajectory(collected: AttemptDone) -> None:
    trajectory = collected.trajectory
    assert trajectory.export_status == "exportable"
    (segment,) = trajectory.segments
    first = segment.messages[0]
    assert first.injected
    assert [(i.kind, i.wrapper) for i in first.injections] == [
        ("system_reminder", throwaway.NOTE[0])
    ]
