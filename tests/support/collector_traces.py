"""Random traces of a cluster watched by ``routewatch collect``: its rounds and heartbeats as the
collector writes them (docs/collect.md), with the faults the collector-added rules are about,
beside the clients' v1 events.

Each trace is one to two clusters on two or three NameServers, two to four masters each (and
sometimes a slave), polled every 5, 10 or 15 s for five to twelve minutes, with a random mix of:
the collector stalling (a late round, or a gap past its silence) and restarting (a new id, its
failures counted from its own start, sometimes a new interval); NameServers it cannot reach for
a while, now and then all of them; brokers that die (and may come back), or stop registering
with one NameServer; brokers with their own short timeout (written as two polls); stale routes
(``held``) and write-permission wipes on one NameServer or all; topics inferred auto-created;
and producers that auto-create topics, fail with no route, or are refused. A second cluster is
sometimes not watched at all (no rounds). The seed decides everything.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field

from tests.streaming.engine.events import Trace

__all__ = ["collector_trace"]

NAMESRVS = ("10.0.0.100:9876", "10.0.0.101:9876", "10.0.0.102:9876")
TOPICS = ("Orders", "Payments", "Clicks", "Ledger", "Audit")


@dataclass
class _Window:
    start: float
    end: float

    def __contains__(self, s: float) -> bool:
        return self.start <= s < self.end


def _windows(rng: random.Random, duration: float, most: int, longest: float) -> list[_Window]:
    out = []
    for _ in range(rng.randint(0, most)):
        start = rng.uniform(20, duration - 10)
        out.append(_Window(start, start + rng.uniform(3, longest)))
    return out


@dataclass
class _Broker:
    name: str
    broker_id: int
    topics: dict[str, int]
    auto: bool
    timeout_s: float | None
    dead: list[_Window] = field(default_factory=list)
    # NameServer -> windows it does not register with it
    cut: dict[str, list[_Window]] = field(default_factory=dict)
    stale: list[tuple[str, str, _Window]] = field(default_factory=list)  # (ns or "*", topic, when)
    wiped: list[tuple[str, _Window]] = field(default_factory=list)  # (ns or "*", when)
    inferred: dict[str, tuple[str, float]] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)  # by a producer's send, when
    template: bool = True  # TBW102 in its table (when auto-creation is on)

    def alive(self, s: float) -> bool:
        return not any(s in w for w in self.dead)

    def registers_with(self, ns: str, s: float) -> bool:
        return self.alive(s) and not any(s in w for w in self.cut.get(ns, []))


def _brokers(rng: random.Random, namesrvs: tuple[str, ...], duration: float) -> list[_Broker]:
    masters = [f"broker-{chr(97 + i)}" for i in range(rng.randint(2, 4))]
    poll_timeout = rng.random() < 0.35
    out = []
    for name in masters:
        topics = {t: rng.choice((4, 8)) for t in TOPICS if rng.random() < 0.6}
        broker = _Broker(name, 0, topics, rng.random() < 0.8, None)
        broker.template = rng.random() < 0.9
        if poll_timeout and rng.random() < 0.5:
            broker.timeout_s = -1.0  # two polls, filled in by the caller
        if rng.random() < 0.35:
            broker.dead = _windows(rng, duration, 1, duration)
        for ns in namesrvs:
            if rng.random() < 0.2:
                broker.cut[ns] = _windows(rng, duration, 1, 200)
        if topics and rng.random() < 0.3:
            for w in _windows(rng, duration, 2, 150):
                where = rng.choice((*namesrvs, "*"))
                broker.stale.append((where, rng.choice(sorted(topics)), w))
        if rng.random() < 0.2:
            broker.wiped = [
                (rng.choice((*namesrvs, "*")), w) for w in _windows(rng, duration, 1, 200)
            ]
        for topic in topics:
            if rng.random() < 0.25:
                found = rng.choice(("while_watching", "at_start"))
                broker.inferred[topic] = (found, rng.uniform(0, 30))
        out.append(broker)
    if rng.random() < 0.3:
        master = out[0]
        out.append(_Broker(master.name, 1, dict(master.topics), master.auto, None))
    return out


def _table(
    b: _Broker, ns: str, s: float
) -> tuple[dict[str, int | tuple[int, int, int]], list[str]]:
    """What ``ns`` routes to ``b`` at ``s``, and the routed topics ``b`` itself does not hold."""
    wiped = any(w_ns in ("*", ns) and s in w for w_ns, w in b.wiped)
    perm = 4 if wiped else 6
    table: dict[str, int | tuple[int, int, int]] = {t: (q, q, perm) for t, q in b.topics.items()}
    table.update({t: (4, 4, perm) for t, at in b.created.items() if at <= s})
    table[b.name] = (1, 1, perm | 1)  # its broker-named topic
    if b.auto and b.template:
        table["TBW102"] = (8, 8, 5 if wiped else 7)
    not_held = sorted(
        {t for w_ns, t, w in b.stale if w_ns in ("*", ns) and s in w and b.broker_id == 0}
    )
    return table, not_held


def _collector(
    t: Trace,
    rng: random.Random,
    cluster: str,
    namesrvs: tuple[str, ...],
    brokers: list[_Broker],
    duration: float,
) -> None:
    """Polls, heartbeats and rounds of one cluster's collector, with its faults."""
    interval = rng.choice((5.0, 10.0, 15.0))
    for b in brokers:
        if b.timeout_s == -1.0:
            b.timeout_s = 2 * interval
    stalls = _windows(rng, duration, 2, rng.choice((12.0, 40.0, 200.0)))
    restarts = sorted(rng.uniform(30, duration) for _ in range(rng.randint(0, 2)))
    unreached = {ns: _windows(rng, duration, 2, 120) for ns in namesrvs}
    blind = _windows(rng, duration, 1 if rng.random() < 0.2 else 0, 150)
    collector, run = f"collect-{cluster}-0", 0
    failing: dict[str, float] = {}
    s = 0.0
    while s <= duration:
        if restarts and s >= restarts[0]:
            restarts.pop(0)
            run += 1
            collector, failing = f"collect-{cluster}-{run}", {}
            if rng.random() < 0.3:
                interval = rng.choice((5.0, 10.0, 15.0))
        if any(s in w for w in stalls):
            s += interval
            continue
        reached = [
            ns
            for ns in namesrvs
            if not any(s in w for w in unreached[ns]) and not any(s in w for w in blind)
        ]
        for ns in namesrvs:
            at = s + rng.randint(0, 30) / 1000  # the NameServer's answer
            if ns not in reached:
                failing.setdefault(ns, s)
                continue
            failing.pop(ns, None)
            for b in brokers:
                if not b.registers_with(ns, s):
                    continue
                table, not_held = _table(b, ns, s)
                inferred = (
                    {topic: (found, first) for topic, (found, first) in b.inferred.items()}
                    if b.broker_id == 0
                    else None
                )
                t.hb(
                    at,
                    b.name,
                    table,
                    ns=ns,
                    broker_id=b.broker_id,
                    auto=b.auto,
                    tbw=False,
                    cluster=cluster,
                    dv=f"{b.name}-{zlib.crc32(repr(sorted(table.items())).encode()):08x}",
                    timeout_s=b.timeout_s,
                    not_held=tuple(not_held),
                    inferred=inferred or None,
                )
        t.round(
            s + 0.05,
            namesrvs=namesrvs,
            unreached={ns: since + 0.0 for ns, since in failing.items()},
            interval_s=interval,
            cluster=cluster,
            collector=collector,
        )
        s += interval


def _clients(
    t: Trace,
    rng: random.Random,
    cluster: str,
    namesrvs: tuple[str, ...],
    brokers: list[_Broker],
    duration: float,
) -> None:
    """Producers: auto-created topics (a template route, sends that create the topic on some
    brokers, their immediate registrations, the refresh), failures with no route, refusals."""
    masters = [b for b in brokers if b.broker_id == 0]
    for n in range(rng.randint(0, 3)):
        topic, client = f"New{n}", f"10.0.0.7@{n}"
        start = rng.uniform(5, duration - 70)
        template = [b.name for b in masters if b.alive(start)]
        if not template:
            continue
        t.pull(
            start,
            topic,
            template,
            via_default=True,
            client=client,
            namesrv=namesrvs[0],
            cluster=cluster,
        )
        got = rng.sample(template, rng.randint(1, len(template)))
        for i, name in enumerate(got):
            at = start + 0.5 + i
            t.send(at, topic, broker=name, auto_created=True, client=client, cluster=cluster)
            broker = next(b for b in masters if b.name == name)
            broker.created[topic] = at
            for ns in namesrvs:
                if broker.registers_with(ns, at):
                    t.hb(at, name, {topic: 4}, ns=ns, full=False, auto=broker.auto, cluster=cluster)
        if rng.random() < 0.8:
            t.pull(
                start + rng.uniform(2, 40),
                topic,
                got,
                client=client,
                namesrv=namesrvs[0],
                cluster=cluster,
            )
    for _ in range(rng.randint(0, 2)):
        at = rng.uniform(1, duration)
        status = rng.choice(("NO_ROUTE_INFO", "TOPIC_NOT_EXIST", "NO_NAMESRV"))
        refusing = rng.choice(masters).name if status == "TOPIC_NOT_EXIST" else None
        t.send(at, rng.choice(("Ghost", *TOPICS)), status, refusing, cluster=cluster)


def collector_trace(seed: int) -> Trace:
    """One random trace (the seed decides everything)."""
    rng = random.Random(seed)
    t = Trace()
    duration = float(rng.randint(300, 720))
    for c in range(rng.choice((1, 1, 2))):
        cluster = f"Cluster{c}"
        namesrvs = NAMESRVS[: rng.randint(2, 3)]
        brokers = _brokers(rng, namesrvs, duration)
        _clients(t, rng, cluster, namesrvs, brokers, duration)
        if c == 0 or rng.random() < 0.5:
            _collector(t, rng, cluster, namesrvs, brokers, duration)
        else:  # not watched: the brokers register every 30 s themselves, no rounds
            s = 0.0
            while s <= duration:
                for b in brokers:
                    for ns in namesrvs:
                        if b.registers_with(ns, s):
                            table, _ = _table(b, ns, s)
                            t.hb(
                                s,
                                b.name,
                                table,
                                ns=ns,
                                broker_id=b.broker_id,
                                auto=b.auto,
                                tbw=False,
                                cluster=cluster,
                            )
                s += 30
    return t
