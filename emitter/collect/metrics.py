"""The collector's metrics: each defined once here, on a registry of the collector's own
(``prometheus_client``), served by the library on the collector's ``/metrics`` and summed into
its log line. Call sites use the attributes (``metrics.requests.labels(target="broker").inc()``);
tests read values with :meth:`CollectorMetrics.value` (``registry.get_sample_value``)."""

from __future__ import annotations

import threading
from typing import Literal, get_args
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

__all__ = [
    "ERROR_REASONS",
    "FORWARD_ERROR_REASONS",
    "TARGETS",
    "CollectorMetrics",
    "ErrorReason",
    "MetricsServer",
]

# Every value each label takes. Each series is created at zero when the collector starts (as
# Prometheus' instrumentation guide asks of known label values), so a rate, a sum by label or an
# alert over it has data before the first failure, not only after.
TARGETS = ("namesrv", "broker")
ErrorReason = Literal["unreachable", "timeout", "garbage", "refused"]
ERROR_REASONS: tuple[ErrorReason, ...] = get_args(ErrorReason)
FORWARD_ERROR_REASONS = ("list", "read", "delivery", "remove")


class CollectorMetrics:
    """The collector's counters and gauges (docs/metrics.md lists them), thread-safe."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.polls = Counter(
            "routewatch_collect_polls", "Polls of every NameServer and broker.", registry=r
        )
        self.requests = Counter(
            "routewatch_collect_requests", "Requests sent, by target kind.", ["target"], registry=r
        )
        self.errors = Counter(
            "routewatch_collect_errors",
            "Requests that failed, by target kind and reason (unreachable, timeout, garbage, "
            "refused).",
            ["target", "reason"],
            registry=r,
        )
        self.events_written = Counter(
            "routewatch_collect_events_written",
            "Events written: heartbeats and the rounds' reports (collector_round).",
            registry=r,
        )
        self.last_round = Gauge(
            "routewatch_collect_last_round_timestamp_seconds",
            "When the last poll round ended, Unix seconds (a collector that stops polling is "
            "seen).",
            registry=r,
        )
        self.targets_down = Gauge(
            "routewatch_collect_targets_down",
            "NameServers and brokers that did not answer the last poll, by target kind.",
            ["target"],
            registry=r,
        )
        self.forward_files = Counter(
            "routewatch_collect_forward_files",
            "Client-library spool files forwarded to the sink and removed.",
            registry=r,
        )
        self.forward_events = Counter(
            "routewatch_collect_forward_events",
            "Client-library events forwarded to the sink (counted once delivered).",
            registry=r,
        )
        self.forward_lines_skipped = Counter(
            "routewatch_collect_forward_lines_skipped",
            "Lines of forwarded files that are not contract events, skipped.",
            registry=r,
        )
        self.forward_errors = Counter(
            "routewatch_collect_forward_errors",
            "Forwarding failures, by reason (list, read, delivery, remove); each is retried.",
            ["reason"],
            registry=r,
        )
        for target in TARGETS:
            self.requests.labels(target=target)
            self.targets_down.labels(target=target)
            for reason in ERROR_REASONS:
                self.errors.labels(target=target, reason=reason)
        for forward_reason in FORWARD_ERROR_REASONS:
            self.forward_errors.labels(reason=forward_reason)
        # whether the collector forwards the client library's spools (its log line says so)
        self.forwarding = False

    def names(self) -> set[str]:
        """Every metric's name as exposed (a counter's with ``_total``)."""
        out = set()
        for family in self.registry.collect():
            out.add(f"{family.name}_total" if family.type == "counter" else family.name)
        return out

    def value(self, name: str, **labels: str) -> float:
        """One exposed series' value (``routewatch_collect_requests_total``, labels); without
        labels, the sum over the name's series (0 when it has none)."""
        if labels:
            return self.registry.get_sample_value(name, labels) or 0.0
        return sum(
            sample.value
            for family in self.registry.collect()
            for sample in family.samples
            if sample.name == name
        )

    def summary(self) -> str:
        """One line for the log; the forwarding part when the collector forwards."""
        v = self.value
        text = (
            f"{v('routewatch_collect_polls_total'):g} polls, "
            f"{v('routewatch_collect_requests_total'):g} requests, "
            f"{v('routewatch_collect_errors_total'):g} errors, "
            f"{v('routewatch_collect_events_written_total'):g} events written"
        )
        if self.forwarding:
            text += (
                f"; {v('routewatch_collect_forward_events_total'):g} client events "
                f"forwarded from {v('routewatch_collect_forward_files_total'):g} files, "
                f"{v('routewatch_collect_forward_lines_skipped_total'):g} bad lines "
                f"skipped, {v('routewatch_collect_forward_errors_total'):g} forwarding "
                "errors"
            )
        return text


class MetricsServer:
    """The metrics' exposition on ``host``:``port`` (loopback unless told otherwise), served by
    ``prometheus_client`` in a daemon thread."""

    def __init__(self, metrics: CollectorMetrics, port: int, host: str = "127.0.0.1") -> None:
        self.server: WSGIServer
        self._thread: threading.Thread
        self.server, self._thread = start_http_server(port, host, registry=metrics.registry)
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)
