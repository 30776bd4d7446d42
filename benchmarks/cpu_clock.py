"""A process's CPU time, exact: what the benchmarks divide by the requests it served.

`process_cpu_seconds(pid)` is the CPU time every thread of process `pid` has used so
far, threads that ended included, read from the kernel's scheduler clock of its thread
group: `clock_gettime` on the clock id Linux makes from a pid
(`MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)`, which glibc's `clock_getcpuclockid`
returns; Python binds `clock_gettime` but not that call, so the id is made here). None
once the process is gone (or the clock cannot be read).

Why not /proc/PID/stat's `utime + stime`, which these scripts read before: those count
whole clock ticks (10 ms at this machine's `SC_CLK_TCK` of 100), charged to whichever
task is on the CPU when the tick comes. A batch of 600 requests at ~0.4 ms is ~24
ticks, so each batch's reading moved by a tick either way — several percent of a
cell's CPU per request, which is the size of the differences the targets judge. The
scheduler clock counts nanoseconds run (docs/benchmarks.md, "compare_peers.py").
"""

from __future__ import annotations

import time
from typing import Final

_CPUCLOCK_SCHED: Final = 2  # include/linux/posix-timers.h; a process clock (no thread bit)


def process_clock_id(pid: int) -> int:
    """The CPU clock id of process `pid`'s thread group (`clock_getcpuclockid`)."""
    return ((~pid) << 3) | _CPUCLOCK_SCHED


def process_cpu_seconds(pid: int) -> float | None:
    """Process `pid`'s CPU time so far, every thread's (module docstring), or None."""
    try:
        return time.clock_gettime(process_clock_id(pid))
    except OSError:  # EINVAL: no such process (any more)
        return None
