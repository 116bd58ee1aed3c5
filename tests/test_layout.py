"""Dependencies point inward: emitter, streaming and api import the core, never each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("routewatch", "emitter", "streaming", "api", "dashboards")
FORBIDDEN = {
    "routewatch": {"emitter", "streaming", "api", "dashboards", "pyspark"},
    "dashboards": {"emitter", "streaming", "api", "pyspark"},
    "emitter": {"streaming", "api", "pyspark"},
    "streaming": {"emitter", "api"},
    "api": {"emitter", "streaming", "pyspark"},
}


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_inward(package: str) -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(_imported_roots(path) & FORBIDDEN[package])
        for path in (REPO / package).rglob("*.py")
    }

    assert {k: v for k, v in offenders.items() if v} == {}


def _imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def test_only_tests_benchmarks_and_the_sandbox_use_the_launchers() -> None:
    """The test harness's launchers serve the tests and the benchmarks, and one command of
    production code: ``routewatch sandbox``, which exposes its RocketMQ cluster to people
    (docs/sandbox.md) rather than forking it."""
    testing = REPO / "routewatch" / "testing"
    sandbox = REPO / "routewatch" / "sandbox"
    offenders = sorted(
        str(path.relative_to(REPO))
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if testing not in path.parents
        and sandbox not in path.parents
        and any(m.startswith("routewatch.testing") for m in _imported_modules(path))
    )

    assert offenders == []


def test_nothing_but_its_command_imports_the_sandbox() -> None:
    sandbox = REPO / "routewatch" / "sandbox"
    offenders = sorted(
        str(path.relative_to(REPO))
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if sandbox not in path.parents
        and any(m.startswith("routewatch.sandbox") for m in _imported_modules(path))
    )

    assert offenders == []


def test_the_launchers_need_nothing_from_the_tests() -> None:
    offenders = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "routewatch" / "testing").rglob("*.py")
        if {"tests", "pytest"} & _imported_roots(path)
    )

    assert offenders == []


def test_the_replayer_and_the_collector_share_the_sinks_and_not_each_other() -> None:
    """emitter/ holds every producer of events; replay and collect write through
    emitter.sinks and import nothing of each other (docs/architecture.md)."""
    pairs = {"replay": "emitter.collect", "collect": "emitter.replay"}
    offenders = {
        str(path.relative_to(REPO)): sorted(
            m for m in _imported_modules(path) if m == other or m.startswith(f"{other}.")
        )
        for sub, other in pairs.items()
        for path in (REPO / "emitter" / sub).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    sinks = {m for m in _imported_modules(REPO / "emitter" / "sinks" / "local.py")}
    assert not {m for m in sinks if m.startswith(("emitter.replay", "emitter.collect"))}


DRIVERS = {"sqlite3", "psycopg", "psycopg_pool", "psycopg2"}


def test_only_the_store_imports_a_database_driver() -> None:
    """The store hides its drivers: routewatch.store's backends import them, and its callers see
    its own errors (routewatch.store.errors); the API, the job and the emitter never import a
    driver (docs/architecture.md)."""
    store = REPO / "routewatch" / "store"
    testing = REPO / "routewatch" / "testing"  # the test harness's own PostgreSQL server
    offenders = {
        str(path.relative_to(REPO)): sorted(_imported_roots(path) & DRIVERS)
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if store not in path.parents and testing not in path.parents
    }
    assert {k: v for k, v in offenders.items() if v} == {}
