"""Golden files: a JSON object of recorded values by key, checked or rewritten.

`ROLLER_UPDATE_GOLDENS=1` records the value a test got under its key (the diff of the
file is reviewed with the change that caused it); otherwise the value must equal the
recorded one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def check_golden(path: Path, key: str, got: Any) -> None:
    if os.environ.get("ROLLER_UPDATE_GOLDENS") == "1":
        goldens = json.loads(path.read_text()) if path.exists() else {}
        goldens[key] = got
        path.write_text(json.dumps(dict(sorted(goldens.items())), indent=2) + "\n")
        return
    goldens = json.loads(path.read_text())
    assert key in goldens, f"{key} has no golden: run with ROLLER_UPDATE_GOLDENS=1"
    assert got == goldens[key]
