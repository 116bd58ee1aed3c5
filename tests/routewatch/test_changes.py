"""Every kind of change the job writes: the decoder gives back what the encoder was given."""

from __future__ import annotations

import dataclasses

import pytest

from routewatch.alerts import Alert
from routewatch.changes import (
    COUNTERS,
    LATE,
    BadLine,
    BrokerState,
    Change,
    ChangeRow,
    ClusterClock,
    Count,
    LateEvent,
    RouteChange,
    TopicCreated,
    alert_versions,
    decode,
    encode_alert,
    encode_bad,
    encode_broker,
    encode_clock,
    encode_count,
    encode_late,
    encode_route,
    encode_topic,
)

ALERT = Alert(
    id="no_route_info-1",
    kind="NO_ROUTE_INFO",
    severity="critical",
    state="open",
    cluster="C",
    topic="T",
    broker=None,
    broker_id=None,
    cause="AUTO_CREATE_DISABLED",
    opened_at=1_000,
    updated_at=2_000,
    resolved_at=None,
    summary="Sends of topic T fail.",
    evidence={"failures": 2, "clients": ["c1"], "statuses": {"NO_ROUTE_INFO": 2}},
    remedy="Create the topic.",
    plan=None,
)

# (cluster, change, its row): one of each kind, and of each kind's variants
CASES: list[tuple[str | None, Change, ChangeRow]] = [
    ("C", ALERT, encode_alert(ALERT, 7)),
    ("C", route := RouteChange("T", ("ns1", "b", 1), 5, (8, 4, 6)), encode_route("C", route)),
    ("C", gone := RouteChange("T", ("ns1", "b", 0), 6, None), encode_route("C", gone)),
    ("C", topic := TopicCreated("T", 7), encode_topic("C", topic)),
    (
        "C",
        broker := BrokerState(("ns1", "b", 0), "10.0.0.1:10911", True, False, None, "usable", 8),
        encode_broker("C", broker),
    ),
    ("C", count := Count("events", "send", 3, 9), encode_count("C", count)),
    ("C", late := Count(LATE, "", 1, None), encode_count("C", late)),
    ("C", bad := BadLine("wrong_type", "send.ts must be an int", '{"v":1}'), encode_bad("C", bad)),
    (None, bad, encode_bad(None, bad)),
    ("C", held := LateEvent("2 s older than the newest", '{"v":1}'), encode_late("C", held)),
    ("C", clock := ClusterClock(10, 12, 3), encode_clock("C", clock)),
    ("D", empty := ClusterClock(None, None, 0), encode_clock("D", empty)),
]


@pytest.mark.parametrize(
    ("cluster", "change", "row"), CASES, ids=[type(c).__name__ for _, c, _ in CASES]
)
def test_each_kind_of_change_decodes_to_what_was_encoded(
    cluster: str | None, change: Change, row: ChangeRow
) -> None:
    assert decode(row) == change
    assert row.cluster == cluster
    assert isinstance(row.payload, str) and isinstance(row.key, str)


def test_every_kind_has_its_own_name() -> None:
    kinds = {type(change): row.kind for _, change, row in CASES}

    assert len(set(kinds.values())) == len(kinds) == 8


def test_counter_names_are_distinct() -> None:
    assert len(set(COUNTERS)) == len(COUNTERS)


def test_alert_versions_come_back_in_order_whatever_the_order_of_the_rows() -> None:
    resolved = dataclasses.replace(ALERT, state="resolved", updated_at=3_000, resolved_at=3_000)
    other = dataclasses.replace(ALERT, id="no_route_info-0", topic="U")
    rows = [encode_alert(resolved, 1), encode_clock("C", ClusterClock(1, 1, 0))]
    rows += [encode_alert(ALERT, 0), encode_alert(other, 2)]

    assert alert_versions(rows) == [other, ALERT, resolved]
