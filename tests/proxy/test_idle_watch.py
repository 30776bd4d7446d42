"""The idle read timeout on one timer for the whole proxy: it fires only for a wait on the
upstream that lasted the whole timeout (and at most a tick later), never mistakes or
swallows another cancellation, and costs no timer per exchange."""

from __future__ import annotations

import asyncio

import pytest

from roller.proxy.idle_watch import MAX_TICK, TICKS_PER_TIMEOUT, IdleWatch, IdleWatches

TIMEOUT = 0.05


async def _waits(
    watches: IdleWatches, watch_box: list[IdleWatch], seconds: float, busy: float = 0.0
) -> str:
    """Busy (not waiting on the upstream) for `busy` seconds, then waits `seconds`."""
    watch = watches.watch()
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


def test_a_wait_longer_than_the_timeout_times_out_within_a_tick() -> None:
    async def main() -> tuple[str, float]:
        watches = IdleWatches(TIMEOUT)
        start = watches.time()
        outcome = await _waits(watches, [], 10 * TIMEOUT)
        return outcome, watches.time() - start

    outcome, took = asyncio.run(main())
    assert outcome == "timed out"
    # Never before the timeout; at most a tick (plus scheduling slack) after it.
    assert TIMEOUT <= took < TIMEOUT * (1 + 1 / TICKS_PER_TIMEOUT) + 0.05


def test_time_busy_elsewhere_is_not_upstream_silence() -> None:
    async def main() -> str:
        # Three timeouts busy relaying, then a wait shorter than one timeout: no timeout.
        return await _waits(IdleWatches(TIMEOUT), [], TIMEOUT / 2, busy=3 * TIMEOUT)

    assert asyncio.run(main()) == "done"


def test_waits_shorter_than_the_timeout_never_time_out() -> None:
    async def main() -> int:
        watch = IdleWatches(TIMEOUT).watch()
        reads = 0
        for _ in range(8):  # 8 reads, each wait half the timeout: 4 timeouts in total
            watch.since = watch.time()
            await asyncio.sleep(TIMEOUT / 2)
            watch.since = None
            reads += 1
        watch.stop()
        return reads

    assert asyncio.run(main()) == 8


def test_one_exchange_timing_out_leaves_the_others_alone() -> None:
    async def main() -> list[str]:
        watches = IdleWatches(TIMEOUT)
        silent = asyncio.ensure_future(_waits(watches, [], 10 * TIMEOUT))
        chatty = asyncio.ensure_future(_waits(watches, [], TIMEOUT / 2, busy=2 * TIMEOUT))
        return list(await asyncio.gather(silent, chatty))

    assert asyncio.run(main()) == ["timed out", "done"]


def test_another_cancellation_is_not_taken_for_a_timeout() -> None:
    async def main() -> None:
        box: list[IdleWatch] = []
        watches = IdleWatches(60)
        task = asyncio.get_running_loop().create_task(_waits(watches, box, 60))
        for _ in range(3):  # the task now waits on its upstream
            await asyncio.sleep(0)
        watch = box[0]
        watch.since = watch.time() - 61  # as if this wait had lasted the whole timeout
        watches._check()  # the timer fires (called directly: no minute-long test) ...
        assert watch.expired
        task.cancel()  # ... and the client goes away before the task runs again
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_no_timeout_no_timer() -> None:
    async def main() -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        watch = IdleWatches(None).watch()
        scheduled = len(loop._scheduled) - before  # type: ignore[attr-defined]
        await asyncio.sleep(3 * TIMEOUT)
        watch.stop()
        return ("done" if not watch.expired else "expired"), scheduled

    assert asyncio.run(main()) == ("done", 0)


def test_one_timer_for_many_exchanges_and_none_left_once_they_stop() -> None:
    async def main() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        watches = IdleWatches(TIMEOUT)
        opened = [watches.watch() for _ in range(50)]
        armed = len(loop._scheduled) - before  # type: ignore[attr-defined]
        for watch in opened:
            watch.stop()
        await asyncio.sleep(2 * TIMEOUT)  # the next tick finds none open and stops
        live = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        return armed, len(live) - before

    assert asyncio.run(main()) == (1, 0)


def test_the_tick_is_an_eighth_of_the_timeout_and_at_most_a_second() -> None:
    async def main() -> tuple[float | None, float | None]:
        return IdleWatches(0.4).tick, IdleWatches(600).tick

    assert asyncio.run(main()) == (0.4 / TICKS_PER_TIMEOUT, MAX_TICK)
