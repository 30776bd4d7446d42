"""Codex 0.171.0's bundled model catalog, as far as the shape of its requests depends on it.

Read on 2026-12-01 from the catalog embedded in the 0.171.0 binary and checked with real
runs (docs/harnesses.md, "Codex CLI"). With a custom provider Codex asks the upstream
for no model list: the catalog alone decides, per model slug:
- `tool_mode: code_mode_only` ("code mode"): no `tools` in the request; the tools travel
  in an `additional_tools` input item and are called from a JavaScript `exec` tool
  (header `x-openai-internal-codex-responses-lite: true`); the catalog's
  `multi_agent_version` decides the subagent tools (`[features] multi_agent_v2` cannot
  turn a v2 model to v1): v2 `collaboration` tools called directly, v1 `multi_agent_v1`
  tools deferred inside `exec`;
- a catalog model without a tool mode (`gpt-5.5`): plain function tools, the subagent
  tools deferred behind a client `tool_search`;
- any other name: Codex's fallback metadata ("Model metadata for `…` not found") and plain
  function tools with `multi_agent_v1` (what `mock-model` gets).
No `model` configured: `gpt-6.2-sol`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

CATALOG_VERSION: Final = "0.171.0"
DEFAULT_MODEL: Final = "gpt-6.2-sol"
# code-mode slug -> its multi-agent version
CODE_MODE_MODELS: Final[Mapping[str, str]] = {
    "gpt-6.2-sol": "v2",
    "gpt-6.2-astra": "v2",
    "gpt-6-astra": "v2",
    "gpt-6.1-sol": "v2",
    "gpt-6.1-terra": "v2",
    "gpt-6-sol": "v2",
    "gpt-6-luna": "v2",
    "gpt-5.6-sol": "v2",
    "gpt-5.6-terra": "v2",
    "gpt-5.6-luna": "v1",
    "gpt-daybreak-blue-latest": "v2",
    "gpt-daybreak-red-latest": "v2",
    "codex-auto-review": "v1",
}
FUNCTION_TOOL_MODELS: Final = frozenset({"gpt-5.5"})

Mode = Literal["code mode", "function tools", "fallback", "unknown"]


@dataclass(frozen=True)
class ModelMode:
    """Which request shape a Codex run will have, and why."""

    mode: Mode
    model: str | None  # the model Codex will run (None: not known)
    why: str  # a clause: "runs in code mode: …", "is not in …"


_CODE_MODE = (
    "runs in code mode: its tools travel in an additional_tools input item and are called "
    "from a JavaScript exec tool (multi-agent {})"
)


def mode_for(model: str | None, version: str) -> ModelMode:
    """The mode Codex `version` runs `model` in (None: no `--model`, its default)."""
    if version != CATALOG_VERSION:
        why = f"roller knows the model catalog of Codex {CATALOG_VERSION} only"
        return ModelMode("unknown", model, why)
    slug = model or DEFAULT_MODEL
    if slug in CODE_MODE_MODELS:
        return ModelMode("code mode", slug, _CODE_MODE.format(CODE_MODE_MODELS[slug]))
    if slug in FUNCTION_TOOL_MODELS:
        why = "has no tool mode in the catalog: function tools, subagent tools behind tool_search"
        return ModelMode("function tools", slug, why)
    why = f"is not in Codex {version}'s catalog: fallback metadata, plain function tools"
    return ModelMode("fallback", slug, why)


def mode_notice(model: str | None, version: str) -> str:
    """One line saying which mode Codex will use and why."""
    found = mode_for(model, version)
    if found.mode == "unknown":
        given = "no --model" if model is None else f"--model {model}"
        return f"codex: {given}: the mode Codex {version} runs in is not known ({found.why})"
    if model is None:
        default = f"its catalog default {found.model}"
        return f"codex: no --model, so Codex {version} uses {default}, which {found.why}"
    return f"codex: --model {model} {found.why}"
