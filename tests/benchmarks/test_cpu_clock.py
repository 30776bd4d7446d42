"""benchmarks/cpu_clock.py reads another process's CPU time exactly: every thread's, one
that ended included, to well under the clock tick /proc/PID/stat counts in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from cpu_clock import process_clock_id, process_cpu_seconds

# The child burns CPU on a thread that then ends and on its main thread, reports its own
# `process_time()` (its CPU so far, every thread's), then sleeps until told to stop.
CHILD = """
import sys, threading, time
def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
side = threading.Thread(target=burn, args=(0.137,))
side.start()
side.join()
burn(0.061)
print(repr(time.process_time()), flush=True)
sys.stdin.read()
"""


def _stat_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_another_process_cpu_every_thread_exactly() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        own = float(child.stdout.readline())  # the child's CPU, as it reads it
        read = process_cpu_seconds(child.pid)
        ticks = _stat_seconds(child.pid)
    finally:
        child.communicate("", timeout=30)
    assert read is not None
    assert own >= 0.198  # both threads' burn: the ended thread's time is still counted
    # The child is asleep between its report and our reading: at most the few µs of the
    # print's return and the read that put it to sleep lie between the two.
    assert own <= read <= own + 0.005
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert abs(ticks - read) <= 2 * tick  # the same quantity /proc counts in ticks


def test_a_gone_process_reads_none() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_cpu_seconds(child.pid) is None


def test_the_clock_id_is_the_kernels_process_sched_clock() -> None:
    # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED): ~pid shifted past the three clock bits,
    # the thread bit (4) clear; pid 0 would be the calling process's own clock.
    assert process_clock_id(1) == -14
    assert process_clock_id(1234) & 7 == 2
    assert process_cpu_seconds(os.getpid()) is not None
