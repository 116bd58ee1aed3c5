"""The stream's one clock and the phases of its thresholds: expiry instants, thresholds that fall
on an event's instant or at the release frontier, liveness first, a stream that stops, lateness."""

from __future__ import annotations

import pytest

from routewatch.alerts import Alert
from routewatch.changes import decode
from streaming.engine import run_stream
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.step import Step
from tests.streaming.engine.events import NS1, NS2, Trace
from tests.streaming.engine.rules.support import (
    DAY,
    _auto_created_on_both,
    _made_by_hand_on_a_only,
    _s,
    _template_route_on_one_of_two,
    alerts,
    run,
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


def test_a_failure_at_the_instant_of_a_quiet_resolution_reopens() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(1, "T", "NO_ROUTE_INFO")
    t.send(121, "T", "NO_ROUTE_INFO")  # 120 s of quiet end first, at 121 s

    assert alerts(run(t), "NO_ROUTE_INFO") == [
        ("NO_ROUTE_INFO", "C", "T", 1.0, 121.0),
        ("NO_ROUTE_INFO", "C", "T", 121.0, None),
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
# while it is crossed inherits that side (streaming/engine/state.py, AFTER_LIVENESS), so the
# wait it starts ends after the events of its own instant, and after the expiries of that
# millisecond: NAMESRV_DIVERGENCE's 60 s, AT_RISK's 5 s and the 7 days after which an idle
# auto-created topic is forgotten (tests/cases/ holds the catalogue's cases of that order).


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
