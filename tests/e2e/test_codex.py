"""Codex 0.171.0, the real binary, end to end: every acceptance scenario through
`roller collect` against the mock model (`roller.acceptance`, the same code as
`scripts/test_subagents_e2e.py --harness codex`) in both of its modes — function tools
(`mock-model`) and code mode (the catalog default) —, both multi-agent tool generations,
spawns made inside code-mode `exec` scripts, a resumed second turn, and the
no-delegation mode.

The binary is installed into roller's cache by `roller harness install` when missing
(CI keeps the cache); these tests never skip. The scenarios run concurrently once per
session; each test reports one scenario.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from roller.acceptance.profiles import profile_for
from roller.acceptance.runner import Outcome
from roller.acceptance.scenarios import SCENARIO_NAMES
from roller.capture.models import CallRecord
from roller.capture.reader import Capture, read_attempt
from roller.capture.tape import read_tape
from roller.collect.launcher import run_plan
from roller.collect.session import base_urls
from roller.export.trajectory import build_trajectory as trajectory
from roller.harnesses.base import LaunchRequest, ScratchDirs
from roller.harnesses.codex import CodexAdapter, catalog, confirmed_root_thread
from roller.harnesses.install import Installed
from roller.mock.scenario_files import load_scenario
from roller.mock.server import MockModel
from roller.proxy.routing import Upstreams
from roller.proxy.server import ProxyConfig, ProxyServer
from tests.support.captures import roller
from tests.support.e2e import acceptance, installed, without_provider_keys

pytestmark = pytest.mark.e2e

PROFILE = profile_for("codex")


@pytest.fixture(scope="session")
def codex() -> Installed:
    return installed("codex")


MODES = {m.mode: m for m in PROFILE.modes}
FUNCTION_TOOLS = "function-tools"
CODE_MODE = "code-mode"


@pytest.fixture(scope="session")
def outcomes(codex: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every scenario in every mode, by `mode/scenario`."""
    return acceptance("codex", tmp_path_factory.mktemp("acceptance"))


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_acceptance_scenario(outcomes: dict[str, Outcome], mode: str, name: str) -> None:
    outcome = outcomes[f"{mode}/{name}"]
    if name in MODES[mode].not_applicable:  # reported, never counted as passed
        assert outcome.verdict == "NOT_APPLICABLE", outcome
        return
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)


def _capture(outcome: Outcome) -> Capture:
    assert outcome.run_dir is not None
    (attempt,) = sorted(outcome.run_dir.glob("samples/*/capture/attempt-*"))
    return read_attempt(attempt)


def _header(call: CallRecord, name: str) -> str | None:
    return next((v for k, v in call.request.headers if k.lower() == name), None)


@pytest.mark.parametrize(
    ("name", "namespace"),
    [
        ("function-tools/single", "multi_agent_v1"),
        ("function-tools/fork", "collaboration"),
        ("code-mode/single", "collaboration"),
    ],
)
def test_spawn_model_tool_ref_matches_both_ids_in_the_parents_http_output(
    outcomes: dict[str, Outcome], name: str, namespace: str
) -> None:
    capture = _capture(outcomes[name])
    (spawn,) = [r for r in capture.relations if r.type == "spawn"]
    ref = spawn.model_tool_ref
    assert spawn.status == "established" and ref is not None and ref.matched
    source = next(c for c in capture.calls if c.call_id == spawn.source_call_id)
    assert source.output is not None
    items = [i for i in source.output["output"] if i.get("type") == "function_call"]
    assert [(i["namespace"], i["name"], i["call_id"], i["id"]) for i in items] == [
        (namespace, "spawn_agent", ref.call_id, ref.item_id)
    ]
    child = next(p for p in capture.manifest.participants if p.role == "child")
    assert spawn.child_participant_id == child.participant_id
    # the child's calls carry the thread id the native log gave it, and name the parent,
    # which finalize found to be the native parent too
    for call in capture.calls:
        if call.call_id in child.call_ids:
            assert _header(call, "thread-id") == child.native_ids["thread_id"]
            assert _header(call, "x-codex-parent-thread-id") == _header(source, "thread-id")
            assert call.attribution.parent_cross_check == "agree"


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("scenario", ["single", "parallel", "nested", "fork"])
def test_every_child_call_names_its_native_parent(
    outcomes: dict[str, Outcome], mode: str, scenario: str
) -> None:
    """The parent on a real child's wire is the parent its rollout and spawn edge name,
    at every depth; a root's calls name none."""
    capture = _capture(outcomes[f"{mode}/{scenario}"])
    roles = {p.participant_id: p.role for p in capture.manifest.participants}
    checks = {
        role: {
            c.attribution.parent_cross_check
            for c in capture.calls
            if roles.get(c.participant_id or "") == role
        }
        for role in ("root", "child")
    }
    assert checks == {"root": {None}, "child": {"agree"}}
    assert "parent_disagreement" not in {e.code for e in capture.manifest.capture_errors}


def test_v2_warm_fork_child_call_carries_the_parent_prefix_as_sent(
    outcomes: dict[str, Outcome],
) -> None:
    capture = _capture(outcomes["function-tools/fork"])
    child = next(p for p in capture.manifest.participants if p.role == "child")
    root = next(p for p in capture.manifest.participants if p.role == "root")
    first = next(c for c in capture.calls if c.call_id == child.call_ids[0])
    metadata = json.loads(_header(first, "x-codex-turn-metadata") or "{}")
    assert metadata["history_initialization"] == "warm_fork"
    root_first = next(c for c in capture.calls if c.call_id == root.call_ids[0])
    copied = root_first.context["input"][1:]  # item 0: each thread's own instructions item
    assert first.context["input"][1 : 1 + len(copied)] == copied
    assert first.participant_id == child.participant_id and first.call_id not in root.call_ids
    assert child.native_ids["forked_from_id"] == root.native_ids["thread_id"]


def test_resume_continues_the_confirmed_root_thread(codex: Installed, tmp_path: Path) -> None:
    """Two turns in one CODEX_HOME: the second resumes the thread the native logs
    confirm as the root, and its requests carry that thread id."""
    adapter = CodexAdapter()
    dirs = ScratchDirs(home=tmp_path / "home", tmp=tmp_path / "tmp", work=tmp_path / "work")
    for d in (dirs.home, dirs.tmp, dirs.work):
        d.mkdir()

    async def run() -> tuple[str, int]:
        mock = await MockModel(load_scenario("spawn-one")).serve()
        proxy = ProxyServer(ProxyConfig(tape_dir=tmp_path / "tape", upstreams=Upstreams(mock.url)))
        try:
            request = LaunchRequest(
                prompt="Use one subagent.",
                command=(),
                dirs=dirs,
                base_urls=base_urls(await proxy.start()),
                credentials={"OPENAI_API_KEY": "sk-roller-e2e-placeholder"},
                model="mock-model",
                capture_calls=True,
                timeout_s=120,
                install_dir=codex.root,
            )
            first = await run_plan(adapter.launch_plan(request), tmp_path / "turn1")
            assert first.exit_code == 0, first
            await proxy.wait_idle(10)
            adapter.collect_native(dirs, tmp_path / "native1")
            native = adapter.read_native(tmp_path / "native1")
            assert native is not None
            root = confirmed_root_thread(native)
            turn_one = proxy.exchanges
            second = dataclasses.replace(request, prompt="Reply once more.")
            again = await run_plan(adapter.resume_plan(second, root), tmp_path / "turn2")
            assert again.exit_code == 0, again
            await proxy.wait_idle(10)
        finally:
            await proxy.stop()
            await mock.close()
        return root, turn_one

    root, turn_one = asyncio.run(run())
    heads = [
        {k.lower(): v for k, v in ex.request.headers}
        for ex in read_tape(tmp_path / "tape").exchanges
    ]
    turn_two = heads[turn_one:]
    assert turn_two and all((h["thread-id"], h["session-id"]) == (root, root) for h in turn_two)
    adapter.collect_native(dirs, tmp_path / "native")
    native = adapter.read_native(tmp_path / "native")
    assert native is not None and native.problems == ()
    assert [p.key for p in native.participants if p.role == "root"] == [root]
    # one thread across both turns: its native outputs are every root request on the wire
    assert native.coverage.counts[root] == sum(1 for h in heads if h["thread-id"] == root)
    assert len({h["thread-id"] for h in heads}) == len(native.participants)


def test_without_capture_calls_no_delegation_tool_is_offered(
    codex: Installed, tmp_path: Path
) -> None:
    done = roller(
        "collect", "--harness", "codex", "--api-base", "mock:spawn-one", "--model", "mock-model",
        "--prompt", "Use a subagent to say hi", "--run-dir", str(tmp_path / "run"),
        "--capture-debug", "full", "--json",
        env=without_provider_keys(),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    capture = read_attempt(Path(json.loads(done.stdout)["attempt_dir"]))
    assert capture.calls
    for call in capture.calls:
        offered = {t.get("name") for t in call.context["tools"]}
        assert "exec_command" in offered
        assert not offered & {"multi_agent_v1", "collaboration"}
    assert [p.role for p in capture.manifest.participants] == ["root"]
    assert capture.manifest.capture_status == "complete"


def test_code_mode_calls_carry_their_tools_in_an_input_item(outcomes: dict[str, Outcome]) -> None:
    """The catalog default as Codex's users run it: no `tools`, the tools in an
    `additional_tools` item; per-call export is fine, the main trajectory is barred."""
    capture = _capture(outcomes["code-mode/single"])
    for call in capture.calls:
        assert call.model == "gpt-6.2-sol"
        assert "tools" not in call.context
        assert call.context["input"][0]["type"] == "additional_tools"
        assert _header(call, "x-openai-internal-codex-responses-lite") == "true"
        assert call.export_status == "exportable"
    record = trajectory(capture)
    assert (record.export_status, record.export_blocked_by) == ("blocked", ["dynamic_tools"])
    assert any("additional_tools" in p.message for p in record.problems)
    (segment,) = record.segments
    (snapshot,) = segment.tool_snapshots  # the item's definitions, one per thread
    assert [t["name"] for t in snapshot.tools][:2] == ["functions", "clock"]
    shell = _capture(outcomes["code-mode/tool-error"])
    execs = [
        item
        for call in shell.calls
        for item in (call.output or {}).get("output", [])
        if item.get("type") == "custom_tool_call"
    ]
    assert [i["name"] for i in execs] == ["exec"]
    assert "tools.exec_command(" in execs[0]["input"]


def _exec_spawns(work: Path) -> dict[str, Outcome]:
    """`single` and `parallel` with spawns made inside `exec` scripts: v1 (the catalog
    model gpt-5.6-luna, whose multi_agent_v1 tools are nested and deferred) and v2 (the
    catalog default with `agent-tools=exec`), all four at once."""
    runs = {
        "v1": {"model": "gpt-5.6-luna"},
        "v2": {"options": {"agent-tools": "exec"}},
    }
    with ThreadPoolExecutor(len(runs)) as pool:
        done = {
            name: pool.submit(
                acceptance,
                "codex",
                work / name,
                jobs=2,
                scenarios=("single", "parallel"),
                modes=(CODE_MODE,),
                **kw,  # type: ignore[arg-type]
            )
            for name, kw in runs.items()
        }
        return {f"{n}/{k}": o for n, f in done.items() for k, o in f.result().items()}


@pytest.fixture(scope="session")
def exec_spawns(codex: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return _exec_spawns(tmp_path_factory.mktemp("exec-spawns"))


@pytest.mark.parametrize("generation", ["v1", "v2"])
@pytest.mark.parametrize(("scenario", "children"), [("single", 1), ("parallel", 2)])
def test_a_spawn_inside_an_exec_script_names_the_exec_call(
    exec_spawns: dict[str, Outcome], generation: str, scenario: str, children: int
) -> None:
    outcome = exec_spawns[f"{generation}/{CODE_MODE}/{scenario}"]
    assert outcome.verdict == "PASS", "\n".join(outcome.reasons)  # validates, complete
    capture = _capture(outcome)
    kids = [p for p in capture.manifest.participants if p.role == "child"]
    assert len(kids) == children
    spawns = [r for r in capture.relations if r.type == "spawn"]
    assert {r.child_participant_id for r in spawns} == {k.participant_id for k in kids}
    for spawn in spawns:
        ref = spawn.model_tool_ref
        assert spawn.status == "established" and ref is not None and ref.matched
        source = next(c for c in capture.calls if c.call_id == spawn.source_call_id)
        assert source.output is not None
        (item,) = [i for i in source.output["output"] if i.get("type") == "custom_tool_call"]
        assert (item["name"], item["call_id"], item["id"]) == ("exec", ref.call_id, ref.item_id)
        assert spawn.tool_call_id == f"{ref.call_id}|{ref.item_id}"
        assert "spawn_agent(" in item["input"]  # the tool invocation inside the script
        sources = " ".join(f"{e.source} {e.ref}" for e in spawn.evidence)
        assert "code_cell_started" in sources and "tool_call_started" in sources
        assert "custom_tool_call" in sources and "item_completed" in sources
    for kid in kids:
        child_calls = [c for c in capture.calls if c.call_id in kid.call_ids]
        assert child_calls and all(c.identity_status == "attributed" for c in child_calls)
        assert all(_header(c, "thread-id") == kid.native_ids["thread_id"] for c in child_calls)


def _embedded_catalog(codex: Installed) -> list[dict[str, object]]:
    """The model catalog the binary carries (a JSON document `{"models": [...]}`)."""
    binary = next(codex.root.rglob("vendor/*/bin/codex"))
    data = binary.read_bytes()
    at = data.index(b'"tool_mode": "code_mode_only"')
    start = data.rindex(b'{\n  "models"', 0, at)
    document, _ = json.JSONDecoder().raw_decode(data[start:].decode("utf-8", "replace"))
    models: list[dict[str, object]] = document["models"]
    return models


def test_the_catalog_table_is_the_binarys(codex: Installed) -> None:
    models = _embedded_catalog(codex)
    code_mode = {
        str(m["slug"]): str(m["multi_agent_version"])
        for m in models
        if m.get("tool_mode") == "code_mode_only"
    }
    assert code_mode == dict(catalog.CODE_MODE_MODELS)
    plain = {str(m["slug"]) for m in models if m.get("tool_mode") is None}
    assert plain == catalog.FUNCTION_TOOL_MODELS


def test_a_new_user_without_model_gets_code_mode_told_and_captured(
    codex: Installed, tmp_path: Path
) -> None:
    """As the issue tried it: `--api-base http://<own server> --capture-calls`, no
    `--model`. roller says first which mode Codex will use; the mock (here a server of
    its own) speaks code mode, so the subagent runs and is captured."""

    async def serve() -> None:
        mock = await MockModel(load_scenario("spawn-one")).serve()
        try:
            done = await asyncio.to_thread(
                roller,
                "collect", "--harness", "codex", "--api-base", mock.url, "--capture-calls",
                "--prompt", "Use a subagent to say hi", "--run-dir", str(tmp_path / "run"),
                "--json",
                env={**without_provider_keys(), "OPENAI_API_KEY": "sk-roller-e2e-placeholder"},
            )  # fmt: skip
        finally:
            await mock.close()
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stderr.splitlines()[0] == catalog.mode_notice(None, "0.171.0")
        capture = read_attempt(Path(json.loads(done.stdout)["attempt_dir"]))
        assert [p.role for p in capture.manifest.participants] == ["root", "child"]
        assert all("tools" not in c.context for c in capture.calls)
        assert "spawn" in {r.type for r in capture.relations if r.status == "established"}

    asyncio.run(serve())
