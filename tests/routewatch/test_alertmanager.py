"""A routewatch alert's form in Alertmanager (routewatch.alertmanager): its labels, the same for
the push and the per-alert series; the payloads of a firing and a resolved alert; the silence
that matches one alert."""

from __future__ import annotations

from typing import Any

import pytest

from routewatch.alertmanager import (
    Links,
    alert_labels,
    am_time,
    check_static_labels,
    firing,
    labels_key,
    resolved,
    silence,
)

LINKS = Links("http://rw.example:8000/", "http://rw.example:8000/runbook")


def _alert(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "partial_coverage-0123456789abcdef",
        "kind": "PARTIAL_COVERAGE",
        "severity": "critical",
        "cluster": "C",
        "topic": "T",
        "broker": None,
        "opened_at": 1_767_225_603_000,
        "summary": "Auto-created topic T is on 1 of 2 brokers.",
        "evidence": {"coverage": "1/2", "opened_with": {"coverage": "1/2"}},
        "remedy": "`mqadmin updateTopic -n ns:9876 -c C -t T -r 4 -w 4`",
    }
    return {**base, **fields}


def test_alertmanager_labels_name_the_kind_cluster_topic_severity_and_id() -> None:
    assert alert_labels(_alert(), {"env": "prod"}) == {
        "env": "prod",
        "alertname": "PARTIAL_COVERAGE",
        "cluster": "C",
        "topic": "T",
        "severity": "critical",
        "routewatch_id": "partial_coverage-0123456789abcdef",
    }


def test_alertmanager_labels_of_a_broker_alert_and_of_a_cluster_alert() -> None:
    broker = _alert(kind="BROKER_EXPIRED", id="broker_expired-1", topic=None, broker="b")
    cluster = _alert(kind="COLLECTOR_SILENT", id="collector_silent-1", topic=None)
    assert alert_labels(broker)["broker"] == "b" and "topic" not in alert_labels(broker)
    assert set(alert_labels(cluster)) == {"alertname", "cluster", "severity", "routewatch_id"}


def test_alertmanager_labels_name_the_expired_broker_a_partial_coverage_lost() -> None:
    lost = _alert(evidence={"coverage": "0/1", "expired_brokers_with_topic": ["c", "d"]})
    assert alert_labels(lost)["broker"] == "c"  # (what lets c's BROKER_EXPIRED inhibit it)
    # another kind's evidence never makes a broker label
    other = _alert(kind="STALE_ROUTE", evidence={"expired_brokers_with_topic": ["c"]})
    assert "broker" not in alert_labels(other)


@pytest.mark.parametrize(
    ("labels", "wrong"),
    [
        ({"severity": "x"}, "a label routewatch sets itself"),
        ({"alertname": "x"}, "a label routewatch sets itself"),
        ({"1st": "x"}, "not a valid label name"),
        ({"__name__": "x"}, "not a valid label name"),
        ({"env": ""}, "empty value"),
    ],
)
def test_alertmanager_static_labels_are_checked(labels: dict[str, str], wrong: str) -> None:
    with pytest.raises(ValueError, match=wrong):
        check_static_labels(labels)


def test_alertmanager_firing_alert_carries_summary_remedy_evidence_and_links() -> None:
    a = _alert()
    sent = firing(a, alert_labels(a), LINKS, now_ms=1_767_225_700_000, valid_ms=240_000)
    assert sent["labels"] == alert_labels(a)
    assert sent["startsAt"] == "2026-01-01T00:00:03.000Z"
    assert sent["endsAt"] == am_time(1_767_225_700_000 + 240_000)
    assert sent["generatorURL"] == "http://rw.example:8000/alerts/partial_coverage-0123456789abcdef"
    notes = sent["annotations"]
    assert notes["summary"] == a["summary"] and notes["remedy"] == a["remedy"]
    assert notes["runbook_url"] == "http://rw.example:8000/runbook#partial_coverage"
    assert notes["evidence"] == '{"coverage":"1/2"}'  # (the opening evidence left out)


def test_alertmanager_evidence_annotation_is_cut_short() -> None:
    a = _alert(evidence={"topics": ["t" * 50] * 100})
    notes = firing(a, alert_labels(a), LINKS, now_ms=0, valid_ms=1)["annotations"]
    assert len(notes["evidence"]) == 1024 and notes["evidence"].endswith("…")


def test_alertmanager_start_is_never_after_now() -> None:
    a = _alert(opened_at=2_000_000_000_000)  # event time ahead of the wall clock
    assert firing(a, alert_labels(a), LINKS, now_ms=1_000, valid_ms=1)["startsAt"] == am_time(1_000)


def test_alertmanager_resolution_ends_what_was_pushed_under_its_labels() -> None:
    labels = alert_labels(_alert())
    sent = resolved(labels, 1_767_225_675_000, LINKS)
    assert sent == {
        "labels": labels,
        "endsAt": "2026-01-01T00:01:15.000Z",
        "generatorURL": "http://rw.example:8000/alerts/partial_coverage-0123456789abcdef",
    }
    assert labels_key(labels) == labels_key(dict(reversed(labels.items())))


def test_alertmanager_silence_matches_one_alert_by_its_id() -> None:
    body = silence("x-1", starts_ms=0, ends_ms=1000, comment="why", silence_id="s1")
    assert body["matchers"] == [
        {"name": "routewatch_id", "value": "x-1", "isRegex": False, "isEqual": True}
    ]
    assert (body["id"], body["createdBy"], body["endsAt"]) == ("s1", "routewatch", am_time(1000))
