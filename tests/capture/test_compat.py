"""The converter chain: older records are read through explicit converters, never guessed.

A manifest written before the optional `lifecycle` existed (no key at all) validates and
reads as "not recorded"; a record missing anything else still fails with its own error;
the chain runs converters in order, each once, across schema bumps.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from roller.capture.compat import Converter, upgrade
from roller.capture.integrity import validate_attempt
from roller.capture.layout import AttemptPaths
from roller.capture.reader import read_manifest
from roller.errors import CaptureFormatError
from tests.support.captures import REPO, only_attempt, roller

SINGLE = REPO / "tests" / "golden" / "single" / "agent.py"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> AttemptPaths:
    run_dir = tmp_path_factory.mktemp("compat") / "run"
    done = roller(
        "collect", "--harness", "generic", "--api-base", "mock:plain",
        "--run-dir", str(run_dir), "--", sys.executable, str(SINGLE),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return only_attempt(run_dir).paths


@pytest.fixture
def old_manifest(published: AttemptPaths, tmp_path: Path) -> AttemptPaths:
    """A copy of the capture whose manifest has no `lifecycle` key."""
    copy = AttemptPaths(tmp_path / "attempt-0001")
    shutil.copytree(published.root, copy.root)
    manifest = json.loads(copy.manifest.read_text())
    assert "lifecycle" in manifest
    del manifest["lifecycle"]
    copy.manifest.write_text(json.dumps(manifest))
    return copy


def test_a_manifest_without_lifecycle_validates(old_manifest: AttemptPaths) -> None:
    assert read_manifest(old_manifest).lifecycle is None
    report = validate_attempt(old_manifest)
    assert report.ok, report.problems
    done = roller("validate", str(old_manifest.root))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_manifest_missing_a_required_field_still_fails(old_manifest: AttemptPaths) -> None:
    manifest = json.loads(old_manifest.manifest.read_text())
    del manifest["counts"]
    old_manifest.manifest.write_text(json.dumps(manifest))
    with pytest.raises(CaptureFormatError, match="counts: Field required"):
        read_manifest(old_manifest)
    assert not validate_attempt(old_manifest).ok


def test_a_current_record_goes_through_no_converter() -> None:
    assert upgrade({"schema": "roller.capture/v1", "lifecycle": None}) is None
    assert upgrade({"schema": "roller.call/v1"}) is None
    assert upgrade(["not", "an", "object"]) is None


def test_the_chain_runs_each_converter_once_in_order_across_a_schema_bump() -> None:
    chain = (
        Converter(
            "x/v2", "x/v2: b added", lambda r: "b" not in r, lambda r: {**r, "b": r["a"] * 2}
        ),
        Converter(
            "x/v1", "x/v1 -> x/v2", lambda r: True, lambda r: {**r, "schema": "x/v2", "a": 1}
        ),
    )
    done = upgrade({"schema": "x/v1"}, chain)
    assert done is not None
    assert done.record == {"schema": "x/v2", "a": 1, "b": 2}
    assert done.applied == ("x/v1 -> x/v2", "x/v2: b added")
