"""Which mode Codex runs a model in, and the one line `roller collect` says about it.

The table is Codex 0.171.0's embedded catalog (tests/e2e/test_codex.py checks it against
the installed binary); these tests pin what each branch says."""

from __future__ import annotations

import pytest

from roller.cli.collect import model_notice
from roller.collect.runs import RunSpec
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


def _spec(api_base: str, model: str | None, version: str | None = None) -> RunSpec:
    return RunSpec(
        harness="codex",
        harness_version=version,
        api_base=api_base,
        capture_calls=True,
        capture_debug="on-error",
        model=model,
    )


def test_collect_says_it_only_for_a_real_upstream_without_model() -> None:
    assert isinstance(adapter_for("codex"), ModelNoticeAdapter)
    assert model_notice(_spec("http://127.0.0.1:9", None)) == mode_notice(None, "0.171.0")
    assert model_notice(_spec("http://127.0.0.1:9", "mock-model")) is None
    assert model_notice(_spec("mock:spawn-one", None)) is None
    later = model_notice(_spec("https://api.openai.com", None, "0.172.0"))
    assert later is not None and "0.172.0" in later
    # a harness whose request shape does not hang on its model says nothing
    assert not isinstance(adapter_for("pi"), ModelNoticeAdapter)
