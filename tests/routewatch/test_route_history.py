"""A topic's route as the console draws it (routewatch/store/views/route_history.py), on literal
interval rows: the matrix now, each change at its instant, the NameServers' agreement, how long
each change took to converge, a broker's live spans."""

from __future__ import annotations

from typing import Any

from routewatch.store.views.route_history import (
    Cell,
    Change,
    changes,
    episodes,
    intervals,
    live_spans,
    matrix,
)

NS1, NS2 = "ns1:9876", "ns2:9876"


def _row(
    ns: str, broker: str, start: int, end: int | None, *, q: int = 4, perm: int = 6, bid: int = 0
) -> dict[str, Any]:
    return {
        "namesrv": ns,
        "broker": broker,
        "broker_id": bid,
        "read_queue_nums": q,
        "write_queue_nums": q,
        "perm": perm,
        "valid_from": start,
        "valid_to": end,
    }


# a on both NameServers from 10; b reaches ns1 at 20, ns2 at 25; b's counts change on ns1 at 40
# (8 queues); a's write permission is wiped on ns2 at 50; b leaves ns2 at 60.
ROWS = [
    _row(NS1, "a", 10, None),
    _row(NS2, "a", 10, 50),
    _row(NS2, "a", 50, None, perm=4),
    _row(NS1, "b", 20, 40),
    _row(NS1, "b", 40, None, q=8),
    _row(NS2, "b", 25, 60),
]


def test_the_matrix_is_each_namesrvs_open_entry_with_its_start() -> None:
    now = matrix(intervals(ROWS))
    assert now == {
        NS1: {("a", 0): Cell(4, 4, 6, 10), ("b", 0): Cell(8, 8, 6, 40)},
        NS2: {("a", 0): Cell(4, 4, 4, 50)},
    }
    assert now[NS2]["a", 0].writable is False and now[NS1]["a", 0].writable is True


def test_every_change_at_its_instant_and_the_namesrvs_agreement() -> None:
    found = changes(intervals(ROWS), [NS1, NS2], 0, 100)
    assert [(c.at, c.what, c.namesrv, c.broker) for c in found] == [
        (10, "gained", NS1, "a"),
        (10, "gained", NS2, "a"),
        (20, "gained", NS1, "b"),
        (20, "diverged", None, None),  # ns1 routes it to a and b, ns2 to a
        (25, "gained", NS2, "b"),
        (25, "agreed", None, None),
        (40, "changed", NS1, "b"),
        (40, "diverged", None, None),  # b's 8 queues on ns1, 4 on ns2: apart
        (50, "changed", NS2, "a"),
        (60, "lost", NS2, "b"),
    ]
    (counts,) = [c for c in found if c.what == "changed" and c.broker == "b"]
    assert (counts.before, counts.after) == ((4, 4, 6), (8, 8, 6))
    (apart,) = [c for c in found if c.at == 40 and c.what == "diverged"]
    assert apart.views == {NS1: ["a", "b"], NS2: ["a", "b"]}  # (the same brokers)


def test_a_range_shows_its_changes_only_and_starts_from_the_agreement_before_it() -> None:
    found = changes(intervals(ROWS), [NS1, NS2], 22, 61)
    # diverged at 20, before the range: agreeing again at 25 is a change of the range
    assert [(c.at, c.what) for c in found][:2] == [(25, "gained"), (25, "agreed")]
    assert all(22 <= c.at < 61 for c in found)


def test_a_namesrv_that_does_not_route_the_topic_is_not_alike() -> None:
    # ns2 is one of the cluster's NameServers but never routes the topic
    found = changes(intervals([_row(NS1, "a", 10, None)]), [NS1, NS2], 0, 100)
    assert [(c.at, c.what) for c in found] == [(10, "gained"), (10, "diverged")]


def test_a_restart_with_the_same_entry_is_no_change() -> None:
    rows = [_row(NS1, "a", 10, 30), _row(NS1, "a", 30, None)]
    assert changes(intervals(rows), [NS1], 0, 100) == [
        Change(10, "gained", NS1, "a", 0, None, (4, 4, 6))
    ]


def test_live_spans_are_the_union_of_a_brokers_intervals_per_namesrv() -> None:
    found = [(NS1, 0, 50), (NS1, 10, 30), (NS1, 50, None), (NS2, 0, 20), (NS2, 40, 70)]
    assert live_spans(found, 5, 100) == {NS1: [(5, None)], NS2: [(5, 20), (40, 70)]}
    assert live_spans(found, 25, 35) == {NS1: [(25, None)]}


def test_how_long_each_route_change_took_to_converge() -> None:
    found = intervals(ROWS)
    # apart 20-25 (b on ns1 first): converged in 5; apart from 40 on, still at the end
    assert episodes(found, [NS1, NS2], 0, 100) == ([0, 5], 40)
    # (a on both at 10: converged at once) ... only what converged in the range counts
    assert episodes(found, [NS1, NS2], 21, 100) == ([5], 40)
    assert episodes(found, [NS1, NS2], 26, 100) == ([], 40)
    # b's counts changed on ns2 too at 45: converged 5 after
    more = [r for r in ROWS if not (r["namesrv"] == NS2 and r["broker"] == "b")]
    more += [_row(NS2, "b", 25, 45), _row(NS2, "b", 45, None, q=8)]
    assert episodes(intervals(more), [NS1, NS2], 0, 100) == ([0, 5, 5], 50)


def test_a_change_everywhere_at_once_converged_at_once() -> None:
    rows = [_row(NS1, "a", 10, None), _row(NS2, "a", 10, None)]
    assert episodes(intervals(rows), [NS1, NS2], 0, 100) == ([0], None)
