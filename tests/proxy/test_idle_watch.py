"""The idle read timeout on one timer: it fires only for a wait on the upstream that
lasted the whole timeout, and never mistakes or swallows another cancellation."""

from __future__ import annotations

import asyncio

import pytest

from roller.proxy.idle_watch import IdleWatch

TIMEOUT = 0.05


async def _waits(
    watch_box: list[IdleWatch], seconds: float, busy: float = 0.0, timeout: float = TIMEOUT
) -> str:
    """Busy (not waiting on the upstream) for `busy` seconds, then waits `seconds`."""
    watch = IdleWatch(timeout)
    watch_box.append(watch)
    watch.since = None
    await asyncio.sleep(busy)  # relaying to the client: no upstream silence
    watch.since = watch.time()
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if watch.timed_out():
            return "timed out"
        raise
    finally:
        watch.stop()
    return "done"


def test_a_wait_longer_than_the_timeout_times_out() -> None:
    box: list[IdleWatch] = []
    assert asyncio.run(_waits(box, 10 * TIMEOUT)) == "timed out"


def test_time_busy_elsewhere_is_not_upstream_silence() -> None:
    box: list[IdleWatch] = []
    # Three timeouts busy relaying, then a wait shorter than one timeout: no timeout.
    assert asyncio.run(_waits(box, TIMEOUT / 2, busy=3 * TIMEOUT)) == "done"


def test_waits_shorter_than_the_timeout_never_time_out() -> None:
    async def main() -> int:
        watch = IdleWatch(TIMEOUT)
        reads = 0
        for _ in range(8):  # 8 reads, each wait half the timeout: 4 timeouts in total
            watch.since = watch.time()
            await asyncio.sleep(TIMEOUT / 2)
            watch.since = None
            reads += 1
        watch.stop()
        return reads

    assert asyncio.run(main()) == 8


def test_another_cancellation_is_not_taken_for_a_timeout() -> None:
    async def main() -> None:
        box: list[IdleWatch] = []
        task = asyncio.get_running_loop().create_task(_waits(box, 60, timeout=60))
        for _ in range(3):  # the task now waits on its upstream
            await asyncio.sleep(0)
        watch = box[0]
        watch.since = watch.time() - 61  # as if this wait had lasted the whole timeout
        watch._check()  # the timer fires (called directly: no minute-long test) ...
        assert watch.expired
        task.cancel()  # ... and the client goes away before the task runs again
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_no_timeout_no_timer() -> None:
    async def main() -> str:
        watch = IdleWatch(None)
        await asyncio.sleep(3 * TIMEOUT)
        watch.stop()
        return "done" if not watch.expired else "expired"

    assert asyncio.run(main()) == "done"


def test_a_stopped_watch_leaves_no_timer() -> None:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        watch = IdleWatch(TIMEOUT)
        watch.stop()
        await asyncio.sleep(2 * TIMEOUT)
        live = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        return len(live) - before

    assert asyncio.run(main()) <= 0
