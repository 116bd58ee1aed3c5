"""The scenario library: valid, ordered, deterministic traces whose end state backs the
expected alerts."""

from __future__ import annotations

import orjson
import pytest

from emitter.scenarios import SCENARIOS, ExpectedAlert, Scenario
from emitter.world import World
from routewatch.alerts import ALERT_KINDS, NO_ROUTE_CAUSES
from routewatch.codec import encode
from routewatch.validation import validate

REQUIRED = {
    "one-send-then-silence",
    "burst-of-nine",
    "trickle-slower-than-refresh",
    "auto-create-off-topic-missing",
    "no-namesrv-address",
    "create-topic-key-mismatch",
    "tbw102-deleted-one-broker",
    "tbw102-deleted-all-brokers",
    "restarted-auto-create-off-stale-tbw102",
    "mixed-auto-create",
    "manual-creation-healthy",
    "queue-skew",
    "broker-dies",
    "broker-clean-shutdown",
    "namesrv-registration-lost",
    "broker-joins-late",
    "system-topics-one-broker",
}
BROKER_KINDS = {"TEMPLATE_MISSING", "BROKER_EXPIRED", "NAMESRV_DIVERGENCE"}

scenarios = pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))


def test_the_library_has_every_scenario_the_project_needs() -> None:
    assert set(SCENARIOS) >= REQUIRED
    assert all(s.summary for s in SCENARIOS.values())


@scenarios
def test_every_event_is_a_valid_contract_event_in_time_order(scenario: Scenario) -> None:
    events = scenario.run(seed=3)

    assert events
    assert all(validate(orjson.loads(encode(e))) is None for e in events)
    keys = [(e.ts, e.seq) for e in events]
    assert keys == sorted(keys)
    assert len({e.seq for e in events}) == len(events)
    assert len({e.event_id for e in events}) == len(events)
    assert events[-1].ts <= events[0].ts + scenario.duration_s * 1000


@scenarios
def test_the_same_seed_gives_the_same_trace(scenario: Scenario) -> None:
    first = [encode(e) for e in scenario.run(seed=7)]
    again = [encode(e) for e in scenario.run(seed=7)]

    assert first == again


@scenarios
def test_expected_alerts_are_well_formed(scenario: Scenario) -> None:
    for alert in scenario.expected:
        assert alert.kind in ALERT_KINDS
        if alert.kind in BROKER_KINDS:
            assert (alert.broker, alert.broker_id, alert.topic) != (None, None, alert.topic)
            assert alert.topic is None
        else:
            assert alert.topic is not None and alert.broker is None
        assert (alert.cause in NO_ROUTE_CAUSES) == (alert.kind == "NO_ROUTE_INFO")


def _final_world(scenario: Scenario, seed: int) -> World:
    world = scenario.world(seed)
    world.run(scenario.duration_s)
    return world


def _route(world: World, topic: str) -> dict[str, set[str]]:
    """NameServer -> brokers holding ``topic`` there, from the model's own NameServers."""
    out = {}
    for addr, ns in world.namesrvs.items():
        route = ns.route(topic)
        out[addr] = {q.broker for q in route or []}
    return out


def _live_masters(world: World) -> set[str]:
    return {name for ns in world.namesrvs.values() for (_, name, bid) in ns.brokers if bid == 0}


@pytest.mark.parametrize("seed", range(5))
@scenarios
def test_the_model_ends_in_the_state_each_expected_alert_describes(
    scenario: Scenario, seed: int
) -> None:
    world = _final_world(scenario, seed)
    for alert in scenario.expected:
        if alert.state != "open":
            continue
        _check_open(world, alert)


def _check_open(world: World, alert: ExpectedAlert) -> None:
    if alert.kind == "PARTIAL_COVERAGE":
        assert alert.topic is not None
        holding = set().union(*_route(world, alert.topic).values())
        expected = _live_masters(world)
        assert len(holding) < len(expected)  # (k may have dropped to 0 since it opened)
        assert (alert.severity == "critical") == (len(holding) <= 1)
    elif alert.kind == "QUEUE_SKEW":
        assert alert.topic is not None
        counts = {
            (c.read_queue_nums, c.write_queue_nums)
            for b in world.masters()
            if (c := b.topics.get(alert.topic))
        }
        assert len(counts) > 1 or any(r != w for r, w in counts)
    elif alert.kind == "BROKER_EXPIRED":
        assert all(
            alert.broker not in {n for (_, n, _) in ns.brokers} for ns in world.namesrvs.values()
        )
    elif alert.kind == "NAMESRV_DIVERGENCE":
        present = [
            alert.broker in {n for (_, n, _) in ns.brokers} for ns in world.namesrvs.values()
        ]
        assert any(present) and not all(present)
    elif alert.kind == "TEMPLATE_MISSING":
        assert alert.broker is not None
        broker = world.broker(alert.broker)
        assert broker.auto_create and "TBW102" not in broker.topics
