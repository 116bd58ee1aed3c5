"""What ``routewatch demo`` prints of the store's alert log: every change, as the store records
it (the slow end-to-end run is ``test_demo.py``)."""

from __future__ import annotations

from typing import Any

from routewatch.demo import _AlertChanges, clocks_line


def _entry(seq: int, change: str, kind: str, **alert: Any) -> dict[str, Any]:
    fields = {
        "id": f"{kind.lower()}-1",
        "kind": kind,
        "severity": "critical",
        "state": "resolved" if change == "resolved" else "open",
        "cluster": "DefaultCluster",
        "topic": "StuckTopic",
        "broker": None,
        "broker_id": None,
        "summary": "s",
    }
    return {"seq": seq, "change": change, "alert": {**fields, **alert}}


def test_every_opening_and_resolution_is_printed_and_an_update_when_its_line_changes() -> None:
    changes = _AlertChanges()
    log = [
        # opened and resolved between two reads of the store: both are printed
        _entry(1, "opened", "AT_RISK", severity="warning", summary="at risk"),
        _entry(2, "resolved", "AT_RISK", severity="warning", summary="at risk"),
        _entry(3, "opened", "PARTIAL_COVERAGE", summary="on 1 of 3 brokers"),
        _entry(4, "updated", "PARTIAL_COVERAGE", summary="on 1 of 3 brokers"),  # evidence only
        _entry(5, "updated", "PARTIAL_COVERAGE", summary="on 1 of 2 brokers"),
    ]

    lines = changes.lines(log[:2]) + changes.lines(log[2:])

    assert [line.split()[:3] for line in lines] == [
        ["opened", "warning", "AT_RISK"],
        ["resolved", "warning", "AT_RISK"],
        ["opened", "critical", "PARTIAL_COVERAGE"],
        ["updated", "critical", "PARTIAL_COVERAGE"],
    ]
    assert lines[-1].endswith("DefaultCluster/StuckTopic     on 1 of 2 brokers")
    assert changes.after == 5  # the next read starts after the last entry
    assert changes.lines([]) == []


def test_a_broker_alert_names_the_broker() -> None:
    entry = _entry(1, "opened", "BROKER_EXPIRED", topic=None, broker="broker-c", broker_id=0)

    [line] = _AlertChanges().lines([entry])

    assert "DefaultCluster/broker-c/0" in line


def test_the_clocks_are_said_in_one_line() -> None:
    line = clocks_line(10)

    assert "\n" not in line
    assert "opened_at and resolved_at are event time" in line and "10x as fast as" in line
    assert "detected_at is the wall clock" in line
    assert "10x" not in clocks_line(1) and "runs as fast as the wall clock" in clocks_line(1)
