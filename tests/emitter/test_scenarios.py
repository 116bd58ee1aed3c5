"""The scenario library: valid, ordered, deterministic traces whose end state backs the
expected alerts."""

from __future__ import annotations

from pathlib import Path

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
    "cluster-falls-silent",
    "broker-restarts-with-lost-store",
    "broker-restarts-keeping-its-store",
    "master-slave-queue-skew",
    "at-risk-topic-left-on-no-broker",
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


def _registered(world: World, cluster: str) -> dict[str, dict[tuple[str, int], set[str]]]:
    """NameServer -> (broker, id) of ``cluster`` registered there -> the topics it routes to
    that broker there (a NameServer keeps queue data per broker name, from masters only)."""
    return {
        addr: {
            (name, bid): ns.topics_of(name) if bid == 0 else set()
            for (c, name, bid) in ns.brokers
            if c == cluster
        }
        for addr, ns in world.namesrvs.items()
    }


def _holding(world: World, cluster: str, topic: str) -> set[str]:
    """Masters of ``cluster`` whose registration on some NameServer lists ``topic``."""
    return {
        name
        for view in _registered(world, cluster).values()
        for (name, bid), topics in view.items()
        if bid == 0 and topic in topics
    }


def _live_masters(world: World, cluster: str) -> set[str]:
    return {
        name for view in _registered(world, cluster).values() for (name, bid) in view if bid == 0
    }


def _live_brokers(world: World, cluster: str) -> set[tuple[str, int]]:
    return {key for view in _registered(world, cluster).values() for key in view}


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
    cluster = alert.cluster
    if alert.kind == "PARTIAL_COVERAGE":
        assert alert.topic is not None
        holding = _holding(world, cluster, alert.topic)
        expected = _live_masters(world, cluster)
        assert len(holding) < len(expected)  # (k may have dropped to 0 since it opened)
        assert (alert.severity == "critical") == (len(holding) <= 1)
    elif alert.kind == "AT_RISK":
        assert alert.topic is not None
        holding = _holding(world, cluster, alert.topic)
        templates = [
            {broker for broker, _ in info.queues}
            for p in world.producers
            if p.cluster == cluster
            and (info := p.publish.get(alert.topic)) is not None
            and info.via_default
        ]
        assert templates  # a producer still holds a template route
        assert any(not brokers <= holding for brokers in templates)  # not converged
    elif alert.kind == "QUEUE_SKEW":
        assert alert.topic is not None
        live = _live_brokers(world, cluster)
        counts = {
            (c.read_queue_nums, c.write_queue_nums)
            for key, b in world.brokers.items()
            if key in live and b.cluster == cluster and (c := b.topics.get(alert.topic))
        }
        assert len(counts) > 1 or any(r != w for r, w in counts)
    elif alert.kind == "BROKER_EXPIRED":
        assert (alert.broker, alert.broker_id) not in _live_brokers(world, cluster)
        assert any(
            (b.name, b.broker_id) == (alert.broker, alert.broker_id)
            for b in world.brokers.values()
            if b.cluster == cluster
        )
    elif alert.kind == "NAMESRV_DIVERGENCE":
        views = _registered(world, cluster).values()
        assert alert.broker is not None and alert.broker_id is not None
        key = (alert.broker, alert.broker_id)
        present = [key in view for view in views]
        # registered on some NameServers and not others, or on all, which route it different
        # topics
        assert any(present)
        assert not all(present) or len({frozenset(view[key]) for view in views}) > 1
    elif alert.kind == "TEMPLATE_MISSING":
        assert alert.broker is not None and alert.broker_id is not None
        broker = world.broker(alert.broker, alert.broker_id)
        assert broker.cluster == cluster
        assert broker.auto_create and "TBW102" not in broker.topics


def test_the_emitter_guide_lists_every_scenario() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "emitter.md").read_text()
    assert [name for name in SCENARIOS if f"| `{name}` |" not in guide] == []
