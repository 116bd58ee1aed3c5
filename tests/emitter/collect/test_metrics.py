"""The collector's own metrics are exactly those docs/metrics.md lists for it."""

from __future__ import annotations

from emitter.collect.metrics import _HELP
from tests.support.grafana import documented_metrics


def test_the_collectors_metrics_are_exactly_those_documented() -> None:
    documented = {n for n in documented_metrics() if n.startswith("routewatch_collect_")}
    assert set(_HELP) == documented
