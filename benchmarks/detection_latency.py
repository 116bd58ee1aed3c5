"""Detection latency: wall time from the decisive event being written into the stream until
``GET /alerts`` lists the alert (target: p95 <= lateness bound + 2 s, at a 1 s trigger).

    .venv/bin/python -m benchmarks.detection_latency [--sources spool,kafka] [--bounds 0,2]
        [--rounds 2] [--send-rate 2000] [--tick-ms 100] [--poll-ms 75] [--no-record]
        [--case dense|sparse|collector]

Smoke run (one cell, about 3 minutes): ``--sources spool --bounds 0 --rounds 1 --no-record``.
The default run (four cells: spool and Kafka, lateness bound 0 and the default, 2 s) takes
about 12 minutes (at most 15) and prints a table; it records every figure in
``benchmarks/results/latest.json``, section ``detection_latency``, with the headline keys
``detection_latency_p95_s`` (the worse p95 of the two sources at the default bound; written
only when both ran at it) and ``lateness_bound_s`` (that bound).

**What runs.** Everything is real: per cell, a fresh ``routewatch stream --source spool|kafka``
(``ROUTEWATCH_LATENESS_BOUND_S`` 0 or the default, ``ROUTEWATCH_TRIGGER_INTERVAL_S=1``, SQLite
store in a temporary data directory; for Kafka, Spark's own source on a new one-partition topic
of the test harness's Apache Kafka 4.x broker, ``routewatch/testing/kafka.py``) and
``routewatch api`` on a free 127.0.0.1 port. This process writes the events itself, in real
time, with the replayer's own sinks (``SpoolSink``: files rolled every 0.25 s; ``KafkaSink``:
acks=all, 50 ms linger; both from the ``ROUTEWATCH_*`` replay settings) and its ``Pacer`` at
speed 1, the sink polled every 50 ms as ``routewatch replay`` does; event times are rebased so
that event time = wall time at the first write (``--rebase-time now``), and every event is due
at its event time. A thread polls ``GET /alerts`` every ``--poll-ms``. Every process started is
stopped by PID at the end of its cell (SIGTERM; the job's whole process group, Spark's JVM and
Python workers, is killed if it lingers), also on Ctrl-C, SIGTERM or an error.

**What is written.** A background fleet (``emitter.fleet``: 2 clusters x 10 brokers x 1,000
topics, 2 NameServers, 100 producers, ``--send-rate`` sends/s, 500 by default, as in
``benchmarks/api_load.py``: about 600 events/s), generated once to a file and replayed from its
start in every cell. (At the reference fleet's rate per cluster, 2,000 sends/s, the job fell
behind on the shared machine: batches of 4-6 s, so the latency measured its backlog.) Over it,
alerting scenarios of ``emitter.scenarios``, each on a cluster of its own:

- *early*: ``no-live-broker`` starts with the fleet, so that its two ``BROKER_EXPIRED`` alerts
  (stamped at last heartbeat + 120 s, 130 s in) fall after the warm-up;
- *main*, once the job has caught up with the fleet (at least 35 s of warm-up, which covers every
  broker's first full registration, and its last three batches no more than ``bound + 3 s``
  behind in event time; at most 90 s): ``--rounds`` rounds 20 s apart, each running eleven
  scenarios (``MAIN_SCENARIOS``) with their own seeds, started 1.37 s apart so that decisive
  events fall at every phase of the trigger, each cut after its first 35 s (where its first
  alerts open: about 20 per round, opened by an event or stamped at a threshold instant).

Each scenario cluster also carries a *tick*: a consumer's route pull of an absent topic every
``--tick-ms`` (100 ms), which the rules ignore, running to the end of its cut + bound + 1.5 s.
It stands for the traffic every production cluster has: time passes in the job only through a
cluster's own events (``docs/streaming.md``), and a scenario alone sends an event every 5-30 s,
so without it the hold behind the lateness bound, and the wait for an event past a threshold,
would measure the scenario's gaps, not the pipeline (``--tick-ms 0`` turns it off).

**The sparse case** (``--case sparse``, recorded in the section ``detection_latency_sparse``):
no fleet and no ticks, only ``no-live-broker`` on one cluster for its first ``SPARSE_WINDOW_S``
seconds (two brokers that register every 30 s and die; a producer that sends every 10 s from
200 s on), so the stream's events are 30 s apart around the brokers' expiries: a threshold's
alert waits for whatever the input next brings, which is how a deployment fed by the collector
alone (a round every 30 s) sees time pass. Each cell takes about 4 minutes.

**The collector case** (``--case collector``, section ``detection_latency_collector``): a real
RocketMQ that ``routewatch collect`` alone feeds, quiet but for a few changes made to it, its
detections measured from each alert's ``opened_at`` against the poll interval + the lateness
bound + 2 s: ``benchmarks/detection_latency_collector.py`` says how.

**The decisive event** of an alert opened at event time ``I`` is found by running the job's own
engine (``streaming.engine``: ``Intake``, ``ClusterEngine``) in this process over the cluster's
events in the order they are written, one arrival at a time: it is the first event after whose
arrival the engine holds the alert *when every event is applied as soon as it arrives* (no
hold). That is, for an alert opened by an event, that event (``ts = I``); for one stamped at a
threshold instant (AT_RISK at condition + 5 s, BROKER_EXPIRED at last heartbeat + 120 s), the
cluster's first event with ``ts > I``, since deadlines fire strictly after their instant and
only the cluster's own events move its clock. With the cell's lateness bound ``L`` the same
engine also gives the *releasing* event: the first arrival after which the intake has released
the decisive event (the first event of the cluster more than ``L`` newer, at ``L = 0`` the first
one newer — or, since stream time runs to the release frontier, the first arrival that closes
the threshold's instant: computed with the job's ``StreamEngine``, its clock included). The
oracle's alerts are matched to the API's by id (a digest of kind, cluster,
topic, broker, broker id and ``opened_at``), so an alert counts only if the job opened exactly
the alert the engine predicts.

**Latency** = the wall clock when a poll of ``GET /alerts`` first returned the alert minus the
wall clock when the decisive event was handed to the sink (so the spool's roll interval and the
producer's linger count). Nothing is subtracted for the lateness bound: the table shows the
latency and its p95 minus the bound. It splits into *hold* (decisive -> releasing event
written: the lateness bound, plus up to one tick), *job* (releasing event written -> the
alert's ``detected_at``, the store writer's wall clock at the start of the batch's write: the
transport, the wait for the next trigger, and the batch) and *API* (``detected_at`` -> seen:
the store transaction's commit and the poll interval). Alerts whose decisive event was written
during the warm-up are left out. The figures are p50/p95 (linear interpolation) and max over all
detections of a cell, with their count; expected alerts never seen are reported as missed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import heapq
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import orjson

from benchmarks.results import median, print_table, record
from emitter.fleet import FleetSpec, generate_fleet
from emitter.replay import Pacer
from emitter.scenarios import SCENARIOS
from emitter.settings import EmitterSettings
from emitter.sim import DEFAULT_START_MS
from emitter.sinks import Sink, kafka_key, sink_for
from emitter.trace import TraceWriter
from routewatch.alerts import AlertKind, alert_id
from routewatch.cli import plain_text
from routewatch.codec import encode, to_wire
from routewatch.events import Event, RoutePull
from routewatch.settings import load
from routewatch.store import StoreError, StoreUnavailableError, open_store
from routewatch.testing.kafka import KafkaBroker, running_broker
from routewatch.testing.parts import spark_kafka_jars
from routewatch.testing.processes import (
    api_answers,
    free_port,
    group_alive,
    start_routewatch,
    stop,
    wait_for,
)
from streaming.engine import ClusterEngine, Intake
from streaming.engine.intake import dedupe_id
from streaming.engine.runner import DEFAULT_DEDUPE_HORIZON_MS
from streaming.engine.stream import StreamEngine
from streaming.settings import StreamingSettings

SECTION = "detection_latency"
DEFAULT_BOUND_S = float(StreamingSettings.model_fields["lateness_bound_s"].default)
TRIGGER_INTERVAL_S = 1.0
TARGET_MARGIN_S = 2.0  # target: p95 <= lateness bound + this

FLEET = {"clusters": 2, "brokers": 10, "topics": 1_000, "producers": 100}
EARLY_SCENARIOS = {"no-live-broker": 135.0}  # scenario -> seconds of it replayed
MAIN_SCENARIOS = (
    "one-send-then-silence",
    "tbw102-deleted-all-brokers",
    "restarted-auto-create-off-stale-tbw102",
    "tbw102-deleted-one-broker",
    "queue-skew",
    "no-namesrv-address",
    "create-topic-key-mismatch",
    "demo-mixed",
    "mixed-auto-create",
    "auto-create-off-topic-missing",
    "topic-created-after-no-route",
)
MAIN_WINDOW_S = 35.0  # seconds of each main scenario replayed
ROUND_GAP_S = 20.0
STAGGER_S = 1.37
TAIL_S = 1.5  # ticks go on this long after a scenario's cut + the lateness bound
TICK_PHASE_MS = 37  # ticks fall between the scenarios' own instants (whole seconds, +10 ms)

SPARSE_SCENARIO = "no-live-broker"
SPARSE_WINDOW_S = 215.0  # past both expiries (about 130 s) and the first sends without a route

MIN_WARMUP_S = 35.0
MAX_WARMUP_S = 90.0
CAUGHT_UP_SLACK_MS = 3_000
STARTUP_S = 300.0
DRAIN_S = 30.0
SINK_TICK_S = 0.05  # what routewatch replay polls its sink at while it waits
ORIGIN_MS = DEFAULT_START_MS  # event time 0 of a group of scenarios, before rebasing


# -- the scenario timeline ---------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class ScenarioItem:
    """One event of a scenario cluster: due ``sched_ms`` after its group starts."""

    sched_ms: int
    event: Event
    key: bytes
    at_ms: int = -1  # due, ms after the cell's first write (set when its group starts)
    written_at: float = math.nan  # wall clock, s, when it was handed to the sink

    def render(self, t0_ms: int) -> bytes:
        return encode(dataclasses.replace(self.event, ts=t0_ms + self.at_ms))


@dataclass(frozen=True, slots=True)
class FleetLine:
    """One event of the background fleet, due ``at_ms`` after the cell's first write."""

    at_ms: int
    raw: bytes
    key: bytes

    def render(self, t0_ms: int) -> bytes:
        at = self.raw.index(b'"ts":') + 5
        end = self.raw.index(b",", at)
        return self.raw[:at] + str(t0_ms + self.at_ms).encode() + self.raw[end:]


AlertIdentity = tuple[AlertKind, str | None, str | None, int | None, int]
"""(kind, topic, broker, broker_id, opened_at) within one cluster."""


@dataclass(frozen=True, eq=False)
class Expected:
    """An alert the engine opens on a scenario cluster, with its decisive and releasing events."""

    cluster: str
    identity: AlertIdentity
    decisive: ScenarioItem
    releasing: ScenarioItem

    @property
    def kind(self) -> str:
        return self.identity[0]

    @property
    def subject(self) -> str:
        _, topic, broker, broker_id, _ = self.identity
        return topic or f"{broker}/{broker_id}"

    @property
    def threshold(self) -> bool:
        """Stamped at a threshold instant, before the event that revealed it."""
        return self.identity[4] < self.decisive.event.ts

    def alert_id(self, shift_ms: int) -> str:
        kind, topic, broker, broker_id, opened_at = self.identity
        return alert_id((kind, self.cluster, topic, broker, broker_id), opened_at + shift_ms)


@dataclass
class Group:
    """Scenario clusters that start together; their times shift by ``shift_ms`` when written."""

    name: str
    items: list[ScenarioItem]
    expected: list[Expected]
    base_ms: int | None = None
    shift_ms: int = 0

    def start(self, base_ms: int, t0_ms: int) -> None:
        self.base_ms = base_ms
        self.shift_ms = t0_ms + base_ms - ORIGIN_MS
        for item in self.items:
            item.at_ms = base_ms + item.sched_ms


@dataclass(frozen=True)
class Plan:
    """One scenario on a cluster of its own."""

    cluster: str
    scenario: str
    seed: int
    start_ms: int
    window_s: float


def tick(cluster: str, n: int, ts: int) -> RoutePull:
    """A consumer's route pull of a topic that does not exist: no rule looks at it."""
    return RoutePull(
        ts=ts,
        cluster=cluster,
        event_id=f"bench-tick-{n}",
        client_id="10.255.0.1@bench-ticker",
        group="bench-ticker",
        role="consumer",
        namesrv="10.0.0.100:9876",
        topic="BenchTickTopic",
        result="TOPIC_NOT_EXIST",
        queues=[],
    )


def cluster_items(plan: Plan, tick_ms: int, bound_ms: int) -> list[ScenarioItem]:
    """The scenario's events up to its cut, and the ticks, in the order they are written."""
    window_ms = round(plan.window_s * 1000)
    start = ORIGIN_MS + plan.start_ms
    events = [
        dataclasses.replace(e, cluster=plan.cluster, ts=start + e.ts - DEFAULT_START_MS)
        for e in SCENARIOS[plan.scenario].run(plan.seed)
        if e.ts - DEFAULT_START_MS <= window_ms
    ]
    end_ms = window_ms + bound_ms + round(TAIL_S * 1000)
    ticks = (
        [
            tick(plan.cluster, n, start + at)
            for n, at in enumerate(range(TICK_PHASE_MS, end_ms + 1, tick_ms))
        ]
        if tick_ms
        else []
    )
    merged = heapq.merge(events, ticks, key=attrgetter("ts"))
    return [ScenarioItem(e.ts - ORIGIN_MS, e, kafka_key(to_wire(e))) for e in merged]


def first_seen(
    cluster: str, items: list[ScenarioItem], lateness_ms: int | None
) -> dict[AlertIdentity, int]:
    """Each alert the engine opens -> the index of the arrival after which it holds it: with
    every event applied as it arrives (``lateness_ms`` None), or as the job does it, one
    arrival per batch through the stream's intake at ``lateness_ms`` and its clock."""
    seen: dict[AlertIdentity, int] = {}
    if lateness_ms is None:
        intake = Intake(0, DEFAULT_DEDUPE_HORIZON_MS)
        engine = ClusterEngine(cluster)
        for i, item in enumerate(items):
            e = item.event
            intake.receive([(dedupe_id(cluster, e.event_id), e.ts, e.seq, encode(e).decode())])
            for *_, value in intake.flush():
                engine.apply(value)
            for a in engine.book.take_changes():
                seen.setdefault((a.kind, a.topic, a.broker, a.broker_id, a.opened_at), i)
        return seen
    stream = StreamEngine(Intake(lateness_ms, DEFAULT_DEDUPE_HORIZON_MS))
    for i, item in enumerate(items):
        e = item.event
        stream.receive([(dedupe_id(cluster, e.event_id), e.ts, e.seq, encode(e).decode())])
        for a in stream.engine(cluster).book.take_changes():
            seen.setdefault((a.kind, a.topic, a.broker, a.broker_id, a.opened_at), i)
    return seen


def expectations(cluster: str, items: list[ScenarioItem], bound_ms: int) -> list[Expected]:
    decisive = first_seen(cluster, items, None)
    releasing = first_seen(cluster, items, bound_ms)
    return [
        Expected(cluster, identity, items[d], items[releasing[identity]])
        for identity, d in decisive.items()
        if identity in releasing
    ]


def build_group(name: str, plans: list[Plan], tick_ms: int, bound_ms: int) -> Group:
    per_cluster = [cluster_items(p, tick_ms, bound_ms) for p in plans]
    expected = [
        e
        for p, items in zip(plans, per_cluster, strict=True)
        for e in expectations(p.cluster, items, bound_ms)
    ]
    items = sorted((i for c in per_cluster for i in c), key=attrgetter("sched_ms"))  # stable
    return Group(name, items, expected)


def early_plans() -> list[Plan]:
    return [
        Plan(f"E-{name}", name, 1_000 + j, 0, window_s)
        for j, (name, window_s) in enumerate(EARLY_SCENARIOS.items())
    ]


def main_plans(rounds: int) -> list[Plan]:
    return [
        Plan(
            f"R{r}-{name}",
            name,
            1 + r * len(MAIN_SCENARIOS) + j,
            round((r * ROUND_GAP_S + j * STAGGER_S) * 1000),
            MAIN_WINDOW_S,
        )
        for r in range(rounds)
        for j, name in enumerate(MAIN_SCENARIOS)
    ]


def sparse_plans() -> list[Plan]:
    return [Plan(f"S-{SPARSE_SCENARIO}", SPARSE_SCENARIO, 1, 0, SPARSE_WINDOW_S)]


def main_span_s(rounds: int, bound_s: float) -> float:
    """How long the main group runs, from its start to its last tick."""
    last_start = (rounds - 1) * ROUND_GAP_S + (len(MAIN_SCENARIOS) - 1) * STAGGER_S
    return last_start + MAIN_WINDOW_S + bound_s + TAIL_S


# -- the background fleet ----------------------------------------------------------------------


def fleet_spec(send_rate: int, duration_s: int) -> FleetSpec:
    return FleetSpec(send_rate=send_rate, duration=duration_s, **FLEET)


def write_fleet(spec: FleetSpec, path: Path) -> int:
    with TraceWriter(path) as writer:
        generate_fleet(spec, writer.write_line)
    return writer.count


def fleet_lines(path: Path, start_ms: int) -> Iterator[FleetLine]:
    with path.open("rb") as f:
        for line in f:
            raw = line.rstrip(b"\n")
            obj = orjson.loads(raw)
            yield FleetLine(obj["ts"] - start_ms, raw, kafka_key(obj))


# -- writing in real time ----------------------------------------------------------------------


class Writer:
    """Writes the fleet and the scenario groups into ``sink``, each event at its event time.

    The early group starts with the first write; the main group once ``caught_up()`` says the
    job keeps up (checked every second after ``MIN_WARMUP_S``; at the latest ``MAX_WARMUP_S``).
    The writing ends with the last event of the two groups; the fleet is cut there.
    """

    def __init__(
        self,
        sink: Sink,
        fleet: Iterator[FleetLine],
        early: Group,
        main: Group,
        caught_up: Callable[[], bool],
    ) -> None:
        self.sink, self.fleet, self.early, self.main = sink, fleet, early, main
        self.caught_up = caught_up
        self.next_fleet = next(fleet, None)
        self.pacer = Pacer(1.0)
        self.pending: list[ScenarioItem] = []
        self.index = 0
        self.t0 = 0.0  # monotonic clock at the first write
        self.t0_ms = 0  # wall clock, ms, at the first write: event time of due time 0
        self.main_started_at = math.nan  # wall clock
        self.warmup_s = math.nan
        self.warmup_timed_out = False
        self.written = 0
        self.max_lag_s = 0.0  # how late the writer handed an event to the sink

    def run(self) -> None:
        self.pacer.delay(0)  # event time 0 (ms after the first write) is now
        self.t0, self.t0_ms = time.monotonic(), int(time.time() * 1000)
        self.early.start(0, self.t0_ms)
        self.pending = list(self.early.items)
        checked = self.t0
        while (out := self._next()) is not None:
            self._wait(self.pacer.delay(out.at_ms))
            self._write(out)
            if self.main.base_ms is None and time.monotonic() - checked >= 1.0:
                checked = time.monotonic()
                self._maybe_start_main()

    def _maybe_start_main(self) -> None:
        elapsed = time.monotonic() - self.t0
        if elapsed >= MAX_WARMUP_S:
            self.warmup_timed_out = True
        elif elapsed < MIN_WARMUP_S or not self.caught_up():
            return
        self._start_main()

    def _start_main(self) -> None:
        elapsed = time.monotonic() - self.t0
        base_ms = math.ceil(elapsed * 10) * 100 + 200  # a little ahead: nothing starts overdue
        self.main.start(base_ms, self.t0_ms)
        rest = self.pending[self.index :]
        self.pending = list(heapq.merge(rest, self.main.items, key=attrgetter("at_ms")))
        self.index = 0
        self.main_started_at = time.time()
        self.warmup_s = elapsed
        why = "timed out" if self.warmup_timed_out else "the job caught up"
        print(f"  warm-up over after {elapsed:.0f} s ({why}): scenarios start", flush=True)

    def _next(self) -> FleetLine | ScenarioItem | None:
        item = self.pending[self.index] if self.index < len(self.pending) else None
        if item is None:
            if self.main.base_ms is not None:
                return None
            if self.next_fleet is None:  # nothing left to warm up with
                self.warmup_timed_out = True
                self._start_main()
                return self._next()
        fleet = self.next_fleet
        if fleet is not None and (item is None or fleet.at_ms < item.at_ms):
            self.next_fleet = next(self.fleet, None)
            return fleet
        self.index += 1
        return item

    def _wait(self, delay: float) -> None:
        end = time.monotonic() + delay
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, SINK_TICK_S))
            self.sink.poll()

    def _write(self, out: FleetLine | ScenarioItem) -> None:
        raw = out.render(self.t0_ms)
        now = time.time()
        self.sink.write(raw, out.key)
        if isinstance(out, ScenarioItem):
            out.written_at = now
        self.max_lag_s = max(self.max_lag_s, now - (self.t0_ms + out.at_ms) / 1000)
        self.written += 1
        self.sink.poll()


# -- watching the API --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sighting:
    seen_at: float  # wall clock, s
    detected_at_ms: int
    cluster: str
    alert: dict[str, Any]  # as the first poll that listed it returned it


class Poller(threading.Thread):
    """Polls ``GET /alerts`` every ``interval_s``; remembers when each alert id was first seen."""

    def __init__(self, url: str, interval_s: float) -> None:
        super().__init__(name="alerts-poller", daemon=True)
        self.url, self.interval_s = url, interval_s
        self.seen: dict[str, Sighting] = {}
        self.polls = self.errors = 0
        self.done = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while not self.done.is_set():
                started = time.monotonic()
                self._poll(client)
                self.done.wait(max(self.interval_s - (time.monotonic() - started), 0))

    def _poll(self, client: httpx.Client) -> None:
        params: dict[str, Any] = {"limit": 1000}
        while True:
            try:
                response = client.get("/alerts", params=params)
                response.raise_for_status()
            except httpx.HTTPError:
                self.errors += 1
                return
            now = time.time()
            page = response.json()
            for a in page["data"]:
                if a["id"] not in self.seen:
                    self.seen[a["id"]] = Sighting(now, a["detected_at"], a["cluster"], a)
            if not page["next"]:
                break
            params["cursor"] = page["next"]
        self.polls += 1

    def finish(self) -> None:
        self.done.set()
        self.join(10)


# -- the processes -----------------------------------------------------------------------------


def job_env(data: Path, bound_s: float, kafka: tuple[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEWATCH_")}
    env.update(
        ROUTEWATCH_DATA_DIR=str(data),
        ROUTEWATCH_LATENESS_BOUND_S=f"{bound_s:g}",
        ROUTEWATCH_TRIGGER_INTERVAL_S=f"{TRIGGER_INTERVAL_S:g}",
        PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
    )
    if kafka is not None:
        env.update(
            ROUTEWATCH_KAFKA_BOOTSTRAP=kafka[0],
            ROUTEWATCH_KAFKA_TOPIC=kafka[1],
            ROUTEWATCH_SPARK_JARS=spark_kafka_jars(),
        )
    return env


def stop_job(job: subprocess.Popen[bytes]) -> None:
    """SIGTERM the job (it finishes its batch and stops Spark); then its group, if it lingers."""
    stop(job, timeout=60)
    with contextlib.suppress(TimeoutError):
        wait_for(lambda: not group_alive(job.pid), 15, "the job's processes exiting")
    if group_alive(job.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)


def check_alive(proc: subprocess.Popen[bytes], name: str, log: Path) -> None:
    if proc.poll() is not None:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{name} exited with status {proc.returncode}:\n{tail}")


def job_ready(job: subprocess.Popen[bytes], log: Path, store_url: str) -> bool:
    """The job has its Spark session and has migrated the store: its query starts next."""
    check_alive(job, "the stream job", log)
    return bool(batch_rows(store_url, "SELECT COUNT(*) FROM schema_version"))


def batch_rows(store_url: str, sql: str, args: Sequence[object] = ()) -> list[Any]:
    """Rows of the job's ``batches`` table (none while the store does not exist yet)."""
    try:
        store = open_store(store_url, readonly=True)
    except StoreUnavailableError:
        return []
    try:
        return list(store.db.execute(sql, args).fetchall())
    except StoreError:
        return []
    finally:
        store.close()


def caught_up(store_url: str, bound_ms: int) -> bool:
    """The job's last three batches were at most ``bound + 3 s`` behind, the last one recent."""
    rows = batch_rows(
        store_url,
        "SELECT written_at, event_time_lag_ms FROM batches WHERE input_rows > 0 "
        "ORDER BY batch_id DESC LIMIT 3",
    )
    limit = bound_ms + CAUGHT_UP_SLACK_MS
    recent = bool(rows) and rows[0][0] >= time.time() * 1000 - 5_000
    return len(rows) == 3 and recent and all(r[1] is not None and r[1] <= limit for r in rows)


def batch_stats(store_url: str, since: float) -> dict[str, Any]:
    """The job's batches with input written since ``since`` (wall clock, s)."""
    rows = batch_rows(
        store_url,
        "SELECT duration_ms, input_rows, event_time_lag_ms FROM batches "
        "WHERE input_rows > 0 AND written_at >= ?",
        (int(since * 1000),),
    )
    durations = [r[0] / 1000 for r in rows if r[0] is not None]
    lags = [r[2] / 1000 for r in rows if r[2] is not None]
    first = batch_rows(store_url, "SELECT duration_ms FROM batches ORDER BY batch_id LIMIT 1")
    return {
        "count": len(rows),
        "duration_s": spread(durations),
        "spark_num_input_rows_median": median([r[1] for r in rows]),
        "event_time_lag_s": spread(lags),
        "first_batch_s": first[0][0] / 1000 if first and first[0][0] is not None else math.nan,
    }


# -- one cell ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One detection."""

    cluster: str
    kind: str
    subject: str
    threshold: bool
    latency_s: float
    hold_s: float
    job_s: float
    api_s: float


@dataclass
class Cell:
    source: str
    bound_s: float
    samples: list[Sample] = field(default_factory=list)
    expected: int = 0
    missed: list[str] = field(default_factory=list)
    in_warmup: int = 0
    unexpected: int = 0
    fleet_alerts: int = 0
    warmup_s: float = math.nan
    warmup_timed_out: bool = False
    writer_lag_max_s: float = math.nan
    written: int = 0
    polls: int = 0
    poll_errors: int = 0
    batches: dict[str, Any] = field(default_factory=dict)
    load_average: list[float] = field(default_factory=list)  # 1-minute, at start and end


@dataclass(frozen=True)
class Setup:
    """What every cell shares."""

    rounds: int
    tick_ms: int
    poll_s: float
    fleet: Path
    fleet_start_ms: int
    root: Path
    broker: KafkaBroker | None
    sparse: bool = False


def make_sink(data: Path, kafka: tuple[str, str] | None) -> Sink:
    settings = load(EmitterSettings, data_dir=data)
    if kafka is None:
        return sink_for("spool", settings)
    update = {
        "kafka_bootstrap": kafka[0],
        "kafka_topic": kafka[1],
    }
    return sink_for("kafka", settings.model_copy(update=update))


def start_services(
    source: str, env: dict[str, str], work: Path, stack: contextlib.ExitStack
) -> tuple[subprocess.Popen[bytes], str]:
    """The stream job and the API, started and answering; stopped when ``stack`` closes."""
    job_log, api_log = work / "stream.log", work / "api.log"
    argv = ["stream", "--source", source, "--log", str(job_log)]
    job = start_routewatch(argv, env, job_log, new_session=True)
    stack.callback(stop_job, job)
    port = free_port()
    api = start_routewatch(["api", "--port", str(port)], env, api_log)
    stack.callback(stop, api)
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: api_answers(url, api, api_log), STARTUP_S, "the API answering")
    store_url = f"sqlite:///{work / 'data' / 'routewatch.db'}"
    try:
        wait_for(lambda: job_ready(job, job_log, store_url), STARTUP_S, "the job's start")
    except TimeoutError as exc:
        tail = job_log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{exc}; the job's log ends:\n{tail}") from None
    return job, url


def run_cell(setup: Setup, source: str, bound_s: float) -> Cell:
    bound_ms = round(bound_s * 1000)
    if setup.sparse:  # no warm-up: the sparse scenario is the main group, alone
        early = build_group("early", [], 0, bound_ms)
        main = build_group("main", sparse_plans(), 0, bound_ms)
        fleet: Iterator[FleetLine] = iter(())
    else:
        early = build_group("early", early_plans(), setup.tick_ms, bound_ms)
        main = build_group("main", main_plans(setup.rounds), setup.tick_ms, bound_ms)
        fleet = fleet_lines(setup.fleet, setup.fleet_start_ms)
    work = setup.root / f"{source}-{bound_ms}ms{'-sparse' if setup.sparse else ''}"
    data = work / "data"
    data.mkdir(parents=True)
    kafka = None
    if setup.broker is not None:
        kafka = (setup.broker.bootstrap, f"latency-{bound_ms}ms{'-sparse' * setup.sparse}")
        setup.broker.create_topic(kafka[1], partitions=1)
    store_url = f"sqlite:///{data / 'routewatch.db'}"
    cell = Cell(source, bound_s, load_average=[os.getloadavg()[0]])
    with contextlib.ExitStack() as stack:
        job, url = start_services(source, job_env(data, bound_s, kafka), work, stack)
        poller = Poller(url, setup.poll_s)
        poller.start()
        stack.callback(poller.finish)
        writer = Writer(
            make_sink(data, kafka),
            fleet,
            early,
            main,
            lambda: job.poll() is None and caught_up(store_url, bound_ms),
        )
        try:
            writer.run()
        finally:
            writer.sink.close()
        ids = {e.alert_id(g.shift_ms) for g in (early, main) for e in g.expected}
        deadline = time.monotonic() + DRAIN_S
        while not all(i in poller.seen for i in ids) and time.monotonic() < deadline:
            check_alive(job, "the stream job", work / "stream.log")
            time.sleep(0.2)
        cell.batches = batch_stats(store_url, writer.main_started_at)
    tally(cell, writer, poller, (early, main))
    cell.load_average.append(os.getloadavg()[0])
    return cell


def tally(cell: Cell, writer: Writer, poller: Poller, groups: tuple[Group, ...]) -> None:
    """Match the engine's expected alerts to the API's sightings."""
    expected_ids: set[str] = set()
    for g in groups:
        for e in g.expected:
            id_ = e.alert_id(g.shift_ms)
            expected_ids.add(id_)
            seen = poller.seen.get(id_)
            if e.decisive.written_at < writer.main_started_at:
                cell.in_warmup += 1
            elif seen is None:
                cell.missed.append(f"{e.cluster} {e.kind} {e.subject}")
            else:
                cell.samples.append(sample(e, seen))
    scenario_clusters = {e.cluster for g in groups for e in g.expected}
    for id_, s in poller.seen.items():
        if id_ not in expected_ids:
            if s.cluster in scenario_clusters:
                cell.unexpected += 1
            else:
                cell.fleet_alerts += 1
    cell.expected = len(cell.samples) + len(cell.missed)
    cell.warmup_s, cell.warmup_timed_out = writer.warmup_s, writer.warmup_timed_out
    cell.writer_lag_max_s, cell.written = writer.max_lag_s, writer.written
    cell.polls, cell.poll_errors = poller.polls, poller.errors


def sample(e: Expected, seen: Sighting) -> Sample:
    detected = seen.detected_at_ms / 1000
    return Sample(
        cluster=e.cluster,
        kind=e.kind,
        subject=e.subject,
        threshold=e.threshold,
        latency_s=seen.seen_at - e.decisive.written_at,
        hold_s=e.releasing.written_at - e.decisive.written_at,
        job_s=detected - e.releasing.written_at,
        api_s=seen.seen_at - detected,
    )


# -- figures -----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1), linear between closest ranks; NaN when there are none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.5), 3),
        "p95": round(percentile(values, 0.95), 3),
        "max": round(max(values), 3) if values else math.nan,
    }


def cell_figures(cell: Cell) -> dict[str, Any]:
    latency = spread([s.latency_s for s in cell.samples])
    target = cell.bound_s + TARGET_MARGIN_S
    return {
        "source": cell.source,
        "lateness_bound_s": cell.bound_s,
        "detections": len(cell.samples),
        "threshold_stamped": sum(s.threshold for s in cell.samples),
        "expected": cell.expected,
        "missed": cell.missed,
        "decisive_event_in_warmup": cell.in_warmup,
        "unexpected_alerts": cell.unexpected,
        "fleet_alerts": cell.fleet_alerts,
        "latency_s": latency,
        "p95_minus_bound_s": round(latency["p95"] - cell.bound_s, 3),
        "target_s": target,
        "target_met": latency["p95"] <= target,
        "hold_s": spread([s.hold_s for s in cell.samples]),
        "job_s": spread([s.job_s for s in cell.samples]),
        "api_s": spread([s.api_s for s in cell.samples]),
        "batches": cell.batches,
        "load_average_1m": cell.load_average,
        "warmup_s": round(cell.warmup_s, 1),
        "warmup_timed_out": cell.warmup_timed_out,
        "writer_lag_max_s": round(cell.writer_lag_max_s, 3),
        "events_written": cell.written,
        "polls": cell.polls,
        "poll_errors": cell.poll_errors,
        "samples": [dataclasses.asdict(s) for s in cell.samples],
    }


def print_results(figures: list[dict[str, Any]]) -> None:
    print()
    print_table(
        [
            "source",
            "bound (s)",
            "detections",
            "p50 (s)",
            "p95 (s)",
            "max (s)",
            "p95 - bound (s)",
            "target met",
        ],
        [
            [
                f["source"],
                f["lateness_bound_s"],
                f["detections"],
                f["latency_s"]["p50"],
                f["latency_s"]["p95"],
                f["latency_s"]["max"],
                f["p95_minus_bound_s"],
                "yes" if f["target_met"] else f"no (> {f['target_s']:g} s)",
            ]
            for f in figures
        ],
    )
    print("\nwhere it goes, p50 / p95 (s): hold = decisive -> releasing event written; job = ->")
    print("the store's detected_at; API = -> seen by a poll; batch = the job's batch durations")
    print_table(
        ["source", "bound (s)", "hold", "job", "API", "batch", "missed", "warm-up (s)"],
        [
            [
                f["source"],
                f["lateness_bound_s"],
                _pair(f["hold_s"]),
                _pair(f["job_s"]),
                _pair(f["api_s"]),
                _pair(f["batches"]["duration_s"]),
                len(f["missed"]),
                f["warmup_s"],
            ]
            for f in figures
        ],
    )


def _pair(s: dict[str, float]) -> str:
    return f"{s['p50']:.2f} / {s['p95']:.2f}"


def headline(figures: list[dict[str, Any]]) -> dict[str, float]:
    """The worse p95 of both sources at the default bound, when both ran at it."""
    at_default = [f for f in figures if f["lateness_bound_s"] == DEFAULT_BOUND_S]
    if {f["source"] for f in at_default} != {"spool", "kafka"}:
        return {}
    return {
        "detection_latency_p95_s": max(f["latency_s"]["p95"] for f in at_default),
        "lateness_bound_s": DEFAULT_BOUND_S,
    }


# -- main --------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--sources", default="spool,kafka", help="spool, kafka or both")
    parser.add_argument(
        "--bounds",
        help=f"lateness bounds, seconds (default: 0,{DEFAULT_BOUND_S:g}; for the collector "
        f"case {DEFAULT_BOUND_S:g})",
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the main scenarios")
    parser.add_argument("--send-rate", type=int, default=500, help="fleet sends per second")
    parser.add_argument("--tick-ms", type=int, default=100, help="scenario clusters' tick")
    parser.add_argument("--poll-ms", type=int, default=75, help="GET /alerts interval")
    parser.add_argument("--no-record", action="store_true", help="do not write latest.json")
    parser.add_argument(
        "--workdir", type=Path, help="keep logs and stores here (default: a temp dir)"
    )
    parser.add_argument(
        "--case",
        choices=["dense", "sparse", "collector"],
        default="dense",
        help="dense: the fleet, ticks and the scenario rounds (the default); sparse: one "
        f"scenario alone, events 30 s apart ({SPARSE_SCENARIO}); collector: a real RocketMQ "
        "that routewatch collect alone feeds (benchmarks/detection_latency_collector.py)",
    )
    parser.add_argument(
        "--collect-poll-s",
        type=float,
        help="the collector case's poll interval (default: routewatch collect's)",
    )
    args = parser.parse_args()
    args.sources = [s for s in args.sources.split(",") if s]
    if args.bounds is None:
        args.bounds = (
            f"{DEFAULT_BOUND_S:g}" if args.case == "collector" else f"0,{DEFAULT_BOUND_S:g}"
        )
    args.bounds = [float(b) for b in args.bounds.split(",") if b]
    if args.collect_poll_s is not None and args.collect_poll_s <= 0:
        parser.error("--collect-poll-s > 0, please")
    if not set(args.sources) <= {"spool", "kafka"} or not args.sources:
        parser.error("--sources takes spool, kafka or spool,kafka")
    if args.rounds < 1 or args.tick_ms < 0 or args.poll_ms <= 0 or not args.bounds:
        parser.error("--rounds >= 1, --tick-ms >= 0, --poll-ms > 0 and some --bounds, please")
    return args


def settings_figures(args: argparse.Namespace, spec: FleetSpec, events: int) -> dict[str, Any]:
    emitter = load(EmitterSettings)
    return {
        "trigger_interval_s": TRIGGER_INTERVAL_S,
        "target": f"p95 <= lateness bound + {TARGET_MARGIN_S:g} s",
        "fleet": {**FLEET, "send_rate": spec.send_rate, "events_in_file": events},
        "early_scenarios": EARLY_SCENARIOS,
        "main_scenarios": list(MAIN_SCENARIOS),
        "main_rounds": args.rounds,
        "main_window_s": MAIN_WINDOW_S,
        "round_gap_s": ROUND_GAP_S,
        "stagger_s": STAGGER_S,
        "tick_ms": args.tick_ms,
        "poll_ms": args.poll_ms,
        "spool_roll_interval_s": emitter.spool_roll_interval_s,
        "kafka_linger_ms": emitter.kafka_linger_ms,
        "kafka_partitions": 1,
        "kafka_source": "native",
        "note": "shared 2-core machine: another workload ran at the same time",
    }


def run_all(args: argparse.Namespace, root: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    sparse = args.case == "sparse"
    duration = math.ceil(MAX_WARMUP_S + main_span_s(args.rounds, max(args.bounds)) + 10)
    spec = fleet_spec(args.send_rate, duration)
    fleet = root / "fleet.jsonl"
    if sparse:
        events = 0
        fleet.touch()
        print(f"sparse: {SPARSE_SCENARIO} alone, {SPARSE_WINDOW_S:g} s, no fleet, no ticks")
    else:
        events = write_fleet(spec, fleet)
        print(f"fleet: {events:,} events, {duration} s of 2 clusters x 10 brokers x 1,000 topics")
    figures: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        broker = stack.enter_context(running_broker()) if "kafka" in args.sources else None
        for source in args.sources:
            setup = Setup(
                args.rounds,
                args.tick_ms,
                args.poll_ms / 1000,
                fleet,
                spec.start_ms,
                root,
                broker if source == "kafka" else None,
                sparse,
            )
            for bound in args.bounds:
                started = time.monotonic()
                print(f"{source}, lateness bound {bound:g} s: running...", flush=True)
                figures.append(cell_figures(run_cell(setup, source, bound)))
                f = figures[-1]
                print(
                    f"  {f['detections']} detections, p50 {f['latency_s']['p50']:.2f} s, "
                    f"p95 {f['latency_s']['p95']:.2f} s, warm-up {f['warmup_s']:.0f} s, "
                    f"{time.monotonic() - started:.0f} s in all; load average "
                    + " -> ".join(f"{x:.1f}" for x in f["load_average_1m"]),
                    flush=True,
                )
    settings = settings_figures(args, spec, events)
    if sparse:
        settings.update(
            case="sparse",
            scenario=SPARSE_SCENARIO,
            window_s=SPARSE_WINDOW_S,
            fleet=None,
            tick_ms=0,
            early_scenarios={},
            main_scenarios=[SPARSE_SCENARIO],
        )
    return figures, settings


def run_collector_case(args: argparse.Namespace, root: Path) -> int:
    """``--case collector``: its own module, which borrows this one's processes and figures."""
    from benchmarks import detection_latency_collector as collector

    poll_s = args.collect_poll_s or collector.DEFAULT_POLL_S
    figures, settings = collector.run_all(root, args.bounds, poll_s, args.poll_ms / 1000)
    collector.print_results(figures)
    if not args.no_record:
        record(collector.SECTION, {"settings": settings, "cells": figures})
        print(f"\nrecorded in benchmarks/results/latest.json (section {collector.SECTION})")
    return 0 if all(f["target_met"] for f in figures) else 1


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, _interrupt)  # stop like Ctrl-C: every process we started
    try:
        with contextlib.ExitStack() as stack:
            root = args.workdir or Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="routewatch-latency-"))
            )
            root.mkdir(parents=True, exist_ok=True)
            if args.case == "collector":
                return run_collector_case(args, root)
            figures, settings = run_all(args, root)
    except KeyboardInterrupt:
        print("interrupted; every process this benchmark started was stopped", file=sys.stderr)
        return 130
    print_results(figures)
    sparse = args.case == "sparse"
    top = {} if sparse else headline(figures)
    section = f"{SECTION}_sparse" if sparse else SECTION
    if not args.no_record:
        record(section, {"settings": settings, "cells": figures}, **top)
        print(f"\nrecorded in benchmarks/results/latest.json (section {section})")
    if top:
        print(
            f"headline: detection_latency_p95_s = {top['detection_latency_p95_s']:.2f} "
            f"at the default lateness bound of {DEFAULT_BOUND_S:g} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
