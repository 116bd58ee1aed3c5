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
            summary=f"The collector of cluster C cannot reach NameServer {NS2} (since "
            "2026-01-01T00:00:40.000Z): what it routes is unknown, and no divergence is judged "
            "against it.",
            evidence={"collector": "collect-t", "unreachable_since": {NS2: ms(40)}},
            remedy=REMEDY,
        )
    ]
    assert versions(run_, "NAMESRV_UNREACHABLE") == [
        ("open", 70.5, "warning", None),
        ("resolved", 90.5, "warning", None),
    ]


def test_a_namesrv_unreached_for_less_than_30_s_raises_none() -> None:
    assert alerts(run(_two_namesrvs(60, ns2_lost_at=40, rounds=True))) == []
