"""``routewatch_alert_open``, the per-alert series the per-kind Prometheus rules page from (one
Alertmanager alert per routewatch alert, docs/alertmanager.md): one series per open, unsilenced
alert with the labels of the push; at most ROUTEWATCH_ALERT_SERIES_MAX of them, critical first
then oldest, the rest in one overflow series per kind, counted as dropped."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api import ApiSettings, create_app
from routewatch.alertmanager import alert_labels
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.store.views import open_alerts

SERIES = "routewatch_alert_open"


def _store(store_dir: Path, tmp_path: Path) -> Path:
    """A copy of the demo store (the session's), for this test to change."""
    data = tmp_path / "data"
    shutil.copytree(store_dir, data)
    return data


def _series(client: TestClient) -> list[tuple[dict[str, str], float]]:
    text = client.get("/metrics").text
    return [
        (s.labels, s.value)
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == SERIES
    ]


def _dropped(client: TestClient) -> dict[str, float]:
    text = client.get("/metrics").text
    return {
        s.labels["kind"]: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "routewatch_alert_series_dropped_total"
    }


def test_alertmanager_series_carry_the_push_labels_of_each_open_alert(
    store_dir: Path, tmp_path: Path
) -> None:
    data = _store(store_dir, tmp_path)
    settings = load(ApiSettings, data_dir=data, alert_labels="env=prod")
    store = open_store(settings.store_url)
    try:
        wanted = [alert_labels(a, {"env": "prod"}) for a in open_alerts(store)]
    finally:
        store.close()
    assert len(wanted) >= 2
    got = _series(TestClient(create_app(settings)))
    as_pushed = []
    for labels, value in got:
        assert value == 1
        labels = {k: v for k, v in labels.items() if v}  # (an empty label is no label)
        labels["alertname"] = labels.pop("kind")
        as_pushed.append(labels)
    assert sorted(as_pushed, key=repr) == sorted(wanted, key=repr)


def test_alertmanager_series_are_bounded_with_one_overflow_series_per_kind(
    store_dir: Path, tmp_path: Path
) -> None:
    data = _store(store_dir, tmp_path)
    store = open_store(f"sqlite:///{data / 'routewatch.db'}")
    try:
        alerts = open_alerts(store)
    finally:
        store.close()
    ranked = sorted(
        alerts,
        key=lambda a: ({"critical": 0, "warning": 1, "info": 2}[a["severity"]], a["opened_at"]),
    )
    client = TestClient(create_app(load(ApiSettings, data_dir=data, alert_series_max=1)))
    got = _series(client)
    own = [labels for labels, _ in got if labels["routewatch_id"] != "overflow"]
    assert [labels["routewatch_id"] for labels in own] == [ranked[0]["id"]]  # critical, oldest
    left: dict[str, list[str]] = {}
    for a in ranked[1:]:
        left.setdefault(a["kind"], []).append(a["severity"])
    overflow = {
        labels["kind"]: (labels["severity"], value)
        for labels, value in got
        if labels["routewatch_id"] == "overflow"
    }
    assert overflow == {kind: (sev[0], len(sev)) for kind, sev in left.items()}
    # what was left out is counted, scrape after scrape
    first = _dropped(client)
    second = _dropped(client)
    for kind, severities in left.items():
        assert second[kind] - first[kind] == len(severities)
    assert all(second[k] == first[k] == 0 for k in second if k not in left)


def test_alertmanager_series_leave_out_a_silenced_alert(store_dir: Path, tmp_path: Path) -> None:
    data = _store(store_dir, tmp_path)
    settings = load(ApiSettings, data_dir=data, api_token="t")
    client = TestClient(create_app(settings))
    ids = [labels["routewatch_id"] for labels, _ in _series(client)]
    until = int(time.time() * 1000) + 60_000
    silenced = client.post(
        f"/alerts/{ids[0]}/silence?until={until}", headers={"Authorization": "Bearer t"}
    )
    assert silenced.status_code == 200
    assert [labels["routewatch_id"] for labels, _ in _series(client)] == ids[1:]
    # (still there, and shown silenced)
    assert client.get(f"/alerts/{ids[0]}").json()["silenced_by"][0]["until"] == until
