"""Each kind's plan (docs/alerts.md, "Remedies as plans"), in full, from the engine: what it does,
what it assumes and what it will not do. The rule tests compare everything else of an alert;
the shell form of every action of every scenario runs through ``bash -c`` in
``tests/streaming/engine/test_remedies.py``."""

from __future__ import annotations

from typing import Any

from tests.streaming.engine.events import NS1, NS2, Trace
from tests.streaming.engine.rules.support import (
    _auto_created_on_a_of_a_and_b,
    run,
    watched,
)


def _plan(trace: Trace, kind: str) -> dict[str, Any]:
    (alert,) = [a for a in run(trace).final_alerts() if a.kind == kind]
    assert alert.plan is not None
    return alert.plan


def _create(broker: str, topic: str, q: tuple[int, int], perm: int, changes: str) -> dict[str, Any]:
    return {
        "type": "action",
        "op": "create_topic",
        "broker": broker,
        "addr": f"{broker}:10911",
        "namesrv": None,
        "topic": topic,
        "read_queues": q[0],
        "write_queues": q[1],
        "perm": perm,
        "changes": changes,
        "loses": None,
        "shell": f"mqadmin updateTopic -n {NS1} -b {broker}:10911 -t {topic} -r {q[0]} -w {q[1]} "
        f"-p {perm}",
    }


def test_partial_coverage_makes_the_topic_on_each_master_without_it() -> None:
    plan = _plan(_auto_created_on_a_of_a_and_b(), "PARTIAL_COVERAGE")
    assert plan == {
        "namesrvs": [NS1],
        "expects": {"topic": "T", "routed": {"a": "writable", "b": None}, "held": {"b": False}},
        "steps": [
            _create(
                "b",
                "T",
                (4, 4),
                6,
                "T made on b with 4 read and 4 write queues (perm 6); the broker registers it "
                "with every NameServer at once.",
            )
        ],
        "alternative": None,
        "notes": [
            "Set autoCreateTopicEnable=false on the brokers in production, so that no other "
            "topic gets stuck so: routewatch does not change a broker's configuration."
        ],
    }


def test_queue_skew_raises_every_master_to_the_largest_count_and_never_lowers_one() -> None:
    t = Trace()
    t.hb(0, "a", {"T": (16, 8, 6)})  # read 16: the largest count of any broker
    t.hb(0, "b", {"T": (4, 4, 6)})
    t.hb(0, "c", {"T": (16, 16, 4)})  # already there, its perm read-only
    plan = _plan(t, "QUEUE_SKEW")
    assert plan["expects"] == {"topic": "T", "routed": {"a": [16, 8], "b": [4, 4], "c": [16, 16]}}
    assert [
        (s["broker"], s["read_queues"], s["write_queues"], s["perm"]) for s in plan["steps"]
    ] == [
        ("a", 16, 16, 6),
        ("b", 16, 16, 6),
    ]
    assert plan["steps"][0]["changes"] == (
        "T's queues on a raised from 16 read and 8 write to 16 and 16 (perm 6 kept); no count "
        "is lowered."
    )


def test_stale_route_makes_the_topic_again_and_offers_to_retire_the_route_behind_the_flag() -> None:
    t = Trace()
    t.every(0, 30, 30, "a", topics={"T": 4})
    t.every(0, 30, 30, "b", topics={"T": 4}, not_held=("T",))
    plan = _plan(t, "STALE_ROUTE")
    assert plan["expects"] == {"topic": "T", "routed": {"b": [4, 4]}, "held": {"b": False}}
    assert [(s["op"], s["broker"]) for s in plan["steps"]] == [("create_topic", "b")]
    alternative = plan["alternative"]
    assert [(s["op"], s["broker"] or s["namesrv"]) for s in alternative["steps"]] == [
        ("delete_route", NS1),
        ("create_topic", "a"),
    ]
    assert alternative["steps"][0]["loses"] == (
        f"T has no route on {NS1} until the next step makes it again on its holders: sends that "
        "refresh their route then fail."
    )
    assert alternative["steps"][0]["shell"] is None  # mqadmin deleteTopic deletes it everywhere


def test_template_missing_restores_tbw102_on_a_master_and_offers_a_restart() -> None:
    t = Trace()
    t.hb(0, "a", tbw=False)
    plan = _plan(t, "TEMPLATE_MISSING")
    (restore,) = plan["steps"]
    assert (restore["op"], restore["topic"], restore["perm"]) == ("restore_template", "TBW102", 7)
    assert restore["shell"] == (
        f"mqadmin updateBrokerConfig -n {NS1} -b a:10911 -k validateSystemTopicWhenUpdateTopic "
        f"-v false && mqadmin updateTopic -n {NS1} -b a:10911 -t TBW102 -r 8 -w 8 -p 7; "
        f"mqadmin updateBrokerConfig -n {NS1} -b a:10911 -k validateSystemTopicWhenUpdateTopic "
        "-v true"
    )
    assert plan["expects"] == {"template_unusable": ["a"]}
    (restart,) = plan["alternative"]["steps"]
    assert restart["type"] == "manual"
    assert restart["check"] == {
        "kind": "template_usable",
        "broker": "a",
        "addr": "a:10911",
        "says": "a's own TBW102 has INHERIT",
    }


def test_broker_expired_is_a_manual_restart_and_routing_its_topics_elsewhere_loses() -> None:
    t = Trace()
    t.hb(0, "a", {"Only": 8})
    t.every(0, 200, 30, "b")
    plan = _plan(t, "BROKER_EXPIRED")
    (start,) = plan["steps"]
    assert start["type"] == "manual"
    assert start["check"] == {
        "kind": "broker_live",
        "broker": "a",
        "broker_id": 0,
        "says": "a (id 0) is live on every NameServer of the cluster",
    }
    (elsewhere,) = plan["alternative"]["steps"]
    assert (elsewhere["op"], elsewhere["broker"], elsewhere["topic"]) == (
        "create_topic",
        "b",
        "Only",
    )
    assert elsewhere["loses"].startswith("the messages on a stay there, unread, until it returns")


def test_the_collector_kinds_are_manual_with_their_checks() -> None:
    t = watched(60)
    for i in range(10):
        t.hb(70 + i * 10, "x", {"T": 4}, cluster="D")
    (silent,) = [a for a in run(t).final_alerts() if a.kind == "COLLECTOR_SILENT"]
    assert silent.plan is not None
    ((step,),) = [silent.plan["steps"]]
    assert (step["type"], step["check"]["kind"]) == ("manual", "alert_resolved")

    u = Trace()
    for s in range(0, 130, 10):
        u.hb(s, "a", {"T": 4}, ns=NS1)
        u.round(s + 0.5, namesrvs=(NS1, NS2), unreached={NS2: 0} if s else {})
    (unreachable,) = [a for a in run(u).final_alerts() if a.kind == "NAMESRV_UNREACHABLE"]
    assert unreachable.plan is not None
    (check,) = [s["check"] for s in unreachable.plan["steps"]]
    assert check == {
        "kind": "namesrv_answers",
        "namesrvs": [NS2],
        "says": "each NameServer named answers routewatch",
    }
