"""TEMPLATE_MISSING: a broker with auto-creation on and no usable TBW102, judged on whole
registrations, in full, opened and resolved."""

from __future__ import annotations

from tests.streaming.engine.events import NS1, Trace, ms
from tests.streaming.engine.rules.support import expect, expired_remedy, final, run, versions


def template_remedy(broker: str) -> str:
    return (
        f"Restart broker {broker} ({broker}:10911) with autoCreateTopicEnable=true so that it "
        "recreates TBW102, or turn auto-creation off on purpose."
    )


# -- every alert in full, opened and resolved ------------------------------------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


def test_template_missing_resolves_on_a_full_registration_with_a_usable_tbw102(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.hb(0, "a", tbw=False, dv="v1")
    t.hb(10, "a", {"TBW102": (8, 8, 7)}, full=False)  # an immediate registration: not judged
    t.hb(30, "a", tbw=False, dv="v1")
    t.hb(60, "a", dv="v2")  # a full registration with a usable TBW102

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "TEMPLATE_MISSING",
            broker="a",
            broker_id=0,
            severity="warning",
            opened=0,
            resolved=60,
            summary="Broker a had autoCreateTopicEnable=true without a usable TBW102 (missing) "
            "from 2026-01-01T00:00:00.000Z; its full registration at 2026-01-01T00:01:00.000Z "
            f"on {NS1} carried a usable TBW102.",
            evidence={  # the registration that resolved it, and the one it opened with
                "namesrv": NS1,
                "auto_create_topic_enable": True,
                "tbw102": "usable",
                "data_version": "v2",
                "resolution": "usable TBW102",
                "opened_with": {
                    "namesrv": NS1,
                    "auto_create_topic_enable": True,
                    "tbw102": "missing",
                    "data_version": "v1",
                },
            },
            remedy=template_remedy("a"),
        )
    ]
    assert versions(run_, "TEMPLATE_MISSING") == [
        ("open", 0.0, "warning", None),
        ("resolved", 60.0, "warning", None),
    ]


def test_template_missing_without_inherit_resolves_when_auto_creation_is_turned_off(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a")
    t.hb(0, "a", {"TBW102": (8, 8, 6)}, broker_id=1, tbw=False, dv="v1")  # a slave's TBW102
    t.hb(30, "a", {"TBW102": (8, 8, 6)}, broker_id=1, tbw=False, auto=False, dv="v2")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "TEMPLATE_MISSING",
            broker="a",
            broker_id=1,
            severity="warning",
            opened=0,
            resolved=30,
            summary="Broker a had autoCreateTopicEnable=true without a usable TBW102 "
            "(no_inherit) from 2026-01-01T00:00:00.000Z; its full registration at "
            f"2026-01-01T00:00:30.000Z on {NS1} carried autoCreateTopicEnable=false.",
            evidence={
                "namesrv": NS1,
                "auto_create_topic_enable": False,
                "tbw102": "no_inherit",
                "data_version": "v2",
                "resolution": "auto-creation off",
                "opened_with": {
                    "namesrv": NS1,
                    "auto_create_topic_enable": True,
                    "tbw102": "no_inherit",
                    "data_version": "v1",
                },
            },
            remedy=template_remedy("a"),
        )
    ]


def test_template_missing_is_judged_on_a_whole_split_registration_and_outlives_the_broker(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 210, 30, "b")
    t.hb(0, "a", {"X": 4}, tbw=False, dv="v1", part=0, parts=2)
    t.hb(1, "a", {"Y": 4}, tbw=False, dv="v1", part=1, parts=2)  # complete: no TBW102
    # a falls silent: it expires at 121 s; TEMPLATE_MISSING stays open while it is gone
    t.hb(200, "a", dv="v2")  # back, with a usable TBW102

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "TEMPLATE_MISSING",
            broker="a",
            broker_id=0,
            severity="warning",
            opened=1,
            resolved=200,
            summary="Broker a had autoCreateTopicEnable=true without a usable TBW102 (missing) "
            "from 2026-01-01T00:00:01.000Z; its full registration at 2026-01-01T00:03:20.000Z "
            f"on {NS1} carried a usable TBW102.",
            evidence={
                "namesrv": NS1,
                "auto_create_topic_enable": True,
                "tbw102": "usable",
                "data_version": "v2",
                "resolution": "usable TBW102",
                "opened_with": {
                    "namesrv": NS1,
                    "auto_create_topic_enable": True,
                    "tbw102": "missing",
                    "data_version": "v1",
                },
            },
            remedy=template_remedy("a"),
        ),
        expect(
            "BROKER_EXPIRED",
            broker="a",
            broker_id=0,
            severity="critical",
            opened=121,
            resolved=200,
            summary="Broker a (id 0) was silent on every NameServer from "
            "2026-01-01T00:02:01.000Z; at 2026-01-01T00:03:20.000Z it registered again.",
            evidence={
                "last_heartbeat": ms(200),
                "addr": "a:10911",
                "namesrvs": [NS1],
                "topics_without_route": {"items": [], "count": 0},
                "system_topics": [],
                "resolution": "heartbeat received",
                "opened_with": {
                    "last_heartbeat": ms(1),
                    "addr": "a:10911",
                    "namesrvs": [NS1],
                    "topics_without_route": {"items": ["X", "Y"], "count": 2},
                    "system_topics": [],
                },
            },
            remedy=expired_remedy("a"),
        ),
    ]
    assert versions(run_, "TEMPLATE_MISSING") == [
        ("open", 1.0, "warning", None),
        ("resolved", 200.0, "warning", None),
    ]
