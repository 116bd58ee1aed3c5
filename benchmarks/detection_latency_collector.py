"""The collector-fed case of :mod:`benchmarks.detection_latency` (``--case collector``): how
soon a quiet, healthy cluster that ``routewatch collect`` alone feeds has its alerts in the API
(target: every detection <= the collector's poll interval + the lateness bound + 2 s).

    .venv/bin/python -m benchmarks.detection_latency --case collector [--bounds 2]
        [--collect-poll-s 10] [--poll-ms 75] [--no-record]

One cell per lateness bound (the default bound alone unless ``--bounds`` is given), about
6 minutes each; recorded in ``benchmarks/results/latest.json``, section
``detection_latency_collector``.

**What runs.** Everything is real: a RocketMQ of the harness (``routewatch/testing/rocketmq.py``,
the Maven-resolved 4.9 distribution: one NameServer, broker-a and broker-b with auto-creation
on), ``routewatch collect`` at its default poll interval (10 s; ``--collect-poll-s``) into the
spool, watching that NameServer and a second address on a closed loopback port, ``routewatch
stream --source spool`` (``ROUTEWATCH_TRIGGER_INTERVAL_S=1``, SQLite store) and ``routewatch api``,
whose ``GET /alerts`` a thread polls every ``--poll-ms``. No event is written by this process
and no client runs: the cluster is quiet but for the changes below, so the collector's rounds
(``collector_round``, one per poll) are all that moves the job's clock between them.

**What happens**, once the job has applied the collector's first rounds:

- ``NAMESRV_UNREACHABLE``: the closed port, unreached for 30 s (opened by the round that says so);
- four ``QUEUE_SKEW``: a topic made on broker-a with 16 queues and on broker-b with 8 (opened by
  the round that reads the second table);
- four ``PARTIAL_COVERAGE``: a topic made on broker-a alone as auto-creation makes one (4 queues,
  perm 6), which the collector infers auto-created: stamped at its first sight + 60 s;
- ``STALE_ROUTE``: first, a topic made on both brokers and, once the collector has seen it on
  broker-b, deleted there alone; the NameServer still routes it to broker-b (opened by the round
  that reads broker-b's table without it, after the next change below registers that table);
- ``BROKER_EXPIRED``: broker-b killed (``kill -9``) once the others are open: stamped at its
  last heartbeat + 120 s.

The eight topics are made ``0.37 x`` the poll interval apart, so that the changes and the
thresholds fall at every phase of the collector's rounds. Topics are made with the broker's own
request (``UPDATE_AND_CREATE_TOPIC``, as ``mqadmin updateTopic -b`` sends it, which registers
the change with the NameServer before it answers).

**Latency** = the wall clock when a poll of ``GET /alerts`` first listed the alert minus its
``opened_at``: the instant the condition held in routewatch's events (the collector stamps
events with its wall clock at the round, on this machine's clock), or the threshold's instant
for a stamped alert. It splits into *job* (``opened_at`` -> ``detected_at``: the wait for a
round that moves the job's clock past the instant + the lateness bound, at most one poll
interval after it, then the spool's roll, the trigger and the batch) and *API* (->
seen). For the skews, *from the change* (the second table written -> seen) adds the wait for
the collector's next poll, also at most one interval. The batches' event-time lag (the job's
wall clock minus its newest event) is recorded too: how far behind a quiet cluster's stream
time stays.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from benchmarks.detection_latency import (
    STARTUP_S,
    TARGET_MARGIN_S,
    TRIGGER_INTERVAL_S,
    Poller,
    Sighting,
    batch_rows,
    batch_stats,
    check_alive,
    job_env,
    spread,
    start_services,
)
from benchmarks.results import print_table
from emitter.collect.settings import CollectSettings
from routewatch import remoting
from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for
from routewatch.testing.rocketmq import BrokerSpec, ClusterSpec, RocketMQCluster, running_cluster

SECTION = "detection_latency_collector"
DEFAULT_POLL_S = float(CollectSettings.model_fields["collect_poll_interval_s"].default)
SPEC = ClusterSpec(brokers=(BrokerSpec("broker-a"), BrokerSpec("broker-b")))
CLUSTER = "DefaultCluster"
PAIRS = 4  # skewed topics, and topics left on one broker
PHASE_STEP = 0.37  # of the poll interval, between two topics made
STUCK_WAIT_S = 60.0  # an inferred auto-creation settles after this
EXPIRY_S = 120.0
SLACK_S = 30.0  # on top of a bound, before an alert counts as missed


@dataclass(frozen=True)
class Expected:
    """An alert a change of this run asks for; ``changed_at``: wall clock, s, when the change
    was complete in the cluster (NaN where the cluster's own timers decide)."""

    kind: str
    subject: str  # its topic, broker or cluster
    changed_at: float = math.nan

    def matches(self, alert: dict[str, Any]) -> bool:
        subject = alert.get("topic") or alert.get("broker") or alert["cluster"]
        return bool(alert["kind"] == self.kind and subject == self.subject)


@dataclass(frozen=True)
class Sample:
    kind: str
    subject: str
    latency_s: float  # opened_at -> seen
    job_s: float  # opened_at -> detected_at
    api_s: float  # detected_at -> seen
    from_change_s: float  # the change -> seen (NaN: a timer's)
    pickup_s: float  # the change -> opened_at: the wait for the collector's poll


@dataclass
class Cell:
    bound_s: float
    poll_s: float
    samples: list[Sample] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    batches: dict[str, Any] = field(default_factory=dict)
    load_average: list[float] = field(default_factory=list)


def pace(due: float) -> None:
    """Wait until the monotonic clock reaches ``due`` (the changes are a timetable)."""
    threading.Event().wait(max(due - time.monotonic(), 0))


def first(poller: Poller, e: Expected) -> Sighting | None:
    return next((s for s in list(poller.seen.values()) if e.matches(s.alert)), None)


def seen_within(poller: Poller, wanted: list[Expected], timeout: float, what: str) -> None:
    """Wait until every alert of ``wanted`` was listed; a miss is tallied, not raised."""
    with contextlib.suppress(TimeoutError):
        wait_for(lambda: all(first(poller, e) for e in wanted), timeout, what)


class Changes:
    """The changes made to the cluster, and the alerts each asks for."""

    def __init__(self, cluster: RocketMQCluster, poll_s: float) -> None:
        self.a = cluster.broker("broker-a").addr
        self.b = cluster.broker("broker-b").addr
        self.cluster, self.poll_s = cluster, poll_s
        self.expected: list[Expected] = []

    def stale_route(self, spool: Path) -> None:
        """A topic on both brokers, deleted on broker-b once the collector has seen it there.
        First: a deletion does not register, so until broker-b's next registration its
        NameServer holds a table version the collector cannot read, and the collector writes
        what it last knew of broker-b (``docs/collect.md``); the changes below register at once
        and carry the deletion's version with them."""
        remoting.update_topic_in_broker(self.a, "StaleTopic", read_queues=16, write_queues=16)
        remoting.update_topic_in_broker(self.b, "StaleTopic", read_queues=16, write_queues=16)
        wait_for(lambda: heartbeat_holds(spool, "broker-b", "StaleTopic"), 60, "StaleTopic seen")
        remoting.delete_topic_in_broker(self.b, "StaleTopic")
        self.expected.append(Expected("STALE_ROUTE", "StaleTopic"))

    def topics(self) -> None:
        """The skews and the one-broker topics, alternately, ``PHASE_STEP`` poll intervals
        apart."""
        start = time.monotonic()
        for i in range(2 * PAIRS):
            pace(start + i * PHASE_STEP * self.poll_s)
            n = i // 2
            if i % 2 == 0:
                topic = f"SkewTopic{n}"
                remoting.update_topic_in_broker(self.a, topic, read_queues=16, write_queues=16)
                remoting.update_topic_in_broker(self.b, topic, read_queues=8, write_queues=8)
                self.expected.append(Expected("QUEUE_SKEW", topic, time.time()))
            else:
                topic = f"StuckTopic{n}"
                remoting.update_topic_in_broker(self.a, topic, read_queues=4, write_queues=4)
                self.expected.append(Expected("PARTIAL_COVERAGE", topic))

    def kill_b(self) -> Expected:
        self.cluster.broker("broker-b").kill()
        self.expected.append(Expected("BROKER_EXPIRED", "broker-b"))
        return self.expected[-1]


def collected_once(spool: Path) -> Callable[[], bool]:
    """The collector has published a round (a spool file with a ``collector_round``)."""

    def done() -> bool:
        return any(b'"collector_round"' in f.read_bytes() for f in spool.glob("*.jsonl"))

    return done


def heartbeat_holds(spool: Path, broker: str, topic: str) -> bool:
    """A heartbeat of ``broker`` holding ``topic`` is in the spool."""
    for path in spool.glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            event = orjson.loads(line)
            if event.get("broker") == broker and topic in (event.get("topics") or {}):
                return True
    return False


def run_cell(root: Path, bound_s: float, poll_s: float, api_poll_s: float) -> Cell:
    work = root / f"collector-{round(bound_s * 1000)}ms"
    data = work / "data"
    data.mkdir(parents=True)
    store_url = f"sqlite:///{data / 'routewatch.db'}"
    cell = Cell(bound_s, poll_s, load_average=[os.getloadavg()[0]])
    bound = poll_s + bound_s + TARGET_MARGIN_S
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(running_cluster(SPEC, work / "rocketmq"))
        env = job_env(data, bound_s, None)
        job, url = start_services("spool", env, work, stack)
        closed = f"127.0.0.1:{free_port()}"
        collect_env = {**env, "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": f"{poll_s:g}"}
        namesrvs = f"{cluster.namesrv_addr()};{closed}"
        collect_log = work / "collect.log"
        collector = start_routewatch(
            ["collect", "--namesrv", namesrvs, "--to", "spool"], collect_env, collect_log
        )
        stack.callback(stop, collector)
        poller = Poller(url, api_poll_s)
        poller.start()
        stack.callback(poller.finish)
        changes = Changes(cluster, poll_s)
        changes.expected.append(Expected("NAMESRV_UNREACHABLE", CLUSTER))
        wait_for(collected_once(data / "spool"), STARTUP_S, "the collector's first round")
        wait_for(
            lambda: bool(batch_rows(store_url, "SELECT 1 FROM batches WHERE input_rows > 0")),
            STARTUP_S,
            "the job's first batch with the collector's events",
        )
        started = time.time()
        changes.stale_route(data / "spool")
        changes.topics()
        check_alive(collector, "routewatch collect", collect_log)
        # broker-b's next registration (within 30 s) carries its table without StaleTopic
        settled = STUCK_WAIT_S + 30 + bound + SLACK_S
        seen_within(poller, list(changes.expected), settled, "the alerts before the kill")
        expiry = changes.kill_b()
        seen_within(poller, [expiry], EXPIRY_S + bound + SLACK_S, "broker-b's expiry")
        check_alive(job, "the stream job", work / "stream.log")
        check_alive(collector, "routewatch collect", collect_log)
        cell.batches = batch_stats(store_url, started)
    tally(cell, changes.expected, poller)
    cell.load_average.append(os.getloadavg()[0])
    return cell


def tally(cell: Cell, expected: list[Expected], poller: Poller) -> None:
    for e in expected:
        seen = first(poller, e)
        if seen is None:
            cell.missed.append(f"{e.kind} {e.subject}")
            continue
        opened, detected = seen.alert["opened_at"] / 1000, seen.detected_at_ms / 1000
        cell.samples.append(
            Sample(
                kind=e.kind,
                subject=e.subject,
                latency_s=seen.seen_at - opened,
                job_s=detected - opened,
                api_s=seen.seen_at - detected,
                from_change_s=seen.seen_at - e.changed_at,
                pickup_s=opened - e.changed_at,
            )
        )
    cell.unexpected = sorted(
        f"{s.alert['kind']} {s.alert.get('topic') or s.alert.get('broker') or s.cluster}"
        for s in poller.seen.values()
        if not any(e.matches(s.alert) for e in expected)
    )


def cell_figures(cell: Cell) -> dict[str, Any]:
    latencies = [s.latency_s for s in cell.samples]
    target = cell.poll_s + cell.bound_s + TARGET_MARGIN_S
    worst = max(latencies) if latencies else math.nan
    return {
        "source": "spool (routewatch collect)",
        "lateness_bound_s": cell.bound_s,
        "collect_poll_interval_s": cell.poll_s,
        "detections": len(cell.samples),
        "missed": cell.missed,
        "unexpected_alerts": cell.unexpected,
        "latency_s": spread(latencies),
        "target_s": target,
        "target_met": not cell.missed and worst <= target,
        "by_kind": {
            kind: spread([s.latency_s for s in cell.samples if s.kind == kind])
            for kind in sorted({s.kind for s in cell.samples})
        },
        "job_s": spread([s.job_s for s in cell.samples]),
        "api_s": spread([s.api_s for s in cell.samples]),
        "from_change_s": spread([s.from_change_s for s in cell.samples if s.kind == "QUEUE_SKEW"]),
        "pickup_s": spread([s.pickup_s for s in cell.samples if s.kind == "QUEUE_SKEW"]),
        "batches": cell.batches,
        "load_average_1m": cell.load_average,
        "samples": [asdict(s) for s in cell.samples],
    }


def print_results(figures: list[dict[str, Any]]) -> None:
    print()
    print_table(
        ["bound (s)", "poll (s)", "detections", "p50 (s)", "p95 (s)", "max (s)", "target met"],
        [
            [
                f["lateness_bound_s"],
                f["collect_poll_interval_s"],
                f["detections"],
                f["latency_s"]["p50"],
                f["latency_s"]["p95"],
                f["latency_s"]["max"],
                "yes"
                if f["target_met"]
                else f"no (max <= {f['target_s']:g} s; missed {len(f['missed'])})",
            ]
            for f in figures
        ],
    )
    print("\nby kind, p50 / max (s), from opened_at to seen:")
    for f in figures:
        for kind, s in f["by_kind"].items():
            print(
                f"  bound {f['lateness_bound_s']:g} s  {kind:<20} {s['p50']:.2f} / {s['max']:.2f}"
            )
        lag = f["batches"].get("event_time_lag_s", {})
        print(
            f"  job p50/max {f['job_s']['p50']:.2f} / {f['job_s']['max']:.2f} s; API p50/max "
            f"{f['api_s']['p50']:.2f} / {f['api_s']['max']:.2f} s; skews from the change "
            f"p50/max {f['from_change_s']['p50']:.2f} / {f['from_change_s']['max']:.2f} s "
            f"(the poll's wait {f['pickup_s']['p50']:.2f} / {f['pickup_s']['max']:.2f} s); "
            f"batches' event-time lag max {lag.get('max', math.nan):.2f} s"
        )
        if f["missed"] or f["unexpected_alerts"]:
            print(f"  missed: {f['missed']}; unexpected: {f['unexpected_alerts']}")


def run_all(
    root: Path, bounds: list[float], poll_s: float, api_poll_s: float
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    figures = []
    for bound_s in bounds:
        began = time.monotonic()
        print(f"collector-fed, lateness bound {bound_s:g} s, polls {poll_s:g} s: running...")
        figures.append(cell_figures(run_cell(root, bound_s, poll_s, api_poll_s)))
        f = figures[-1]
        print(
            f"  {f['detections']} detections, max {f['latency_s']['max']:.2f} s (target "
            f"{f['target_s']:g} s), {time.monotonic() - began:.0f} s in all",
            flush=True,
        )
    settings = {
        "case": "collector",
        "trigger_interval_s": TRIGGER_INTERVAL_S,
        "target": f"every detection <= poll interval + lateness bound + {TARGET_MARGIN_S:g} s",
        "cluster": "RocketMQ 4.9 (harness): 1 NameServer + 1 closed port, broker-a, broker-b",
        "changes": {
            "QUEUE_SKEW": PAIRS,
            "PARTIAL_COVERAGE": PAIRS,
            "STALE_ROUTE": 1,
            "BROKER_EXPIRED": 1,
            "NAMESRV_UNREACHABLE": 1,
        },
        "phase_step_of_poll": PHASE_STEP,
        "api_poll_ms": round(api_poll_s * 1000),
    }
    return figures, settings
