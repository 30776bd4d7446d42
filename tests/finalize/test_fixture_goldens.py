"""Finalize over every checked-in real run gives exactly the bytes it gave before.

Each fixture under tests/data/harnesses/<harness>/<name>/ (a tape plus native logs from a
real `roller collect` run) is finalized with the pure `build_capture`; the sha256 of its
`calls.jsonl`, `relations.jsonl` and `manifest.json` (as the writer serializes them) must
equal the ones recorded in tests/data/finalize-goldens.json. A refactor of finalize, the
codecs, identity or the harness readers that changes any byte fails here.

An intended change of output regenerates the file:
    ROLLER_UPDATE_GOLDENS=1 .venv/bin/python -m pytest tests/finalize/test_fixture_goldens.py
and the diff of that file is reviewed with the change that caused it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from tests.harnesses.fixture_capture import DATA, finalize_fixture
from tests.support.goldens import check_golden

from roller.capture.files import jsonl_bytes
from roller.capture.writer import serialize

GOLDENS = DATA.parent / "finalize-goldens.json"
FIXTURES = sorted((p.parent.parent.name, p.parent.name) for p in DATA.glob("*/*/attempt.json"))


def _digests(harness: str, name: str, tmp: Path) -> dict[str, str]:
    finalized = finalize_fixture(harness, name, tmp)
    # A fixture finalized without its tape or native store would hash an empty capture.
    assert finalized.calls, f"{harness}/{name}: no calls finalized"
    assert finalized.manifest.participants, f"{harness}/{name}: no participants"
    payloads = {
        "calls.jsonl": jsonl_bytes(serialize(c) for c in finalized.calls),
        "relations.jsonl": jsonl_bytes(serialize(r) for r in finalized.relations),
        "manifest.json": (serialize(finalized.manifest) + "\n").encode("utf-8"),
    }
    dump = os.environ.get("ROLLER_GOLDENS_DUMP")
    if dump:
        out = Path(dump) / harness / name
        out.mkdir(parents=True, exist_ok=True)
        for file, data in payloads.items():
            (out / file).write_bytes(data)
    return {file: hashlib.sha256(data).hexdigest() for file, data in payloads.items()}


def test_fixtures_exist() -> None:
    assert len(FIXTURES) >= 20, FIXTURES


@pytest.mark.parametrize(("harness", "name"), FIXTURES, ids=[f"{h}/{n}" for h, n in FIXTURES])
def test_finalize_is_byte_identical(harness: str, name: str, tmp_path: Path) -> None:
    check_golden(GOLDENS, f"{harness}/{name}", _digests(harness, name, tmp_path))
