"""Prometheus metrics, read from the store at scrape time by a custom collector.

Every metric is listed, with its labels and meaning, in docs/metrics.md; the dashboard is built
from that list. Per-topic metrics are bounded by ``ROUTEWATCH_METRICS_MAX_TOPICS``: the
worst-covered topics first.
"""

from __future__ import annotations

import time
import typing
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from api.access import StoreAccess
from api.settings import ApiSettings
from api.topic_cache import TopicCache
from routewatch.alertmanager import alert_labels
from routewatch.alerts import ALERT_KINDS
from routewatch.changes import (
    ALERTS_OPENED,
    DUPLICATES,
    EVENTS_APPLIED,
    LATE,
    QUARANTINED,
    SENDS,
)
from routewatch.events import EVENT_CLASSES, SendStatus
from routewatch.store import Store, StoreUnavailableError
from routewatch.store.views import (
    StoreVersion,
    broker_views,
    cluster_names,
    ended_job,
    last_batch,
    newest_times,
    open_alert_counts,
    paging_alerts,
    stream_time,
    topic_items,
)
from routewatch.store.views.convergence import ClusterConvergence, cluster_convergence
from routewatch.validation import BAD_INPUT_REASONS

__all__ = ["OVERFLOW_ID", "StoreCollector"]

SEND_STATUSES: tuple[str, ...] = typing.get_args(SendStatus)
OVERFLOW_ID = "overflow"  # the routewatch_id of a kind's overflow series
CONVERGENCE_RANGE_MS = 3_600_000  # route changes' convergence: the last hour of stream time
_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


class StoreCollector(Collector):
    def __init__(self, settings: ApiSettings, access: StoreAccess, topics: TopicCache) -> None:
        self.settings = settings
        self.access = access
        self.topics = topics
        # per-alert series left out of /metrics by the bound, summed over the scrapes
        self.dropped: Counter[str] = Counter()
        # the clusters' convergence, for the store's version it was computed on
        self._convergence: tuple[StoreVersion, list[ClusterConvergence]] | None = None

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "routewatch_exporter_up", "1 when the store could be read for this scrape, else 0."
        )
        try:
            store = self.access.open(timeout_s=2.0)
            try:
                families = list(self._families(store))
            finally:
                store.close()
        except StoreUnavailableError:
            up.add_metric([], 0)
            yield up
            return
        yield from families
        up.add_metric([], 1)
        yield up

    def _families(self, store: Store) -> Iterator[Metric]:
        with store.snapshot():
            index = self.topics.get(store)
            topics = topic_items(
                store, index.brokers, index.worst(self.settings.metrics_max_topics)
            )
            if self._convergence is None or self._convergence[0] != index.version:
                self._convergence = (index.version, _convergence(store, index))
            convergence = self._convergence[1]
        coverage = GaugeMetricFamily(
            "routewatch_topic_coverage_ratio",
            "Share of the cluster's expected brokers (live masters) that hold the topic.",
            labels=["cluster", "topic"],
        )
        brokers = GaugeMetricFamily(
            "routewatch_topic_brokers",
            "Brokers in the topic's route on one NameServer.",
            labels=["cluster", "topic", "namesrv"],
        )
        for t in topics:
            assert t.coverage is not None  # the worst-covered topics have a coverage
            coverage.add_metric([t.cluster, t.topic], t.coverage)
            for ns, queues in t.namesrvs.items():
                brokers.add_metric([t.cluster, t.topic, ns], len({q.broker for q in queues}))
        yield coverage
        yield brokers
        yield from _convergence_families(convergence)

        up = GaugeMetricFamily(
            "routewatch_broker_up",
            "1 while the broker is live on the NameServer (registered within 120 s), else 0.",
            labels=["cluster", "broker", "namesrv"],
        )
        for b in broker_views(store):
            for liveness in b.namesrvs:
                up.add_metric([b.cluster, b.broker, liveness.namesrv], 1 if liveness.live else 0)
        yield up

        open_alerts = GaugeMetricFamily(
            "routewatch_alerts_open", "Alerts open now.", labels=["kind", "severity"]
        )
        for kind, severity, n in open_alert_counts(store):
            open_alerts.add_metric([kind, severity], n)
        yield open_alerts
        yield from self._per_alert(paging_alerts(store, int(time.time() * 1000)))
        yield from _notify_rounds(store.notify_rounds())

        counters = store.counters()

        # Counters whose label values are known in advance start at 0, so that Prometheus sees
        # the first increment of each (a series born at 1 has no increase()).
        def counter(
            name: str, doc: str, source: str, label: str | None, known: Iterable[str] = ()
        ) -> CounterMetricFamily:
            family = CounterMetricFamily(name, doc, labels=[label] if label else [])
            sums: dict[str, int] = dict.fromkeys(known, 0)
            for (n, lab, _), value in counters.items():
                if n == source:
                    sums[lab] = sums.get(lab, 0) + value
            for lab, value in sorted(sums.items()):
                family.add_metric([lab] if label else [], value)
            if not label and not sums:
                family.add_metric([], 0)
            return family

        yield counter(
            "routewatch_alerts_opened",
            "Alerts opened, by kind.",
            ALERTS_OPENED,
            "kind",
            ALERT_KINDS,
        )
        yield counter(
            "routewatch_events", "Events applied, by type.", EVENTS_APPLIED, "type", EVENT_CLASSES
        )
        yield counter(
            "routewatch_events_quarantined",
            "Bad input, by reason.",
            QUARANTINED,
            "reason",
            BAD_INPUT_REASONS,
        )
        yield counter("routewatch_events_late", "Events beyond the lateness bound.", LATE, None)
        yield counter("routewatch_events_duplicate", "Repeated event ids.", DUPLICATES, None)
        sends = CounterMetricFamily(
            "routewatch_sends", "Sends, by cluster and status.", labels=["cluster", "status"]
        )
        by_cluster: dict[tuple[str, str], int] = {
            (cluster, status): 0 for cluster in cluster_names(store) for status in SEND_STATUSES
        }
        for (name, status, cluster), value in counters.items():
            if name == SENDS:
                by_cluster[cluster, status] = value
        for (cluster, status), value in sorted(by_cluster.items()):
            sends.add_metric([cluster, status], value)
        yield sends

        last = last_batch(store)
        duration = GaugeMetricFamily(
            "routewatch_stream_batch_duration_seconds",
            "Duration of the stream job's last micro-batch.",
        )
        rate = GaugeMetricFamily(
            "routewatch_stream_input_rows_per_second",
            "Input rows per second of the last micro-batch's duration.",
        )
        lag = GaugeMetricFamily(
            "routewatch_stream_event_time_lag_seconds",
            "Wall clock minus the newest stream time, now.",
        )
        if last is not None:
            duration.add_metric([], last["duration_ms"] / 1000)
            rate.add_metric([], last["input_rows"] / max(last["duration_ms"] / 1000, 1e-3))
        input_age = GaugeMetricFamily(
            "routewatch_stream_input_age_seconds",
            "Wall clock seconds since the job last received an event newer than every event "
            "before it.",
        )
        report_age = GaugeMetricFamily(
            "routewatch_stream_job_report_age_seconds",
            "Wall clock seconds since the stream job last reported progress: a batch, or "
            "Spark's report every 10 s that the query is idle.",
        )
        ended = GaugeMetricFamily(
            "routewatch_stream_job_ended",
            "1 when the stream job's query has ended, stopped or failed, and no other job runs "
            "and reports (GET /readyz says which, and why); 0 while a job runs.",
        )
        newest, input_at = newest_times(store)
        jobs = store.jobs()
        now = time.time()
        if newest is not None:
            lag.add_metric([], max(now - newest / 1000, 0.0))
        if input_at is not None:
            input_age.add_metric([], max(now - input_at / 1000, 0.0))
        if jobs:
            report_age.add_metric([], max(now - jobs[0]["reported_at"] / 1000, 0.0))
            # (as /readyz judges: a job that runs and reports makes another's end no news)
            max_age_s = self.settings.ready_max_batch_age_s
            ended_now = ended_job(jobs, now * 1000, max_age_s) is not None
            ended.add_metric([], 1.0 if ended_now else 0.0)
        yield duration
        yield rate
        yield lag
        yield input_age
        yield report_age
        yield ended

    def _per_alert(self, paging: list[dict[str, Any]]) -> Iterator[Metric]:
        """``routewatch_alert_open``: one series per open alert no silence holds, with the
        labels its Alertmanager alert has (routewatch.alertmanager), bounded by
        ``ROUTEWATCH_ALERT_SERIES_MAX`` — critical first, then the oldest; the rest make one
        overflow series per kind (``routewatch_id="overflow"``, its value their number, its
        severity the worst of them), and count in ``routewatch_alert_series_dropped_total``."""
        static = self.settings.alert_labels
        names = ["kind", "severity", "cluster", "topic", "broker", "routewatch_id", *static]
        series = GaugeMetricFamily(
            "routewatch_alert_open",
            "1 per open routewatch alert that no silence holds, with its Alertmanager labels "
            "(kind is alertname there); a kind's overflow series counts those left out.",
            labels=names,
        )
        paging.sort(key=lambda a: (_SEVERITY_RANK.get(a["severity"], 3), a["opened_at"], a["id"]))
        keep = self.settings.alert_series_max
        for a in paging[:keep]:
            labels = alert_labels(a, static)
            labels["kind"] = labels.pop("alertname")
            series.add_metric([labels.get(n, "") for n in names], 1)
        left: dict[str, list[dict[str, Any]]] = {}
        for a in paging[keep:]:
            left.setdefault(a["kind"], []).append(a)
        for kind, alerts in sorted(left.items()):
            worst = alerts[0]["severity"]  # (sorted worst first)
            labels = {"kind": kind, "severity": worst, "routewatch_id": OVERFLOW_ID, **static}
            series.add_metric([labels.get(n, "") for n in names], len(alerts))
            self.dropped[kind] += len(alerts)
        yield series
        dropped = CounterMetricFamily(
            "routewatch_alert_series_dropped",
            "Per-alert series left out of /metrics by ROUTEWATCH_ALERT_SERIES_MAX (each counted "
            "in its kind's overflow series instead), summed over this API's scrapes.",
            labels=["kind"],
        )
        for kind in ALERT_KINDS:
            dropped.add_metric([kind], self.dropped[kind])
        yield dropped


def _notify_rounds(rounds: list[dict[str, Any]]) -> Iterator[Metric]:
    """routewatch notify's last round per Alertmanager (receiver), as it recorded it."""
    tried = GaugeMetricFamily(
        "routewatch_notify_round_timestamp_seconds",
        "When routewatch notify last made a round for this Alertmanager (wall clock).",
        labels=["receiver"],
    )
    pushed = GaugeMetricFamily(
        "routewatch_notify_push_timestamp_seconds",
        "When this Alertmanager last accepted routewatch notify's push (wall clock).",
        labels=["receiver"],
    )
    failing = GaugeMetricFamily(
        "routewatch_notify_failing",
        "1 when this Alertmanager did not accept routewatch notify's last round, else 0.",
        labels=["receiver"],
    )
    for r in rounds:
        tried.add_metric([r["receiver"]], r["tried_at"] / 1000)
        if r["pushed_at"] is not None:
            pushed.add_metric([r["receiver"]], r["pushed_at"] / 1000)
        failing.add_metric([r["receiver"]], 0.0 if r["failure"] is None else 1.0)
    yield tried
    yield pushed
    yield failing


def _convergence(store: Store, index: Any) -> list[ClusterConvergence]:
    """Each cluster's convergence over the last hour of its stream time."""
    out = []
    for cluster in cluster_names(store):
        now = stream_time(store, cluster)
        if now is not None:
            until = now + 1
            out.append(
                cluster_convergence(store, index, cluster, until - CONVERGENCE_RANGE_MS, until)
            )
    return out


def _convergence_families(found: list[ClusterConvergence]) -> Iterator[Metric]:
    ratio = GaugeMetricFamily(
        "routewatch_cluster_topics_converged_ratio",
        "Share of the cluster's topics (RocketMQ's own aside) on every writable master and "
        "routed alike by every NameServer.",
        labels=["cluster"],
    )
    apart = GaugeMetricFamily(
        "routewatch_cluster_topics_apart",
        "The cluster's topics its NameServers route differently now.",
        labels=["cluster"],
    )
    changes = GaugeMetricFamily(
        "routewatch_cluster_route_changes_converged",
        "Route changes that converged in the last hour of the cluster's stream time.",
        labels=["cluster"],
    )
    seconds = GaugeMetricFamily(
        "routewatch_cluster_route_convergence_seconds",
        "How long the route changes that converged in the last hour of the cluster's stream "
        "time took: the median (quantile 0.5) and the worst (quantile 1).",
        labels=["cluster", "quantile"],
    )
    for c in found:
        if c.ratio is not None:
            ratio.add_metric([c.cluster], c.ratio)
        apart.add_metric([c.cluster], c.apart)
        changes.add_metric([c.cluster], len(c.durations_ms))
        if c.median_s is not None and c.worst_s is not None:
            seconds.add_metric([c.cluster, "0.5"], c.median_s)
            seconds.add_metric([c.cluster, "1"], c.worst_s)
    yield ratio
    yield apart
    yield changes
    yield seconds
