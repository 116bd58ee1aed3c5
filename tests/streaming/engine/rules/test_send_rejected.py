"""SEND_REJECTED: brokers refusing sends of a topic with TOPIC_NOT_EXIST, in full, opened and
resolved after 120 s without a refusal."""

from __future__ import annotations

from tests.streaming.engine.events import NS1, Trace, ms
from tests.streaming.engine.rules.support import expect, final, run, versions

# -- every alert in full, opened and resolved ------------------------------------------------------
#
# Every trace below is written by hand with explicit times; every alert it ends with is asserted
# field by field, and each test runs over the whole input at once and one event per batch.


def test_send_rejected_is_not_resolved_by_a_success_and_resolves_after_120_s_quiet(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 150, 30, "a", auto=False)  # a stale, usable TBW102 on brokers with
    t.every(0, 150, 30, "b", auto=False)  # auto-creation off: they refuse the sends
    t.send(5, "T", "TOPIC_NOT_EXIST", "a")
    t.send(6, "T", "TOPIC_NOT_EXIST", "b")
    t.send(7, "T", "TOPIC_NOT_EXIST", "a")
    t.send(10, "T", "SEND_OK", "b")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        expect(
            "SEND_REJECTED",
            topic="T",
            severity="warning",
            opened=5,
            resolved=127,  # the last refusal + 120 s
            summary="Broker(s) a, b refused sends of topic T with TOPIC_NOT_EXIST 3 time(s) from "
            "2026-01-01T00:00:05.000Z to 2026-01-01T00:00:07.000Z; none came for 120 s after "
            "2026-01-01T00:00:07.000Z.",
            evidence={
                "first_refusal": ms(5),
                "last_refusal": ms(7),
                "refusals": 3,
                "brokers": {"a": 2, "b": 1},
                "resolution": "quiet for 120 s",
                "opened_with": {
                    "first_refusal": ms(5),
                    "last_refusal": ms(5),
                    "refusals": 1,
                    "brokers": {"a": 1},
                },
            },
            remedy=f"Create T on a, b (`mqadmin updateTopic -n {NS1} -b a:10911 -t T`, "
            f"`mqadmin updateTopic -n {NS1} -b b:10911 -t T`), or remove the stale TBW102 "
            "from a, b.",
        )
    ]
    assert versions(run_, "SEND_REJECTED") == [
        ("open", 5.0, "warning", None),
        ("open", 6.0, "warning", None),
        ("open", 7.0, "warning", None),
        ("resolved", 127.0, "warning", None),
    ]
