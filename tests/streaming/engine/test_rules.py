"""The alert catalogue's rules, one situation at a time, with explicit event times and the
exact alerts expected (kind, key, opened and resolved instants in seconds from the start)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from streaming.engine import run_stream
from streaming.engine.runner import StreamRun

T0 = 1_767_225_600_000
NS1, NS2 = "10.0.0.100:9876", "10.0.0.101:9876"
TBW102 = (8, 8, 7)


class Trace:
    """Contract events written by hand; times in seconds from ``T0``."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def _add(self, s: float, cluster: str, seq: int | None, body: dict[str, Any]) -> None:
        event = {"v": 1, "ts": T0 + round(s * 1000), "cluster": cluster}
        event["event_id"] = f"e{len(self.events)}"
        if seq is not None:
            event["seq"] = seq
        self.events.append({**event, **body})

    def hb(
        self,
        s: float,
        broker: str,
        topics: dict[str, int | tuple[int, int, int]] | None = None,
        *,
        ns: str = NS1,
        broker_id: int = 0,
        full: bool = True,
        auto: bool = True,
        tbw: bool = True,
        shutdown: bool = False,
        dv: str | None = None,
        part: int | None = None,
        parts: int | None = None,
        cluster: str = "C",
    ) -> None:
        configs = {t: (q, q, 6) if isinstance(q, int) else q for t, q in (topics or {}).items()}
        if full and tbw and not shutdown:
            configs = {"TBW102": TBW102, **configs}
        body: dict[str, Any] = {
            "type": "heartbeat",
            "broker": broker,
            "broker_addr": f"{broker}:10911",
            "broker_id": broker_id,
            "namesrv": ns,
            "auto_create_topic_enable": auto,
            "default_topic_queue_nums": 8,
            "full": full,
            "topics": {
                t: {"read_queue_nums": r, "write_queue_nums": w, "perm": p}
                for t, (r, w, p) in ({} if shutdown else configs).items()
            },
        }
        if shutdown:
            body["shutdown"] = True
        for name, value in (("data_version", dv), ("part", part), ("parts", parts)):
            if value is not None:
                body[name] = value
        self._add(s, cluster, None, body)

    def pull(
        self,
        s: float,
        topic: str,
        brokers: list[str],
        *,
        via_default: bool = False,
        result: str = "SUCCESS",
        client: str = "p1",
        cluster: str = "C",
    ) -> None:
        queues = [
            {"broker": b, "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6} for b in brokers
        ]
        body = {
            "type": "route_pull",
            "client_id": client,
            "group": "pg",
            "role": "producer",
            "namesrv": NS1,
            "topic": topic,
            "via_default": via_default,
            "create_topic_key": "TBW102",
            "client_default_topic_queue_nums": 4,
            "result": result,
            "queues": queues if result == "SUCCESS" else [],
        }
        self._add(s, cluster, None, body)

    def send(
        self,
        s: float,
        topic: str,
        status: str = "SEND_OK",
        broker: str | None = None,
        *,
        auto_created: bool = False,
        seq: int | None = None,
        client: str = "p1",
        cluster: str = "C",
    ) -> None:
        body = {
            "type": "send",
            "client_id": client,
            "group": "pg",
            "topic": topic,
            "broker": broker,
            "queue_id": None if broker is None else 0,
            "default_topic": "TBW102",
            "default_topic_queue_nums": 4,
            "status": status,
            "auto_created": auto_created,
        }
        self._add(s, cluster, seq, body)

    def every(self, start: float, stop: float, step: float, broker: str, **kw: Any) -> None:
        """Periodic full registrations of ``broker`` from ``start`` through ``stop``."""
        s = start
        while s <= stop:
            self.hb(s, broker, **kw)
            s += step

    def arrivals(self, *, as_written: bool = False) -> list[tuple[str, int, int | None, str]]:
        """In event-time order (events of one instant in the order they were written), or in
        the order they were written."""
        ordered = self.events if as_written else sorted(self.events, key=lambda e: e["ts"])
        return [(e["event_id"], e["ts"], e.get("seq"), orjson.dumps(e).decode()) for e in ordered]


def _s(ms: int | None) -> float | None:
    return None if ms is None else (ms - T0) / 1000


def alerts(run: StreamRun, kind: str | None = None) -> list[tuple[Any, ...]]:
    """The run's final alerts as (kind, cluster, topic or broker[/id], opened s, resolved s)."""
    out = []
    for a in run.final_alerts():
        if kind is not None and a.kind != kind:
            continue
        what = a.topic if a.topic is not None else f"{a.broker}/{a.broker_id}"
        out.append((a.kind, a.cluster, what, _s(a.opened_at), _s(a.resolved_at)))
    return sorted(out, key=lambda t: (t[3], t[0], t[2]))


def run(trace: Trace, **kw: Any) -> StreamRun:
    return run_stream(trace.arrivals(), lateness_ms=kw.pop("lateness_ms", 0), **kw)


# -- one clock for the whole stream --------------------------------------------------------------


def _one_cluster_falls_silent() -> Trace:
    t = Trace()
    t.hb(0, "b-1", cluster="Silent")
    t.hb(0, "b-2", cluster="Silent")
    t.every(0, 200, 30, "a-1", cluster="Live")
    return t


@pytest.mark.parametrize("batch_size", [None, 1, 3])
def test_a_silent_cluster_expires_on_the_streams_clock(batch_size: int | None) -> None:
    run_ = run(_one_cluster_falls_silent(), batch_size=batch_size, lateness_ms=2000)

    assert alerts(run_) == [
        ("BROKER_EXPIRED", "Silent", "b-1/0", 120.0, None),
        ("BROKER_EXPIRED", "Silent", "b-2/0", 120.0, None),
    ]


def test_a_stream_that_stops_invents_no_expiry() -> None:
    t = Trace()
    t.hb(0, "b-1", cluster="Silent")
    t.hb(100, "a-1", cluster="Live")

    assert alerts(run(t)) == []


def test_a_cluster_lagging_the_stream_by_more_than_the_bound_is_late() -> None:
    t = Trace()
    t.hb(10, "a-1", cluster="Live")
    t.hb(7, "b-1", cluster="Lagging")  # 3 s behind the newest event received, bound 2 s

    run_ = run_stream(t.arrivals(as_written=True), lateness_ms=2000)

    assert run_.late == 1


# -- thresholds that fall on an event's instant ------------------------------------------------


def _template_route_on_one_of_two() -> Trace:
    """Brokers a and b with TBW102; a producer's template route over both at 0.5 s; its first
    send auto-creates T on a at 1 s: the AT_RISK condition holds from 1 s."""
    t = Trace()
    t.hb(0, "a")
    t.hb(0, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    return t


def test_at_risk_due_at_the_last_events_instant_opens() -> None:
    t = _template_route_on_one_of_two()
    t.hb(6, "b")  # the last event, at the instant the condition has held 5 s

    assert alerts(run(t)) == [("AT_RISK", "C", "T", 6.0, None)]


def test_divergence_due_at_the_last_events_instant_opens() -> None:
    t = Trace()
    t.every(0, 60, 30, "a", ns=NS1)
    t.every(0, 60, 30, "a", ns=NS2)
    t.every(0, 60, 30, "b", ns=NS1)  # b reaches only NS1, from 0 s; the last event is at 60 s

    assert alerts(run(t)) == [("NAMESRV_DIVERGENCE", "C", "b/0", 60.0, None)]


def test_a_refusal_exactly_120_s_after_the_last_one_opens_a_new_alert() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(10, "T", "TOPIC_NOT_EXIST", "a")
    t.send(130, "T", "TOPIC_NOT_EXIST", "a")

    assert alerts(run(t), "SEND_REJECTED") == [
        ("SEND_REJECTED", "C", "T", 10.0, 130.0),
        ("SEND_REJECTED", "C", "T", 130.0, None),
    ]


def test_a_broker_is_live_through_its_expiry_instant() -> None:
    t = Trace()
    t.hb(0, "a")
    t.hb(120, "a")  # stamped with the expiry instant: a never expired

    assert alerts(run(t)) == []


def test_liveness_goes_first_when_thresholds_coincide() -> None:
    t = Trace()
    t.every(1, 241, 30, "a", ns=NS1)
    t.every(1, 241, 30, "a", ns=NS2)
    t.hb(0, "b", ns=NS1)
    t.hb(0, "b", ns=NS2)
    t.hb(60, "b", ns=NS1)  # b loses NS2 after 0 s: off NS2 from 120 s, diverged until 180 s,
    # when it expires on NS1 too: the divergence ends at the instant it would open

    assert alerts(run(t)) == [("BROKER_EXPIRED", "C", "b/0", 180.0, None)]


# -- queue skew per broker ------------------------------------------------------------------------


def test_a_master_and_its_slave_with_different_counts_are_skewed() -> None:
    t = Trace()
    t.hb(0, "a", {"T": 8})
    t.hb(0, "a", {"T": 4}, broker_id=1)

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T", 0.0, None)]


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


# -- AT_RISK when the topic is left on no broker --------------------------------------------------


def test_at_risk_stays_open_when_the_topic_is_left_on_no_broker() -> None:
    t = _template_route_on_one_of_two()
    t.hb(10, "a", ns=NS1, shutdown=True)  # the one broker holding T leaves: k falls to 0
    t.hb(20, "b")

    assert alerts(run(t)) == [("AT_RISK", "C", "T", 6.0, None)]


def test_at_risk_resolves_when_no_producer_holds_a_template_route() -> None:
    t = _template_route_on_one_of_two()
    t.hb(10, "a", ns=NS1, shutdown=True)
    t.pull(20, "T", ["b"])  # a successful non-default pull replaces the template route

    assert alerts(run(t), "AT_RISK") == [("AT_RISK", "C", "T", 6.0, 20.0)]


# -- the NameServers of a cluster after a clean shutdown ------------------------------------------


def test_a_namesrv_stays_the_clusters_for_120_s_after_an_unregistration() -> None:
    t = Trace()
    t.hb(0, "a", ns=NS1)
    t.hb(0, "a", ns=NS2)
    t.every(0, 150, 30, "b", ns=NS1)  # b never reaches NS2
    t.hb(10, "a", ns=NS1, shutdown=True)
    t.hb(10, "a", ns=NS2, shutdown=True)  # NS2 stays the cluster's until 0 + 120 s

    assert alerts(run(t)) == [("NAMESRV_DIVERGENCE", "C", "b/0", 60.0, 120.0)]


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


# -- a shutdown empties the table -----------------------------------------------------------------


def test_a_shutdown_empties_the_brokers_table() -> None:
    t = Trace()
    t.every(0, 60, 30, "a", topics={"T": 8})
    t.hb(0, "b", {"T": 4})  # skewed with a
    t.hb(10, "b", shutdown=True)
    t.hb(20, "b", {"U": 8}, full=False)  # back: an immediate registration names U only

    assert alerts(run(t)) == [("QUEUE_SKEW", "C", "T", 0.0, 10.0)]


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


def test_a_failure_at_the_instant_of_a_quiet_resolution_reopens() -> None:
    t = Trace()
    t.hb(0, "a")
    t.send(1, "T", "NO_ROUTE_INFO")
    t.send(121, "T", "NO_ROUTE_INFO")  # 120 s of quiet end first, at 121 s

    assert alerts(run(t), "NO_ROUTE_INFO") == [
        ("NO_ROUTE_INFO", "C", "T", 1.0, 121.0),
        ("NO_ROUTE_INFO", "C", "T", 121.0, None),
    ]


# -- split registrations --------------------------------------------------------------------------


def _cause(run_: StreamRun) -> str | None:
    (alert,) = [a for a in run_.final_alerts() if a.kind == "NO_ROUTE_INFO"]
    return alert.cause


def test_causes_come_from_the_latest_complete_registration() -> None:
    t = Trace()
    t.hb(0, "a", auto=False, tbw=False, dv="v1")
    # part 0 of 2 of a new table says auto-creation is on; part 1 never arrives
    t.hb(10, "a", {"X": 4}, auto=True, tbw=False, dv="v2", part=0, parts=2)
    t.send(15, "T", "NO_ROUTE_INFO")

    assert _cause(run(t)) == "AUTO_CREATE_DISABLED"


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
    assert coverage.summary.startswith("Auto-created topic T has no route left: none of the 1 ")
