from __future__ import annotations

import itertools
from collections import defaultdict

import orjson
import pytest

from emitter.fleet import FleetSpec, estimate_fleet, generate_fleet
from emitter.scenarios import SCENARIOS
from routewatch.codec import encode, to_wire
from routewatch.validation import validate

SMALL = FleetSpec(
    clusters=2,
    brokers=3,
    topics=25,
    namesrvs=2,
    part_size=10,
    producers=6,
    topics_per_producer=3,
    send_rate=500,
    duration=35,
)


def _lines(spec: FleetSpec) -> list[dict]:  # type: ignore[type-arg]
    out: list[bytes] = []
    generate_fleet(spec, out.append)
    return [orjson.loads(line) for line in out]


def test_fleet_events_are_valid_and_in_time_order() -> None:
    events = _lines(SMALL)

    assert all(validate(e) is None for e in events)
    assert [(e["ts"], e["seq"]) for e in events] == sorted((e["ts"], e["seq"]) for e in events)
    assert len({e["event_id"] for e in events}) == len(events)


def test_every_broker_registers_its_whole_table_in_parts_with_every_namesrv_each_30s() -> None:
    events = _lines(SMALL)
    tables: dict[tuple[str, str, int], set[str]] = defaultdict(set)
    for e in events:
        if e["type"] == "heartbeat" and e["ts"] < SMALL.start_ms + 30_000:
            assert e["parts"] == 3
            tables[(e["broker"], e["namesrv"], e["ts"])] |= set(e["topics"])

    assert len(tables) == SMALL.clusters * SMALL.brokers * SMALL.namesrvs
    for (broker, _, _), topics in tables.items():
        cluster = int(broker[7:9])
        assert topics == {SMALL.topic_name(cluster, t) for t in range(SMALL.topics)}


def test_sends_arrive_at_the_configured_rate_over_every_producer() -> None:
    events = _lines(SMALL)
    sends = [e for e in events if e["type"] == "send"]

    assert len(sends) == SMALL.send_rate * SMALL.duration
    assert len({e["client_id"] for e in sends}) == SMALL.producers
    assert {e["status"] for e in sends} == {"SEND_OK"}


def test_every_producer_refreshes_its_topics_and_create_topic_key_every_30s() -> None:
    events = _lines(SMALL)
    refreshes: dict[str, list[int]] = defaultdict(list)
    for e in events:
        if e["type"] == "route_pull" and e["ts"] not in refreshes[e["client_id"]]:
            refreshes[e["client_id"]].append(e["ts"])

    assert len(refreshes) == SMALL.producers
    for times in refreshes.values():
        assert all(b - a == 30_000 for a, b in itertools.pairwise(times))
        assert times[0] < SMALL.start_ms + 30_000
    first_cycle = [
        e for e in events if e["type"] == "route_pull" and e["ts"] < SMALL.start_ms + 30_000
    ]
    assert len(first_cycle) == SMALL.producers * (SMALL.topics_per_producer + 1)
    assert {(e["topic"] == "TBW102", e["result"]) for e in first_cycle} == {
        (False, "SUCCESS"),
        (True, "TOPIC_NOT_EXIST"),
    }


def test_the_scenarios_and_the_fleet_are_written_in_exactly_the_wire_form() -> None:
    """The codec's fast path gives to_wire's bytes for every event of every scenario, and the
    fleet's lines (spliced tables included) are valid events."""
    for scenario in SCENARIOS.values():
        for event in scenario.run(seed=0):
            assert encode(event) == orjson.dumps(to_wire(event)), event
    lines: list[bytes] = []
    generate_fleet(FleetSpec(duration=31), lines.append)
    assert all(validate(orjson.loads(line)) is None for line in lines[:: len(lines) // 500])


@pytest.mark.parametrize(
    "spec",
    [
        FleetSpec(clusters=2, brokers=10, topics=1_000, producers=100, send_rate=500),
        FleetSpec(clusters=3, brokers=4, topics=3_000, producers=50, send_rate=300, duration=45),
        FleetSpec(clusters=4, brokers=3, topics=2_000, namesrvs=1, producers=7, duration=90),
    ],
)
def test_the_size_said_before_writing_is_within_ten_per_cent(spec: FleetSpec) -> None:
    written = [0, 0]

    def count(line: bytes) -> None:
        written[0] += 1
        written[1] += len(line) + 1

    generate_fleet(spec, count)
    size = estimate_fleet(spec)
    assert abs(size.events / written[0] - 1) < 0.1, (size, written)
    assert abs(size.bytes / written[1] - 1) < 0.1, (size, written)
