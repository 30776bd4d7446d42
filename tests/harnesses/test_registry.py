"""One registry: every harness-keyed table is derived from it or checked against it here.

Derived tables (names, gate, adapters, mock roles, injection wrappers, acceptance
profiles) follow the registry by construction (tests/harnesses/test_throwaway_harness.py
shows a new harness reaching each). What cannot be derived at run time is checked by a
completeness function below, one per table: the import-linter independence list in
pyproject.toml, docs, the checked-in fixtures, the mock simulation's harness shapes and
each package's reader. `test_each_check_names_a_harness_its_table_misses` registers the
throwaway harness, which is in none of those tables, and shows every check fail for it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from roller.errors import UsageError
from roller.harnesses import adapter_for, register, registry, unregister
from roller.harnesses.harness import Harness
from roller.harnesses.registry import BUILTIN, Registry
from tests.harnesses import throwaway_harness
from tests.mock.sim_harnesses import HARNESSES as SIMULATED

REPO = Path(__file__).resolve().parents[2]


def _independence_list() -> set[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (contract,) = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"].startswith("Harness packages never import each other")
    ]
    return set(contract["modules"])


def _launchable(reg: Registry) -> list[str]:
    """Harnesses roller launches itself (an adapter that does not run the user's command)."""
    return [h.name for h in reg.harnesses if h.adapter is not None and not h.adapter.runs_command]


def missing_from_independence_list(reg: Registry) -> list[str]:
    listed = _independence_list()
    return [h.name for h in reg.harnesses if h.package not in listed]


def missing_acceptance_profile(reg: Registry) -> list[str]:
    return [name for name in _launchable(reg) if reg.get(name).acceptance is None]  # type: ignore[union-attr]


def missing_from_docs(reg: Registry) -> list[str]:
    """docs/harnesses.md has a section per launchable harness; docs/identity.md names all."""
    harnesses = (REPO / "docs" / "harnesses.md").read_text()
    identity = (REPO / "docs" / "identity.md").read_text()
    sections = {line for line in harnesses.splitlines() if line.startswith("## ")}
    return [
        h.name
        for h in reg.harnesses
        if f"`{h.name}`" not in identity
        or (h.name in _launchable(reg) and not any(f"(`{h.name}`)" in s for s in sections))
    ]


def missing_fixtures(reg: Registry) -> list[str]:
    data = REPO / "tests" / "data" / "harnesses"
    return [name for name in _launchable(reg) if not any((data / name).glob("*/attempt.json"))]


def missing_simulation(reg: Registry) -> list[str]:
    """tests/mock/sim_harnesses.py has a shape per harness that declares tools, named
    `<harness>` or `<harness>-<variant>`, whose spawn tool is one the harness declares."""
    missing = []
    for h in reg.harnesses:
        if not any(h.tools.names(role) for role in ("spawn", "shell", "read", "write")):
            continue
        shapes = [s for n, s in SIMULATED.items() if n == h.name or n.startswith(f"{h.name}-")]
        spawn = h.tools.names("spawn")
        if not shapes or any(s.spawn_tool not in (None, *spawn) for s in shapes):
            missing.append(h.name)
    return missing


def missing_reader(reg: Registry) -> list[str]:
    """Each launchable harness's package has one reader module exposing `read_native`,
    a function whose docstring (or its module's) says where the logs are."""
    missing = []
    for name in _launchable(reg):
        package = importlib.import_module(reg.get(name).package)  # type: ignore[union-attr]
        readers = [
            module
            for module in _submodules(package.__name__, package.__path__)
            if inspect.isfunction(getattr(module, "read_native", None))
        ]
        if len(readers) != 1 or not readers[0].__doc__:
            missing.append(name)
    return missing


def _submodules(name: str, path: list[str]) -> Iterator[object]:
    for info in pkgutil.iter_modules(path):
        yield importlib.import_module(f"{name}.{info.name}")


CHECKS: list[Callable[[Registry], list[str]]] = [
    missing_from_independence_list,
    missing_acceptance_profile,
    missing_from_docs,
    missing_fixtures,
    missing_simulation,
    missing_reader,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_every_table_covers_every_registered_harness(
    check: Callable[[Registry], list[str]],
) -> None:
    assert check(registry()) == []


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_each_check_names_a_harness_its_table_misses(
    check: Callable[[Registry], list[str]],
) -> None:
    register(throwaway_harness.HARNESS)
    try:
        assert check(registry()) == [throwaway_harness.NAME]
    finally:
        unregister(throwaway_harness.NAME)


def test_the_independence_list_is_exactly_the_builtin_packages() -> None:
    assert _independence_list() == {h.package for h in BUILTIN}


def test_each_package_declares_its_harness_and_its_profile() -> None:
    for h in BUILTIN:
        package = importlib.import_module(h.package)
        assert package.HARNESS is h
        assert h.package == f"roller.harnesses.{h.name.replace('-', '_')}"
        profile = importlib.import_module(f"{h.package}.profile")
        assert h.name == profile.NAME and profile.WIRE is h.wire


def test_names_are_unique_and_a_taken_name_is_refused() -> None:
    assert len(set(registry().names)) == len(registry().names)
    with pytest.raises(ValueError, match="registered twice"):
        register(BUILTIN[1])
    with pytest.raises(ValueError, match="no harness"):
        unregister("no-such-harness")


def test_profile_only_harnesses_are_known_on_the_wire_but_not_launchable() -> None:
    wire_only = [h.name for h in BUILTIN if h.adapter is None]
    assert wire_only == ["qwen-code"]
    for name in wire_only:
        assert name in registry().names
        with pytest.raises(UsageError, match="known on the wire only"):
            adapter_for(name)


def test_a_harness_whose_parts_name_another_is_refused() -> None:
    claude = BUILTIN[1]
    with pytest.raises(ValueError, match="its wire profile is for"):
        Harness(name="x", package="p", wire=claude.wire)
    with pytest.raises(ValueError, match="its adapter is for"):
        replace(claude, wire=replace(claude.wire, harness="y"), name="y")
