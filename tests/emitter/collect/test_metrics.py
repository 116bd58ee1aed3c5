"""The collector's own metrics: exactly those docs/metrics.md lists for it, each defined once on
the collector's registry and exposed by ``prometheus_client``."""

from __future__ import annotations

import urllib.request

from emitter.collect.metrics import (
    ERROR_REASONS,
    FORWARD_ERROR_REASONS,
    TARGETS,
    CollectorMetrics,
    MetricsServer,
)
from routewatch.testing.processes import free_port
from tests.support.grafana import documented_metrics


def test_the_collectors_metrics_are_exactly_those_documented() -> None:
    documented = {n for n in documented_metrics() if n.startswith("routewatch_collect_")}
    assert CollectorMetrics().names() == documented


def test_every_labelled_series_is_exposed_at_zero_before_anything_happened() -> None:
    """A rate or a sum by label over a series that does not exist yet has no data: a dashboard
    panel stays empty and an alert over it cannot fire until the first failure of that kind."""
    registry = CollectorMetrics().registry
    for target in TARGETS:
        for name in ("routewatch_collect_requests_total", "routewatch_collect_targets_down"):
            assert registry.get_sample_value(name, {"target": target}) == 0
        for reason in ERROR_REASONS:
            labels = {"target": target, "reason": reason}
            assert registry.get_sample_value("routewatch_collect_errors_total", labels) == 0
    for forward_reason in FORWARD_ERROR_REASONS:
        labels = {"reason": forward_reason}
        assert registry.get_sample_value("routewatch_collect_forward_errors_total", labels) == 0


def test_values_are_read_per_series_and_summed_over_labels() -> None:
    metrics = CollectorMetrics()
    metrics.requests.labels(target="namesrv").inc(3)
    metrics.requests.labels(target="broker").inc()
    metrics.errors.labels(target="broker", reason="timeout").inc()

    assert metrics.value("routewatch_collect_requests_total", target="namesrv") == 3
    assert metrics.value("routewatch_collect_requests_total") == 4
    assert metrics.value("routewatch_collect_errors_total", target="namesrv", reason="refused") == 0
    assert metrics.summary() == "0 polls, 4 requests, 1 errors, 0 events written"
    metrics.forwarding = True
    assert metrics.summary().endswith(
        "; 0 client events forwarded from 0 files, 0 bad lines skipped, 0 forwarding errors"
    )


def test_the_server_exposes_the_registry_on_loopback() -> None:
    metrics = CollectorMetrics()
    metrics.polls.inc(2)
    metrics.targets_down.labels(target="broker").set(1)
    server = MetricsServer(metrics, free_port())
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as r:
            text = r.read().decode()
    finally:
        server.close()
    assert "routewatch_collect_polls_total 2.0" in text
    assert 'routewatch_collect_targets_down{target="broker"} 1.0' in text
    assert "# HELP routewatch_collect_forward_errors_total" in text
