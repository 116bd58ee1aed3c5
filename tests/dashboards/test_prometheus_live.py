"""A real Prometheus scrapes the real API while scenarios stream through the job: every panel's
query, with its template variables filled in, returns data for the scenario meant to light it,
and the per-alert rules fire one Prometheus alert per routewatch alert. Both reach a real
Alertmanager — the rules through Prometheus, and ``routewatch notify``'s push — configured as
docs/alertmanager.md says: it holds exactly one alert per open routewatch alert, every alert
appears there with its labels and link, updates when its severity changes, and ends there when
routewatch resolves it."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from pyspark.sql import SparkSession

from dashboards import DASHBOARD_FILE, RULES_FILE
from emitter.scenarios import on_clusters
from routewatch.codec import encode
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.testing.alertmanager import Alertmanager, running_alertmanager
from routewatch.testing.processes import api_answers, free_port, start_routewatch, stop, wait_for
from routewatch.testing.prometheus import Prometheus, running_prometheus
from streaming.job.stream import start_stream
from streaming.settings import StreamingSettings
from tests.support import grafana
from tests.support.alertmanager import held, severity_flip, shipped_config

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.alertmanager]

# Each scenario on a cluster of its own, so that one stream lights every panel.
CLUSTERS = {
    "Demo": "demo-mixed",  # stuck topic, a client with no NameServer, a broker that dies
    "Diverging": "namesrv-registration-lost",  # NameServers disagree on a broker
    "Refusing": "restarted-auto-create-off-stale-tbw102",  # a broker refuses sends
    "Expiring": "broker-dies",  # a topic that lived on the dying broker only loses every route
}
# The Refusing cluster's sends are refused 6-30 s into its scenario. A counter first seen at its
# final value has no rate, so Prometheus must see them at 0 first: the trace's first seconds
# (before any refusal) go into the spool before the job starts, and the rest is replayed, at 5x,
# only once Prometheus has scraped every cluster's send counters at 0. (The job's first batch
# may take longer than the refusals' 5 s of wall time at 5x, and a batch whose events are all
# held by the lateness bound writes no cluster yet.)
HEAD_MS = 5_000
SPEED = 5
RATE_INTERVAL = "10s"  # what Grafana's $__rate_interval is at a 1 s scrape interval
BAD_LINES = "{broken\nnot json either\n"

Check = Callable[[list[float]], bool]
DATA: Check = bool
POSITIVE: Check = lambda values: any(v > 0 for v in values)  # noqa: E731
BELOW_ONE: Check = lambda values: any(v < 1 for v in values)  # noqa: E731
ZERO: Check = lambda values: any(v == 0 for v in values)  # noqa: E731

# (panel title, query ref) -> (template variables, what "lit" means for its values)
LIT: dict[tuple[str, str], tuple[dict[str, str], Check]] = {
    ("Open critical alerts", "A"): ({}, POSITIVE),
    ("Open warnings", "A"): ({}, POSITIVE),
    ("Store readable", "A"): ({}, POSITIVE),
    ("Event-time lag now", "A"): ({}, DATA),
    ("Open alerts by kind and severity", "A"): ({}, POSITIVE),
    ("Alerts opened", "A"): ({}, POSITIVE),
    ("Topics with partial coverage, worst first", "A"): ({"cluster": "Demo"}, BELOW_ONE),
    ("Topics with partial coverage, worst first", "B"): ({"cluster": "Demo"}, DATA),
    ("Coverage over time", "A"): ({"cluster": "Demo", "topic": "StuckTopic"}, BELOW_ONE),
    ("Broker up per NameServer", "A"): ({"cluster": "Demo"}, ZERO),
    ("NameServer divergence", "A"): ({"cluster": "Diverging"}, POSITIVE),
    ("NameServer divergence", "B"): ({"cluster": "Diverging"}, POSITIVE),
    ("'No route info' and refused sends", "A"): ({"cluster": "Demo"}, POSITIVE),
    ("'No route info' and refused sends", "B"): ({"cluster": "Refusing"}, POSITIVE),
    ("Micro-batch duration", "A"): ({}, POSITIVE),
    ("Input rate", "A"): ({}, POSITIVE),
    ("Input rate", "B"): ({}, POSITIVE),
    ("Input age and job report age", "A"): ({}, DATA),
    ("Input age and job report age", "B"): ({}, DATA),
    ("Event-time lag", "A"): ({}, DATA),
    ("Quarantined, late and duplicate events", "A"): ({}, POSITIVE),
    ("Quarantined, late and duplicate events", "B"): ({}, DATA),
    ("Quarantined, late and duplicate events", "C"): ({}, DATA),
    ("Stream job", "A"): ({}, ZERO),  # (the job runs: it has not ended)
    # a collector polling a NameServer that is not there (a closed port), once a second
    ("Collector: seconds since its last round", "A"): ({}, DATA),
    ("Collector: NameServers and brokers not answering", "A"): ({}, POSITIVE),
    ("Collector: NameServers and brokers not answering", "B"): ({}, POSITIVE),
    ("Collector: work per second", "A"): ({}, POSITIVE),
    ("Collector: work per second", "B"): ({}, POSITIVE),
    ("Collector: work per second", "C"): ({}, DATA),
    ("Collector: work per second", "D"): ({}, DATA),
    ("Collector: work per second", "E"): ({}, DATA),
    ("Collector: work per second", "F"): ({}, DATA),
    ("Collector: work per second", "G"): ({}, DATA),
    ("Convergence per cluster", "A"): ({}, DATA),
    ("Convergence per cluster", "B"): ({}, DATA),
    ("Route changes: how long they took to reach every NameServer", "A"): ({}, DATA),
    ("Route changes: how long they took to reach every NameServer", "B"): ({}, DATA),
    ("Route changes: how long they took to reach every NameServer", "C"): ({}, POSITIVE),
    # routewatch notify pushing to the test's Alertmanager
    ("Paging alerts, one per routewatch alert", "A"): ({}, POSITIVE),
    ("Per-alert series left out", "A"): ({}, DATA),
    ("Alertmanager push: seconds since the last round and the last accepted push", "A"): (
        {},
        DATA,
    ),
    ("Alertmanager push: seconds since the last round and the last accepted push", "B"): (
        {},
        DATA,
    ),
    ("Alertmanager accepts the push", "A"): ({}, ZERO),
}
# the per-alert rules that fire, one Prometheus alert per routewatch alert
FIRING = {"PARTIAL_COVERAGE", "BROKER_EXPIRED", "NO_ROUTE_INFO", "NAMESRV_DIVERGENCE"}
FLIP = "Flip"  # a cluster whose PARTIAL_COVERAGE goes from warning to critical


def _mixed_trace(head: Path, rest: Path) -> None:
    """The trace and the Flip cluster's events, starting now, in two parts: its first
    ``HEAD_MS``, and the rest."""
    events = on_clusters(CLUSTERS, first_seed=1)
    shift = int(time.time() * 1000) - events[0].ts
    lines = [
        (e.ts + shift, encode(dataclasses.replace(e, ts=e.ts + shift)).decode()) for e in events
    ]
    lines += [
        (e["ts"] + shift, orjson.dumps({**e, "ts": e["ts"] + shift}).decode())
        for e in severity_flip(FLIP)
    ]
    lines.sort(key=lambda line: line[0])
    cut = next(i for i, (ts, _) in enumerate(lines) if ts >= lines[0][0] + HEAD_MS)
    head.parent.mkdir(parents=True, exist_ok=True)
    head.write_text("".join(line + "\n" for _, line in lines[:cut]))
    rest.write_text("".join(line + "\n" for _, line in lines[cut:]))


@pytest.fixture
def api_url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)}
    log = tmp_path / "api.log"
    proc = start_routewatch(["api", "--port", str(port)], env, log)
    try:
        wait_for(lambda: api_answers(url, proc, log), 60, f"the API answering on {url}")
        yield url
    finally:
        stop(proc)


@pytest.fixture
def collector_metrics(tmp_path: Path) -> Iterator[str]:
    """``routewatch collect`` polling a closed port once a second, its /metrics served."""
    port = free_port()
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path / "collect"),
        "ROUTEWATCH_COLLECT_METRICS_PORT": str(port),
        "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": "1",
        "ROUTEWATCH_COLLECT_START_TIMEOUT_S": "0",  # it never reaches one, and polls on
    }
    argv = ["collect", "--namesrv", f"127.0.0.1:{free_port()}", "--to", "stdout"]
    log = tmp_path / "collect.log"
    proc = start_routewatch(argv, env, log)
    try:
        wait_for(lambda: "/metrics on" in log.read_text(), 60, "the collector serving /metrics")
        yield f"127.0.0.1:{port}"
    finally:
        stop(proc)


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[Alertmanager]:
    with running_alertmanager(shipped_config(), tmp_path / "alertmanager") as am:
        yield am


@pytest.fixture
def notify(alertmanager: Alertmanager, api_url: str, tmp_path: Path) -> Iterator[None]:
    """``routewatch notify`` pushing the store's alerts to the Alertmanager every 0.5 s."""
    env = {
        **os.environ,
        "ROUTEWATCH_DATA_DIR": str(tmp_path),
        "ROUTEWATCH_ALERTMANAGER_URL": alertmanager.url,
        "ROUTEWATCH_PUBLIC_URL": api_url,
        "ROUTEWATCH_NOTIFY_INTERVAL_S": "0.5",
    }
    log = tmp_path / "notify.log"
    proc = start_routewatch(["notify"], env, log)
    try:
        wait_for(lambda: "pushing the alerts" in log.read_text(), 60, "routewatch notify")
        yield
    finally:
        stop(proc)


@pytest.fixture
def prometheus(
    api_url: str, collector_metrics: str, alertmanager: Alertmanager, tmp_path: Path
) -> Iterator[Prometheus]:
    """The shipped prometheus.yml with the test's addresses: the API, the collector (a static
    target in place of the shipped, empty, target file) and the Alertmanager."""
    config: dict[str, Any] = yaml.safe_load((RULES_FILE.parent / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    targets = {
        "routewatch": api_url.removeprefix("http://"),
        "routewatch-collect": collector_metrics,
    }
    assert {job["job_name"] for job in config["scrape_configs"]} == set(targets)
    for job in config["scrape_configs"]:
        job["scrape_timeout"] = "1s"
        job.pop("file_sd_configs", None)
        job["static_configs"] = [{"targets": [targets[job["job_name"]]]}]
    (sender,) = config["alerting"]["alertmanagers"]
    sender["static_configs"] = [{"targets": [alertmanager.url.removeprefix("http://")]}]
    with running_prometheus(config, tmp_path / "prometheus", RULES_FILE) as server:
        yield server


def _values(prom: Prometheus, expr: str, instant: bool, start: float) -> list[float]:
    if instant:
        return [float(r["value"][1]) for r in prom.query(expr)]
    series = prom.query_range(expr, start, time.time())
    return [float(v) for s in series for _, v in s["values"]]


def _unlit(prom: Prometheus, board: dict[str, Any], start: float) -> list[str]:
    out = []
    for target in grafana.targets(board):
        variables, check = LIT[target.panel, target.ref]
        filled = grafana.fill(
            target.expr,
            {"cluster": ".*", "topic": ".*", **variables, "__rate_interval": RATE_INTERVAL},
        )
        if not check(_values(prom, filled, target.instant, start)):
            out.append(f"{target.panel} [{target.ref}]: {filled}")
    return out


class Watch:
    """What the Alertmanager held from routewatch, polled every 0.2 s in a thread: each
    routewatch alert's severities there."""

    def __init__(self, am: Alertmanager) -> None:
        self.am = am
        self.seen: dict[str, set[str]] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.done.wait(0.2):
            for a in held(self.am).values():
                labels = a["labels"]
                self.seen.setdefault(labels["routewatch_id"], set()).add(labels["severity"])

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def _alertmanager_agrees(am: Alertmanager, api_url: str) -> bool:
    """Exactly one alert there per open routewatch alert, with its labels, and no other."""
    import httpx

    page = httpx.get(f"{api_url}/alerts", params={"state": "open", "limit": 1000}, timeout=10)
    open_ids = {a["id"]: a for a in page.json()["data"]}
    there = [a["labels"] for a in held(am).values()]
    ids = [labels["routewatch_id"] for labels in there]
    return sorted(ids) == sorted(open_ids) and all(
        (labels["alertname"], labels["severity"], labels["cluster"])
        == (
            open_ids[labels["routewatch_id"]]["kind"],
            open_ids[labels["routewatch_id"]]["severity"],
            open_ids[labels["routewatch_id"]]["cluster"],
        )
        for labels in there
    )


def test_every_panel_lights_up_and_alertmanager_holds_one_alert_per_routewatch_alert(
    spark: SparkSession,
    tmp_path: Path,
    prometheus: Prometheus,
    alertmanager: Alertmanager,
    notify: None,
    api_url: str,
) -> None:
    board = grafana.load(DASHBOARD_FILE)
    assert {(t.panel, t.ref) for t in grafana.targets(board)} == set(LIT)
    settings = load(StreamingSettings, data_dir=tmp_path, trigger_interval_s=0.5)
    rest = tmp_path / "rest.jsonl"
    _mixed_trace(settings.spool_dir / "head.jsonl", rest)  # the head is there when the job starts
    wait_for(lambda: prometheus.scraped("routewatch"), 60, "Prometheus scraping the API")
    wait_for(lambda: prometheus.scraped("routewatch-collect"), 60, "Prometheus scraping collect")
    start = time.time()
    query = start_stream(spark, settings, "spool")
    replay: subprocess.Popen[bytes] | None = None
    watch = Watch(alertmanager)

    def refusals_seen_at_zero() -> bool:
        seen = prometheus.query('routewatch_sends_total{status="TOPIC_NOT_EXIST"} == 0')
        return {s["metric"]["cluster"] for s in seen} >= set(CLUSTERS)

    try:
        wait_for(refusals_seen_at_zero, 180, "Prometheus seeing every cluster's sends at 0")
        replay = subprocess.Popen(
            [
                *(sys.executable, "-m", "routewatch.cli", "replay", str(rest), "--to", "spool"),
                *("--speed", str(SPEED), "--quiet"),
            ],
            env={**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)},
        )
        # Bad input after Prometheus has seen the quarantine counters at 0, so it sees the rise.
        wait_for(
            lambda: bool(prometheus.query("sum(routewatch_events_total) > 0")),
            120,
            "Prometheus seeing the first events applied",
        )
        staged = tmp_path / "bad.staging"
        staged.write_text(BAD_LINES)
        staged.replace(settings.spool_dir / "bad-input.jsonl")
        assert replay.wait(180) == 0

        unlit: list[str] = []

        def all_lit() -> bool:
            unlit[:] = _unlit(prometheus, board, start)
            return not unlit

        try:
            wait_for(all_lit, 120, "every panel lighting up", interval=2)
        except TimeoutError as e:
            raise AssertionError(f"panels without data: {unlit}") from e

        cluster_values = prometheus.label_values("cluster", "routewatch_broker_up")
        assert set(CLUSTERS) <= set(cluster_values)
        topic_query = grafana.variable_queries(board)["topic"]
        assert "StuckTopic" in prometheus.label_values(
            "topic",
            grafana.fill(topic_query.split("(", 1)[1].rsplit(",", 1)[0], {"cluster": "Demo"}),
        )
        alerts = prometheus.query_range("ALERTS", start, time.time())
        assert {s["metric"]["alertname"] for s in alerts} >= FIRING
        # one per topic: the Demo cluster's stuck topic has a Prometheus alert of its own
        stuck = prometheus.query('ALERTS{alertname="PARTIAL_COVERAGE",topic="StuckTopic"}')
        assert {s["metric"]["cluster"] for s in stuck} == {"Demo"}

        # push and rules together, as documented: one Alertmanager alert per routewatch alert
        wait_for(
            lambda: _alertmanager_agrees(alertmanager, api_url),
            60,
            "Alertmanager holding exactly routewatch's open alerts",
        )
        watch.stop()
        store = open_store(settings.store_url)
        try:
            every = store.alerts()
            written = {
                (r["alert_id"], r["change"]): r["written_at"]
                for r in store.db.execute("SELECT alert_id, change, written_at FROM alert_log")
            }
        finally:
            store.close()
        assert {a["severity"] for a in every} >= {"critical", "warning"}
        for a in every:  # every alert open for 3 s of wall clock was seen there
            opened = min(t for (i, _), t in written.items() if i == a["id"])
            ended = written.get((a["id"], "resolved"), int(time.time() * 1000))
            if ended - opened >= 3_000:
                assert a["id"] in watch.seen, a
        (flip,) = [a for a in every if (a["cluster"], a["kind"]) == (FLIP, "PARTIAL_COVERAGE")]
        assert watch.seen[flip["id"]] == {"warning", "critical"}  # updated there, one at a time
    finally:
        watch.stop()
        if replay is not None:
            stop(replay)
        query.stop()
