"""COLLECTOR_SILENT: a cluster's collector that wrote no round for three of its intervals (at
least 30 s) — routewatch does not see the cluster — resolved by its first round back."""

from __future__ import annotations

from streaming.engine.rules.collector_silent import REMEDY
from tests.streaming.engine.events import Trace, ms
from tests.streaming.engine.rules.support import (
    alerts,
    collector_back,
    expect,
    final,
    run,
    versions,
    watched,
)


def test_a_gap_of_three_intervals_is_silent_until_the_collector_is_back(
    batch_size: int | None,
) -> None:
    t = watched(60)  # rounds every 10 s, the last at 60.5 s
    collector_back(t, 210, ("a", "b"))  # 150 s later, both brokers still there

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_) == [("COLLECTOR_SILENT", "C", "None/None", 90.5, 210.5)]
    assert final(run_) == [
        expect(
            "COLLECTOR_SILENT",
            severity="critical",
            opened=90.5,
            resolved=210.5,
            summary="The collector collect-t of cluster C wrote nothing from "
            "2026-01-01T00:01:00.500Z until collect-t wrote a round at 2026-01-01T00:03:30.500Z, "
            "150 s later.",
            evidence={
                "collector": "collect-t",
                "last_round": ms(60.5),
                "gap_ms": 150_000,
                "back_at": ms(210.5),
                "resolution": "collector back",
                "opened_with": {"collector": "collect-t", "last_round": ms(60.5)},
            },
            remedy=REMEDY,
        )
    ]
    assert versions(run_, "COLLECTOR_SILENT") == [
        ("open", 90.5, "critical", None),
        ("resolved", 210.5, "critical", None),
    ]


def test_a_collector_that_never_comes_back_stays_silent() -> None:
    t = watched(60)
    for i in range(40):  # another cluster's events carry the stream's time on
        t.hb(70 + i * 10, "x", {"T": 4}, cluster="D")

    assert alerts(run(t)) == [("COLLECTOR_SILENT", "C", "None/None", 90.5, None)]


def test_rounds_just_within_three_intervals_raise_none() -> None:
    t = Trace()
    for s in (0.0, 29.0, 58.0, 87.0):
        t.hb(s, "a", {"T": 4})
        t.round(s + 0.5)
    t.hb(100, "x", {"T": 4}, cluster="D")

    assert alerts(run(t)) == []


def test_a_slower_collector_is_silent_after_three_of_its_own_intervals() -> None:
    t = Trace()
    for s in (0.0, 60.0):
        t.hb(s, "a", {"T": 4})
        t.round(s + 0.5, interval_s=60)
    for s in range(70, 300, 10):  # another cluster's events carry the stream's time on
        t.hb(s, "x", {"T": 4}, cluster="D")

    # silent three minutes after its last round, not 30 s; the broker it last saw at 60 s is not
    # expired at 180 s: the collector's next look was due at 120.5 s and is 1.5 intervals late
    # from 150.5 s, so the expiry waits for it (before 2026-12-07 it opened BROKER_EXPIRED)
    assert alerts(run(t)) == [("COLLECTOR_SILENT", "C", "None/None", 240.5, None)]
