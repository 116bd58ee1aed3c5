"""``/topics``, ``/brokers``, ``/quarantine``, health and ``/metrics``."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from api import ApiSettings, create_app
from api.models import BrokerPublic, TopicDetail, TopicPublic
from routewatch.settings import load
from routewatch.store import open_store
from routewatch.store.records import BrokerView, RouteWindow, TopicView
from tests.support.grafana import documented_metrics


def test_topics_show_coverage_and_auto_creation(client: TestClient) -> None:
    topics = {t["topic"]: t for t in client.get("/topics").json()["data"]}

    stuck, healthy = topics["StuckTopic"], topics["PaymentsTopic"]
    assert stuck["auto_created"] and stuck["coverage"] < 1
    assert (healthy["auto_created"], healthy["coverage"]) == (False, 1.0)
    assert healthy["expected_brokers"] == ["broker-a", "broker-b"]
    assert set(healthy["namesrvs"]) == {"10.0.0.100:9876", "10.0.0.101:9876"}
    below = client.get("/topics?coverage_below=0.99").json()["data"]
    assert [t["topic"] for t in below if not t["system"]] == ["StuckTopic"]
    # The topics named after a broker live on that broker alone, by design: listed, flagged.
    assert {t["topic"] for t in below if t["system"]} == {"broker-a", "broker-b", "broker-c"}


def test_brokers_show_liveness_per_namesrv(client: TestClient) -> None:
    brokers = {b["broker"]: b for b in client.get("/brokers").json()["data"]}

    assert brokers["broker-a"]["live"] and not brokers["broker-c"]["live"]
    assert [n["live"] for n in brokers["broker-c"]["namesrvs"]] == [False, False]
    assert brokers["broker-a"]["auto_create_topic_enable"] is True
    assert brokers["broker-a"]["tbw102"] == "usable"


def test_the_broker_and_topic_models_are_the_stores_records() -> None:
    """A field shown in /brokers or /topics is typed once, in routewatch.store.records: the
    response models derive from the records and add no field."""
    for public, record in ((BrokerPublic, BrokerView), (TopicPublic, TopicView)):
        assert issubclass(public, record)
        assert public.model_fields.keys() == record.model_fields.keys()
    assert TopicDetail.model_fields["windows"].annotation == list[RouteWindow]


def test_quarantine_lists_bad_input_with_reasons_and_counts(client: TestClient) -> None:
    body = client.get("/quarantine").json()

    assert sorted(q["reason"] for q in body["data"]) == ["missing_field", "not_json", "not_object"]
    assert body["counts"] == {"missing_field": 1, "not_json": 1, "not_object": 1}


def test_health_and_readiness(client: TestClient, tmp_path: Path) -> None:
    assert client.get("/healthz").json() == {"status": "ok", "checks": {}}
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.json()
    missing = TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))
    response = missing.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["store"].startswith("The store ")
    assert "does not exist yet" in response.json()["checks"]["store"]


def test_metrics_are_read_from_the_store(client: TestClient, registry: CollectorRegistry) -> None:
    text = client.get("/metrics").text

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("routewatch_exporter_up") == 1
    assert (
        value("routewatch_topic_coverage_ratio", cluster="DefaultCluster", topic="PaymentsTopic")
        == 1.0
    )
    assert (
        value("routewatch_topic_coverage_ratio", cluster="DefaultCluster", topic="StuckTopic") or 0
    ) < 1
    assert (
        value(
            "routewatch_broker_up",
            cluster="DefaultCluster",
            broker="broker-c",
            namesrv="10.0.0.100:9876",
        )
        == 0
    )
    assert value("routewatch_alerts_open", kind="BROKER_EXPIRED", severity="critical") == 1
    assert value("routewatch_alerts_opened_total", kind="AT_RISK") == 1
    assert value("routewatch_events_quarantined_total", reason="not_json") == 1
    assert (value("routewatch_events_total", type="heartbeat") or 0) > 0
    assert (value("routewatch_sends_total", cluster="DefaultCluster", status="SEND_OK") or 0) > 0
    assert value("routewatch_events_late_total") == 0
    assert "routewatch_stream_batch_duration_seconds" in text


def test_input_age_counts_from_the_jobs_last_newer_event(
    store_dir: Path, registry: CollectorRegistry, client: TestClient
) -> None:
    store = open_store(f"sqlite:///{store_dir / 'routewatch.db'}", readonly=True)
    try:
        input_at = store.db.execute("SELECT MAX(input_at) FROM clusters").fetchone()[0]
    finally:
        store.close()
    assert input_at is not None  # the job recorded when its newest event arrived

    before = time.time()
    age = registry.get_sample_value("routewatch_stream_input_age_seconds")  # a scrape
    after = time.time()

    assert age is not None
    assert before - input_at / 1000 <= age <= after - input_at / 1000


def test_a_store_written_by_an_older_version_is_migrated_not_a_server_error(
    store_dir: Path, tmp_path: Path
) -> None:
    import shutil
    import sqlite3

    for path in store_dir.glob("routewatch.db*"):
        shutil.copy(path, tmp_path / path.name)
    db = sqlite3.connect(tmp_path / "routewatch.db")
    db.executescript(
        "DROP TABLE topics; DROP TABLE alert_acks; DELETE FROM schema_version WHERE version = 2;"
    )
    db.close()
    client = TestClient(create_app(load(ApiSettings, data_dir=tmp_path)))

    assert client.get("/topics").status_code == 200
    assert client.get("/alerts").json()["count"] == 4


def test_system_topics_are_marked_and_kept_out_of_coverage_metrics(
    client: TestClient, registry: CollectorRegistry
) -> None:
    topics = {t["topic"]: t for t in client.get("/topics").json()["data"]}
    client.get("/metrics")

    assert topics["TBW102"]["system"] and not topics["PaymentsTopic"]["system"]
    assert (
        registry.get_sample_value(
            "routewatch_topic_coverage_ratio", {"cluster": "DefaultCluster", "topic": "TBW102"}
        )
        is None
    )


def test_topics_can_be_filtered_by_cluster(client: TestClient) -> None:
    assert client.get("/topics?cluster=Elsewhere").json() == {"data": [], "count": 0, "next": None}
    assert client.get("/topics?cluster=DefaultCluster").json()["count"] > 0


def test_quarantine_limit_caps_the_list_not_the_counts(client: TestClient) -> None:
    body = client.get("/quarantine?limit=1").json()

    assert len(body["data"]) == 1
    assert sum(body["counts"].values()) == 3
    assert client.get("/quarantine?limit=1001").status_code == 422


def test_metrics_exported_are_exactly_those_documented(
    client: TestClient, registry: CollectorRegistry
) -> None:
    client.get("/metrics")
    # Family names: a gauge with no value yet (no finished batch) still declares itself.
    exported = {f.name + ("_total" if f.type == "counter" else "") for f in registry.collect()}

    # (routewatch_collect_*: the collector's own /metrics, tests/emitter/collect/test_metrics.py)
    assert exported == {
        n for n in documented_metrics() if ":" not in n and not n.startswith("routewatch_collect_")
    }


def test_known_counter_labels_start_at_zero(
    client: TestClient, registry: CollectorRegistry
) -> None:
    client.get("/metrics")

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("routewatch_alerts_opened_total", kind="QUEUE_SKEW") == 0
    assert value("routewatch_events_quarantined_total", reason="unknown_version") == 0
    assert value("routewatch_sends_total", cluster="DefaultCluster", status="TOPIC_NOT_EXIST") == 0
