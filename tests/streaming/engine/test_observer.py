"""A cluster watched by a collector (``collector_round`` events): no broker expires for the time
nobody watched (COLLECTOR_SILENT: test_collector_silent.py); a broker gone when the collector is
back expired at the end of the gap; without rounds, nothing changes; a NameServer the collector
cannot reach is unknown, not a divergence (NAMESRV_UNREACHABLE: test_namesrv_unreachable.py)."""

from __future__ import annotations

from streaming.engine.runner import StreamRun
from tests.streaming.engine.events import NS1, NS2, Trace, ms
from tests.streaming.engine.rules.support import alerts, collector_back, final, run, watched


def test_a_broker_gone_when_the_collector_is_back_expired_at_the_end_of_the_gap() -> None:
    t = watched(60)
    collector_back(t, 210, ("a",))  # broker b no longer registered
    r = run(t)
    assert ("BROKER_EXPIRED", "C", "b/0", 210.5, None) in alerts(r)
    (expired,) = final(r, "BROKER_EXPIRED")
    assert expired["evidence"]["expired_in_collector_gap"] == {"from": ms(60.5), "to": ms(210.5)}
    assert expired["evidence"]["last_heartbeat"] == ms(60)
    assert "looked again after a gap" in expired["summary"]


def test_a_broker_killed_while_the_collector_runs_expires_on_time() -> None:
    t = Trace()
    for i in range(30):
        s = i * 10.0
        t.hb(s, "a", {"T": 4})
        if s <= 40:
            t.hb(s, "b", {"T": 4})
        t.round(s + 0.5)
    r = run(t)
    assert alerts(r) == [("BROKER_EXPIRED", "C", "b/0", 160.0, None)]


def test_without_rounds_a_silent_cluster_expires_as_before() -> None:
    t = Trace()
    for i in range(7):
        t.hb(i * 10.0, "a", {"T": 4})
    t.hb(300, "a", {"T": 4})
    r: StreamRun = run(t)
    assert alerts(r) == [("BROKER_EXPIRED", "C", "a/0", 180.0, 300.0)]


def test_a_broker_on_one_of_two_reachable_namesrvs_still_diverges() -> None:
    t = Trace()
    for i in range(15):
        s = i * 10.0
        t.hb(s, "a", {"T": 4}, ns=NS1)
        t.hb(s, "a", {"T": 4}, ns=NS2)
        t.hb(s, "b", {"T": 4}, ns=NS1)  # b registers with NS1 only
        t.round(s + 0.5, namesrvs=(NS1, NS2))
    r = run(t)
    assert alerts(r) == [("NAMESRV_DIVERGENCE", "C", "b/0", 60.0, None)]


def _short_timeout(until: float, *, polls: dict[float, float | None] | None = None) -> Trace:
    """Broker a with its own 20 s timeout (as the collector writes a slave-acting-master
    broker's 10 s at 10 s polls) and b with 120 s, renewed at every poll through ``until``; a
    poll in ``polls`` comes at the time given instead (None: not at all)."""
    t = Trace()
    s = 0.0
    while s <= until:
        at = (polls or {}).get(s, s)
        if at is not None:
            t.hb(at, "a", {"T": 4}, timeout_s=20)
            t.hb(at, "b", {"T": 4})
            t.round(at + 0.5)
        s += 10
    return t


def test_a_short_timeout_runs_out_in_the_collectors_stall_and_the_broker_is_not_expired() -> None:
    """The collector stalls after its round at 60.5 s: a's 20 s run out at 80 s, before the
    collector counts as silent (90.5 s), while nobody looked. The expiry waits for the
    collector's next look, which renews it (before 2026-12-07: BROKER_EXPIRED at 80 s)."""
    t = _short_timeout(60)
    collector_back(t, 210, ("a", "b"))

    assert alerts(run(t)) == [("COLLECTOR_SILENT", "C", "None/None", 90.5, 210.5)]


def test_a_round_late_by_an_interval_still_renews_a_short_timeout_in_time() -> None:
    """The poll due at 70 s comes at 80.4 s (and the one of 80 s with it): a's timeout ran out
    at 80 s, 19.5 s after the collector's last look (more than one and a half of its
    intervals): judged at that poll's round, whose heartbeats renewed it — nothing opens
    (before 2026-12-07: BROKER_EXPIRED at 80 s, resolved at 80.4 s)."""
    t = _short_timeout(100, polls={70.0: 80.4, 80.0: None})

    assert alerts(run(t)) == []


def test_a_short_timeout_broker_gone_while_the_collector_looks_expires_on_time() -> None:
    t = Trace()
    for i in range(12):
        s = i * 10.0
        if s <= 40:
            t.hb(s, "a", {"T": 4}, timeout_s=20)
        t.hb(s, "b", {"T": 4})
        t.round(s + 0.5)

    assert alerts(run(t)) == [("BROKER_EXPIRED", "C", "a/0", 60.0, None)]


def test_a_collector_that_reaches_no_namesrv_expires_no_broker_until_it_looks_again() -> None:
    """From 40 s the collector reaches no NameServer (it writes no heartbeat): its rounds are no
    looks, so the brokers' expiries at 150 s wait; NAMESRV_UNREACHABLE says why. At 200 s it
    reaches NS1 again and finds a alone: b expired then, in that gap."""
    t = Trace()
    for i in range(25):
        s = i * 10.0
        if s < 40 or s >= 200:
            t.hb(s, "a", {"T": 4})
            if s < 40:
                t.hb(s, "b", {"T": 4})
            t.round(s + 0.5)
        else:
            t.round(s + 0.5, unreached={NS1: 40.5})

    r = run(t)

    assert alerts(r) == [
        ("NAMESRV_UNREACHABLE", "C", "None/None", 70.5, 200.5),
        ("BROKER_EXPIRED", "C", "b/0", 200.5, None),
    ]
    (expired,) = final(r, "BROKER_EXPIRED")
    assert expired["evidence"]["expired_in_collector_gap"] == {"from": ms(30.5), "to": ms(200.5)}
