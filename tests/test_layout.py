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
