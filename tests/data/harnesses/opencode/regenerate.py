"""Regenerate the OpenCode fixtures in this directory from real runs of the pinned binary.

    .venv/bin/python tests/data/harnesses/opencode/regenerate.py [NAME ...]

Each fixture but `background` is one real `roller collect --harness opencode` run
against `roller mock-model` (the scenario named below) with the launch plan roller
ships, `--capture-debug full`. Kept per fixture:
- `native/opencode.db.gz`: raw/native/opencode.db (the consolidated store
  `collect_native` wrote), gzipped;
- `attempt.json` and `tape/tape-*.rtape.gz`: the attempt inputs and the proxy's
  recording, gzipped, so finalize runs on the real pair in tests.

`child-api-error` is `spawn-one` through a small upstream in front of the mock that
answers the child's request (its first user message carries the mock's depth=1 marker)
with HTTP 400, as a provider rejecting a request would: OpenCode then fails the child's
turn and the `task` call.

`background` cannot come from `roller collect`: the bundled task tool has no background
parameter. It is the same launch plan with OpenCode's experimental switch
`OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=true` added, run straight against the mock
(no proxy, so no tape), to give the reader a real store holding a background task.

No secret is in any of it: the mock run's key is a placeholder and never on the tape.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
PROMPT = "Do the task."
# fixture -> (mock scenario, --capture-calls, collect timeout in seconds)
FIXTURES: dict[str, tuple[str, bool, float]] = {
    "single": ("spawn-one", True, 300),
    "parallel": ("spawn-two-parallel", True, 300),
    "identical-prompts": ("spawn-identical-prompts", True, 300),
    "forced-grandchild": ("spawn-forced-grandchild", True, 300),
    "resume": (str(SCENARIOS / "spawn-resume.toml"), True, 300),
    "denied": ("spawn-one", False, 300),
    "killed-child": (str(SCENARIOS / "slow-child.toml"), True, 75),
}


def _gz(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(gzip.compress(source.read_bytes(), mtime=0))


def regenerate(name: str) -> None:
    scenario, capture_calls, timeout = FIXTURES[name]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        argv = [
            sys.executable, "-m", "roller", "collect", "--harness", "opencode",
            "--api-base", f"mock:{scenario}", "--capture-debug", "full",
            "--prompt", PROMPT, "--run-dir", str(run), "--timeout", str(timeout), "--json",
            *(["--capture-calls"] if capture_calls else []),
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, check=False)
        print(f"{name}: roller collect exited {done.returncode}")
        _keep(run, HERE / name)


def _keep(run: Path, out: Path) -> None:
    """The store, the attempt inputs and the tape of the run's one attempt, gzipped."""
    (attempt,) = run.glob("samples/*/capture/attempt-*")
    shutil.rmtree(out, ignore_errors=True)
    _gz(attempt / "raw" / "native" / "opencode.db", out / "native" / "opencode.db.gz")
    shutil.copyfile(attempt / "raw" / "attempt.json", out / "attempt.json")
    for seg in sorted((attempt / "raw" / "tape").iterdir()):
        _gz(seg, out / "tape" / f"{seg.name}.gz")


def _first_user_text(body: bytes) -> str:
    try:
        request = json.loads(body)
        first = next(m for m in request["messages"] if m["role"] == "user")
    except (ValueError, KeyError, TypeError, StopIteration):
        return ""
    content = first["content"]
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


async def _child_api_error() -> None:
    """spawn-one through an upstream that answers the child's request with HTTP 400."""
    from aiohttp import ClientSession, web

    from roller.mock.scenario_files import load_scenario
    from roller.mock.server import MockModel

    mock = await MockModel(load_scenario("spawn-one")).serve()
    client = ClientSession()

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if _first_user_text(body).startswith("ROLLER-SUBTASK depth=1"):
            error = {
                "message": "roller test: child request refused",
                "type": "invalid_request_error",
            }
            return web.json_response({"error": error}, status=400)
        async with client.post(
            mock.url + request.path_qs, data=body, headers={"content-type": "application/json"}
        ) as up:
            response = web.StreamResponse(
                status=up.status, headers={"content-type": up.headers["content-type"]}
            )
            await response.prepare(request)
            async for chunk in up.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        run = Path(tmp) / "run"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "roller", "collect", "--harness", "opencode",
            "--api-base", f"http://127.0.0.1:{port}", "--capture-calls",
            "--capture-debug", "full", "--prompt", PROMPT, "--run-dir", str(run),
            "--timeout", "300", "--json",
            env={**os.environ, "OPENAI_API_KEY": "sk-roller-fixture-placeholder"},
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        print(f"child-api-error: roller collect exited {await proc.wait()}")
        await runner.cleanup()
        await client.close()
        await mock.close()
        _keep(run, HERE / "child-api-error")


async def _background() -> None:
    from roller.collect.launcher import run_plan
    from roller.collect.session import MOCK_KEY
    from roller.harnesses.base import LaunchRequest, ScratchDirs
    from roller.harnesses.install import find_installed
    from roller.harnesses.opencode import OpenCodeAdapter
    from roller.mock.scenario_files import load_scenario
    from roller.mock.server import MockModel

    adapter = OpenCodeAdapter()
    installed = find_installed(adapter)
    assert installed is not None, "run `roller harness install opencode` first"
    mock = await MockModel(load_scenario(str(SCENARIOS / "spawn-background-task.toml"))).serve()
    with tempfile.TemporaryDirectory(prefix="roller-fixture-") as tmp:
        dirs = ScratchDirs(Path(tmp, "home"), Path(tmp, "tmp"), Path(tmp, "work"))
        for d in (dirs.home, dirs.tmp, dirs.work):
            d.mkdir()
        plan = adapter.launch_plan(
            LaunchRequest(
                prompt=PROMPT, command=(), dirs=dirs,
                base_urls={"openai": f"{mock.url}/v1"}, credentials={"OPENAI_API_KEY": MOCK_KEY},
                model=None, capture_calls=True, timeout_s=300, install_dir=installed.root,
            )
        )  # fmt: skip
        env = {**plan.env, "OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS": "true"}
        plan = type(plan)(**{**plan.__dict__, "env": env})
        result = await run_plan(plan, Path(tmp, "output"))
        await mock.close()
        print(f"background: opencode exited {result.exit_code}")
        native = Path(tmp, "native")
        adapter.collect_native(dirs, native)
        out = HERE / "background"
        shutil.rmtree(out, ignore_errors=True)
        _gz(native / "opencode.db", out / "native" / "opencode.db.gz")


if __name__ == "__main__":
    for fixture in sys.argv[1:] or [*FIXTURES, "child-api-error", "background"]:
        if fixture == "background":
            asyncio.run(_background())
        elif fixture == "child-api-error":
            asyncio.run(_child_api_error())
        else:
            regenerate(fixture)
