"""Every scenario of the emitter's library ends with exactly its documented alerts."""

from __future__ import annotations

import random

import orjson
import pytest

from emitter.scenarios import SCENARIOS
from emitter.versions import ROCKETMQ_4, ROCKETMQ_5, Release
from streaming.engine import run_cluster, run_stream
from streaming.engine.runner import ClusterRun, StreamRun
from tests.support.alert_wording import wording_problems
from tests.support.traces import Arrival, arrivals, expected, shape

START = 1_767_225_600_000


@pytest.mark.parametrize("version", [ROCKETMQ_4, ROCKETMQ_5], ids=["rocketmq4", "rocketmq5"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_ends_with_its_expected_alerts(name: str, seed: int, version: Release) -> None:
    # under either release line's behaviour (emitter/versions.py): the same alerts
    run = run_stream(arrivals(name, seed, version), lateness_ms=2000)

    assert sorted(shape(a) for a in run.final_alerts()) == expected(name, version)


def _identity(run: ClusterRun | StreamRun) -> list[tuple[object, ...]]:
    return sorted(
        (a.id, a.kind, a.opened_at, a.resolved_at, a.state, a.severity, a.cause)
        for a in run.final_alerts()
    )


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_batch_size_and_lateness_bound_do_not_change_the_alerts(name: str) -> None:
    trace = arrivals(name, seed=5)
    reference = _identity(run_stream(trace, lateness_ms=0))

    for batch_size in (1, 7, 100):
        for lateness_ms in (0, 2000):
            run = run_stream(trace, lateness_ms=lateness_ms, batch_size=batch_size)
            assert _identity(run) == reference


def _without_inference(trace: list[Arrival]) -> list[Arrival]:
    """``trace`` as written before heartbeats carried the broker side's inference."""
    out = []
    for event_id, ts, seq, raw in trace:
        event = orjson.loads(raw)
        event.pop("inferred_auto_created", None)
        out.append((event_id, ts, seq, orjson.dumps(event).decode()))
    return out


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_inference_only_adds_alerts_that_say_they_stand_on_it(name: str) -> None:
    # a trace without the field (as written before it existed) gives what it always gave:
    # everything else is the same, with or without it
    trace = arrivals(name, seed=3)
    with_it = run_stream(trace, lateness_ms=2000).final_alerts()
    without = run_stream(_without_inference(trace), lateness_ms=2000).final_alerts()

    inferred = [
        a for a in with_it if str(a.evidence.get("auto_created_evidence", "")).startswith("infer")
    ]
    assert sorted(shape(a) for a in with_it if a not in inferred) == sorted(
        shape(a) for a in without
    )
    assert all(a.kind == "PARTIAL_COVERAGE" for a in inferred)


@pytest.mark.parametrize(
    ("name", "kind", "opened_s", "resolved_s"),
    [
        ("one-send-then-silence", "AT_RISK", 10.0, 30.01),  # send at 5 s, + 5 s; refresh
        ("one-send-then-silence", "PARTIAL_COVERAGE", 30.01, None),  # settled at the refresh
        ("broker-dies", "BROKER_EXPIRED", 160.0, None),  # last heartbeat 40 s + 120 s
        ("namesrv-registration-lost", "NAMESRV_DIVERGENCE", 220.0, None),  # 40 + 120 + 60
        ("restarted-auto-create-off-stale-tbw102", "AT_RISK", 10.0, 30.01),
        ("topic-created-after-no-route", "NO_ROUTE_INFO", 5.0, 55.0),  # first success at 55 s
        ("tbw102-deleted-one-broker", "TEMPLATE_MISSING", 10.0, None),  # first full reg without
        ("no-live-broker", "BROKER_EXPIRED", 130.0, None),
    ],
)
def test_alerts_are_stamped_with_the_instant_their_rule_was_met(
    name: str, kind: str, opened_s: float, resolved_s: float | None
) -> None:
    run = run_cluster("DefaultCluster", arrivals(name, seed=1), lateness_ms=2000)

    stamps = {(a.opened_at, a.resolved_at) for a in run.final_alerts() if a.kind == kind}
    resolved = None if resolved_s is None else START + round(resolved_s * 1000)
    assert stamps == {(START + round(opened_s * 1000), resolved)}


def test_send_rejected_resolves_120s_after_the_last_refusal() -> None:
    trace = arrivals("restarted-auto-create-off-stale-tbw102", seed=1)
    last_refusal = max(
        ts for _, ts, _, raw in trace if '"TOPIC_NOT_EXIST"' in raw and '"send"' in raw
    )

    run = run_cluster("DefaultCluster", trace, lateness_ms=2000)

    (alert,) = [a for a in run.final_alerts() if a.kind == "SEND_REJECTED"]
    assert alert.resolved_at == last_refusal + 120_000


def test_shuffling_within_the_bound_and_duplicating_changes_nothing_but_the_counts() -> None:
    trace = arrivals("restarted-auto-create-off-stale-tbw102", seed=2)
    reference = _identity(run_stream(trace, lateness_ms=2000))
    rng = random.Random(9)
    # Move events by up to 0.9 s each (at most 1.8 s apart), and send each one twice.
    noisy = sorted(trace, key=lambda a: a[1] + rng.uniform(-900, 900))
    doubled = [a for arrival in noisy for a in (arrival, arrival)]

    run = run_stream(doubled, lateness_ms=2000, batch_size=13)

    assert _identity(run) == reference
    assert (run.duplicates, run.late) == (len(trace), 0)


def test_events_beyond_the_bound_are_late_and_not_applied() -> None:
    trace = arrivals("broker-dies", seed=0)
    # The last heartbeat of broker-b (at 40 s) arrives after everything else: too late.
    last_b = max(i for i, a in enumerate(trace) if '"broker-b"' in a[3] and '"heartbeat"' in a[3])
    moved = [*trace[:last_b], *trace[last_b + 1 :], trace[last_b]]

    run = run_stream(moved, lateness_ms=2000)

    assert run.late == 1
    (expired,) = [a for a in run.final_alerts() if a.kind == "BROKER_EXPIRED"]
    assert expired.opened_at == START + 130_000  # from the heartbeat at 10 s, not the late one


def test_broker_expired_lists_each_topic_left_without_route_once() -> None:
    run = run_cluster("DefaultCluster", arrivals("demo-mixed", seed=0), lateness_ms=2000)

    (expired,) = [a for a in run.final_alerts() if a.kind == "BROKER_EXPIRED"]
    orphaned = expired.evidence["topics_without_route"]
    assert orphaned["count"] == len(set(orphaned["items"])) == len(orphaned["items"])
    assert "PaymentsTopic" not in orphaned["items"]  # still on broker-a and broker-b
    assert expired.evidence["namesrvs"] == ["10.0.0.100:9876", "10.0.0.101:9876"]


def test_events_with_the_same_ts_and_no_seq_apply_in_arrival_order() -> None:
    import orjson

    def hb(event_id: str, topics: dict[str, int], full: bool) -> tuple[str, int, None, str]:
        body = {
            "v": 1,
            "type": "heartbeat",
            "ts": 1_000,
            "cluster": "C",
            "event_id": event_id,
            "broker": "a",
            "broker_addr": "x:1",
            "broker_id": 0,
            "namesrv": "n",
            "auto_create_topic_enable": False,
            "default_topic_queue_nums": 8,
            "full": full,
            "topics": {
                t: {"read_queue_nums": q, "write_queue_nums": q, "perm": 6}
                for t, q in topics.items()
            },
        }
        return (event_id, 1_000, None, orjson.dumps(body).decode())

    # "z" sorts after "a" by id, but arrives first: the full table, then the immediate update.
    arrivals = [hb("z-full", {"T": 8}, True), hb("a-immediate", {"T": 4}, False)]

    run = run_cluster("C", arrivals, lateness_ms=2000)

    assert [c.config for c in run.route_changes] == [(8, 8, 6), (4, 4, 6)]


def _brokers(trace: list[Arrival]) -> frozenset[str]:
    return frozenset(
        e["broker"]
        for e in (orjson.loads(raw) for _, _, _, raw in trace)
        if e["type"] == "heartbeat"
    )


@pytest.mark.parametrize("version", [ROCKETMQ_4, ROCKETMQ_5], ids=["rocketmq4", "rocketmq5"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_alert_says_only_what_its_evidence_holds(name: str, version: Release) -> None:
    """Every version of every alert (docs/alerts.md, "Reading an alert"): a resolved one in the
    past tense, with its evidence at the resolution and what it opened with apart; no producer
    its evidence does not name; no system topic in a count or a list of topics."""
    trace = arrivals(name, 3, version)
    run = run_stream(trace, lateness_ms=2000)
    brokers = _brokers(trace)

    problems = [
        p
        for cluster in run.clusters.values()
        for alert in cluster.alert_changes
        for p in wording_problems(alert.to_dict(), brokers)
    ]

    assert problems == []
