"""The collector-added rules at their thresholds, to the millisecond: 1 ms before, at it, and at
it with an event in the same millisecond (docs/alerts.md, "One millisecond, in four steps").

COLLECTOR_SILENT's threshold is the collector's liveness (after the events of its millisecond);
NAMESRV_UNREACHABLE's 30 s are judged at rounds, inclusive; an expiry in a watched cluster waits
once the collector's last look is more than one and a half of its intervals old; STALE_ROUTE
ends with the stale registration's liveness."""

from __future__ import annotations

import pytest

from tests.streaming.engine.events import NS1, NS2, Trace
from tests.streaming.engine.rules.support import alerts, run

# -- COLLECTOR_SILENT: last round + three intervals (at least 30 s) ------------------------------


def _rounds_until_60_5() -> Trace:
    """Rounds every 10 s, the last at 60.5 s: the collector is silent from 90.5 s."""
    t = Trace()
    for i in range(7):
        t.hb(i * 10.0, "a", {"T": 4})
        t.round(i * 10.0 + 0.5)
    return t


@pytest.mark.parametrize(
    ("end", "round_at", "expected"),
    [
        (90.499, None, []),  # the input ends 1 ms before: not silent yet
        (90.5, None, [("COLLECTOR_SILENT", "C", "None/None", 90.5, None)]),  # an event at it
        (100.0, None, [("COLLECTOR_SILENT", "C", "None/None", 90.5, None)]),  # none at it
        (100.0, 90.5, []),  # a round at it: the collector watches through its threshold
        (100.0, 90.499, []),  # a round 1 ms before
    ],
)
def test_collector_silent_at_its_threshold(
    end: float, round_at: float | None, expected: list[tuple[object, ...]]
) -> None:
    t = _rounds_until_60_5()
    if round_at is not None:
        t.round(round_at)
    t.hb(end, "x", {"T": 4}, cluster="D")  # another cluster's event moves the stream's time

    assert alerts(run(t), "COLLECTOR_SILENT") == expected


# -- NAMESRV_UNREACHABLE: 30 s, at rounds ----------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "with_event", "opened"),
    [(69.999, False, None), (70.0, False, 70.0), (70.0, True, 70.0), (69.999, True, None)],
)
def test_namesrv_unreachable_at_30_s(at: float, with_event: bool, opened: float | None) -> None:
    """NS2 unreached since 40 s; the round at ``at`` is the first to find it 30 s old or not."""
    t = Trace()
    for s in (0.0, 10.0, 20.0, 30.0):
        t.hb(s, "a", {"T": 4}, ns=NS1)
        t.round(s + 0.5, namesrvs=(NS1, NS2))
    for s in (40.0, 50.0, 60.0):
        t.hb(s, "a", {"T": 4}, ns=NS1)
        t.round(s, namesrvs=(NS1, NS2), unreached={NS2: 40.0})
    if with_event:
        t.hb(at, "a", {"T": 4}, ns=NS1)
    t.round(at, namesrvs=(NS1, NS2), unreached={NS2: 40.0})

    expected = [] if opened is None else [("NAMESRV_UNREACHABLE", "C", "None/None", opened, None)]
    assert alerts(run(t)) == expected


# -- BROKER_EXPIRED while the collector is behind ----------------------------------------------


@pytest.mark.parametrize(
    ("last_look", "expired"),
    [(105.001, True), (105.0, True), (104.999, False)],
    ids=["14.999-s-after", "15-s-after", "15.001-s-after"],
)
@pytest.mark.parametrize("with_event", [False, True])
def test_an_expiry_waits_once_the_last_look_is_one_and_a_half_intervals_old(
    last_look: float, expired: bool, with_event: bool
) -> None:
    """b's last heartbeat at 0 s: it expires at 120 s. Rounds every 10 s (a renewed at each)
    until ``last_look``, then none: at 120 s the collector is behind when its last look is more
    than 15 s old, and b's expiry then waits for a look that never comes."""
    t = Trace()
    t.hb(0, "b", {"T": 4})
    for s in [i * 10.0 + 5 for i in range(10)] + [last_look]:
        t.hb(s, "a", {"T": 4})
        t.round(s)
    if with_event:
        t.hb(120, "x", {"T": 4}, cluster="D")
    t.hb(200, "x", {"T": 4}, cluster="D")

    silent = ("COLLECTOR_SILENT", "C", "None/None", last_look + 30, None)
    broker = [("BROKER_EXPIRED", "C", "b/0", 120.0, None)] if expired else []
    assert alerts(run(t)) == [*broker, silent]


# -- STALE_ROUTE: until the stale registration expires ---------------------------------------------


@pytest.mark.parametrize(
    ("end", "event", "expected"),
    [
        (119.999, "other", [("STALE_ROUTE", "C", "T", 0.0, None)]),
        (
            120.0,
            "other",
            [("BROKER_EXPIRED", "C", "b/0", 120.0, None), ("STALE_ROUTE", "C", "T", 0.0, 120.0)],
        ),
        (120.0, "renewal", [("STALE_ROUTE", "C", "T", 0.0, None)]),  # b renewed at its expiry
    ],
)
def test_stale_route_until_its_registration_expires(
    end: float, event: str, expected: list[tuple[object, ...]]
) -> None:
    """NS1 routes T to b, whose own table lacks it; b's last registration at 0 s, so it is live
    through 120 s: a renewal stamped 120 s keeps it (and its stale route)."""
    t = Trace()
    t.every(0, 90, 30, "a", topics={"T": 4})
    t.hb(0, "b", {"T": 4}, not_held=("T",))
    if event == "renewal":
        t.hb(end, "b", {"T": 4}, not_held=("T",))
    else:
        t.hb(end, "a", {"T": 4})

    assert sorted(alerts(run(t)), key=lambda a: (a[0], a[3])) == sorted(
        expected, key=lambda a: (a[0], a[3])
    )
