"""QUEUE_SKEW: queue counts that differ across a topic's brokers (masters and slaves) or read from
write on one, through stale views, shutdowns and split registrations."""

from __future__ import annotations

from tests.streaming.engine.events import NS1, NS2, T0, Trace
from tests.streaming.engine.rules.support import alerts, expect, final, run, versions

# -- queue skew per broker ------------------------------------------------------------------------


def test_a_master_and_its_slave_with_different_counts_are_skewed(batch_size: int | None) -> None:
    t = Trace()
    t.hb(0, "a", {"T": 8})
    t.hb(0, "a", {"T": 4}, broker_id=1)

    run_ = run(t, batch_size=batch_size)

    assert alerts(run_) == [("QUEUE_SKEW", "C", "T", 0.0, None)]
    assert final(run_) == [
        expect(
            "QUEUE_SKEW",
            topic="T",
            severity="info",
            opened=0,
            summary="Topic T has uneven queues: write queues [4, 8] across brokers.",
            evidence={"brokers": {"a": {"read": 8, "write": 8}, "a/1": {"read": 4, "write": 4}}},
            remedy=f"`mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",
        )
    ]


def test_a_stale_view_on_one_namesrv_hides_no_skew() -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.hb(0, "a", {"T": 4}, ns=ns)
        t.hb(0, "b", {"T": 4}, ns=ns)
    t.hb(30, "a", {"T": 8}, ns=NS1)  # a's registration with 8 queues reaches NS1 only
    t.hb(30, "b", {"T": 4}, ns=NS1)
    t.hb(30, "b", {"T": 4}, ns=NS2)

    skew = alerts(run(t), "QUEUE_SKEW")

    assert skew == [("QUEUE_SKEW", "C", "T", 30.0, None)]


def test_the_registration_that_wrote_a_brokers_counts_last_decides() -> None:
    """b's immediate registration reaches NS2 alone with 16 queues; its next full registration
    rewrites 8 on NS1, whose table does not change: b's counts are 8 again."""
    t = Trace()
    for ns in (NS1, NS2):
        t.hb(0, "a", {"T": 8}, ns=ns)
        t.hb(0, "b", {"T": 8}, ns=ns)
    t.hb(10, "b", {"T": 16}, full=False, ns=NS2)
    t.hb(30, "a", {"T": 8}, ns=NS1)
    t.hb(30, "a", {"T": 8}, ns=NS2)
    t.hb(30, "b", {"T": 8}, ns=NS1)

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T", 10.0, 30.0)]


def test_an_older_table_on_the_namesrv_heard_last_does_not_decide() -> None:
    """(tests/cases/skew-counts-from-writing-registration.jsonl, shortened) b comes back to
    NS1, which still holds its table of 0 s, with the first part of a split registration: the
    counts of b's immediate registration on NS2 at 125 s still decide until the split completes
    with the same counts."""
    t = Trace()
    t.every(0, 120, 30, "a", topics={"T": 8}, ns=NS1)
    t.every(0, 120, 30, "a", topics={"T": 8}, ns=NS2)
    t.hb(0, "b", {"T": 8}, ns=NS1, dv="v0")  # b's last registration on NS1: off it at 120 s
    t.every(0, 90, 30, "b", topics={"T": 8}, ns=NS2, dv="v0")
    t.hb(125, "b", {"T": (1, 16, 6)}, full=False, ns=NS2, dv="v1")
    t.hb(130, "b", {"F": 4}, ns=NS1, dv="v1", part=0, parts=2)
    t.hb(130.001, "b", {"T": (1, 16, 6)}, ns=NS1, dv="v1", part=1, parts=2)

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T", 125.0, None)]


# -- a shutdown empties the table -----------------------------------------------------------------


def test_a_shutdown_empties_the_brokers_table() -> None:
    t = Trace()
    t.every(0, 60, 30, "a", topics={"T": 8})
    t.hb(0, "b", {"T": 4})  # skewed with a
    t.hb(10, "b", shutdown=True)
    t.hb(20, "b", {"U": 8}, full=False)  # back: an immediate registration names U only

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T", 0.0, 10.0)]


# -- split registrations --------------------------------------------------------------------------


def test_a_split_registration_completes_around_an_immediate_one() -> None:
    t = Trace()
    t.hb(0, "a", {"T1": 4}, dv="v1", part=0, parts=2)
    t.hb(0, "a", {"T2": 4}, dv="v1", part=1, parts=2)
    t.hb(0, "b", {"T3": 4})
    t.hb(30, "a", {"T1": 4}, dv="v1", part=0, parts=2)  # the same table sent again ...
    t.hb(30.5, "a", {"T3": 8}, full=False)  # ... an immediate registration between its parts
    t.hb(31, "a", {"T2": 4}, dv="v1", part=1, parts=2)  # completes: the table is v1's again

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T3", 30.5, 31.0)]


def test_a_split_registration_of_an_unchanged_table_keeps_it() -> None:
    t = Trace()
    t.hb(0, "a", {"T1": 4}, dv="v1", part=0, parts=2)
    t.hb(0, "a", {"T2": 8}, dv="v1", part=1, parts=2)
    t.hb(0, "b", {"T2": 4})
    t.hb(30, "a", {"T1": 4}, dv="v1", part=0, parts=2)
    t.hb(30, "a", {"T2": 8}, dv="v1", part=1, parts=2)
    t.hb(30, "b", {"T2": 4})

    run_ = run(t)

    assert alerts(run_) == [("QUEUE_SKEW", "C", "T2", 0.0, None)]
    assert [(c.topic, c.at - T0) for c in run_.cluster("C").route_changes if c.reg[1] == "a"] == [
        ("TBW102", 0),
        ("T1", 0),
        ("T2", 0),
    ]


# -- every alert in full, opened and resolved ------------------------------------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


def test_queue_skew_on_write_counts_resolves_when_the_counts_agree(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a", topics={"T": 8})
    t.hb(0, "b", {"T": 4})
    t.every(30, 60, 30, "b", topics={"T": 8})

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "QUEUE_SKEW",
            topic="T",
            severity="info",
            opened=0,
            resolved=30,
            summary="Topic T had uneven queues (write queues [4, 8]) from "
            "2026-01-01T00:00:00.000Z; from 2026-01-01T00:00:30.000Z its queue counts agreed.",
            evidence={
                "brokers": {"a": {"read": 8, "write": 8}, "b": {"read": 8, "write": 8}},
                "resolution": "counts agree",
                "opened_with": {
                    "brokers": {"a": {"read": 8, "write": 8}, "b": {"read": 4, "write": 4}}
                },
            },
            remedy=f"`mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",
        )
    ]


def test_queue_skew_on_read_and_write_resolves_when_no_live_broker_holds_the_topic(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "b")
    t.hb(0, "a", {"T": (8, 4, 6)})
    t.hb(30, "a", {"T": (8, 2, 6)})
    t.hb(40, "a", shutdown=True)

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "QUEUE_SKEW",
            topic="T",
            severity="info",
            opened=0,
            updated=40,
            resolved=40,
            summary="Topic T had uneven queues (write queues [2]) from 2026-01-01T00:00:00.000Z; "
            "from 2026-01-01T00:00:40.000Z no live broker held it.",
            evidence={
                "brokers": {},
                "resolution": "no live broker holds it",
                "opened_with": {"brokers": {"a": {"read": 8, "write": 4}}},
            },
            remedy=f"`mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",  # no read count lowered
        )
    ]
    assert versions(run_, "QUEUE_SKEW") == [
        ("open", 0.0, "info", None),
        ("open", 30.0, "info", None),  # new counts: updated in place
        ("resolved", 40.0, "info", None),
    ]
