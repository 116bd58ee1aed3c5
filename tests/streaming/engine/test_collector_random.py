"""Random traces of watched clusters (tests/support/collector_traces.py) through the in-process
runner: every invariant of tests/support/collector_invariants.py holds on each, and the alerts
do not depend on the batching."""

from __future__ import annotations

import pytest

from streaming.engine import run_stream
from tests.support.collector_invariants import violations
from tests.support.collector_traces import collector_trace

SEEDS = range(400)


@pytest.mark.parametrize("block", range(8))
def test_collector_random_traces_keep_the_invariants(block: int) -> None:
    broken = {}
    for seed in SEEDS[block::8]:
        arrivals = collector_trace(seed).arrivals()
        found = violations(arrivals, run_stream(arrivals, lateness_ms=0).final_alerts())
        if found:
            broken[seed] = found
    assert broken == {}


@pytest.mark.parametrize("seed", SEEDS[::40])
def test_collector_random_traces_give_the_same_alerts_one_event_per_batch(seed: int) -> None:
    arrivals = collector_trace(seed).arrivals()

    whole = run_stream(arrivals, lateness_ms=0).final_alerts()
    one_by_one = run_stream(arrivals, lateness_ms=0, batch_size=1).final_alerts()

    assert [a.to_dict() for a in one_by_one] == [a.to_dict() for a in whole]
