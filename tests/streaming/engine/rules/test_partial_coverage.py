"""PARTIAL_COVERAGE: an auto-created topic left on some of the cluster's masters, opened, updated
as k and n change, and resolved; topics made by hand and system topics raise none."""

from __future__ import annotations

import re
from typing import Any

from tests.streaming.engine.events import NS1, NS2, Trace, ms
from tests.streaming.engine.rules.support import (
    _auto_created_on_a_of_a_and_b,
    _s,
    alerts,
    create_remedy,
    expect,
    final,
    run,
    versions,
)

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


# -- a topic left on no broker ---------------------------------------------------------------------


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
                # c held T and expired (its BROKER_EXPIRED names T): what Alertmanager
                # inhibits this alert by while that one fires
                "expired_brokers_with_topic": ["c"],
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


def _coverage(
    k: int, n: int, with_: list[str], without: list[str], views: list[str], at: float
) -> dict[str, Any]:
    """PARTIAL_COVERAGE's evidence of T, observed auto-created at ``at``, no producer holding
    its template route."""
    return {
        "coverage": f"{k}/{n}",
        "brokers_with_topic": with_,
        "brokers_without_topic": without,
        "namesrv_views": {NS1: views} if views else {},
        "auto_created_at": ms(at),
        "auto_created_evidence": "observed",
        "producers_with_template_route": [],
    }


# -- every alert in full, opened and resolved ------------------------------------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


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
            summary="Auto-created topic T was on 1 of 2 brokers from 2026-01-01T00:00:03.000Z; "
            "from 2026-01-01T00:01:15.000Z every one of the 2 held it.",
            evidence={  # as it stands at the resolution, and as it opened
                **_coverage(2, 2, ["a", "b"], [], ["a", "b"], 0.5),
                "resolution": "on every writable broker",
                "opened_with": _coverage(1, 2, ["a"], ["b"], ["a"], 0.5),
            },
            remedy=create_remedy("T", 4),
        )
    ]
    assert versions(run_, "PARTIAL_COVERAGE") == [
        ("open", 3.0, "critical", None),
        ("resolved", 75.0, "critical", None),
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
            summary=f"Auto-created topic T is on 1 of 2 brokers (a) as NameServer {NS1} route "
            "it, and the others will not get it by themselves.",
            evidence={
                **_coverage(1, 2, ["a"], ["c"], ["a"], 1),
                "expired_brokers_with_topic": ["b"],
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
            summary="Auto-created topic T was on 1 of 2 brokers from 2026-01-01T00:00:03.000Z; "
            "from 2026-01-01T00:00:40.000Z the only one left held it.",
            evidence={
                **_coverage(1, 1, ["a"], [], ["a"], 0.5),
                "resolution": "on every writable broker",
                "opened_with": _coverage(1, 2, ["a"], ["b"], ["a"], 0.5),
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
            summary="Auto-created topic T was on 1 of 2 brokers from 2026-01-01T00:00:03.000Z; "
            "from 2026-01-01T00:03:00.000Z no writable broker was left to hold it.",
            evidence={
                **_coverage(0, 0, [], [], [], 0.5),
                "expired_brokers_with_topic": ["a"],  # (b, expired too, never held T)
                "resolution": "no writable broker left",
                "opened_with": _coverage(1, 2, ["a"], ["b"], ["a"], 0.5),
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


def test_a_master_routed_writable_by_one_namesrv_holds_the_topic_writable() -> None:
    """A write-permission wipe that reached NS2 alone routes b's topics read-only there (at a
    later registration than NS1's): producers that ask NS1 still send to b, so b holds T
    writable (any NameServer that routes it writable decides, unlike the queue counts) and is
    expected (read-only only where every NameServer routes it so): T is on 2 of 2."""
    t = Trace()
    for ns in (NS1, NS2):
        t.hb(0, "a", ns=ns)
        t.hb(0, "b", {"b": (1, 1, 6)}, ns=ns)
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.send(2, "T", broker="b", auto_created=True)
    for ns in (NS1, NS2):
        t.hb(1, "a", {"T": 4}, full=False, ns=ns)
        t.hb(2, "b", {"T": 4}, full=False, ns=ns)
    t.pull(3, "T", ["a", "b"])
    t.hb(10, "b", {"b": (1, 1, 6), "T": 4}, ns=NS1)
    t.hb(20, "b", {"b": (1, 1, 4), "T": (4, 4, 4)}, ns=NS2)  # wiped on NS2
    for ns in (NS1, NS2):
        t.hb(30, "a", {"T": 4}, ns=ns)
    t.hb(70, "a", {"T": 4}, ns=NS1)  # past T's 60 s of settling

    assert alerts(run(t)) == []
