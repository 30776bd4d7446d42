"""Regenerate the OpenCode fixtures in this directory from real runs of the pinned binary.

    .venv/bin/python tests/data/harnesses/opencode/regenerate.py [NAME ...]

Each fixture but `background` is one real `roller collect --harness opencode` run
against `roller mock-model` (the scenario named below) with the launch plan roller
ships, `--capture-debug full`. Kept per fixture:
- `native/opencode.db.gz`: raw/native/opencode.db (the consolidated store
  `collect_native` wrote), gzipped;
- `attempt.json` and `tape/tape-*.rtape.gz`: the attempt inputs and the proxy's
  recording, gzipped, so finalize runs on the real pair in tests.

`background` cannot come from `roller collect`: the bundled task tool has no background
parameter. It is the same launch plan with OpenCode's experimental switch
`OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=true` added, run straight against the mock
(no proxy, so no tape), to give the reader a real store holding a background task.

No secret is in any of it: the mock run's key is a placeholder and never on the tape.
"""

from __future__ import annotations

import asyncio
import gzip
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
        (attempt,) = run.glob("samples/*/capture/attempt-*")
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        _gz(attempt / "raw" / "native" / "opencode.db", out / "native" / "opencode.db.gz")
        shutil.copyfile(attempt / "raw" / "attempt.json", out / "attempt.json")
        for seg in sorted((attempt / "raw" / "tape").iterdir()):
            _gz(seg, out / "tape" / f"{seg.name}.gz")


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
    for fixture in sys.argv[1:] or [*FIXTURES, "background"]:
        if fixture == "background":
            asyncio.run(_background())
        else:
            regenerate(fixture)
