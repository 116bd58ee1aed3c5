"""Helpers shared by the rule tests: running a trace through the engine, the alerts it ends with,
the alerts expected in full, and the traces that tests of several kinds start from."""

from __future__ import annotations

from typing import Any

from routewatch.alerts import AlertKind, NoRouteCause, Severity, alert_id
from streaming.engine import run_stream
from streaming.engine.runner import StreamRun
from tests.streaming.engine.events import NS1, T0, Trace, ms

__all__ = [
    "DAY",
    "_auto_created_on_a_of_a_and_b",
    "_auto_created_on_both",
    "_made_by_hand_on_a_only",
    "_s",
    "_template_route_on_one_of_two",
    "alerts",
    "collector_back",
    "create_remedy",
    "expect",
    "expired_remedy",
    "final",
    "run",
    "versions",
    "watched",
]


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


def expect(
    kind: AlertKind,
    *,
    topic: str | None = None,
    broker: str | None = None,
    broker_id: int | None = None,
    severity: Severity,
    opened: float,
    updated: float | None = None,
    resolved: float | None = None,
    cause: NoRouteCause | None = None,
    summary: str,
    evidence: dict[str, Any],
    remedy: str,
    cluster: str = "C",
) -> dict[str, Any]:
    """An alert in full, as ``Alert.to_dict`` gives it; instants in seconds from ``T0``
    (``updated`` is the resolution instant, or the opening one, unless given)."""
    if updated is None:
        updated = opened if resolved is None else resolved
    return {
        "id": alert_id((kind, cluster, topic, broker, broker_id), ms(opened)),
        "kind": kind,
        "severity": severity,
        "state": "open" if resolved is None else "resolved",
        "cluster": cluster,
        "topic": topic,
        "broker": broker,
        "broker_id": broker_id,
        "cause": cause,
        "opened_at": ms(opened),
        "updated_at": ms(updated),
        "resolved_at": None if resolved is None else ms(resolved),
        "summary": summary,
        "evidence": evidence,
        "remedy": remedy,
    }


def final(run_: StreamRun, *kinds: str) -> list[dict[str, Any]]:
    """The run's final alerts (of ``kinds``, or all) in full but their plans, in the order they
    were opened (each kind's plan is tested in ``test_plans.py``)."""
    return [
        {k: v for k, v in a.to_dict().items() if k != "plan"}
        for a in run_.final_alerts()
        if not kinds or a.kind in kinds
    ]


def versions(run_: StreamRun, kind: str) -> list[tuple[str, float | None, str, str | None]]:
    """Every change made to the run's alerts of ``kind``: (state, instant s, severity, cause)."""
    return [
        (a.state, _s(a.updated_at), a.severity, a.cause)
        for cluster in run_.clusters.values()
        for a in cluster.alert_changes
        if a.kind == kind
    ]


def create_remedy(topic: str, q: int, namesrvs: str = NS1) -> str:
    """The remedy of the coverage alerts: create the topic on every master (a ``;`` between
    NameServers quoted, so that it runs when pasted)."""
    n = namesrvs if ";" not in namesrvs else f"'{namesrvs}'"
    return (
        f"`mqadmin updateTopic -n {n} -c C -t {topic} -r {q} -w {q}`, and set "
        "autoCreateTopicEnable=false on the brokers in production."
    )


def expired_remedy(broker: str, broker_id: int = 0) -> str:
    """BROKER_EXPIRED's remedy (the traces' brokers listen on ``<name>:10911``)."""
    return (
        f"Start broker {broker} (id {broker_id}, last at {broker}:10911) again, with every "
        "NameServer of its cluster in its namesrvAddr list; if it runs, check why it cannot "
        "reach them."
    )


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


DAY = 24 * 3600.0


def _auto_created_on_both(*, converged: bool = True) -> Trace:
    """T auto-created on a and b (no alert); the producer's pull at 30 s replaces its template
    route unless not ``converged``. Both brokers fall silent after 60 s and expire at 180 s: from
    then on no live broker holds T."""
    t = _template_route_on_one_of_two()
    t.send(2, "T", broker="b", auto_created=True)
    t.hb(2, "b", {"T": 4}, full=False)
    if converged:
        t.pull(30, "T", ["a", "b"])
    t.hb(60, "a", {"T": 4})
    t.hb(60, "b", {"T": 4})
    return t


def _made_by_hand_on_a_only(t: Trace, s: float) -> None:
    """At ``s``, the brokers are back and T is made by hand on a only: partial coverage if T is
    still known as auto-created, nothing if it was forgotten."""
    t.hb(s, "a", {"T": 4})
    t.hb(s, "b")


def _auto_created_on_a_of_a_and_b(until: float = 90) -> Trace:
    """Masters a and b (TBW102 on both), registering every 30 s through ``until``. A producer
    takes a template route over both at 0.5 s (T is auto-created then); its first send makes a
    create T at 1 s, which a registers at once and in every full registration from then on."""
    t = Trace()
    t.hb(0, "a")
    t.every(30, until, 30, "a", topics={"T": 4})
    t.every(0, until, 30, "b")
    t.pull(0.5, "T", ["a", "b"], via_default=True)
    t.send(1, "T", broker="a", auto_created=True)
    t.hb(1, "a", {"T": 4}, full=False)
    return t


def watched(until: float, *, every: float = 10, brokers: tuple[str, ...] = ("a", "b")) -> Trace:
    """Two brokers registering every 10 s and a collector's round after each look, up to
    ``until`` seconds."""
    t = Trace()
    s = 0.0
    while s <= until:
        for b in brokers:
            t.hb(s, b, {"T": 4})
        t.round(s + 0.5)
        s += every
    return t


def collector_back(t: Trace, back: float, brokers: tuple[str, ...]) -> None:
    """The collector back at ``back`` s, finding ``brokers`` registered."""
    for b in brokers:
        t.hb(back, b, {"T": 4})
    t.round(back + 0.5)
