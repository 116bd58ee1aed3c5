"""A cluster watched by a collector (``collector_round`` events): a gap in its rounds raises
COLLECTOR_SILENT and expires no broker for the time nobody watched; a broker gone when the
collector is back expired at the end of the gap; without rounds, nothing changes."""

from __future__ import annotations

from streaming.engine.runner import StreamRun
from tests.streaming.engine.events import NS1, NS2, Trace, ms
from tests.streaming.engine.rules.support import alerts, final, run


def _watched(until: float, *, every: float = 10, brokers: tuple[str, ...] = ("a", "b")) -> Trace:
    """Two brokers registering every 10 s and a collector's round after each look, up to
    ``until`` seconds."""
    t = Trace()
    s = 0.0
    while s <= until:
        for b in brokers:
            t.hb(s, b, {"T": 4})
        t.round(s + 0.5)
        s += every
    return t


def _gap(t: Trace, back: float, brokers: tuple[str, ...]) -> None:
    """The collector back at ``back`` s, finding ``brokers`` registered."""
    for b in brokers:
        t.hb(back, b, {"T": 4})
    t.round(back + 0.5)


def test_a_collector_gap_raises_its_own_alert_and_expires_no_broker_still_registered() -> None:
    t = _watched(60)  # last round at 60.5 s
    _gap(t, 210, ("a", "b"))  # 150 s later, both still there
    r = run(t)
    assert alerts(r) == [("COLLECTOR_SILENT", "C", "None/None", 90.5, 210.5)]
    (silent,) = final(r, "COLLECTOR_SILENT")
    assert silent["severity"] == "critical" and "collect-t" in silent["summary"]
    assert silent["evidence"] == {
        "collector": "collect-t",
        "last_round": ms(60.5),
        "gap_ms": 150_000,
        "back_at": ms(210.5),
    }


def test_a_broker_gone_when_the_collector_is_back_expired_at_the_end_of_the_gap() -> None:
    t = _watched(60)
    _gap(t, 210, ("a",))  # broker b no longer registered
    r = run(t)
    assert ("BROKER_EXPIRED", "C", "b/0", 210.5, None) in alerts(r)
    (expired,) = final(r, "BROKER_EXPIRED")
    assert expired["evidence"]["expired_in_collector_gap"] == {"from": ms(60.5), "to": ms(210.5)}
    assert expired["evidence"]["last_heartbeat"] == ms(60)
    assert "came back after a gap" in expired["summary"]


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


def test_a_collector_that_never_comes_back_keeps_its_brokers_unexpired() -> None:
    t = _watched(60)
    for i in range(40):  # another cluster's events carry the stream's time on
        t.hb(70 + i * 10, "x", {"T": 4}, cluster="D")
    r = run(t)
    assert alerts(r) == [("COLLECTOR_SILENT", "C", "None/None", 90.5, None)]


def test_without_rounds_a_silent_cluster_expires_as_before() -> None:
    t = Trace()
    for i in range(7):
        t.hb(i * 10.0, "a", {"T": 4})
    t.hb(300, "a", {"T": 4})
    r: StreamRun = run(t)
    assert alerts(r) == [("BROKER_EXPIRED", "C", "a/0", 180.0, 300.0)]


def _two_namesrvs(until: float, *, ns2_lost_at: float, rounds: bool) -> Trace:
    """broker a on both NameServers; from ``ns2_lost_at`` the collector cannot reach NS2
    (nothing is written for it), and says so in its rounds (``rounds``)."""
    t = Trace()
    s = 0.0
    while s <= until:
        t.hb(s, "a", {"T": 4}, ns=NS1)
        if s < ns2_lost_at:
            t.hb(s, "a", {"T": 4}, ns=NS2)
        if rounds:
            lost = {NS2: ns2_lost_at} if s >= ns2_lost_at else {}
            t.round(s + 0.5, namesrvs=(NS1, NS2), unreached=lost)
        s += 10
    return t


def test_an_unreachable_namesrv_is_unknown_not_a_divergence() -> None:
    r = run(_two_namesrvs(300, ns2_lost_at=60, rounds=True))
    assert alerts(r) == [("NAMESRV_UNREACHABLE", "C", "None/None", 90.5, None)]
    (unreachable,) = final(r, "NAMESRV_UNREACHABLE")
    assert unreachable["evidence"] == {
        "collector": "collect-t",
        "unreachable_since": {NS2: ms(60)},
    }
    assert NS2 in unreachable["summary"] and "no divergence" in unreachable["summary"]


def test_a_namesrv_reached_again_resolves_its_alert() -> None:
    t = _two_namesrvs(120, ns2_lost_at=60, rounds=True)
    for s in (130.0, 140.0):
        t.hb(s, "a", {"T": 4}, ns=NS1)
        t.hb(s, "a", {"T": 4}, ns=NS2)
        t.round(s + 0.5, namesrvs=(NS1, NS2))
    r = run(t)
    assert alerts(r) == [("NAMESRV_UNREACHABLE", "C", "None/None", 90.5, 130.5)]


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
