"""The catalogue's small cases (tests/cases/README.md) through the in-process runner: each ends
with exactly the alerts listed, whatever the lateness bound, the batching or the state buckets."""

from __future__ import annotations

import pytest

from streaming.engine import run_stream
from streaming.engine.runner import run_buckets
from tests.support.cases import CASES, case_arrivals, expected, shape


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("lateness_ms", [0, 2000])
@pytest.mark.parametrize("batch_size", [None, 1], ids=["one-batch", "event-per-batch"])
def test_a_case_ends_with_exactly_its_alerts(
    name: str, lateness_ms: int, batch_size: int | None
) -> None:
    run = run_stream(case_arrivals(name), lateness_ms=lateness_ms, batch_size=batch_size)

    assert sorted(shape(a.to_dict()) for a in run.final_alerts()) == expected(name)


@pytest.mark.parametrize("name", CASES)
def test_a_case_ends_with_exactly_its_alerts_over_three_state_buckets(name: str) -> None:
    """One event per batch, each in a block of its own, over three buckets each holding one
    shard of the cluster (topics spread over them)."""
    batches = [[[arrival]] for arrival in case_arrivals(name)]

    run = run_buckets(batches, buckets=3, lateness_ms=0)

    assert sorted(shape(a.to_dict()) for a in run.final_alerts()) == expected(name)
