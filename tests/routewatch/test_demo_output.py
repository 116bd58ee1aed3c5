"""What ``routewatch demo`` prints: every alert the store's log opens or resolves and each
visible update, the hint that agrees with the README on what ``/alerts`` shows, and the two
clocks, one line each (the slow end-to-end run is ``test_demo.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emitter.scenarios import SCENARIOS
from routewatch.demo import SCENARIO, clocks_lines, where_to_look
from routewatch.terminal import AlertChanges

README = Path(__file__).resolve().parents[2] / "README.md"


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
        "opened_at": 1_767_225_603_000,
        "updated_at": 1_767_225_605_000,
        "resolved_at": 1_767_225_605_000 if change == "resolved" else None,
    }
    return {"seq": seq, "change": change, "alert": {**fields, **alert}}


def test_every_opening_and_resolution_is_printed_and_an_update_when_its_line_changes() -> None:
    changes = AlertChanges()
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
    assert lines[0].split()[4] == "2026-01-01T00:00:03.000Z"  # when it opened, ISO 8601
    assert lines[1].split()[4] == "2026-01-01T00:00:05.000Z"  # when it resolved
    assert lines[-1].endswith("2026-01-01T00:00:05.000Z  on 1 of 2 brokers")
    assert changes.after == 5  # the next read starts after the last entry
    assert changes.lines([]) == []


def test_a_broker_alert_names_the_broker() -> None:
    entry = _entry(1, "opened", "BROKER_EXPIRED", topic=None, broker="broker-c", broker_id=0)

    [line] = AlertChanges().lines([entry])

    assert "DefaultCluster/broker-c/0" in line


def test_the_clocks_are_said_in_one_line_each() -> None:
    event_time, wall_clock = clocks_lines(10)
    readme = " ".join(README.read_text().split())

    assert "\n" not in event_time + wall_clock
    assert "opened_at and resolved_at are event time" in event_time
    assert "10x as fast as the wall clock, keeping the trace's gaps" in event_time
    assert "detected_at is when routewatch stored the alert" in wall_clock
    assert "opened_at can be minutes after detected_at" in wall_clock
    assert (
        "10x" not in clocks_lines(1)[0] and "runs as fast as the wall clock" in clocks_lines(1)[0]
    )
    # and the README, a line each
    assert "- `opened_at`, `resolved_at`: event time, the trace's clock" in readme
    assert "- `detected_at`: the wall clock when routewatch stored the alert" in readme


def test_the_hint_and_the_readme_say_what_the_scenario_ends_with() -> None:
    ends = SCENARIOS[SCENARIO].expected
    opened = [a.kind for a in ends if a.state == "open"]
    resolved = [a.kind for a in ends if a.state == "resolved"]
    assert (len(ends), len(opened), resolved) == (4, 3, ["AT_RISK"])

    console, hint, *_ = where_to_look("http://127.0.0.1:8000")
    assert console.startswith("    console:      http://127.0.0.1:8000/ ")
    readme = " ".join(README.read_text().split())

    # the hint's curl lists every alert, the resolved one too, and says how many of each
    assert "curl -s 'http://127.0.0.1:8000/alerts' " in hint
    assert "ends with 4: AT_RISK resolved early on, 3 open" in hint
    assert (
        "`/alerts` lists all four within 3 minutes of the start, three open and `AT_RISK` "
        "resolved" in readme
    )
