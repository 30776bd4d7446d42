"""roller's own directories in the temporary directory (attempts' scratch dirs, Ray nodes'
run roots: `roller-<harness>-…`, `roller-ray-…`), for the tests that check a run leaves
none behind."""

from __future__ import annotations

import tempfile
from pathlib import Path


def roller_temp_dirs(prefix: str = "roller-") -> set[Path]:
    """Those whose names begin with `prefix`."""
    return set(Path(tempfile.gettempdir()).glob(f"{prefix}*"))
