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
