"""``routewatch notify`` against a real Alertmanager (Debian's prometheus-alertmanager, with the
shipped configuration): after every round it holds exactly one firing alert per open routewatch
alert, with its labels and link — warnings included, severity changes included; silences made
on either side show on the other; an outage, an Alertmanager restart and a restart of the pusher
lose nothing and leave nothing stale. The store is filled as the job fills it, without Spark."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from api import ApiSettings, create_app
from api.notify import Notifier, NotifySettings
from emitter.scenarios import on_clusters
from routewatch.alertmanager import alert_labels, labels_key
from routewatch.codec import encode
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.store.views import open_alerts
from routewatch.testing.alertmanager import Alertmanager, running_alertmanager
from routewatch.testing.processes import free_port, wait_for
from streaming.settings import StreamingSettings
from tests.support.alertmanager import held as am_held
from tests.support.alertmanager import severity_flip, shipped_config
from tests.support.stores import EngineJob

pytestmark = pytest.mark.alertmanager

TOKEN = "notify-test-token"
# warnings, criticals and an info, on clusters of their own
CLUSTERS = {
    "Demo": "demo-mixed",  # a stuck topic, a client with no NameServer, a broker that dies
    "Side": "broker-side-alerts",  # PARTIAL_COVERAGE at critical and warning, divergence, skew
    "Refusing": "tbw102-deleted-one-broker",  # refused sends, a stale route, TBW102 missing
}
BATCH_MS = 5_000


def _batches() -> list[list[str]]:
    """The scenarios and Flip, merged in event time, in batches of 5 s of it."""
    lines = [encode(e).decode() for e in on_clusters(CLUSTERS, first_seed=1)]
    lines += [orjson.dumps(e).decode() for e in severity_flip()]
    lines.sort(key=lambda line: orjson.loads(line)["ts"])
    out: list[list[str]] = []
    start: int | None = None
    for line in lines:
        ts = orjson.loads(line)["ts"]
        if start is None or ts >= start + BATCH_MS:
            out.append([])
            start = ts
        out[-1].append(line)
    return out


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[Alertmanager]:
    with running_alertmanager(shipped_config(), tmp_path / "alertmanager") as am:
        yield am


def _settings(data_dir: Path, am: Alertmanager, **kw: Any) -> NotifySettings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "alertmanager_url": am.url,
        "public_url": "http://rw.example:8000",
        "notify_resend_s": 3600,  # (sends are valid for 4 h: a resolve forgotten would show)
        "alertmanager_timeout_s": 2,
        **kw,
    }
    return load(NotifySettings, **values)


def _open(url: str) -> dict[str, dict[str, Any]]:
    store = open_store(url)
    try:
        return {labels_key(alert_labels(a)): a for a in open_alerts(store)}
    finally:
        store.close()


def test_alertmanager_holds_one_alert_per_open_routewatch_alert_after_every_round(
    tmp_path: Path, alertmanager: Alertmanager
) -> None:
    job = EngineJob(load(StreamingSettings, data_dir=tmp_path))
    notifier = Notifier(_settings(tmp_path, alertmanager))
    seen: dict[str, set[str]] = {}  # routewatch id -> severities it was held at
    for lines in _batches():
        job.write(lines)
        assert notifier.round() == []
        held, wanted = am_held(alertmanager), _open(job.url)
        assert set(held) == set(wanted)  # one Alertmanager alert per open alert, no more
        for key, a in held.items():
            seen.setdefault(a["labels"]["routewatch_id"], set()).add(a["labels"]["severity"])
            assert a["generatorURL"] == f"http://rw.example:8000/alerts/{wanted[key]['id']}"
            assert a["annotations"]["summary"] == wanted[key]["summary"]
            assert a["annotations"]["runbook_url"].startswith("http://rw.example:8000/runbook#")
    store = open_store(job.url)
    try:
        every = store.alerts()
    finally:
        store.close()
    kinds = {(a["kind"], a["severity"]) for a in every}
    assert {("AT_RISK", "warning"), ("NAMESRV_DIVERGENCE", "warning")} <= kinds  # warnings too
    assert ("QUEUE_SKEW", "info") in kinds
    # every alert was held there, and Flip's at both severities, one at a time
    assert {a["id"] for a in every} <= set(seen)
    (flip,) = [a for a in every if (a["cluster"], a["kind"]) == ("Flip", "PARTIAL_COVERAGE")]
    assert seen[flip["id"]] == {"critical", "warning"}
    # what ended in routewatch ended there: nothing resolved is held
    held_ids = {a["labels"]["routewatch_id"] for a in am_held(alertmanager).values()}
    assert not any(a["state"] == "resolved" and a["id"] in held_ids for a in every)


def _pushed_once(tmp_path: Path, am: Alertmanager) -> tuple[EngineJob, Notifier]:
    """The store with every batch written, and a notifier that made its first round."""
    job = EngineJob(load(StreamingSettings, data_dir=tmp_path))
    for lines in _batches():
        job.write(lines)
    notifier = Notifier(_settings(tmp_path, am))
    assert notifier.round() == []
    return job, notifier


def test_alertmanager_silence_on_one_topic_silences_that_alert_alone(
    tmp_path: Path, alertmanager: Alertmanager
) -> None:
    job, notifier = _pushed_once(tmp_path, alertmanager)
    stuck = {a["id"]: a for a in _open(job.url).values() if a["kind"] == "PARTIAL_COVERAGE"}
    assert len(stuck) >= 2
    (target,) = [a for a in stuck.values() if (a["cluster"], a["topic"]) == ("Demo", "StuckTopic")]
    until = "2099-01-01T00:00:00.000Z"
    silence_id = alertmanager.add_silence(
        {"alertname": "PARTIAL_COVERAGE", "cluster": "Demo", "topic": "StuckTopic"},
        until,
        "placed on one broker on purpose",
    )
    assert notifier.round() == []

    client = TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))
    listed = client.get("/alerts", params={"kind": "PARTIAL_COVERAGE", "state": "open"}).json()
    by_id = {a["id"]: a for a in listed["data"]}
    assert by_id[target["id"]]["silenced_by"] == [
        {
            "source": "alertmanager",
            "id": silence_id,
            "until": 4_070_908_800_000,
            "by": "an operator",
            "comment": "placed on one broker on purpose",
        }
    ]
    assert all(not a["silenced_by"] for i, a in by_id.items() if i != target["id"])
    # it stays visible, and leaves the paging series alone
    series = client.get("/metrics").text
    assert f'routewatch_id="{target["id"]}"' not in series
    assert all(f'routewatch_id="{i}"' in series for i in stuck if i != target["id"])


def test_alertmanager_gets_a_silence_for_a_routewatch_silence_and_loses_it_when_lifted(
    tmp_path: Path, alertmanager: Alertmanager
) -> None:
    job, notifier = _pushed_once(tmp_path, alertmanager)
    (target,) = [
        a
        for a in _open(job.url).values()
        if (a["kind"], a["cluster"], a["topic"]) == ("PARTIAL_COVERAGE", "Demo", "StuckTopic")
    ]
    app = create_app(load(ApiSettings, data_dir=tmp_path, api_token=TOKEN))
    client = TestClient(app)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    until = int(time.time() * 1000) + 3_600_000
    silenced = client.post(f"/alerts/{target['id']}/silence?until={until}", headers=auth)
    assert silenced.status_code == 200
    assert silenced.json()["silenced_by"] == [
        {"source": "routewatch", "id": None, "until": until, "by": None, "comment": None}
    ]
    assert notifier.round() == []

    (made,) = [s for s in alertmanager.silences() if s["status"]["state"] == "active"]
    assert made["matchers"] == [
        {"name": "routewatch_id", "value": target["id"], "isRegex": False, "isEqual": True}
    ]
    assert made["createdBy"] == "routewatch"
    held = {a["labels"]["routewatch_id"]: a for a in am_held(alertmanager).values()}
    assert held[target["id"]]["status"]["silencedBy"] == [made["id"]]
    assert all(not a["status"]["silencedBy"] for i, a in held.items() if i != target["id"])
    assert notifier.round() == []  # a second round makes no second silence
    assert [s["id"] for s in alertmanager.silences() if s["status"]["state"] == "active"] == [
        made["id"]
    ]

    lifted = client.post(
        f"/alerts/{target['id']}/silence?until={int(time.time() * 1000)}", headers=auth
    )
    assert lifted.json()["silenced_by"] == []
    assert notifier.round() == []
    assert not [s for s in alertmanager.silences() if s["status"]["state"] == "active"]


@pytest.mark.slow  # (60 s of outage)
def test_alertmanager_outage_and_pusher_restart_lose_no_page_and_leave_none_stale(
    tmp_path: Path, alertmanager: Alertmanager
) -> None:
    """Alertmanager stopped (SIGSTOP: it keeps what it holds, as one cut off by the network
    would) for 60 s while alerts open and resolve, the pusher restarted in the middle; then an
    Alertmanager restart, which forgets every alert."""
    job = EngineJob(load(StreamingSettings, data_dir=tmp_path))
    batches = _batches()
    third = len(batches) // 3
    settings = _settings(tmp_path, alertmanager, alertmanager_timeout_s=0.5)
    notifier = Notifier(settings)
    for lines in batches[:third]:
        job.write(lines)
        assert notifier.round() == []
    before = set(am_held(alertmanager))
    assert before

    process = alertmanager.process
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        for i, lines in enumerate(batches[third : 2 * third]):
            job.write(lines)
            failures = notifier.round()
            assert len(failures) == 1 and alertmanager.url in failures[0]
            if i == third // 2:
                notifier = Notifier(settings)  # the pusher restarted, its memory gone
        assert set(_open(job.url)) != before  # alerts opened and resolved meanwhile
        wait_for(lambda: time.monotonic() - stopped >= 60, 90, "60 s of outage", interval=1)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    wait_for(lambda: notifier.round() == [], 30, "Alertmanager answering again")
    assert set(am_held(alertmanager)) == set(_open(job.url))

    alertmanager.stop()
    alertmanager.start()  # (same address and storage; its alerts forgotten)
    for lines in batches[2 * third :]:
        job.write(lines)
        assert notifier.round() == []
        assert set(am_held(alertmanager)) == set(_open(job.url))


def test_alertmanager_unreachable_is_recorded_and_shown_in_metrics(tmp_path: Path) -> None:
    job = EngineJob(load(StreamingSettings, data_dir=tmp_path))
    job.write(_batches()[0])
    closed = f"http://127.0.0.1:{free_port()}"
    notifier = Notifier(
        load(NotifySettings, data_dir=tmp_path, alertmanager_url=closed, alertmanager_timeout_s=1)
    )
    (failure,) = notifier.round()
    assert failure.startswith(f"Alertmanager at {closed} did not answer POST /alerts") or (
        failure.startswith(f"Alertmanager at {closed} did not answer GET /alerts")
    )
    client = TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))
    metrics = client.get("/metrics").text
    assert f'routewatch_notify_failing{{receiver="{closed}"}} 1.0' in metrics
    assert f'routewatch_notify_round_timestamp_seconds{{receiver="{closed}"}}' in metrics
    assert "routewatch_notify_push_timestamp_seconds{" not in metrics  # never accepted
