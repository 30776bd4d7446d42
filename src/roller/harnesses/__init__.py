"""Harnesses: one package per harness, each a declared unit (`roller.harnesses.harness`).

A harness package (`roller.harnesses.<name>/`) holds everything roller knows about that
harness: its wire profile, tool names and injection wrappers (`profile`), its adapter
(launch plan, native log copy and reader, in `__init__` and reader modules beside it) and
its acceptance profile (`acceptance`); a harness seen only on the wire has a profile and
nothing else. `roller.harnesses.registry` lists each package once; every other
harness-keyed table is derived from it. The modules beside the packages are what every
harness shares: `base` (the adapter contract), `harness`, `options`, `launch`, `tools`,
`wrappers`, `acceptance`, `install`, `native_files`, `resume`.

Adding a harness: its package, one line in `registry.BUILTIN`, one line in the
import-linter independence list (pyproject.toml), its tests and
`tests/data/harnesses/<name>/` (docs/architecture.md, "Where a harness lives").
"""

from __future__ import annotations

from roller.harnesses.registry import (
    adapter_for,
    adapters,
    body_conversation,
    harness_names,
    identify,
    register,
    registry,
    unregister,
)

__all__ = [
    "adapter_for",
    "adapters",
    "body_conversation",
    "harness_names",
    "identify",
    "register",
    "registry",
    "unregister",
]
