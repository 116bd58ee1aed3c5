"""NO_ROUTE_INFO: failed sends of a topic (a proxy's misses too), every cause, and both
resolutions, with the order of a failure and a success in the same millisecond."""

from __future__ import annotations

from typing import Any

import pytest

from routewatch.alerts import NoRouteCause
from streaming.engine.runner import StreamRun
from tests.streaming.engine.events import NS1, NS2, Trace, ms
from tests.streaming.engine.rules.support import DAY, alerts, expect, final, run, versions

# -- same-millisecond order -----------------------------------------------------------------------


def test_a_failure_after_the_resolving_success_in_the_same_millisecond_reopens() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(1, "T", "NO_ROUTE_INFO", seq=1)
    t.send(5, "T", "SEND_OK", "a", seq=2)
    t.send(5, "T", "NO_ROUTE_INFO", seq=3)

    assert alerts(run(t)) == [
        ("NO_ROUTE_INFO", "C", "T", 1.0, 5.0),
        ("NO_ROUTE_INFO", "C", "T", 5.0, None),
    ]


def test_a_failure_in_the_millisecond_of_the_success_without_seq_does_not_reopen() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(1, "T", "NO_ROUTE_INFO")
    t.send(5, "T", "SEND_OK", "a")
    t.send(5, "T", "NO_ROUTE_INFO")  # not later than the success in (ts, seq) order

    assert alerts(run(t)) == [("NO_ROUTE_INFO", "C", "T", 1.0, 5.0)]


# -- gRPC clients' misses, through a proxy ---------------------------------------------------------


def _cause(run_: StreamRun) -> str | None:
    (alert,) = [a for a in run_.final_alerts() if a.kind == "NO_ROUTE_INFO"]
    return alert.cause


def test_a_proxys_route_miss_is_no_route_info_of_a_topic_nobody_created() -> None:
    t = Trace()
    t.every(0, 240, 30, "a")  # auto-creation on, TBW102 reported: gRPC clients do not use it
    t.proxy_miss(5, "T")
    t.proxy_miss(27, "T", thread="GrpcRouteThreadPool-1")  # one line per cache refresh (20 s)
    # nothing after 27 s: the proxy no longer finds it missing (made, or nobody asks)
    proxy = "proxy-1:/logs/broker_default.log"

    assert final(run(t), "NO_ROUTE_INFO") == [
        expect(
            "NO_ROUTE_INFO",
            topic="T",
            severity="critical",
            opened=5,
            resolved=147,
            cause="GRPC_NOT_CREATED",
            summary=f"Sends of topic T through proxy {proxy} found no route 2 time(s) "
            "(TOPIC_NOT_FOUND 2) from 2026-01-01T00:00:05.000Z to 2026-01-01T00:00:27.000Z, "
            "cause GRPC_NOT_CREATED; none came for 120 s after 2026-01-01T00:00:27.000Z.",
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(27),
                "failures": 2,
                "statuses": {"TOPIC_NOT_FOUND": 2},
                "clients": [proxy],
                "create_topic_key": None,
                "resolution": "quiet for 120 s",
                "opened_with": {**_first(5, "TOPIC_NOT_FOUND", proxy), "create_topic_key": None},
            },
            remedy="Create the topic (gRPC clients never auto-create one): "
            f"`mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",
        )
    ]


def test_a_proxys_route_miss_with_no_live_broker_says_so() -> None:
    t = Trace()
    t.hb(0, "a")
    t.proxy_miss(130, "T")  # a expired at 120 s

    assert _cause(run(t)) == "NO_LIVE_BROKER"


# -- split registrations --------------------------------------------------------------------------


def test_causes_come_from_the_latest_complete_registration() -> None:
    t = Trace()
    t.hb(0, "a", auto=False, tbw=False, dv="v1")
    # part 0 of 2 of a new table says auto-creation is on; part 1 never arrives
    t.hb(10, "a", {"X": 4}, auto=True, tbw=False, dv="v2", part=0, parts=2)
    t.send(15, "T", "NO_ROUTE_INFO")

    assert _cause(run(t)) == "AUTO_CREATE_DISABLED"


def test_a_brokers_cause_comes_from_its_complete_registration_on_another_namesrv() -> None:
    """(tests/cases/cause-per-broker-split.jsonl) NS1 holds only the first part of a's split
    registration, NS2 all of it: a's latest full registration says auto-creation is off."""
    t = Trace()
    t.hb(0, "a", {"L": 4}, auto=False, tbw=False, dv="v1", part=0, parts=2, ns=NS1)
    t.hb(0, "a", {"L": 4}, auto=False, tbw=False, dv="v1", part=0, parts=2, ns=NS2)
    t.hb(0.001, "a", {"O": 4}, auto=False, tbw=False, dv="v1", part=1, parts=2, ns=NS2)
    t.send(5, "T", "NO_ROUTE_INFO")

    assert _cause(run(t)) == "AUTO_CREATE_DISABLED"


def test_a_brokers_latest_full_registration_decides_not_an_older_one_elsewhere() -> None:
    """a said auto-creation on (and no TBW102) to both NameServers, then off to NS2 alone: its
    latest full registration says off, so the cause is not TEMPLATE_MISSING."""
    t = Trace()
    t.hb(0, "a", auto=True, tbw=False, ns=NS1)
    t.hb(0, "a", auto=True, tbw=False, ns=NS2)
    t.hb(30, "a", auto=False, tbw=False, ns=NS2)
    t.send(35, "T", "NO_ROUTE_INFO")

    assert _cause(run(t)) == "AUTO_CREATE_DISABLED"


# -- every cause, and both resolutions -------------------------------------------------------------


def _no_route(
    *,
    cause: NoRouteCause,
    opened: float,
    updated: float | None = None,
    resolved: float | None = None,
    summary: str | None = None,
    evidence: dict[str, Any],
    remedy: str,
) -> dict[str, Any]:
    """NO_ROUTE_INFO of T in full; a resolved one's ``summary`` is given (in the past tense),
    and its ``evidence`` holds ``opened_with``."""
    return expect(
        "NO_ROUTE_INFO",
        topic="T",
        severity="critical",
        opened=opened,
        updated=updated,
        resolved=resolved,
        cause=cause,
        summary=summary
        or f'Sends of topic T fail with "No route info of this topic" (cause: {cause}).',
        evidence=evidence,
        remedy=remedy,
    )


def _first(at: float, status: str, client: str, key: str = "TBW102") -> dict[str, Any]:
    """The evidence of NO_ROUTE_INFO as its first failure opened it."""
    return {
        "first_failure": ms(at),
        "last_failure": ms(at),
        "failures": 1,
        "statuses": {status: 1},
        "clients": [client],
        "create_topic_key": key,
    }


def test_no_route_info_no_namesrv_by_status_resolves_when_a_send_succeeds(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a")
    t.send(5, "T", "NO_NAMESRV", client="p1")
    t.send(8, "T", "NO_NAMESRV", client="p2")
    t.send(12, "T", "SEND_OK", "a")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="NO_NAMESRV",
            opened=5,
            resolved=12,
            summary="Sends of topic T found no route 2 time(s) (NO_NAMESRV 2) from "
            "2026-01-01T00:00:05.000Z to 2026-01-01T00:00:08.000Z, cause NO_NAMESRV; a send "
            "succeeded at 2026-01-01T00:00:12.000Z.",
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(8),
                "failures": 2,
                "statuses": {"NO_NAMESRV": 2},
                "clients": ["p1", "p2"],
                "create_topic_key": "TBW102",
                "resolution": "a send succeeded",
                "opened_with": _first(5, "NO_NAMESRV", "p1"),
            },
            remedy="Set the client's NameServer address (namesrvAddr).",
        )
    ]
    assert versions(run_, "NO_ROUTE_INFO") == [
        ("open", 5.0, "critical", "NO_NAMESRV"),
        ("open", 8.0, "critical", "NO_NAMESRV"),
        ("resolved", 12.0, "critical", "NO_NAMESRV"),
    ]


def test_no_route_info_no_namesrv_by_pull_then_unknown_resolves_after_120_s_quiet(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 150, 30, "a")  # auto-creation on, TBW102 usable
    t.pull(4, "T", [], result="NO_NAMESRV", namesrv=None)
    t.send(5, "T", "NO_ROUTE_INFO")  # the client's latest pull said NO_NAMESRV
    t.pull(10, "T", [], result="TOPIC_NOT_EXIST")  # it has a NameServer again
    t.send(11, "T", "NO_ROUTE_INFO")  # no cause matches: UNKNOWN

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="UNKNOWN",
            opened=5,
            resolved=131,  # the last failure + 120 s
            summary="Sends of topic T found no route 2 time(s) (NO_ROUTE_INFO 2) from "
            "2026-01-01T00:00:05.000Z to 2026-01-01T00:00:11.000Z, cause UNKNOWN; none came for "
            "120 s after 2026-01-01T00:00:11.000Z.",
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(11),
                "failures": 2,
                "statuses": {"NO_ROUTE_INFO": 2},
                "clients": ["p1"],
                "create_topic_key": "TBW102",
                "resolution": "quiet for 120 s",
                "opened_with": _first(5, "NO_ROUTE_INFO", "p1"),
            },
            remedy="Check the client's NameServer address and the topic's route.",
        )
    ]
    assert versions(run_, "NO_ROUTE_INFO") == [
        ("open", 5.0, "critical", "NO_NAMESRV"),
        ("open", 11.0, "critical", "UNKNOWN"),  # a changed cause updates the open alert
        ("resolved", 131.0, "critical", "UNKNOWN"),
    ]


@pytest.mark.parametrize(("days", "cause"), [(6.9, "NO_NAMESRV"), (7.1, "NO_LIVE_BROKER")])
def test_a_clients_no_namesrv_pull_decides_the_cause_for_7_days(
    batch_size: int | None, days: float, cause: str
) -> None:
    # The client's pull said it has no NameServer address; its failure 7 days later is judged
    # as if that pull had never been (a restarted application is a new client id).
    t = Trace()
    t.hb(0, "a")
    t.pull(4, "T", [], result="NO_NAMESRV", namesrv=None)
    at = 4 + days * DAY
    t.send(at, "T", "NO_ROUTE_INFO")  # a has long expired

    run_ = run(t, batch_size=batch_size)

    assert [a.cause for a in run_.final_alerts() if a.kind == "NO_ROUTE_INFO"] == [cause]


def test_no_route_info_no_live_broker(batch_size: int | None) -> None:
    t = Trace()
    t.hb(0, "a")  # expires at 120 s
    t.send(130, "T", "NO_ROUTE_INFO")
    t.every(0, 270, 30, "d", cluster="D")  # the stream's clock goes on

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "NO_ROUTE_INFO") == [
        _no_route(
            cause="NO_LIVE_BROKER",
            opened=130,
            resolved=250,
            summary="Sends of topic T found no route 1 time(s) (NO_ROUTE_INFO 1) from "
            "2026-01-01T00:02:10.000Z to 2026-01-01T00:02:10.000Z, cause NO_LIVE_BROKER; none "
            "came for 120 s after 2026-01-01T00:02:10.000Z.",
            evidence={
                **_first(130, "NO_ROUTE_INFO", "p1"),
                "resolution": "quiet for 120 s",
                "opened_with": _first(130, "NO_ROUTE_INFO", "p1"),
            },
            remedy="Bring a broker of the cluster back.",
        )
    ]


def test_no_route_info_create_topic_key_mismatch(batch_size: int | None) -> None:
    t = Trace()
    t.every(0, 150, 30, "a")  # reports TBW102
    t.send(5, "T", "NO_ROUTE_INFO", default_topic="AUTO_CREATE_TOPIC_KEY")  # a 4.3.0 client

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="CREATE_TOPIC_KEY_MISMATCH",
            opened=5,
            resolved=125,
            summary="Sends of topic T found no route 1 time(s) (NO_ROUTE_INFO 1) from "
            "2026-01-01T00:00:05.000Z to 2026-01-01T00:00:05.000Z, cause "
            "CREATE_TOPIC_KEY_MISMATCH; none came for 120 s after 2026-01-01T00:00:05.000Z.",
            evidence={
                **_first(5, "NO_ROUTE_INFO", "p1", "AUTO_CREATE_TOPIC_KEY"),
                "resolution": "quiet for 120 s",
                "opened_with": _first(5, "NO_ROUTE_INFO", "p1", "AUTO_CREATE_TOPIC_KEY"),
            },
            remedy="Align the client's createTopicKey (AUTO_CREATE_TOPIC_KEY) with TBW102 "
            "(upgrade a 4.3.0 client).",
        )
    ]


def test_no_route_info_auto_create_disabled(batch_size: int | None) -> None:
    t = Trace()
    for ns in (NS1, NS2):
        t.hb(0, "a", ns=ns, auto=False, tbw=False)
    t.send(5, "T", "NO_ROUTE_INFO", client="p2")
    t.send(6, "T", "NO_ROUTE_INFO", client="p1")
    for ns in (NS1, NS2):
        t.hb(20, "a", {"T": 8}, ns=ns, auto=False, tbw=False)  # T created by hand
    t.send(21, "T", "SEND_OK", "a")

    run_ = run(t, batch_size=batch_size)

    assert final(run_) == [
        _no_route(
            cause="AUTO_CREATE_DISABLED",
            opened=5,
            resolved=21,
            summary="Sends of topic T found no route 2 time(s) (NO_ROUTE_INFO 2) from "
            "2026-01-01T00:00:05.000Z to 2026-01-01T00:00:06.000Z, cause AUTO_CREATE_DISABLED; "
            "a send succeeded at 2026-01-01T00:00:21.000Z.",
            evidence={
                "first_failure": ms(5),
                "last_failure": ms(6),
                "failures": 2,
                "statuses": {"NO_ROUTE_INFO": 2},
                "clients": ["p1", "p2"],
                "create_topic_key": "TBW102",
                "resolution": "a send succeeded",
                "opened_with": _first(5, "NO_ROUTE_INFO", "p2"),
            },
            remedy=f"Create the topic: `mqadmin updateTopic -n '{NS1};{NS2}' -c C -t T -r 8 -w 8`",
        )
    ]


def test_no_route_info_template_missing_resolves_on_any_delivered_status(
    batch_size: int | None,
) -> None:
    t = Trace()
    t.every(0, 60, 30, "a", tbw=False)  # auto-creation on, no TBW102
    t.send(5, "T", "NO_ROUTE_INFO")
    t.send(9, "T", "FLUSH_DISK_TIMEOUT", "a")  # delivered

    run_ = run(t, batch_size=batch_size)

    assert final(run_, "NO_ROUTE_INFO") == [
        _no_route(
            cause="TEMPLATE_MISSING",
            opened=5,
            resolved=9,
            summary="Sends of topic T found no route 1 time(s) (NO_ROUTE_INFO 1) from "
            "2026-01-01T00:00:05.000Z to 2026-01-01T00:00:05.000Z, cause TEMPLATE_MISSING; a "
            "send succeeded at 2026-01-01T00:00:09.000Z.",
            evidence={
                **_first(5, "NO_ROUTE_INFO", "p1"),
                "resolution": "a send succeeded",
                "opened_with": _first(5, "NO_ROUTE_INFO", "p1"),
            },
            remedy="Restore TBW102: restart the brokers with autoCreateTopicEnable=true, or "
            f"create the topic: `mqadmin updateTopic -n {NS1} -c C -t T -r 8 -w 8`",
        )
    ]
