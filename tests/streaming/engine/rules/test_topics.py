"""An auto-created topic's life: how its auto-creation is known (observed, or inferred by the
broker side), its coverage settling after 60 s, and its forgetting after 7 idle days."""

from __future__ import annotations

from typing import Any

import pytest

from routewatch.alerts import alert_id
from tests.streaming.engine.events import NS1, Trace, ms
from tests.streaming.engine.rules.support import (
    DAY,
    _auto_created_on_a_of_a_and_b,
    _auto_created_on_both,
    _made_by_hand_on_a_only,
    alerts,
    create_remedy,
    expect,
    final,
    run,
    versions,
)

# -- PARTIAL_COVERAGE from the broker side alone: an auto-creation inferred ---------------------


# the command names the alert's own id (it opens at ``opened``)
INFERRED = (
    " (routewatch inferred the auto-creation from the topic's config, which a topic created "
    "by hand on these brokers alone can also have: if the placement is deliberate, silence "
    "this alert: `routewatch silence {id} --for 90d`.)"
)


STUCK_ON_A = (
    f"Auto-created topic T is on 1 of 2 brokers (a) as NameServer {NS1} route it, and the others "
    "will not get it by themselves"
)
# how the summary says an inferred auto-creation (observed: nothing)
HOW = {
    "observed": "",
    "inferred_while_watching": " (its auto-creation inferred from a config that appeared while "
    "routewatch watched)",
    "inferred_at_start": " (its auto-creation inferred from a config found on these brokers "
    "only when routewatch started)",
}


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
    this = alert_id(("PARTIAL_COVERAGE", "C", "T", None, None), ms(opened))
    return expect(
        "PARTIAL_COVERAGE",
        topic="T",
        severity="critical",
        opened=opened,
        summary=STUCK_ON_A + HOW[how] + ".",
        evidence={
            "coverage": "1/2",
            "brokers_with_topic": ["a"],
            "brokers_without_topic": ["b"],
            "namesrv_views": {NS1: ["a"]},
            "auto_created_at": ms(auto_created),
            "auto_created_evidence": how,
            "producers_with_template_route": [],
        },
        remedy=create_remedy("T", 4) + ("" if how == "observed" else INFERRED.format(id=this)),
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


# -- an auto-created topic's coverage settles 60 s after its auto-creation -------------------------


def test_partial_coverage_settles_60_s_after_auto_creation_and_resolves_at_risk(
    batch_size: int | None,
) -> None:
    t = _auto_created_on_a_of_a_and_b()  # the producer never refreshes its route

    run_ = run(t, batch_size=batch_size)

    at_risk = {
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
    }
    assert final(run_) == [
        expect(
            "AT_RISK",
            topic="T",
            severity="warning",
            opened=6,  # the condition holds from 1 s, + 5 s
            resolved=60.5,
            summary="Topic T was on 1 of the 2 brokers its producers' template route covered "
            "from 2026-01-01T00:00:06.000Z; PARTIAL_COVERAGE took over at "
            "2026-01-01T00:01:00.500Z.",
            evidence={
                **at_risk,
                "resolution": "partial coverage opened",
                "opened_with": at_risk,
            },
            remedy=create_remedy("T", 4),
        ),
        expect(
            "PARTIAL_COVERAGE",
            topic="T",
            severity="critical",
            opened=60.5,  # auto-created at 0.5 s, + 60 s
            summary=STUCK_ON_A + "; producer p1 still holds its template route.",
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


# -- an idle auto-created topic is forgotten after 7 days ----------------------------------------


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
