"""The alert catalogue's rules (docs/alerts.md), one situation at a time: a trace of events
written by hand with explicit event times (:mod:`tests.streaming.engine.events`), run through
the stream's step on the in-memory backend, and the exact alerts expected — as (kind, key,
opened and resolved instants in seconds from the start), or in full, every field of every alert
(kind by kind, at the end), over one batch and one event per batch."""

from __future__ import annotations

import re
from typing import Any

import pytest

from routewatch.alerts import Alert, AlertKind, NoRouteCause, Severity, alert_id
from routewatch.changes import decode
from streaming.engine import run_stream
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.runner import StreamRun
from streaming.engine.step import Step
from tests.streaming.engine.events import NS1, NS2, T0, Trace, ms


def _s(ms: int | None) -> float | None:
    return None if ms is None else (ms - T0) / 1000


def alerts(run: StreamRun, kind: str | None = None) -> list[tuple[Any, ...]]:
    """The run's final alerts as (kind, cluster, topic or broker[/id], opened s, resolved s)."""
    out = []
    for a in run.final_alerts():
        if kind is not None and a.kind != kind:
            continue
        what = a.topic if a.topic is not None else f"{a.broker}/{a.broker_id}"
        out.append((a.kind, a.cluster, what, _s(a.opened_at), _s(a.resolved_at)))
    return sorted(out, key=lambda t: (t[3], t[0], t[2]))


def run(trace: Trace, **kw: Any) -> StreamRun:
    return run_stream(trace.arrivals(), lateness_ms=kw.pop("lateness_ms", 0), **kw)


@pytest.fixture(params=[None, 1], ids=["one-batch", "event-per-batch"])
def batch_size(request: pytest.FixtureRequest) -> int | None:
    """Alerts must not depend on batch boundaries: the whole input in one batch, and one event
    per batch."""
    size: int | None = request.param
    return size


def expect(
    kind: AlertKind,
    *,
    topic: str | None = None,
    broker: str | None = None,
    broker_id: int | None = None,
    severity: Severity,
    opened: float,
    updated: float | None = None,
    resolved: float | None = None,
    cause: NoRouteCause | None = None,
    summary: str,
    evidence: dict[str, Any],
    remedy: str,
    cluster: str = "C",
) -> dict[str, Any]:
    """An alert in full, as ``Alert.to_dict`` gives it; instants in seconds from ``T0``
    (``updated`` is the resolution instant, or the opening one, unless given)."""
    if updated is None:
        updated = opened if resolved is None else resolved
    return {
        "id": alert_id((kind, cluster, topic, broker, broker_id), ms(opened)),
        "kind": kind,
        "severity": severity,
        "state": "open" if resolved is None else "resolved",
        "cluster": cluster,
        "topic": topic,
        "broker": broker,
        "broker_id": broker_id,
        "cause": cause,
        "opened_at": ms(opened),
        "updated_at": ms(updated),
        "resolved_at": None if resolved is None else ms(resolved),
        "summary": summary,
        "evidence": evidence,
        "remedy": remedy,
    }


def final(run_: StreamRun, *kinds: str) -> list[dict[str, Any]]:
    """The run's final alerts (of ``kinds``, or all) in full, in the order they were opened."""
    return [a.to_dict() for a in run_.final_alerts() if not kinds or a.kind in kinds]


def versions(run_: StreamRun, kind: str) -> list[tuple[str, float | None, str, str | None]]:
    """Every change made to the run's alerts of ``kind``: (state, instant s, severity, cause)."""
    return [
        (a.state, _s(a.updated_at), a.severity, a.cause)
        for cluster in run_.clusters.values()
        for a in cluster.alert_changes
        if a.kind == kind
    ]


def create_remedy(topic: str, q: int, namesrvs: str = NS1) -> str:
    """The remedy of the coverage alerts: create the topic on every master (a ``;`` between
    NameServers quoted, so that it runs when pasted)."""
    n = namesrvs if ";" not in namesrvs else f"'{namesrvs}'"
    return (
        f"`mqadmin updateTopic -n {n} -c C -t {topic} -r {q} -w {q}`, and set "
        "autoCreateTopicEnable=false on the brokers in production."
    )


TEMPLATE_REMEDY = (
    "Restart the broker with autoCreateTopicEnable=true so that it recreates TBW102, or turn "
    "auto-creation off on purpose."
)
EXPIRED_REMEDY = "Check the broker process and its namesrvAddr list."
DIVERGENCE_REMEDY = (
    "Check the broker process and its namesrvAddr list: it no longer reaches every NameServer."
)


# -- one clock for the whole stream --------------------------------------------------------------


def _one_cluster_falls_silent() -> Trace:
    t = Trace()
    t.hb(0, "b-1", cluster="Silent")
    t.hb(0, "b-2", cluster="Silent")
    t.every(0, 200, 30, "a-1", cluster="Live")
    return t


@pytest.mark.parametrize("batch_size", [None, 1, 3])
def test_a_silent_cluster_expires_on_the_streams_clock(batch_size: int | None) -> None:
    run_ = run(_one_cluster_falls_silent(), batch_size=batch_size, lateness_ms=2000)

    assert alerts(run_) == [
        ("BROKER_EXPIRED", "Silent", "b-1/0", 120.0, None),
        ("BROKER_EXPIRED", "Silent", "b-2/0", 120.0, None),
    ]


def test_a_stream_that_stops_invents_no_expiry() -> None:
    t = Trace()
    t.hb(0, "b-1", cluster="Silent")
    t.hb(100, "a-1", cluster="Live")

    assert alerts(run(t)) == []


def test_a_cluster_lagging_the_stream_by_more_than_the_bound_is_late() -> None:
    t = Trace()
    t.hb(10, "a-1", cluster="Live")
    t.hb(7, "b-1", cluster="Lagging")  # 3 s behind the newest event received, bound 2 s

    run_ = run_stream(t.arrivals(as_written=True), lateness_ms=2000)

    assert run_.late == 1


# -- thresholds that fall on an event's instant ------------------------------------------------


def _template_route_on_one_of_two() -> Trace:
    """Brokers a and b with TBW102; a producer's template route over both at 0.5 s; its first
    send auto-creates T on a at 1 s: the AT_RISK condition holds from 1 s."""
    t = Trace()
    t.hb(0, "a")
    t.hb(0, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    return t


def test_at_risk_due_at_the_last_events_instant_opens() -> None:
    t = _template_route_on_one_of_two()
    t.hb(6, "b")  # the last event, at the instant the condition has held 5 s

    assert alerts(run(t)) == [("AT_RISK", "C", "T", 6.0, None)]


def test_divergence_due_at_the_last_events_instant_opens() -> None:
    t = Trace()
    t.every(0, 60, 30, "a", ns=NS1)
    t.every(0, 60, 30, "a", ns=NS2)
    t.every(0, 60, 30, "b", ns=NS1)  # b reaches only NS1, from 0 s; the last event is at 60 s

    assert alerts(run(t)) == [("NAMESRV_DIVERGENCE", "C", "b/0", 60.0, None)]


def test_a_refusal_exactly_120_s_after_the_last_one_opens_a_new_alert() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(10, "T", "TOPIC_NOT_EXIST", "a")
    t.send(130, "T", "TOPIC_NOT_EXIST", "a")

    assert alerts(run(t), "SEND_REJECTED") == [
        ("SEND_REJECTED", "C", "T", 10.0, 130.0),
        ("SEND_REJECTED", "C", "T", 130.0, None),
    ]


def test_a_broker_is_live_through_its_expiry_instant() -> None:
    t = Trace()
    t.hb(0, "a")
    t.hb(120, "a")  # stamped with the expiry instant: a never expired

    assert alerts(run(t)) == []


def test_a_registration_with_its_own_timeout_expires_after_it(batch_size: int | None) -> None:
    """RocketMQ 5's slave-acting-master brokers register with a 10 s timeout (the heartbeat's
    heartbeat_timeout_ms); renewed within it, a broker stays live."""
    t = Trace()
    t.every(0, 40, 5, "a", timeout_s=10)  # renewed every 5 s, then silent from 40 s
    t.hb(0, "b", timeout_s=10)
    t.hb(10, "b", timeout_s=10)  # stamped with its expiry instant: still live
    t.hb(20.001, "b", timeout_s=10)  # 1 ms late: it expired at 20 s
    t.hb(0, "c")
    t.hb(100, "c", timeout_s=10)  # the deadline moves from 120 s to 110 s
    t.hb(130, "d")  # the clock

    assert alerts(run(t, batch_size=batch_size)) == [
        ("BROKER_EXPIRED", "C", "b/0", 20.0, 20.001),
        ("BROKER_EXPIRED", "C", "b/0", 30.001, None),
        ("BROKER_EXPIRED", "C", "a/0", 50.0, None),
        ("BROKER_EXPIRED", "C", "c/0", 110.0, None),
    ]


def test_an_expiry_at_the_last_events_instant_is_crossed_at_the_end_of_the_input(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.hb(0, "b")
    t.hb(120, "a")  # the last event, at b's expiry instant: the input ends, so b expires

    assert alerts(run(t, batch_size=batch_size)) == [("BROKER_EXPIRED", "C", "b/0", 120.0, None)]


def test_liveness_goes_first_when_thresholds_coincide() -> None:
    t = Trace()
    t.every(1, 241, 30, "a", ns=NS1)
    t.every(1, 241, 30, "a", ns=NS2)
    t.hb(0, "b", ns=NS1)
    t.hb(0, "b", ns=NS2)
    t.hb(60, "b", ns=NS1)  # b loses NS2 after 0 s: off NS2 from 120 s, diverged until 180 s,
    # when it expires on NS1 too: the divergence ends at the instant it would open

    assert alerts(run(t)) == [("BROKER_EXPIRED", "C", "b/0", 180.0, None)]


# -- thresholds scheduled while a liveness ends: they end after their instant's events too -------
#
# A broker's expiry at E is crossed after the events stamped with E; every threshold scheduled
# while it is crossed inherits that phase (streaming/engine/cluster.py, AFTER_EVENTS), so the
# wait it starts ends after the events of its own instant: NAMESRV_DIVERGENCE's 60 s, AT_RISK's
# 5 s and the 7 days after which an idle auto-created topic is forgotten.


def test_a_divergence_begun_by_an_expiry_waits_for_the_events_of_its_60th_second(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 240, 30, "a", ns=NS1)
    t.every(0, 240, 30, "a", ns=NS2)
    t.every(0, 240, 30, "b", ns=NS1)
    t.hb(0, "b", ns=NS2)  # b's last registration on NS2 for a while: off NS2 after 120 s
    t.every(180, 240, 30, "b", ns=NS2)  # back on NS2 exactly 60 s later, with its round

    assert alerts(run(t, batch_size=batch_size)) == []


def test_an_at_risk_condition_begun_by_an_expiry_waits_for_the_events_of_its_5th_second(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.every(30, 150, 30, "a", topics={"T": 4})
    t.hb(0, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.send(1, "T", broker="b", auto_created=True)
    t.hb(1, "b", {"T": 4}, full=False)  # b's last registration: b expires at 121 s, and T is on
    # one of the producer's two template brokers from then on
    t.pull(126, "T", ["a"])  # the producer's refresh, exactly 5 s later, ends its template route

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "AT_RISK") == []
    assert alerts(run_, "BROKER_EXPIRED") == [("BROKER_EXPIRED", "C", "b/0", 121.0, None)]


def test_an_idle_time_begun_by_an_expiry_waits_for_the_events_of_its_7th_day(
    batch_size: int | None,
) -> None:
    t = _auto_created_on_both()  # idle from the brokers' expiry at 180 s
    at = 180 + 7 * DAY  # back exactly 7 days later: T is still known as auto-created
    _made_by_hand_on_a_only(t, at)

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "PARTIAL_COVERAGE") == [("PARTIAL_COVERAGE", "C", "T", at, None)]


# -- AT_RISK's 5 s are of its condition, not of the alert ------------------------------------------


def test_at_risk_opens_when_partial_coverage_resolves_under_a_condition_held_all_along(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.every(30, 180, 30, "a", topics={"T": 4})
    t.every(30, 180, 30, "b", topics={"T": 4})  # b holds T from 30 s
    t.hb(0, "b")
    t.hb(0, "c")  # c registers once: it expires at 120 s
    t.pull(0.5, "T", ["a", "b", "c"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    # The producer's template route covers a, b and c, of which one or two hold T from 1 s on:
    # AT_RISK from 6 s until PARTIAL_COVERAGE settles at 60.5 s (2 of 3 masters); when c expires
    # at 120 s, T is on every master left, PARTIAL_COVERAGE resolves, and AT_RISK, whose
    # condition has held since 1 s, opens at once.

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "AT_RISK") + alerts(run_, "PARTIAL_COVERAGE") == [
        ("AT_RISK", "C", "T", 6.0, 60.5),
        ("AT_RISK", "C", "T", 120.0, None),
        ("PARTIAL_COVERAGE", "C", "T", 60.5, 120.0),
    ]
    (reopened,) = [a for a in run_.final_alerts() if a.kind == "AT_RISK" and a.state == "open"]
    assert reopened.evidence["condition_since"] == ms(1)


# -- time runs to the release frontier -------------------------------------------------------------


def _stored_by(trace: Trace, kind: str, lateness_ms: int) -> float | None:
    """One event per batch: the ``ts`` (s) of the event whose batch first stored an alert of
    ``kind``, or None."""
    step = Step(lateness_ms, 300_000)
    entries = MemoryEntries()
    for event_id, ts, seq, raw in trace.arrivals():
        rows = step(entries, [(dedupe_id("C", event_id), ts, seq, raw)])
        if any(isinstance(c, Alert) and c.kind == kind for c in map(decode, rows)):
            return _s(ts)
    return None


def test_an_expiry_is_stored_once_the_input_is_the_bound_past_it() -> None:
    """Events 30 s apart, bound 2 s: b's expiry at 125 s is crossed in the batch of the event at
    150 s, which closes every instant before 148 s — not when the event at 150 s is released, by
    the event at 180 s; its instant is the same either way."""
    t = Trace()
    t.hb(5, "b")
    t.every(0, 300, 30, "a")

    assert _stored_by(t, "BROKER_EXPIRED", lateness_ms=2000) == 150.0
    assert alerts(run(t, batch_size=1, lateness_ms=2000)) == [
        ("BROKER_EXPIRED", "C", "b/0", 125.0, None)
    ]


def test_a_threshold_at_the_frontier_waits_for_the_events_that_can_still_come() -> None:
    """Bound 2 s: the event at 122 s closes the instants before 120 s only; b's expiry at
    120 s waits, as an event stamped 120 s could still be accepted and would keep b live."""
    t = Trace()
    t.hb(0, "b")
    t.hb(0, "a")
    t.hb(122, "a")
    t.hb(150, "a")

    assert _stored_by(t, "BROKER_EXPIRED", lateness_ms=2000) == 150.0


# -- queue skew per broker ------------------------------------------------------------------------


def test_a_master_and_its_slave_with_different_counts_are_skewed(batch_size: int | None) -> None:
    t = Trace()
    t.hb(0, "a", {"T": 8})
    t.hb(0, "a", {"T": 4}, broker_id=1)

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_) == [("QUEUE_SKEW", "C", "T", 0.0, None)]
    assert final(run_) == [
        expect(
            "QUEUE_SKEW",
            topic="T",
            severity="info",
            opened=0,
            summary="Topic T has uneven queues: write queues [4, 8] across brokers.",
            evidence={"brokers": {"a": {"read": 8, "write": 8}, "a/1": {"read": 4, "write": 4}}},
            remedy=f"`mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",
        )
    ]


def test_a_stale_view_on_one_namesrv_hides_no_skew() -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.hb(0, "a", {"T": 4}, ns=ns)
        t.hb(0, "b", {"T": 4}, ns=ns)
    t.hb(30, "a", {"T": 8}, ns=NS1)  # a's registration with 8 queues reaches NS1 only
    t.hb(30, "b", {"T": 4}, ns=NS1)
    t.hb(30, "b", {"T": 4}, ns=NS2)

    skew = alerts(run(t), "QUEUE_SKEW")

    assert skew == [("QUEUE_SKEW", "C", "T", 30.0, None)]


# -- AT_RISK when the topic is left on no broker --------------------------------------------------


def _at_risk_on_no_broker(*, resolved: float | None = None) -> dict[str, Any]:
    """The AT_RISK of ``_template_route_on_one_of_two`` once a, the one broker holding T, left at
    10 s: still open, and its summary says T is on none of the template brokers."""
    return expect(
        "AT_RISK",
        topic="T",
        severity="warning",
        opened=6,
        updated=10 if resolved is None else resolved,
        resolved=resolved,
        summary="Topic T is on none of the 2 brokers its producers' template route covers any "
        "more; those producers keep that route until a route refresh succeeds (next by "
        "2026-01-01T00:00:30.500Z).",
        evidence={
            "producers": [
                {
                    "client_id": "p1",
                    "template_brokers": ["a", "b"],
                    "brokers_with_topic": [],
                    "template_route_since": ms(0.5),
                    "next_refresh_by": ms(30.5),
                }
            ],
            "brokers_with_topic": [],
            "condition_since": ms(1),
        },
        remedy=create_remedy("T", 4),
    )


def test_at_risk_stays_open_when_the_topic_is_left_on_no_broker(batch_size: int | None) -> None:
    t = _template_route_on_one_of_two()
    t.hb(10, "a", ns=NS1, shutdown=True)  # the one broker holding T leaves: k falls to 0
    t.hb(20, "b")

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_) == [("AT_RISK", "C", "T", 6.0, None)]
    assert final(run_) == [_at_risk_on_no_broker()]


def test_at_risk_resolves_when_no_producer_holds_a_template_route(batch_size: int | None) -> None:
    t = _template_route_on_one_of_two()
    t.hb(10, "a", ns=NS1, shutdown=True)
    t.pull(20, "T", ["b"])  # a successful non-default pull replaces the template route

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "AT_RISK") == [("AT_RISK", "C", "T", 6.0, 20.0)]
    assert final(run_) == [_at_risk_on_no_broker(resolved=20)]


# -- the NameServers of a cluster after a clean shutdown ------------------------------------------


def test_a_namesrv_stays_the_clusters_for_120_s_after_an_unregistration() -> None:
    t = Trace()
    t.hb(0, "a", ns=NS1)
    t.hb(0, "a", ns=NS2)
    t.every(0, 150, 30, "b", ns=NS1)  # b never reaches NS2
    t.hb(10, "a", ns=NS1, shutdown=True)
    t.hb(10, "a", ns=NS2, shutdown=True)  # NS2 stays the cluster's until 0 + 120 s

    assert alerts(run(t)) == [("NAMESRV_DIVERGENCE", "C", "b/0", 60.0, 120.0)]


# -- a registration is applied before it is judged ------------------------------------------------


def test_a_joining_broker_that_holds_the_topic_raises_no_coverage_alert() -> None:
    t = Trace()
    t.hb(0, "a")
    t.pull(0.5, "T", ["a"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.pull(30, "T", ["a"])  # settled: on 1 of 1 expected brokers
    t.hb(40, "b", {"T": 4})  # b's first registration already holds T
    t.hb(70, "a", {"T": 4})
    t.hb(70, "b", {"T": 4})

    assert alerts(run(t)) == []


# -- a shutdown empties the table -----------------------------------------------------------------


def test_a_shutdown_empties_the_brokers_table() -> None:
    t = Trace()
    t.every(0, 60, 30, "a", topics={"T": 8})
    t.hb(0, "b", {"T": 4})  # skewed with a
    t.hb(10, "b", shutdown=True)
    t.hb(20, "b", {"U": 8}, full=False)  # back: an immediate registration names U only

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T", 0.0, 10.0)]


# -- same-millisecond order -----------------------------------------------------------------------


def test_a_failure_after_the_resolving_success_in_the_same_millisecond_reopens() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(1, "T", "NO_ROUTE_INFO", seq=1)
    t.send(5, "T", "SEND_OK", "a", seq=2)
    t.send(5, "T", "NO_ROUTE_INFO", seq=3)

    assert alerts(run(t)) == [
        ("NO_ROUTE_INFO", "C", "T", 1.0, 5.0),
        ("NO_ROUTE_INFO", "C", "T", 5.0, None),
    ]


def test_a_failure_in_the_millisecond_of_the_success_without_seq_does_not_reopen() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(1, "T", "NO_ROUTE_INFO")
    t.send(5, "T", "SEND_OK", "a")
    t.send(5, "T", "NO_ROUTE_INFO")  # not later than the success in (ts, seq) order

    assert alerts(run(t)) == [("NO_ROUTE_INFO", "C", "T", 1.0, 5.0)]


def test_a_failure_at_the_instant_of_a_quiet_resolution_reopens() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(1, "T", "NO_ROUTE_INFO")
    t.send(121, "T", "NO_ROUTE_INFO")  # 120 s of quiet end first, at 121 s

    assert alerts(run(t), "NO_ROUTE_INFO") == [
        ("NO_ROUTE_INFO", "C", "T", 1.0, 121.0),
        ("NO_ROUTE_INFO", "C", "T", 121.0, None),
    ]


# -- gRPC clients' misses, through a proxy ---------------------------------------------------------


def test_a_proxys_route_miss_is_no_route_info_of_a_topic_nobody_created() -> None:
    t = Trace()
    t.every(0, 240, 30, "a")  # auto-creation on, TBW102 reported: gRPC clients do not use it
    t.proxy_miss(5, "T")
    t.proxy_miss(27, "T", thread="GrpcRouteThreadPool-1")  # one line per cache refresh (20 s)
    # nothing after 27 s: the proxy no longer finds it missing (made, or nobody asks)
    proxy = "proxy-1:/logs/broker_default.log"

    assert final(run(t), "NO_ROUTE_INFO") == [
        expect(
            "NO_ROUTE_INFO",
            topic="T",
            severity="critical",
            opened=5,
            resolved=147,
            cause="GRPC_NOT_CREATED",
            summary=f"Sends of topic T fail through proxy {proxy} with TOPIC_NOT_FOUND "
            "(cause: GRPC_NOT_CREATED).",
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(27),
                "failures": 2,
                "statuses": {"TOPIC_NOT_FOUND": 2},
                "clients": [proxy],
                "create_topic_key": None,
                "resolution": "quiet for 120 s",
            },
            remedy="Create the topic (gRPC clients never auto-create one): "
            f"`mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",
        )
    ]


def test_a_proxys_route_miss_with_no_live_broker_says_so() -> None:
    t = Trace()
    t.hb(0, "a")
    t.proxy_miss(130, "T")  # a expired at 120 s

    assert _cause(run(t)) == "NO_LIVE_BROKER"


# -- split registrations --------------------------------------------------------------------------


def _cause(run_: StreamRun) -> str | None:
    (alert,) = [a for a in run_.final_alerts() if a.kind == "NO_ROUTE_INFO"]
    return alert.cause


def test_causes_come_from_the_latest_complete_registration() -> None:
    t = Trace()
    t.hb(0, "a", auto=False, tbw=False, dv="v1")
    # part 0 of 2 of a new table says auto-creation is on; part 1 never arrives
    t.hb(10, "a", {"X": 4}, auto=True, tbw=False, dv="v2", part=0, parts=2)
    t.send(15, "T", "NO_ROUTE_INFO")

    assert _cause(run(t)) == "AUTO_CREATE_DISABLED"


def test_a_split_registration_completes_around_an_immediate_one() -> None:
    t = Trace()
    t.hb(0, "a", {"T1": 4}, dv="v1", part=0, parts=2)
    t.hb(0, "a", {"T2": 4}, dv="v1", part=1, parts=2)
    t.hb(0, "b", {"T3": 4})
    t.hb(30, "a", {"T1": 4}, dv="v1", part=0, parts=2)  # the same table sent again ...
    t.hb(30.5, "a", {"T3": 8}, full=False)  # ... an immediate registration between its parts
    t.hb(31, "a", {"T2": 4}, dv="v1", part=1, parts=2)  # completes: the table is v1's again

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T3", 30.5, 31.0)]


def test_a_split_registration_of_an_unchanged_table_keeps_it() -> None:
    t = Trace()
    t.hb(0, "a", {"T1": 4}, dv="v1", part=0, parts=2)
    t.hb(0, "a", {"T2": 8}, dv="v1", part=1, parts=2)
    t.hb(0, "b", {"T2": 4})
    t.hb(30, "a", {"T1": 4}, dv="v1", part=0, parts=2)
    t.hb(30, "a", {"T2": 8}, dv="v1", part=1, parts=2)
    t.hb(30, "b", {"T2": 4})

    run_ = run(t)

    assert alerts(run_) == [("QUEUE_SKEW", "C", "T2", 0.0, None)]
    assert [(c.topic, c.at - T0) for c in run_.cluster("C").route_changes if c.reg[1] == "a"] == [
        ("TBW102", 0),
        ("T1", 0),
        ("T2", 0),
    ]


def _summary_counts(summary: str) -> str:
    """The coverage a PARTIAL_COVERAGE summary states, as ``"k/n"``."""
    if "the only live broker does not hold it" in summary:
        return "0/1"
    none = re.search(r"none of the (\d+) live brokers holds it", summary)
    if none:
        return f"0/{none[1]}"
    some = re.search(r"is on (\d+) of (\d+) brokers", summary)
    assert some, summary
    return f"{some[1]}/{some[2]}"


def test_partial_coverage_on_no_broker_left_says_so() -> None:
    t = Trace()
    t.every(0, 150, 30, "a")
    t.every(0, 30, 30, "b")  # b dies after 30 s
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="b", auto_created=True)
    t.hb(1, "b", {"T": 4}, full=False)
    t.pull(30.5, "T", ["b"])  # settled on b alone: 1 of 2
    t.hb(30, "b", {"T": 4})

    run_ = run(t)

    (coverage,) = [a for a in run_.final_alerts() if a.kind == "PARTIAL_COVERAGE"]
    assert (coverage.state, coverage.severity) == ("open", "critical")
    assert coverage.evidence["coverage"] == "0/1"  # b expired at 150 s: no broker holds T
    assert coverage.summary == (
        "Auto-created topic T has no route left: the only live broker does not hold it, and "
        "will not get it by itself."
    )
    assert _summary_counts(coverage.summary) == coverage.evidence["coverage"]


def test_partial_coverage_left_on_no_broker_of_several_says_so_as_its_evidence_does(
    batch_size: int | None,
) -> None:
    # the demo's case: T is auto-created on c alone of a, b and c, then c dies
    t = Trace()
    t.every(0, 210, 30, "a")
    t.every(0, 210, 30, "b")
    t.hb(0, "c")
    t.hb(30, "c", {"T": 4})  # c's last registration: it expires at 150 s
    t.pull(0.5, "T", ["a", "b", "c"], via_default=True)
    t.send(1, "T", broker="c", auto_created=True)
    t.hb(1, "c", {"T": 4}, full=False)
    t.pull(3, "T", ["c"])  # settled on c alone: 1 of 3

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "PARTIAL_COVERAGE") == [
        expect(
            "PARTIAL_COVERAGE",
            topic="T",
            severity="critical",
            opened=3,
            updated=150,
            summary="Auto-created topic T has no route left: none of the 2 live brokers holds "
            "it, and none will get it by itself.",
            evidence={
                "coverage": "0/2",
                "brokers_with_topic": [],
                "brokers_without_topic": ["a", "b"],
                "namesrv_views": {},
                "auto_created_at": ms(0.5),
                "auto_created_evidence": "observed",
                "producers_with_template_route": [],
            },
            remedy=create_remedy("T", 4),
        )
    ]
    changes = [
        a
        for cluster in run_.clusters.values()
        for a in cluster.alert_changes
        if a.kind == "PARTIAL_COVERAGE"
    ]
    # every version's sentence states the coverage its evidence holds
    assert [(_s(a.updated_at), a.evidence["coverage"]) for a in changes] == [
        (3.0, "1/3"),
        (150.0, "0/2"),
    ]
    assert all(_summary_counts(a.summary) == a.evidence["coverage"] for a in changes)


# -- an idle auto-created topic is forgotten after 7 days ----------------------------------------

DAY = 24 * 3600.0


def _auto_created_on_both(*, converged: bool = True) -> Trace:
    """T auto-created on a and b (no alert); the producer's pull at 30 s replaces its template
    route unless not ``converged``. Both brokers fall silent after 60 s and expire at 180 s: from
    then on no live broker holds T."""
    t = _template_route_on_one_of_two()
    t.send(2, "T", broker="b", auto_created=True)
    t.hb(2, "b", {"T": 4}, full=False)
    if converged:
        t.pull(30, "T", ["a", "b"])
    t.hb(60, "a", {"T": 4})
    t.hb(60, "b", {"T": 4})
    return t


def _made_by_hand_on_a_only(t: Trace, s: float) -> None:
    """At ``s``, the brokers are back and T is made by hand on a only: partial coverage if T is
    still known as auto-created, nothing if it was forgotten."""
    t.hb(s, "a", {"T": 4})
    t.hb(s, "b")


@pytest.mark.parametrize(("days", "forgotten"), [(6.9, False), (7.1, True)])
def test_an_auto_created_topic_idle_for_7_days_is_forgotten(
    batch_size: int | None, days: float, forgotten: bool
) -> None:
    t = _auto_created_on_both()
    at = 180 + days * DAY  # idle from the brokers' expiry
    _made_by_hand_on_a_only(t, at)

    run_ = run(t, batch_size=batch_size)

    expected = [] if forgotten else [("PARTIAL_COVERAGE", "C", "T", at, None)]
    assert alerts(run_, "PARTIAL_COVERAGE") == expected


def test_the_7_days_count_from_the_start_of_the_latest_idle_time(batch_size: int | None) -> None:
    t = _auto_created_on_both()
    t.hb(3 * DAY, "a", {"T": 4})  # back on both brokers for a while: not idle
    t.hb(3 * DAY, "b", {"T": 4})  # silent again, idle from their expiry, 3 days + 120 s
    at = 8 * DAY  # 8 days after the first idle time began, 5 after the latest
    _made_by_hand_on_a_only(t, at)

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "PARTIAL_COVERAGE") == [("PARTIAL_COVERAGE", "C", "T", at, None)]


@pytest.mark.parametrize("status", ["NO_ROUTE_INFO", "TOPIC_NOT_EXIST"])
def test_a_failed_send_ends_an_idle_time(batch_size: int | None, status: str) -> None:
    t = _auto_created_on_both()
    t.send(180 + 6.9 * DAY, "T", status, broker="a" if status == "TOPIC_NOT_EXIST" else None)
    at = 180 + 7.1 * DAY  # 7.1 days after the idle time began, minutes after the failure's end
    _made_by_hand_on_a_only(t, at)

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "PARTIAL_COVERAGE") == [("PARTIAL_COVERAGE", "C", "T", at, None)]


def test_a_topic_a_producer_holds_a_template_route_for_is_not_forgotten(
    batch_size: int | None,
) -> None:
    t = _auto_created_on_both(converged=False)  # the producer keeps its template route
    at = 8 * DAY
    _made_by_hand_on_a_only(t, at)

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_, "PARTIAL_COVERAGE") == [("PARTIAL_COVERAGE", "C", "T", at, None)]


# -- the catalogue, kind by kind: every alert in full, opened and resolved ------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


def _auto_created_on_a_of_a_and_b(until: float = 90) -> Trace:
    """Masters a and b (TBW102 on both), registering every 30 s through ``until``. A producer
    takes a template route over both at 0.5 s (T is auto-created then); its first send makes a
    create T at 1 s, which a registers at once and in every full registration from then on."""
    t = Trace()
    t.hb(0, "a")
    t.every(30, until, 30, "a", topics={"T": 4})
    t.every(0, until, 30, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    return t


# PARTIAL_COVERAGE


def test_partial_coverage_opens_when_producers_converge_and_resolves_on_every_master(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.every(30, 90, 30, "a", topics={"T": 4})
    t.every(0, 60, 30, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)  # T auto-created at 0.5 s
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.pull(3, "T", ["a"])  # the producer's refresh: settled on a, before AT_RISK's 5 s
    t.hb(75, "b", {"T": 4})  # T created on b by hand: every master holds it
    t.hb(90, "b", {"T": 4})

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "PARTIAL_COVERAGE",
            topic="T",
            severity="critical",
            opened=3,
            resolved=75,
            summary="Auto-created topic T is on 1 of 2 brokers and will stay there: its "
            "producers' routes have converged on that subset.",
            evidence={
                "coverage": "2/2",  # brought up to date on resolution
                "brokers_with_topic": ["a"],
                "brokers_without_topic": ["b"],
                "namesrv_views": {NS1: ["a"]},
                "auto_created_at": ms(0.5),
                "auto_created_evidence": "observed",
                "producers_with_template_route": [],
            },
            remedy=create_remedy("T", 4),
        )
    ]
    assert versions(run_, "PARTIAL_COVERAGE") == [
        ("open", 3.0, "critical", None),
        ("resolved", 75.0, "critical", None),
    ]


def test_partial_coverage_settles_60_s_after_auto_creation_and_resolves_at_risk(
    batch_size: int | None,
) -> None:
    t = _auto_created_on_a_of_a_and_b()  # the producer never refreshes its route

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "AT_RISK",
            topic="T",
            severity="warning",
            opened=6,  # the condition holds from 1 s, + 5 s
            resolved=60.5,
            summary="Topic T is on 1 of the 2 brokers its producers' template route covers; at "
            "their next route refresh (by 2026-01-01T00:00:30.500Z) it collapses to those "
            "brokers.",
            evidence={
                "producers": [
                    {
                        "client_id": "p1",
                        "template_brokers": ["a", "b"],
                        "brokers_with_topic": ["a"],
                        "template_route_since": ms(0.5),
                        "next_refresh_by": ms(30.5),
                    }
                ],
                "brokers_with_topic": ["a"],
                "condition_since": ms(1),
                "resolution": "partial coverage opened",
            },
            remedy=create_remedy("T", 4),
        ),
        expect(
            "PARTIAL_COVERAGE",
            topic="T",
            severity="critical",
            opened=60.5,  # auto-created at 0.5 s, + 60 s
            summary="Auto-created topic T is on 1 of 2 brokers and will stay there: its "
            "producers' routes have converged on that subset.",
            evidence={
                "coverage": "1/2",
                "brokers_with_topic": ["a"],
                "brokers_without_topic": ["b"],
                "namesrv_views": {NS1: ["a"]},
                "auto_created_at": ms(0.5),
                "auto_created_evidence": "observed",
                "producers_with_template_route": ["p1"],
            },
            remedy=create_remedy("T", 4),
        ),
    ]


def test_partial_coverage_severity_follows_k(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 180, 30, "c")
    t.hb(0, "a")
    t.hb(0, "b")
    # sends auto-create T on a, then b; no producer took a template route: settled at once
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.send(2, "T", broker="b", auto_created=True)
    t.hb(2, "b", {"T": 4}, full=False)
    t.every(30, 180, 30, "a", topics={"T": 4})
    t.hb(30, "b", {"T": 4})  # b's last registration: it expires at 150 s

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "PARTIAL_COVERAGE") == [
        expect(
            "PARTIAL_COVERAGE",
            topic="T",
            severity="critical",
            opened=1,
            updated=150,
            summary="Auto-created topic T is on 1 of 2 brokers and will stay there: its "
            "producers' routes have converged on that subset.",
            evidence={
                "coverage": "1/2",
                "brokers_with_topic": ["a"],
                "brokers_without_topic": ["c"],
                "namesrv_views": {NS1: ["a"]},
                "auto_created_at": ms(1),
                "auto_created_evidence": "observed",
                "producers_with_template_route": [],
            },
            remedy=create_remedy("T", 4),
        )
    ]
    assert versions(run_, "PARTIAL_COVERAGE") == [
        ("open", 1.0, "critical", None),  # 1/3
        ("open", 2.0, "warning", None),  # 2/3
        ("open", 150.0, "critical", None),  # b expired: 1/2
    ]


def test_partial_coverage_resolves_when_the_master_without_the_topic_leaves(
    batch_size: int | None,
) -> None:
    t = _auto_created_on_a_of_a_and_b(until=30)
    t.pull(3, "T", ["a"])
    t.hb(40, "b", shutdown=True)  # b unregisters: the only expected master, a, holds T
    t.hb(60, "a", {"T": 4})

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "PARTIAL_COVERAGE",
            topic="T",
            severity="critical",
            opened=3,
            resolved=40,
            summary="Auto-created topic T is on 1 of 2 brokers and will stay there: its "
            "producers' routes have converged on that subset.",
            evidence={
                "coverage": "1/1",
                "brokers_with_topic": ["a"],
                "brokers_without_topic": ["b"],
                "namesrv_views": {NS1: ["a"]},
                "auto_created_at": ms(0.5),
                "auto_created_evidence": "observed",
                "producers_with_template_route": [],
            },
            remedy=create_remedy("T", 4),
        )
    ]


def test_partial_coverage_stays_open_at_k_0_and_resolves_when_no_master_is_expected(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.hb(30, "a", {"T": 4})  # a's last registration: it expires at 150 s
    t.every(0, 60, 30, "b")  # b's last at 60 s: it expires at 180 s
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.pull(3, "T", ["a"])
    t.every(0, 210, 30, "d", cluster="D")  # the stream's clock goes on

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "PARTIAL_COVERAGE") == [
        expect(
            "PARTIAL_COVERAGE",
            topic="T",
            severity="critical",
            opened=3,
            resolved=180,
            summary="Auto-created topic T has no route left: the only live broker does not hold "
            "it, and will not get it by itself.",
            evidence={
                "coverage": "0/0",
                "brokers_with_topic": [],
                "brokers_without_topic": ["b"],
                "namesrv_views": {},
                "auto_created_at": ms(0.5),
                "auto_created_evidence": "observed",
                "producers_with_template_route": [],
            },
            remedy=create_remedy("T", 4),
        )
    ]
    assert versions(run_, "PARTIAL_COVERAGE") == [
        ("open", 3.0, "critical", None),  # 1/2
        ("open", 150.0, "critical", None),  # a expired: 0/1, it stays open
        ("resolved", 180.0, "critical", None),  # b expired: no master is expected
    ]


def test_topics_created_by_hand_and_system_topics_raise_no_coverage_alert(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 90, 30, "a", topics={"T": 4, "%RETRY%pg": 1})  # T created by hand on a only
    t.every(0, 90, 30, "b")
    t.send(1, "T", broker="a")
    t.pull(2, "%RETRY%pg", ["a", "b"], via_default=True)
    t.send(3, "%RETRY%pg", broker="a", auto_created=True)  # a system topic, on a only

    assert final(run(t, batch_size=batch_size)) == []


# AT_RISK


def test_at_risk_follows_its_producers_and_resolves_when_every_template_broker_holds_it(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a")
    t.hb(0, "b")
    t.hb(0, "c")
    t.pull(0.5, "T", ["a", "b"], via_default=True, client="p1")
    t.pull(0.8, "T", ["a", "b", "c"], via_default=True, client="p2")
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)  # the condition holds from 1 s: k = 1
    t.pull(20, "T", [], result="TIMEOUT", client="p2")  # keeps p2's route, moves its refresh
    t.send(22, "T", broker="b", client="p2", auto_created=True)
    t.hb(22, "b", {"T": 4}, full=False)  # p1's template brokers all hold T; p2's do not
    t.send(24, "T", broker="c", client="p2", auto_created=True)
    t.hb(24, "c", {"T": 4}, full=False)  # converged: all three hold T
    for broker in ("a", "b", "c"):
        t.every(30, 90, 30, broker, topics={"T": 4})

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "AT_RISK",
            topic="T",
            severity="warning",
            opened=6,
            updated=24,
            resolved=24,
            summary="Topic T is on 2 of the 3 brokers its producers' template route covers; at "
            "their next route refresh (by 2026-01-01T00:00:50.000Z) it collapses to those "
            "brokers.",
            evidence={
                "producers": [
                    {
                        "client_id": "p2",
                        "template_brokers": ["a", "b", "c"],
                        "brokers_with_topic": ["a", "b"],
                        "template_route_since": ms(0.8),
                        "next_refresh_by": ms(50),
                    }
                ],
                "brokers_with_topic": ["a", "b"],
                "condition_since": ms(1),
            },
            remedy=create_remedy("T", 4),
        )
    ]
    changes = [a for a in run_.cluster("C").alert_changes if a.kind == "AT_RISK"]
    assert [(_s(a.updated_at), a.state) for a in changes] == [
        (6.0, "open"),  # p1: 1 of 2, p2: 1 of 3
        (20.0, "open"),  # p2's failed pull: its next refresh is due at 50 s
        (22.0, "open"),  # p1 is no longer at risk
        (24.0, "resolved"),
    ]
    p1 = {
        "client_id": "p1",
        "template_brokers": ["a", "b"],
        "brokers_with_topic": ["a"],
        "template_route_since": ms(0.5),
        "next_refresh_by": ms(30.5),
    }
    p2 = {
        "client_id": "p2",
        "template_brokers": ["a", "b", "c"],
        "brokers_with_topic": ["a"],
        "template_route_since": ms(0.8),
        "next_refresh_by": ms(30.8),
    }
    assert (changes[0].summary, changes[0].evidence) == (
        "Topic T is on 1 of the 3 brokers its producers' template route covers; at their next "
        "route refresh (by 2026-01-01T00:00:30.800Z) it collapses to those brokers.",
        {"producers": [p1, p2], "brokers_with_topic": ["a"], "condition_since": ms(1)},
    )
    assert (changes[1].summary, changes[1].evidence) == (
        "Topic T is on 1 of the 3 brokers its producers' template route covers; at their next "
        "route refresh (by 2026-01-01T00:00:50.000Z) it collapses to those brokers.",
        {
            "producers": [p1, {**p2, "next_refresh_by": ms(50)}],
            "brokers_with_topic": ["a"],
            "condition_since": ms(1),
        },
    )


def test_at_risk_needs_5_s_without_a_break(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 60, 30, "a")
    t.every(0, 60, 30, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    t.send(5.5, "T", broker="b", auto_created=True)
    t.hb(5.5, "b", {"T": 4}, full=False)  # converged 4.5 s after the condition began

    assert final(run(t, batch_size=batch_size)) == []


# NO_ROUTE_INFO: every cause, and both resolutions


def _no_route(
    *,
    cause: NoRouteCause,
    opened: float,
    updated: float | None = None,
    resolved: float | None = None,
    evidence: dict[str, Any],
    remedy: str,
) -> dict[str, Any]:
    return expect(
        "NO_ROUTE_INFO",
        topic="T",
        severity="critical",
        opened=opened,
        updated=updated,
        resolved=resolved,
        cause=cause,
        summary=f'Sends of topic T fail with "No route info of this topic" (cause: {cause}).',
        evidence=evidence,
        remedy=remedy,
    )


def test_no_route_info_no_namesrv_by_status_resolves_when_a_send_succeeds(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a")
    t.send(5, "T", "NO_NAMESRV", client="p1")
    t.send(8, "T", "NO_NAMESRV", client="p2")
    t.send(12, "T", "SEND_OK", "a")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="NO_NAMESRV",
            opened=5,
            resolved=12,
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(8),
                "failures": 2,
                "statuses": {"NO_NAMESRV": 2},
                "clients": ["p1", "p2"],
                "create_topic_key": "TBW102",
                "resolution": "a send succeeded",
            },
            remedy="Set the client's NameServer address (namesrvAddr).",
        )
    ]
    assert versions(run_, "NO_ROUTE_INFO") == [
        ("open", 5.0, "critical", "NO_NAMESRV"),
        ("open", 8.0, "critical", "NO_NAMESRV"),
        ("resolved", 12.0, "critical", "NO_NAMESRV"),
    ]


def test_no_route_info_no_namesrv_by_pull_then_unknown_resolves_after_120_s_quiet(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 150, 30, "a")  # auto-creation on, TBW102 usable
    t.pull(4, "T", [], result="NO_NAMESRV", namesrv=None)
    t.send(5, "T", "NO_ROUTE_INFO")  # the client's latest pull said NO_NAMESRV
    t.pull(10, "T", [], result="TOPIC_NOT_EXIST")  # it has a NameServer again
    t.send(11, "T", "NO_ROUTE_INFO")  # no cause matches: UNKNOWN

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="UNKNOWN",
            opened=5,
            resolved=131,  # the last failure + 120 s
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(11),
                "failures": 2,
                "statuses": {"NO_ROUTE_INFO": 2},
                "clients": ["p1"],
                "create_topic_key": "TBW102",
                "resolution": "quiet for 120 s",
            },
            remedy="Check the client's NameServer address and the topic's route.",
        )
    ]
    assert versions(run_, "NO_ROUTE_INFO") == [
        ("open", 5.0, "critical", "NO_NAMESRV"),
        ("open", 11.0, "critical", "UNKNOWN"),  # a changed cause updates the open alert
        ("resolved", 131.0, "critical", "UNKNOWN"),
    ]


@pytest.mark.parametrize(("days", "cause"), [(6.9, "NO_NAMESRV"), (7.1, "NO_LIVE_BROKER")])
def test_a_clients_no_namesrv_pull_decides_the_cause_for_7_days(
    batch_size: int | None, days: float, cause: str
) -> None:
    # The client's pull said it has no NameServer address; its failure 7 days later is judged
    # as if that pull had never been (a restarted application is a new client id).
    t = Trace()
    t.hb(0, "a")
    t.pull(4, "T", [], result="NO_NAMESRV", namesrv=None)
    at = 4 + days * DAY
    t.send(at, "T", "NO_ROUTE_INFO")  # a has long expired

    run_ = run(t, batch_size=batch_size)

    assert [a.cause for a in run_.final_alerts() if a.kind == "NO_ROUTE_INFO"] == [cause]


def test_no_route_info_no_live_broker(batch_size: int | None) -> None:
    t = Trace()
    t.hb(0, "a")  # expires at 120 s
    t.send(130, "T", "NO_ROUTE_INFO")
    t.every(0, 270, 30, "d", cluster="D")  # the stream's clock goes on

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "NO_ROUTE_INFO") == [
        _no_route(
            cause="NO_LIVE_BROKER",
            opened=130,
            resolved=250,
            evidence={
                "first_failure": ms(130),
                "last_failure": ms(130),
                "failures": 1,
                "statuses": {"NO_ROUTE_INFO": 1},
                "clients": ["p1"],
                "create_topic_key": "TBW102",
                "resolution": "quiet for 120 s",
            },
            remedy="Bring a broker of the cluster back.",
        )
    ]


def test_no_route_info_create_topic_key_mismatch(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 150, 30, "a")  # reports TBW102
    t.send(5, "T", "NO_ROUTE_INFO", default_topic="AUTO_CREATE_TOPIC_KEY")  # a 4.3.0 client

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="CREATE_TOPIC_KEY_MISMATCH",
            opened=5,
            resolved=125,
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(5),
                "failures": 1,
                "statuses": {"NO_ROUTE_INFO": 1},
                "clients": ["p1"],
                "create_topic_key": "AUTO_CREATE_TOPIC_KEY",
                "resolution": "quiet for 120 s",
            },
            remedy="Align the client's createTopicKey (AUTO_CREATE_TOPIC_KEY) with TBW102 "
            "(upgrade a 4.3.0 client).",
        )
    ]


def test_no_route_info_auto_create_disabled(batch_size: int | None) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.hb(0, "a", ns=ns, auto=False, tbw=False)
    t.send(5, "T", "NO_ROUTE_INFO", client="p2")
    t.send(6, "T", "NO_ROUTE_INFO", client="p1")
    for ns in (NS1, NS2):
        t.hb(20, "a", {"T": 8}, ns=ns, auto=False, tbw=False)  # T created by hand
    t.send(21, "T", "SEND_OK", "a")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="AUTO_CREATE_DISABLED",
            opened=5,
            resolved=21,
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(6),
                "failures": 2,
                "statuses": {"NO_ROUTE_INFO": 2},
                "clients": ["p1", "p2"],
                "create_topic_key": "TBW102",
                "resolution": "a send succeeded",
            },
            remedy=f"Create the topic: `mqadmin updateTopic -n '{NS1};{NS2}' -c C -t T -r 8 -w 8`",
        )
    ]


def test_no_route_info_template_missing_resolves_on_any_delivered_status(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a", tbw=False)  # auto-creation on, no TBW102
    t.send(5, "T", "NO_ROUTE_INFO")
    t.send(9, "T", "FLUSH_DISK_TIMEOUT", "a")  # delivered

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "NO_ROUTE_INFO") == [
        _no_route(
            cause="TEMPLATE_MISSING",
            opened=5,
            resolved=9,
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(5),
                "failures": 1,
                "statuses": {"NO_ROUTE_INFO": 1},
                "clients": ["p1"],
                "create_topic_key": "TBW102",
                "resolution": "a send succeeded",
            },
            remedy="Restore TBW102: restart the brokers with autoCreateTopicEnable=true, or "
            "create the topic.",
        )
    ]


# SEND_REJECTED


def test_send_rejected_is_not_resolved_by_a_success_and_resolves_after_120_s_quiet(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 150, 30, "a", auto=False)  # a stale, usable TBW102 on brokers with
    t.every(0, 150, 30, "b", auto=False)  # auto-creation off: they refuse the sends
    t.send(5, "T", "TOPIC_NOT_EXIST", "a")
    t.send(6, "T", "TOPIC_NOT_EXIST", "b")
    t.send(7, "T", "TOPIC_NOT_EXIST", "a")
    t.send(10, "T", "SEND_OK", "b")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "SEND_REJECTED",
            topic="T",
            severity="warning",
            opened=5,
            resolved=127,  # the last refusal + 120 s
            summary="Broker(s) a, b refuse sends of topic T with TOPIC_NOT_EXIST.",
            evidence={
                "first_refusal": ms(5),
                "last_refusal": ms(7),
                "refusals": 3,
                "brokers": {"a": 2, "b": 1},
                "resolution": "quiet for 120 s",
            },
            remedy=f"Create T on a, b (`mqadmin updateTopic -n {NS1} -b a:10911 -t T`, "
            f"`mqadmin updateTopic -n {NS1} -b b:10911 -t T`), or remove the stale TBW102 "
            "from a, b.",
        )
    ]
    assert versions(run_, "SEND_REJECTED") == [
        ("open", 5.0, "warning", None),
        ("open", 6.0, "warning", None),
        ("open", 7.0, "warning", None),
        ("resolved", 127.0, "warning", None),
    ]


# TEMPLATE_MISSING


def test_template_missing_resolves_on_a_full_registration_with_a_usable_tbw102(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a", tbw=False, dv="v1")
    t.hb(10, "a", {"TBW102": (8, 8, 7)}, full=False)  # an immediate registration: not judged
    t.hb(30, "a", tbw=False, dv="v1")
    t.hb(60, "a", dv="v2")  # a full registration with a usable TBW102

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "TEMPLATE_MISSING",
            broker="a",
            broker_id=0,
            severity="warning",
            opened=0,
            resolved=60,
            summary="Broker a has autoCreateTopicEnable=true but has no TBW102: topics sent to it "
            "are not auto-created.",
            evidence={
                "namesrv": NS1,
                "auto_create_topic_enable": True,
                "tbw102": "usable",  # brought up to date on resolution
                "data_version": "v1",
            },
            remedy=TEMPLATE_REMEDY,
        )
    ]
    assert versions(run_, "TEMPLATE_MISSING") == [
        ("open", 0.0, "warning", None),
        ("resolved", 60.0, "warning", None),
    ]


def test_template_missing_without_inherit_resolves_when_auto_creation_is_turned_off(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a")
    t.hb(0, "a", {"TBW102": (8, 8, 6)}, broker_id=1, tbw=False, dv="v1")  # a slave's TBW102
    t.hb(30, "a", {"TBW102": (8, 8, 6)}, broker_id=1, tbw=False, auto=False, dv="v2")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "TEMPLATE_MISSING",
            broker="a",
            broker_id=1,
            severity="warning",
            opened=0,
            resolved=30,
            summary="Broker a has autoCreateTopicEnable=true but has a TBW102 without INHERIT: "
            "topics sent to it are not auto-created.",
            evidence={
                "namesrv": NS1,
                "auto_create_topic_enable": False,  # brought up to date on resolution
                "tbw102": "no_inherit",
                "data_version": "v1",
            },
            remedy=TEMPLATE_REMEDY,
        )
    ]


def test_template_missing_is_judged_on_a_whole_split_registration_and_outlives_the_broker(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 210, 30, "b")
    t.hb(0, "a", {"X": 4}, tbw=False, dv="v1", part=0, parts=2)
    t.hb(1, "a", {"Y": 4}, tbw=False, dv="v1", part=1, parts=2)  # complete: no TBW102
    # a falls silent: it expires at 121 s; TEMPLATE_MISSING stays open while it is gone
    t.hb(200, "a", dv="v2")  # back, with a usable TBW102

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "TEMPLATE_MISSING",
            broker="a",
            broker_id=0,
            severity="warning",
            opened=1,
            resolved=200,
            summary="Broker a has autoCreateTopicEnable=true but has no TBW102: topics sent to it "
            "are not auto-created.",
            evidence={
                "namesrv": NS1,
                "auto_create_topic_enable": True,
                "tbw102": "usable",
                "data_version": "v1",
            },
            remedy=TEMPLATE_REMEDY,
        ),
        expect(
            "BROKER_EXPIRED",
            broker="a",
            broker_id=0,
            severity="critical",
            opened=121,
            resolved=200,
            summary="Broker a (id 0) has been silent for over 120 s on every NameServer; 2 "
            "topic(s) it held have no route left.",
            evidence={
                "last_heartbeat": ms(1),
                "addr": "a:10911",
                "namesrvs": [NS1],
                "topics_without_route": {"items": ["X", "Y"], "count": 2},
                "resolution": "heartbeat received",
            },
            remedy=EXPIRED_REMEDY,
        ),
    ]
    assert versions(run_, "TEMPLATE_MISSING") == [
        ("open", 1.0, "warning", None),
        ("resolved", 200.0, "warning", None),
    ]


# BROKER_EXPIRED


def test_broker_expired_on_every_namesrv_resolves_on_a_heartbeat(batch_size: int | None) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 210, 30, "b", ns=ns)
    t.every(0, 30, 30, "a", topics={"T": 4}, ns=NS1)  # silent on NS1 after 30 s
    t.every(0, 60, 30, "a", topics={"T": 4}, ns=NS2)  # ... and on NS2 after 60 s: expired at 180 s
    t.hb(200, "a", ns=NS1)
    t.hb(200, "a", ns=NS2)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "BROKER_EXPIRED",
            broker="a",
            broker_id=0,
            severity="critical",
            opened=180,
            resolved=200,
            summary="Broker a (id 0) has been silent for over 120 s on every NameServer; 1 "
            "topic(s) it held have no route left.",
            evidence={
                "last_heartbeat": ms(60),
                "addr": "a:10911",
                "namesrvs": [NS1, NS2],
                "topics_without_route": {"items": ["T"], "count": 1},
                "resolution": "heartbeat received",
            },
            remedy=EXPIRED_REMEDY,
        )
    ]


def test_broker_expired_of_a_slave_resolves_when_it_unregisters(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 180, 30, "a")
    t.hb(0, "a", broker_id=1)  # the slave expires at 120 s
    t.hb(150, "a", broker_id=1, shutdown=True)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "BROKER_EXPIRED",
            broker="a",
            broker_id=1,
            severity="critical",
            opened=120,
            resolved=150,
            summary="Broker a (id 1) has been silent for over 120 s on every NameServer; 0 "
            "topic(s) it held have no route left.",
            evidence={
                "last_heartbeat": ms(0),
                "addr": "a:10911",
                "namesrvs": [NS1],
                "topics_without_route": {"items": [], "count": 0},
                "resolution": "unregistered",
            },
            remedy=EXPIRED_REMEDY,
        )
    ]


def test_a_broker_that_unregistered_does_not_expire(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 180, 30, "b")
    t.hb(0, "a")
    t.hb(10, "a", shutdown=True)

    assert final(run(t, batch_size=batch_size)) == []


def test_broker_expired_topics_without_route_follow_the_other_brokers(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a", {"T": 4})  # a expires at 120 s: b still holds T and TBW102
    t.every(0, 30, 30, "b", topics={"T": 4})  # b expires at 150 s: now no live broker holds them
    t.every(0, 180, 30, "d", cluster="D")

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "BROKER_EXPIRED")[0] == expect(
        "BROKER_EXPIRED",
        broker="a",
        broker_id=0,
        severity="critical",
        opened=120,
        updated=150,
        summary="Broker a (id 0) has been silent for over 120 s on every NameServer; 2 topic(s) "
        "it held have no route left.",
        evidence={
            "last_heartbeat": ms(0),
            "addr": "a:10911",
            "namesrvs": [NS1],
            "topics_without_route": {"items": ["T", "TBW102"], "count": 2},
        },
        remedy=EXPIRED_REMEDY,
    )


# QUEUE_SKEW


def test_queue_skew_on_write_counts_resolves_when_the_counts_agree(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a", topics={"T": 8})
    t.hb(0, "b", {"T": 4})
    t.every(30, 60, 30, "b", topics={"T": 8})

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "QUEUE_SKEW",
            topic="T",
            severity="info",
            opened=0,
            resolved=30,
            summary="Topic T has uneven queues: write queues [4, 8] across brokers.",
            evidence={"brokers": {"a": {"read": 8, "write": 8}, "b": {"read": 4, "write": 4}}},
            remedy=f"`mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",
        )
    ]


def test_queue_skew_on_read_and_write_resolves_when_no_live_broker_holds_the_topic(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "b")
    t.hb(0, "a", {"T": (8, 4, 6)})
    t.hb(30, "a", {"T": (8, 2, 6)})
    t.hb(40, "a", shutdown=True)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "QUEUE_SKEW",
            topic="T",
            severity="info",
            opened=0,
            updated=40,
            resolved=40,
            summary="Topic T has uneven queues: write queues [2] across brokers, read != write "
            "on a.",
            evidence={"brokers": {"a": {"read": 8, "write": 2}}},
            remedy=f"`mqadmin updateTopic -n {NS1} -c C -t T -r 2 -w 2`",
        )
    ]
    assert versions(run_, "QUEUE_SKEW") == [
        ("open", 0.0, "info", None),
        ("open", 30.0, "info", None),  # new counts: updated in place
        ("resolved", 40.0, "info", None),
    ]


# NAMESRV_DIVERGENCE


def test_namesrv_divergence_resolves_when_live_on_every_namesrv_again(
    batch_size: int | None,
) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 240, 30, "a", ns=ns)
    t.hb(0, "b", {"T": 4}, ns=NS2)  # b's last registration on NS2: off it from 120 s
    t.every(0, 240, 30, "b", topics={"T": 4}, ns=NS1)
    t.hb(200, "b", {"T": 4}, ns=NS2)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "NAMESRV_DIVERGENCE",
            broker="b",
            broker_id=0,
            severity="warning",
            opened=180,
            resolved=200,
            summary=f"Broker b (id 0) is registered on {NS1} but not on {NS2}: clients see "
            "different routes by NameServer.",
            evidence={
                "live_on": [NS1],
                "missing_on": [NS2],
                "since": ms(120),
                "topics_differing": {"items": ["T", "TBW102"], "count": 2},
            },
            remedy=DIVERGENCE_REMEDY,
        )
    ]


def test_namesrv_divergence_resolves_when_live_on_none_and_broker_expired_takes_over(
    batch_size: int | None,
) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 240, 30, "a", ns=ns)
    t.every(0, 90, 30, "b", ns=NS1)  # b never reaches NS2, and expires at 210 s

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "NAMESRV_DIVERGENCE",
            broker="b",
            broker_id=0,
            severity="warning",
            opened=60,
            resolved=210,
            summary=f"Broker b (id 0) is registered on {NS1} but not on {NS2}: clients see "
            "different routes by NameServer.",
            evidence={
                "live_on": [NS1],
                "missing_on": [NS2],
                "since": ms(0),
                "topics_differing": {"items": ["TBW102"], "count": 1},
            },
            remedy=DIVERGENCE_REMEDY,
        ),
        expect(
            "BROKER_EXPIRED",
            broker="b",
            broker_id=0,
            severity="critical",
            opened=210,
            summary="Broker b (id 0) has been silent for over 120 s on every NameServer; 0 "
            "topic(s) it held have no route left.",
            evidence={
                "last_heartbeat": ms(90),
                "addr": "b:10911",
                "namesrvs": [NS1],
                "topics_without_route": {"items": [], "count": 0},
            },
            remedy=EXPIRED_REMEDY,
        ),
    ]


def test_namesrv_divergence_topics_differing_follow_the_brokers_table(
    batch_size: int | None,
) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.every(0, 150, 30, "a", ns=ns)
    t.every(0, 90, 30, "b", topics={"T": 4}, ns=NS1)  # b never reaches NS2: diverged from 0 s
    t.every(120, 150, 30, "b", topics={"T": 4, "U": 4}, ns=NS1)  # U too, on NS1 only

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "NAMESRV_DIVERGENCE",
            broker="b",
            broker_id=0,
            severity="warning",
            opened=60,
            updated=120,
            summary=f"Broker b (id 0) is registered on {NS1} but not on {NS2}: clients see "
            "different routes by NameServer.",
            evidence={
                "live_on": [NS1],
                "missing_on": [NS2],
                "since": ms(0),
                "topics_differing": {"items": ["T", "TBW102", "U"], "count": 3},
            },
            remedy=DIVERGENCE_REMEDY,
        )
    ]


# -- PARTIAL_COVERAGE from the broker side alone: an auto-creation inferred ---------------------

INFERRED = (
    " (routewatch inferred the auto-creation from the topic's config, which a topic created "
    "by hand on these brokers alone can also have: if the placement is deliberate, silence "
    "this alert with POST /alerts/{id}/silence.)"
)
STUCK_ON_A = (
    "Auto-created topic T is on 1 of 2 brokers and will stay there: its producers' routes have "
    "converged on that subset."
)


def _watched(until: float = 120, step: float = 10) -> Trace:
    """a and b register every ``step`` s from 0 (a collector's heartbeats); T appears on a at
    20 s, where the broker side finds it while watching."""
    t = Trace()
    s = 0.0
    while s <= until:
        t.hb(s, "a", {"T": 4} if s >= 20 else {}, dv="a2" if s >= 20 else "a1")
        t.hb(s, "b", dv="b1")
        s += step
    return t


def _with_flags(t: Trace, broker: str, flags: dict[str, tuple[str, float]], after: float) -> Trace:
    """``t`` with ``flags`` on ``broker``'s heartbeats from ``after`` s on."""
    for e in t.events:
        if e["broker"] == broker and e["ts"] >= ms(after):
            e["inferred_auto_created"] = {
                topic: {"found": how, "first_seen": ms(at)} for topic, (how, at) in flags.items()
            }
    return t


def _coverage(opened: float, how: str, *, auto_created: float = 20) -> dict[str, Any]:
    return expect(
        "PARTIAL_COVERAGE",
        topic="T",
        severity="critical",
        opened=opened,
        summary=STUCK_ON_A,
        evidence={
            "coverage": "1/2",
            "brokers_with_topic": ["a"],
            "brokers_without_topic": ["b"],
            "namesrv_views": {NS1: ["a"]},
            "auto_created_at": ms(auto_created),
            "auto_created_evidence": how,
            "producers_with_template_route": [],
        },
        remedy=create_remedy("T", 4) + ("" if how == "observed" else INFERRED),
    )


def test_a_topic_found_while_watching_opens_60_s_after_it_was_first_seen(
    batch_size: int | None,
) -> None:
    t = _with_flags(_watched(), "a", {"T": ("while_watching", 20)}, after=20)

    run_ = run(t, batch_size=batch_size)

    # no producer is known to hold a template route: its coverage settles 60 s after first seen
    assert final(run_, "PARTIAL_COVERAGE") == [_coverage(80, "inferred_while_watching")]
    assert versions(run_, "PARTIAL_COVERAGE") == [("open", 80.0, "critical", None)]


def test_a_topic_found_while_watching_that_reaches_every_broker_raises_nothing(
    batch_size: int | None,
) -> None:
    # both brokers got it within the 60 s (the sends went on, or updateTopic -c): no alert
    t = _with_flags(_watched(), "a", {"T": ("while_watching", 20)}, after=20)
    for e in t.events:
        if e["broker"] == "b" and e["ts"] >= ms(50):
            e["topics"]["T"] = {"read_queue_nums": 4, "write_queue_nums": 4, "perm": 6}
            e["data_version"] = "b2"
            e["inferred_auto_created"] = {"T": {"found": "while_watching", "first_seen": ms(50)}}

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "PARTIAL_COVERAGE") == []


def test_a_topic_found_at_the_observers_start_is_settled_at_once(batch_size: int | None) -> None:
    # T was on a alone before the observer started: its first heartbeats say so
    t = Trace()
    for s in (20, 30, 40):
        t.hb(s, "a", {"T": 4}, dv="a2", inferred={"T": ("at_start", 20)})
        t.hb(s, "b", dv="b1")

    run_ = run(t, batch_size=batch_size)

    # opened when both brokers' first registrations are in: the instant it was first seen
    assert final(run_, "PARTIAL_COVERAGE") == [_coverage(20, "inferred_at_start")]


def test_an_observed_auto_creation_wins_over_an_inferred_one(batch_size: int | None) -> None:
    # the client's send (20 s) comes before the collector's first sight of T (25 s)
    t = _with_flags(_watched(step=5), "a", {"T": ("while_watching", 25)}, after=25)
    t.send(20, "T", broker="a", auto_created=True)

    run_ = run(t, batch_size=batch_size)

    # as without the broker side's word: settled at once (no producer took a template route)
    assert final(run_, "PARTIAL_COVERAGE") == [_coverage(20, "observed")]


def test_an_inferred_auto_creation_becomes_observed_when_a_client_says_so(
    batch_size: int | None,
) -> None:
    t = _with_flags(_watched(), "a", {"T": ("while_watching", 20)}, after=20)
    t.send(100, "T", broker="a", auto_created=True)  # a client's word, later (a replayed file)

    run_ = run(t, batch_size=batch_size)

    (coverage,) = final(run_, "PARTIAL_COVERAGE")
    assert coverage == {
        **_coverage(80, "observed"),
        "updated_at": ms(100),
    }  # its first sight stays the instant of the auto-creation
    assert versions(run_, "PARTIAL_COVERAGE") == [
        ("open", 80.0, "critical", None),
        ("open", 100.0, "critical", None),
    ]


def test_traces_without_the_broker_sides_word_raise_no_coverage_alert(
    batch_size: int | None,
) -> None:
    # the same registrations, as written before the field existed
    assert final(run(_watched(), batch_size=batch_size), "PARTIAL_COVERAGE") == []
