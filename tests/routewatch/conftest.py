"""A store per test, on each backend: a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new store's URL; the PostgreSQL server is the harness's, a database of its own."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'rw.db'}"
    server = request.getfixturevalue("postgres")
    url: str = server.create_database(f"store_{uuid.uuid4().hex[:12]}")
    return url
