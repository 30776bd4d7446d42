"""An attempt's scratch record: where its scratch HOME, TMPDIR and work dir are
(`raw/scratch.json`, written before they are made), and what is done with them. Once
the harness's native logs are in raw/native/ (collected whole or not at all:
`collect_whole`), nothing else is needed of the scratch, so it goes with its record
(`scratch_removed`) before the attempt is published (`roller.collect.session`). An
attempt roller was killed in before that still has them: its native logs are taken
from the recorded scratch HOME unless raw/ has them (`native_left`), and the scratch is
removed once it is published. Read by `roller collect --resume`
(`roller.collect.verdicts`) and `roller finalize`, which imports this module alone (no
proxy, mock or launcher).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from roller.capture.files import atomic_write
from roller.capture.layout import AttemptPaths
from roller.capture.models import AttemptInputs
from roller.capture.reader import read_json_model
from roller.harnesses import adapter_for
from roller.harnesses.base import HarnessAdapter, ScratchDirs


def write_scratch_record(attempt: AttemptPaths, root: Path, dirs: ScratchDirs) -> None:
    record = {
        "root": str(root),
        "home": str(dirs.home),
        "tmp": str(dirs.tmp),
        "work": str(dirs.work),
    }
    atomic_write(attempt.scratch_record, (json.dumps(record) + "\n").encode())


def read_scratch_record(attempt: AttemptPaths) -> tuple[Path, ScratchDirs] | None:
    """The scratch dirs a crashed attempt ran in, when they are recorded and still there."""
    try:
        record = json.loads(attempt.scratch_record.read_text())
        root = Path(record["root"])
        dirs = ScratchDirs(
            home=Path(record["home"]), tmp=Path(record["tmp"]), work=Path(record["work"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (root, dirs) if root.is_dir() else None


def native_left(attempt: AttemptPaths) -> Path | None:
    """An attempt roller did not publish: the native logs its harness wrote, copied into
    raw/native/ from the scratch HOME it recorded unless already there; the scratch dir
    to remove once the attempt is published (`scratch_removed`), None when none is
    recorded or it is gone."""
    scratch = read_scratch_record(attempt)
    if scratch is None:
        return None
    if attempt.attempt_inputs.exists() and not attempt.native.exists():
        harness = read_json_model(attempt.attempt_inputs, AttemptInputs).harness.name
        collect_whole(adapter_for(harness), scratch[1], attempt.native)
    return scratch[0]


def collect_whole(adapter: HarnessAdapter, dirs: ScratchDirs, dest: Path) -> None:
    """`adapter.collect_native(dirs, dest)`, `dest` made whole or not at all: the logs are
    copied into a sibling, then renamed into place. So an attempt roller is killed in
    while it copies has no `dest` (`native_left` copies them again from the scratch)
    rather than part of one, which its recovery took for all (seen: a kill mid-copy
    left a Claude Code attempt a subagent's transcript without the main one, and it was
    published partial, its calls unattributed)."""
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)  # a copy that was cut off
    adapter.collect_native(dirs, partial)
    if partial.exists():
        partial.rename(dest)


def scratch_removed(attempt: AttemptPaths, root: Path | None) -> None:
    """The scratch dir and then its record (a kill in between leaves the record, whose
    recovery finishes the removal)."""
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
    attempt.scratch_record.unlink(missing_ok=True)
