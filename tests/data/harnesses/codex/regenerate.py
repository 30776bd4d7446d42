"""Regenerate the Codex test data: real `codex exec` runs against `roller mock-model`.

    .venv/bin/python tests/data/harnesses/codex/regenerate.py [NAME ...]

Needs codex 0.171.0 in roller's cache (`roller harness install codex`); runs on
127.0.0.1 only. Each directory `<name>/` holds what an attempt's `raw/` held:
- `native/`: the adapter's copy of the native logs, trimmed for size —
  every JSON string longer than 1200 characters in a rollout line (base instructions,
  skill lists, tool descriptions) is replaced by `<trimmed by roller: N characters,
  sha256 …>`, and `state_5.sqlite` keeps only its `threads` and `thread_spawn_edges`
  tables (their rows untouched; Codex's other tables, indexes and triggers dropped);
- `tape/` and `attempt.json` (scenarios run through the proxy): the proxy's recording
  with request bodies trimmed the same way (`content-length` adjusted); response bytes
  are exactly as the mock sent them.
- `native/rollout-trace/*/trace.jsonl` (and `manifest.json`): Codex's rollout trace,
  copied whole (it binds a code-mode script's nested calls to their `exec` call).
The code-mode runs (no model: Codex's catalog default `gpt-6.2-sol`; or a catalog model)
also leave `code-mode-requests/<name>.json`: one request body each, untrimmed where the
mock reads it (the `additional_tools` item, `exec` calls and their outputs), for the
mock's code-mode tests.
Nothing here is a secret: the provider key is a placeholder the proxy never records.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from roller.capture.tape import TapeWriter, read_tape
from roller.collect.collection import RunRequest, collect_run
from roller.collect.launcher import run_plan
from roller.collect.runs import RunSpec
from roller.collect.session import base_urls
from roller.collect.tasks import Task
from roller.harnesses.base import LaunchRequest, ScratchDirs
from roller.harnesses.codex import CodexAdapter, confirmed_root_thread
from roller.harnesses.install import find_installed
from roller.mock.scenario_files import load_scenario
from roller.mock.server import MockModel

HERE = Path(__file__).parent
LIMIT = 1200
PROMPT = "Do the task."
MOCK_MODEL = "mock-model"  # outside the catalog: function tools
# name -> (mock scenario, launch options, model; None: Codex's catalog default)
COLLECTED: dict[str, tuple[str, dict[str, str], str | None]] = {
    "v1-single": ("spawn-one", {}, MOCK_MODEL),
    "v2-fork": ("spawn-fork", {"multi-agent": "v2"}, MOCK_MODEL),
    "v1-nested": ("spawn-nested", {"max-depth": "2"}, MOCK_MODEL),
    "v1-identical-prompts": ("spawn-identical-prompts", {}, MOCK_MODEL),
    "v1-no-wait": ("spawn-no-wait", {}, MOCK_MODEL),
    "code-v2-single": ("spawn-one", {}, None),
    "code-v1-exec-single": ("spawn-one", {}, "gpt-5.6-luna"),
    "code-v1-exec-parallel": ("spawn-two-parallel", {}, "gpt-5.6-luna"),
    "code-v2-exec-parallel": ("spawn-two-parallel", {"agent-tools": "exec"}, None),
    "tool-search-single": ("tests/data/harnesses/codex/tool-search.toml", {}, "gpt-5.5"),
}
RESUMED = "v1-resume"
# code-mode-requests/<name>.json <- (fixture, index of the request on its tape)
REQUESTS: dict[str, tuple[str, int]] = {
    "sol-first": ("code-v2-single", 0),
    "luna-first": ("code-v1-exec-single", 0),
    "luna-lookup": ("code-v1-exec-single", 1),
}
# Request items the mock reads whole (the rest is trimmed like the tapes).
KEPT_ITEMS = ("additional_tools", "custom_tool_call", "custom_tool_call_output")


def trim(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LIMIT:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return f"<trimmed by roller: {len(value)} characters, sha256 {digest}>"
    if isinstance(value, list):
        return [trim(v) for v in value]
    if isinstance(value, dict):
        return {k: trim(v) for k, v in value.items()}
    return value


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def copy_native(source: Path, dest: Path) -> None:
    for path in sorted((source / "rollout-trace").rglob("*")):
        if path.is_file():
            out = dest / path.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
    for path in sorted((source / "sessions").rglob("*.jsonl")):
        lines = path.read_text().splitlines()
        out = dest / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(compact(trim(json.loads(x))) + "\n" for x in lines if x))
    db = dest / "state_5.sqlite"
    shutil.copyfile(source / "state_5.sqlite", db)
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for kind, name in rows:
            if kind == "table" and name in ("threads", "thread_spawn_edges"):
                continue
            if kind in ("table", "index", "trigger", "view"):
                conn.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
        conn.commit()
        conn.execute("VACUUM")
    finally:
        conn.close()


def copy_tape(source: Path, dest: Path) -> None:
    read = read_tape(source)
    assert not read.problems, read.problems
    with TapeWriter(dest, fsync_interval=None) as tape:
        for ex in read.exchanges:
            body = compact(trim(json.loads(ex.request_body))).encode()
            headers = tuple(
                (k, str(len(body)) if k.lower() == "content-length" else v)
                for k, v in ex.request.headers
            )
            xid = tape.begin()
            tape.request(xid, ex.request._replace(headers=headers), t=ex.request_time_ns)
            tape.request_body(xid, body)
            assert ex.response is not None and ex.end is not None
            tape.response(xid, ex.response, t=ex.response_time_ns)
            for _t, data in ex.chunks:
                tape.chunk(xid, data)
            tape.end(xid, ex.end._replace(request_bytes=len(body)), t=ex.end_time_ns)


def write_requests(name: str, tape: Path) -> None:
    """The code-mode request samples taken from fixture `name`'s untrimmed tape."""
    bodies = [json.loads(ex.request_body) for ex in read_tape(tape).exchanges]
    for sample, (fixture, index) in REQUESTS.items():
        if fixture != name:
            continue
        body = bodies[index]
        body["input"] = [i if i.get("type") in KEPT_ITEMS else trim(i) for i in body["input"]]
        kept = {k: v if k == "input" else trim(v) for k, v in body.items()}
        out = HERE / "code-mode-requests" / f"{sample}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(compact(kept))


async def collected(
    name: str, scenario: str, options: dict[str, str], model: str | None, work: Path
) -> None:
    spec = RunSpec(
        harness="codex",
        harness_version=None,
        api_base=f"mock:{scenario}",
        capture_calls=True,
        capture_debug="full",
        model=model,
        options=options,
    )
    run = await collect_run(RunRequest(work / name, spec, task=Task("sample-0001", (PROMPT,))))
    result = run.samples[0].last
    assert result is not None
    raw = result.attempt.raw
    out = HERE / name
    shutil.rmtree(out, ignore_errors=True)
    copy_native(raw / "native", out / "native")
    copy_tape(raw / "tape", out / "tape")
    write_requests(name, raw / "tape")
    shutil.copyfile(raw / "attempt.json", out / "attempt.json")
    print(f"{name}: {result.manifest.capture_status}, {result.manifest.counts.calls} calls")


async def resumed(work: Path) -> None:
    """Two turns in one scratch HOME: the second resumes the confirmed root thread."""
    adapter = CodexAdapter()
    installed = find_installed(adapter)
    assert installed is not None, "run `roller harness install codex` first"
    scratch = work / RESUMED
    dirs = ScratchDirs(home=scratch / "home", tmp=scratch / "tmp", work=scratch / "work")
    for d in (dirs.home, dirs.tmp, dirs.work):
        d.mkdir(parents=True)
    mock = await MockModel(load_scenario("spawn-one")).serve()
    try:
        request = LaunchRequest(
            prompt=PROMPT,
            command=(),
            dirs=dirs,
            base_urls=base_urls(mock.url),
            credentials={"OPENAI_API_KEY": "sk-roller-test-placeholder"},
            model="mock-model",
            capture_calls=True,
            timeout_s=120,
            install_dir=installed.root,
        )
        first = await run_plan(adapter.launch_plan(request), scratch / "turn1")
        assert first.exit_code == 0, first
        adapter.collect_native(dirs, scratch / "native1")
        first_native = adapter.read_native(scratch / "native1")
        assert first_native is not None
        root = confirmed_root_thread(first_native)
        second = dataclasses.replace(request, prompt="Now reply once more.")
        again = await run_plan(adapter.resume_plan(second, root), scratch / "turn2")
        assert again.exit_code == 0, again
    finally:
        await mock.close()
    adapter.collect_native(dirs, scratch / "native")
    out = HERE / RESUMED
    shutil.rmtree(out, ignore_errors=True)
    copy_native(scratch / "native", out / "native")
    print(f"{RESUMED}: root {root} resumed")


async def main(names: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="roller-codex-data-") as tmp:
        work = Path(tmp)
        for name, (scenario, options, model) in COLLECTED.items():
            if not names or name in names:
                await collected(name, scenario, options, model, work)
        if not names or RESUMED in names:
            await resumed(work)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
