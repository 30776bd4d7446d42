"""Which mode Codex runs a model in, and the one line `roller collect` says about it.

The table is Codex 0.171.0's embedded catalog (tests/e2e/test_codex.py checks it against
the installed binary); these tests pin what each branch says."""

from __future__ import annotations

from pathlib import Path

import pytest

from roller.cli.collect import _model_notice
from roller.collect.session import CollectRequest
from roller.harnesses import adapter_for
from roller.harnesses.base import ModelNoticeAdapter
from roller.harnesses.codex.catalog import CATALOG_VERSION, DEFAULT_MODEL, mode_for, mode_notice


@pytest.mark.parametrize(
    ("model", "mode", "runs"),
    [
        (None, "code mode", DEFAULT_MODEL),
        ("gpt-6.2-sol", "code mode", "gpt-6.2-sol"),
        ("gpt-5.6-luna", "code mode", "gpt-5.6-luna"),
        ("gpt-5.5", "function tools", "gpt-5.5"),
        ("mock-model", "fallback", "mock-model"),
    ],
)
def test_each_model_has_its_mode(model: str | None, mode: str, runs: str) -> None:
    found = mode_for(model, CATALOG_VERSION)
    assert (found.mode, found.model) == (mode, runs)


def test_the_notice_says_the_mode_and_why_in_one_line() -> None:
    line = mode_notice(None, CATALOG_VERSION)
    assert "\n" not in line
    assert line.startswith("codex: no --model, so Codex 0.171.0 uses its catalog default")
    assert "gpt-6.2-sol" in line and "code mode" in line and "additional_tools" in line
    assert "multi-agent v2" in line
    assert "multi-agent v1" in mode_notice("gpt-5.6-luna", CATALOG_VERSION)
    assert "fallback metadata" in mode_notice("my-own-model", CATALOG_VERSION)
    other = mode_notice(None, "0.172.0")
    assert "not known" in other and CATALOG_VERSION in other


def _request(api_base: str, model: str | None, version: str | None = None) -> CollectRequest:
    return CollectRequest(
        run_dir=Path("/nonexistent"),
        harness="codex",
        api_base=api_base,
        prompt="hi",
        model=model,
        harness_version=version,
    )


def test_collect_says_it_only_for_a_real_upstream_without_model() -> None:
    assert isinstance(adapter_for("codex"), ModelNoticeAdapter)
    assert _model_notice(_request("http://127.0.0.1:9", None)) == mode_notice(None, "0.171.0")
    assert _model_notice(_request("http://127.0.0.1:9", "mock-model")) is None
    assert _model_notice(_request("mock:spawn-one", None)) is None
    later = _model_notice(_request("https://api.openai.com", None, "0.172.0"))
    assert later is not None and "0.172.0" in later
    # a harness whose request shape does not hang on its model says nothing
    assert not isinstance(adapter_for("pi"), ModelNoticeAdapter)
