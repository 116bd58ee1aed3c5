"""NAMESRV_UNREACHABLE: a NameServer the cluster's collector has not reached for 30 s — what it
routes is unknown, and no divergence is judged against it — resolved when it is reached again."""

from __future__ import annotations

from streaming.engine.rules.namesrv_unreachable import REMEDY
from tests.streaming.engine.events import NS1, NS2, Trace, ms
from tests.streaming.engine.rules.support import alerts, expect, final, run, versions


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


def test_the_alert_in_full_opened_30_s_after_the_namesrv_was_lost_and_resolved_when_reached(
    batch_size: int | None,
) -> None:
    t = _two_namesrvs(80, ns2_lost_at=40, rounds=True)
    for s in (90.0, 100.0):
        t.hb(s, "a", {"T": 4}, ns=NS1)
        t.hb(s, "a", {"T": 4}, ns=NS2)
        t.round(s + 0.5, namesrvs=(NS1, NS2))

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "NAMESRV_UNREACHABLE",
            severity="warning",
            opened=70.5,
            resolved=90.5,
            summary=f"The collector of cluster C could not reach NameServer(s) {NS2} from "
            "2026-01-01T00:01:10.500Z; at 2026-01-01T00:01:30.500Z a round of collect-t reached "
            "every one.",
            evidence={
                "collector": "collect-t",
                "unreachable_since": {},
                "resolution": "every NameServer reached",
                "opened_with": {"collector": "collect-t", "unreachable_since": {NS2: ms(40)}},
            },
            remedy=REMEDY,
        )
    ]
    assert versions(run_, "NAMESRV_UNREACHABLE") == [
        ("open", 70.5, "warning", None),
        ("resolved", 90.5, "warning", None),
    ]


def test_a_namesrv_unreached_for_less_than_30_s_raises_none() -> None:
    assert alerts(run(_two_namesrvs(60, ns2_lost_at=40, rounds=True))) == []


NS3 = "10.0.0.102:9876"


def test_a_collector_restarted_while_a_namesrv_is_down_keeps_the_alert_open() -> None:
    """The restarted collector counts NS2's failures from its own start; routewatch keeps the
    earlier since (no round reached NS2 in between): one alert, not one resolved at the restart
    and another 30 s later (before 2026-12-07)."""
    t = _two_namesrvs(100, ns2_lost_at=40, rounds=True)  # opened at 70.5
    for s in (110.0, 120.0, 130.0, 140.0, 150.0):  # a new collector, started at 110 s
        t.hb(s, "a", {"T": 4}, ns=NS1)
        t.round(s + 0.5, namesrvs=(NS1, NS2), unreached={NS2: 110.5}, collector="collect-u")
    t.hb(160, "a", {"T": 4}, ns=NS1)
    t.hb(160, "a", {"T": 4}, ns=NS2)
    t.round(160.5, namesrvs=(NS1, NS2), collector="collect-u")

    r = run(t)

    assert alerts(r) == [("NAMESRV_UNREACHABLE", "C", "None/None", 70.5, 160.5)]
    changes = [a for a in r.cluster("C").alert_changes if a.kind == "NAMESRV_UNREACHABLE"]
    assert [a.evidence["unreachable_since"] for a in changes[:-1]] == [{NS2: ms(40)}] * 2
    assert [a.evidence["collector"] for a in changes[:-1]] == ["collect-t", "collect-u"]


def test_the_alert_stays_open_while_any_namesrv_is_unreached() -> None:
    """NS2 unreached from 40 s, NS3 from 80 s; NS2 is back at 90 s while NS3 has been unreached
    for 10 s: the alert names NS3 and stays open until a round reaches every NameServer."""
    t = Trace()
    for i in range(15):
        s = i * 10.0
        t.hb(s, "a", {"T": 4}, ns=NS1)
        unreached = {}
        if 40 <= s < 90:
            unreached[NS2] = 40.0
        if 80 <= s < 130:
            unreached[NS3] = 80.0
        t.round(s + 0.5, namesrvs=(NS1, NS2, NS3), unreached=unreached)

    r = run(t)

    assert alerts(r) == [("NAMESRV_UNREACHABLE", "C", "None/None", 70.5, 130.5)]
    assert [(state, at) for state, at, _, _ in versions(r, "NAMESRV_UNREACHABLE")] == [
        ("open", 70.5),
        ("open", 80.5),  # NS3 too
        ("open", 90.5),  # NS3 alone
        ("resolved", 130.5),
    ]
