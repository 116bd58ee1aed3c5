"""Fixtures of the rule tests: every test taking ``batch_size`` runs over one batch and one event
per batch."""

from __future__ import annotations

import pytest


@pytest.fixture(params=[None, 1], ids=["one-batch", "event-per-batch"])
def batch_size(request: pytest.FixtureRequest) -> int | None:
    """Alerts must not depend on batch boundaries: the whole input in one batch, and one event
    per batch."""
    size: int | None = request.param
    return size
