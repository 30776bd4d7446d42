"""Running the turns of one attempt: the first launch, then each later prompt as a resume.

`roller collect --prompt A --prompt B` is one attempt, one capture: every turn runs in
the same scratch HOME/TMPDIR/work dir and through the same proxy (one tape). Order, and
why:
1. Turn 1 is the adapter's `launch_plan`; it runs to its end (or timeout, or Ctrl-C)
   exactly as a single-prompt collect does, then the proxy drains.
2. A later turn runs only when the turn before it completed (exit 0): a failed, killed or
   timed-out turn leaves a conversation nobody should continue. The rest are `not_run`.
3. Before each later turn the native logs are copied out of the scratch HOME (into the
   scratch dir, not the capture) and read with the adapter's own reader; the adapter's
   `confirmed_root` names the root conversation from them, and `resume_plan` continues
   exactly that one. When the logs confirm none (a crash, no logs, two roots, logs that
   disagree), collection stops there: the turns not run say why, and what was collected
   is finalized as usual. Never `--continue`/`--last`, never a time or an order.
4. `--timeout` applies to each turn. Output: `raw/harness/` for a single prompt (as
   always), `raw/harness/turn-NNNN/` for each turn of a multi-turn attempt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from roller.capture.layout import AttemptPaths
from roller.capture.models import TurnInputs
from roller.collect.launcher import LaunchResult, run_plan
from roller.errors import RollerError, UsageError
from roller.harnesses.base import HarnessAdapter, LaunchPlan, LaunchRequest, ResumableAdapter
from roller.proxy.server import ProxyServer

_DRAIN_S = 10.0


@dataclass(frozen=True)
class TurnResult:
    """One turn: its harness run, or why it did not run."""

    turn: int
    output_dir: Path
    launch: LaunchResult | None  # None: the turn did not run
    resumed_root: str | None = None  # the confirmed root id it resumed (turns 2+)
    not_run: str | None = None
    stopped: bool = False  # not run because the user stopped collection between turns

    def inputs(self) -> TurnInputs:
        launch = self.launch
        return TurnInputs(
            turn=self.turn,
            resumed_root=self.resumed_root,
            started_ns=launch.started_ns if launch else None,
            ended_ns=launch.ended_ns if launch else None,
            exit_code=launch.exit_code if launch else None,
            timed_out=launch.timed_out if launch else False,
            launch_error=launch.launch_error if launch else None,
            not_run=self.not_run,
        )


def check_turns(adapter: HarnessAdapter, follow_ups: Sequence[str]) -> None:
    """Refuse, before anything is written, what cannot run as several turns."""
    if not follow_ups:
        return
    if not isinstance(adapter, ResumableAdapter):
        raise UsageError(
            f"--harness {adapter.name} cannot resume a conversation, so it runs one prompt; "
            f"got {len(follow_ups) + 1}"
        )
    for n, prompt in enumerate(follow_ups, 2):
        if not prompt.strip():
            raise UsageError(f"prompt {n} is empty")


def _unfinished(result: TurnResult) -> str | None:
    """Why the next turn may not continue after `result`, or None when it may."""
    launch = result.launch
    if launch is None:
        return f"turn {result.turn} did not run"
    if launch.launch_error is not None:
        return f"turn {result.turn} could not start: {launch.launch_error}"
    if launch.stopped:
        return f"turn {result.turn} was stopped on request"
    if launch.timed_out:
        return f"turn {result.turn} timed out"
    if launch.exit_code != 0:
        return f"turn {result.turn} exited with status {launch.exit_code}"
    return None


def _resume(
    adapter: HarnessAdapter, first: LaunchRequest, prompt: str, native: Path
) -> tuple[str, LaunchPlan]:
    """The confirmed root id and the plan that continues it with `prompt`."""
    if not isinstance(adapter, ResumableAdapter):  # `check_turns` refused it before the run
        raise UsageError(f"--harness {adapter.name} cannot resume a conversation")
    adapter.collect_native(first.dirs, native)
    root = adapter.confirmed_root(adapter.read_native(native))
    return root, adapter.resume_plan(dataclasses.replace(first, prompt=prompt), root)


async def run_turns(
    adapter: HarnessAdapter,
    first: LaunchRequest,
    follow_ups: Sequence[str],
    attempt: AttemptPaths,
    proxy: ProxyServer,
    scratch: Path,
    progress: Callable[[str], None],
    stop: asyncio.Event | None,
    on_turn: Callable[[Sequence[TurnResult]], None] = lambda _t: None,
) -> list[TurnResult]:
    """Run turn 1 and each follow-up prompt in order; `on_turn` sees the results so far
    after every turn (collect records them at once, so a crash loses nothing that ran)."""
    total = 1 + len(follow_ups)
    results: list[TurnResult] = []

    def out_dir(n: int) -> Path:
        return attempt.harness_output / f"turn-{n:04d}" if total > 1 else attempt.harness_output

    plan = adapter.launch_plan(first)
    resumed: str | None = None
    for n in range(1, total + 1):
        label = f"turn {n}/{total}: " if total > 1 else ""
        if n > 1:
            why = _unfinished(results[-1])
            stopped = why is None and stop is not None and stop.is_set()
            if stopped:
                why = "stopped on request"
            if why is None:
                progress(f"{label}confirming the root conversation from the native logs…")
                native = scratch / "turns" / f"native-after-turn-{n - 1:04d}"
                try:
                    resumed, plan = _resume(adapter, first, follow_ups[n - 2], native)
                except RollerError as exc:
                    why = f"cannot resume: {exc}"
            if why is not None:
                results.append(TurnResult(n, out_dir(n), None, not_run=why, stopped=stopped))
                on_turn(results)
                continue
        progress(f"{label}running {adapter.name} (timeout {plan.timeout_s:.0f}s)…")
        launch = await _run_with_progress(plan, out_dir(n), proxy, progress, label, stop)
        progress(f"{label}draining the proxy…")
        await proxy.wait_idle(_DRAIN_S)
        results.append(TurnResult(n, out_dir(n), launch, resumed_root=resumed))
        on_turn(results)
    return results


async def _run_with_progress(
    plan: LaunchPlan,
    output_dir: Path,
    proxy: ProxyServer,
    progress: Callable[[str], None],
    label: str,
    stop: asyncio.Event | None,
) -> LaunchResult:
    started = time.monotonic()
    task = asyncio.create_task(run_plan(plan, output_dir, stop))
    while not task.done():
        await asyncio.wait({task}, timeout=0.5)
        elapsed = time.monotonic() - started
        state = "stopping" if stop is not None and stop.is_set() else "running"
        progress(f"{label}{state}… {elapsed:4.0f}s, {proxy.exchanges} model call(s) so far")
    return task.result()
