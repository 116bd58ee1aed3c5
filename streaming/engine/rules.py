"""The alert catalogue's rules (docs/alerts.md), judged on one cluster's route tables.

Each rule is re-judged only for what an event or a deadline touched: a topic whose route or
template holders changed, a broker whose liveness changed, the expected brokers when masters
come or go. Time-driven transitions come from deadlines, stamped with their own instant.
"""

from __future__ import annotations

import datetime
import shlex
from typing import Any, Protocol

import orjson

from routewatch.alerts import AlertKey, AlertKind, NoRouteCause
from routewatch.rocketmq import PERM_WRITE, TBW102, is_system_topic
from streaming.engine.alerts import REMEDIES, AlertBook
from streaming.engine.observer import silent_after
from streaming.engine.state import (
    Config,
    LazyMap,
    Meta,
    Outputs,
    Reg,
    RegKey,
    TopicState,
    key_json,
)

__all__ = ["Rules"]

SETTLE_MS = 60_000
# how an auto-creation is known (TopicState.auto_created_how)
OBSERVED, WHILE_WATCHING, AT_START = "observed", "while_watching", "at_start"
INFERRED_REMEDY = (
    " (routewatch inferred the auto-creation from the topic's config, which a topic created "
    "by hand on these brokers alone can also have: if the placement is deliberate, silence "
    "this alert with POST /alerts/{id}/silence.)"
)
AT_RISK_MS = 5_000
UNREACHABLE_MS = 30_000  # a NameServer the collector cannot reach for this long: an alert
FAILURE_QUIET_MS = 120_000
DIVERGENCE_MS = 60_000
REFRESH_MS = 30_000
# An auto-created topic left on no live broker, with no producer holding a template route for
# it, no failure pending and no alert open, is forgotten after this long (docs/alerts.md, Terms,
# "auto-created"): the state of a cluster whose clients keep inventing topic names stays bounded
# over months.
TOPIC_FORGET_MS = 7 * 24 * 3600 * 1000
# A client's pull that said it has no NameServer address decides NO_ROUTE_INFO's cause for its
# failures for this long (a restarted application is a new client id: the old one is gone).
CLIENT_FORGET_MS = TOPIC_FORGET_MS
EVIDENCE_LIST_MAX = 50

# positions of a resolution at one instant, in (ts, seq) order: one caused by time passing comes
# before every event stamped with that instant; one caused by an event without seq is only
# known to come after the events that arrived before it
_BEFORE_EVENTS = -2
_NO_SEQ = -1


def _later(event: tuple[int, int | None], resolution: tuple[int, int]) -> bool:
    """Whether an event at (``ts``, ``seq``) comes after a resolution in (ts, seq) order."""
    ts, seq = event
    at, position = resolution
    if ts != at:
        return ts > at
    if position == _BEFORE_EVENTS:
        return True
    return seq is not None and position != _NO_SEQ and seq > position


def _iso(ms: int) -> str:
    """An event time for a sentence: ISO 8601, UTC, to the millisecond."""
    stamp = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _broker_label(broker: str, broker_id: int) -> str:
    """A broker in evidence: its name for a master, ``name/id`` for a slave."""
    return broker if broker_id == 0 else f"{broker}/{broker_id}"


def _coverage_summary(topic: str, k: int, n: int, read_only: list[str] | None = None) -> str:
    """PARTIAL_COVERAGE's sentence, from the same k and n as its ``coverage``: at k = 0 the
    topic has no route left (no subset to converge on), which is worse, not settled. Masters
    routed read-only (``read_only``, holding the topic or not) are not among the n."""
    if k:
        return (
            f"Auto-created topic {topic} is on {k} of {n} brokers and will stay there: its "
            "producers' routes have converged on that subset."
        )
    if read_only:
        verb = "is" if len(read_only) == 1 else "are"
        if n == 0:
            rest = "no writable broker is left"
        elif n == 1:
            rest = "the one writable broker left does not hold it"
        else:
            rest = f"none of the {n} writable brokers left holds it"
        return (
            f"Auto-created topic {topic} has no writable route left: {', '.join(read_only)} "
            f"{verb} routed read-only (write permission wiped), and {rest}."
        )
    if n == 1:
        left = "the only live broker does not hold it, and will not get it by itself"
    else:
        left = f"none of the {n} live brokers holds it, and none will get it by itself"
    return f"Auto-created topic {topic} has no route left: {left}."


def _capped(items: list[str]) -> dict[str, Any]:
    return {"items": items[:EVIDENCE_LIST_MAX], "count": len(items)}


class EngineView(Protocol):
    """What the rules read and change of a cluster's engine, and no more (the engine,
    :class:`streaming.engine.cluster.ClusterEngine`, is one; this module does not import it)."""

    cluster: str
    meta: Meta
    tables: LazyMap[RegKey, dict[str, Config]]
    topics: LazyMap[str, TopicState]
    book: AlertBook
    out: Outputs

    def schedule(self, at: int, kind: str, key: str) -> None: ...

    def expire(self, key: RegKey, at: int) -> bool: ...

    def stop_lingering(self, key: RegKey, at: int) -> bool: ...

    def topic_state(self, topic: str, *, create: bool = False) -> TopicState | None: ...

    def live_holders(self, topic: str) -> dict[RegKey, Config]: ...


class Rules:
    def __init__(self, engine: EngineView) -> None:
        self.e = engine
        self.cluster = engine.cluster
        self._names: set[str] | None = None
        self._names_of: set[RegKey] = set()
        # (broker, id, NameServers) -> the topics they route it differently; derived from the
        # tables, dropped when one of the broker's changes (judged on every liveness change)
        self._apart: dict[tuple[str, int, frozenset[str]], list[str]] = {}

    # -- keys and shared facts ------------------------------------------------------------------

    def _topic_key(self, kind: AlertKind, topic: str) -> AlertKey:
        return (kind, self.cluster, topic, None, None)

    def _broker_key(self, kind: AlertKind, broker: str, broker_id: int) -> AlertKey:
        return (kind, self.cluster, None, broker, broker_id)

    def _regs(self) -> dict[RegKey, Reg]:
        return self.e.meta.regs

    def expected_brokers(self, flipped: RegKey | None = None) -> set[str]:
        """Live writable masters of the cluster (as they were before ``flipped`` changed
        liveness): live on some NameServer that does not route its topics read-only."""
        return {
            b
            for (ns, b, i), r in self._regs().items()
            if i == 0 and (r.live != ((ns, b, i) == flipped)) and not r.read_only
        }

    def cluster_namesrvs(self) -> set[str]:
        """NameServers any broker of the cluster registered with in the last 120 s: those it is
        live on, and those it unregistered from since (they stay the cluster's for 120 s)."""
        return {ns for (ns, _, _), r in self._regs().items() if r.live or r.lingers}

    def _broker_names(self) -> set[str]:
        if self._names is None or len(self._names_of) != len(self._regs()):
            self._names_of = set(self._regs())
            self._names = {b for (_, b, _) in self._names_of}
        return self._names

    def _is_system(self, topic: str) -> bool:
        return is_system_topic(topic, self.cluster, self._broker_names())

    def _namesrvs_for_remedy(self) -> str:
        return ";".join(sorted(self.cluster_namesrvs())) or "<namesrv>"

    def _master_addr(self, broker: str) -> str:
        """The address the master ``broker`` last registered with, for ``updateTopic -b``."""
        addrs = sorted({r.addr for (_, b, i), r in self._regs().items() if b == broker and i == 0})
        return addrs[-1] if addrs else f"<address of {broker}>"

    def _update_topic(self, topic: str, *where: str, q: int | None = None) -> str:
        """``mqadmin updateTopic`` for the cluster's NameServers, as a command line that runs
        when pasted into a shell (``;`` between NameServers quoted: docs/alerts.md); between
        backticks, as every command in a remedy."""
        queues = () if q is None else ("-r", str(q), "-w", str(q))
        argv = ["mqadmin", "updateTopic", "-n", self._namesrvs_for_remedy(), *where, "-t", topic]
        return f"`{shlex.join([*argv, *queues])}`"

    def _create_everywhere(self, topic: str, q: int) -> str:
        """The coverage alerts' remedy: the topic on every master, auto-creation off."""
        return (
            f"{self._update_topic(topic, '-c', self.cluster, q=q)}, and set "
            "autoCreateTopicEnable=false on the brokers in production."
        )

    # -- deadlines ------------------------------------------------------------------------------

    def fire(self, kind: str, key: str, at: int) -> None:
        if kind == "expire":
            ns, broker, broker_id = orjson.loads(key)
            if self.e.expire((ns, broker, broker_id), at):
                self._maybe_expired(broker, broker_id, at)
                self.refresh_broker_evidence(at)
        elif kind == "linger":
            ns, broker, broker_id = orjson.loads(key)
            if self.e.stop_lingering((ns, broker, broker_id), at):
                self._judge_divergence(at)
        elif kind == "diverge":
            broker, broker_id = orjson.loads(key)
            if self.e.meta.diverged_since.get((broker, broker_id)) == at - DIVERGENCE_MS:
                self._divergence_alert(broker, broker_id, at)
        elif kind in ("at_risk", "settle"):
            self.topic_changed(key, at)
        elif kind == "no_route":
            self._failure_quiet(key, at, "no_route", "NO_ROUTE_INFO")
        elif kind == "rejected":
            self._failure_quiet(key, at, "rejected", "SEND_REJECTED")
        elif kind == "forget":
            self._forget(key, at)
        elif kind == "collector_silent":
            self._observer_silent(at)

    # -- brokers --------------------------------------------------------------------------------

    def broker_heard(self, key: RegKey, ts: int, *, shutdown: bool) -> None:
        """A heartbeat (or an unregistration) from a broker resolves its BROKER_EXPIRED."""
        _, broker, broker_id = key
        self.e.book.resolve(
            self._broker_key("BROKER_EXPIRED", broker, broker_id),
            ts,
            {"resolution": "unregistered" if shutdown else "heartbeat received"},
        )

    def full_registration(self, key: RegKey, reg: Reg, ts: int) -> None:
        """TEMPLATE_MISSING, judged on a live broker's latest full registration."""
        _, broker, broker_id = key
        alert_key = self._broker_key("TEMPLATE_MISSING", broker, broker_id)
        if reg.auto_create and reg.template != "usable":
            what = "has no TBW102" if reg.template == "missing" else "has a TBW102 without INHERIT"
            self.e.book.raise_or_update(
                alert_key,
                ts,
                severity="warning",
                summary=f"Broker {broker} has autoCreateTopicEnable=true but {what}: "
                "topics sent to it are not auto-created.",
                evidence={
                    "namesrv": key[0],
                    "auto_create_topic_enable": True,
                    "tbw102": reg.template,
                    "data_version": reg.version,
                },
                remedy=REMEDIES["TEMPLATE_MISSING"],
            )
        else:
            self.e.book.resolve(
                alert_key, ts, {"tbw102": reg.template, "auto_create_topic_enable": reg.auto_create}
            )

    def liveness_changed(self, key: RegKey, at: int, topics: list[str]) -> None:
        before = self.expected_brokers(flipped=key)
        after = self.expected_brokers()
        for topic in topics:
            self.topic_changed(topic, at)
        if before != after:
            for topic in sorted(self.e.meta.auto_topics):
                self.topic_changed(topic, at)
        self._judge_divergence(at)

    def refresh_broker_evidence(self, at: int) -> None:
        """An open alert's evidence states current facts: after a registration or a broker's
        expiry, re-derive the topics of every open BROKER_EXPIRED (those no live broker holds)
        and NAMESRV_DIVERGENCE (those the broker registers) alert; an alert whose evidence
        changed is updated in place."""
        for kind, _, _, broker, broker_id in [
            k for k in self.e.book.open if k[0] in ("BROKER_EXPIRED", "NAMESRV_DIVERGENCE")
        ]:
            assert broker is not None and broker_id is not None
            if kind == "BROKER_EXPIRED":
                self._maybe_expired(broker, broker_id, at)
            else:
                self._divergence_alert(broker, broker_id, at)

    def _maybe_expired(self, broker: str, broker_id: int, at: int) -> None:
        self.broker_expired(broker, broker_id, at)

    def broker_expired(
        self, broker: str, broker_id: int, at: int, *, gap: tuple[int, int] | None = None
    ) -> None:
        """BROKER_EXPIRED, if the broker is live on no NameServer now; ``gap``: it expired in a
        gap of its cluster's observer (from its last round to its first round after), found at
        the gap's end."""
        mine = {k: r for k, r in self._regs().items() if (k[1], k[2]) == (broker, broker_id)}
        if not mine or any(r.live for r in mine.values()):
            return
        latest = max(mine.values(), key=lambda r: r.last_hb)
        if latest.shutdown:
            return
        orphaned = sorted(
            {t for k in mine for t in (self.e.tables.get(k) or {}) if not self.e.live_holders(t)}
        )
        key = self._broker_key("BROKER_EXPIRED", broker, broker_id)
        current = self.e.book.get(key)
        if gap is None and current is not None and "expired_in_collector_gap" in current.evidence:
            found = current.evidence["expired_in_collector_gap"]  # (its evidence refreshed)
            gap = (found["from"], found["to"])
        evidence: dict[str, Any] = {
            "last_heartbeat": latest.last_hb,
            "addr": latest.addr,
            "namesrvs": sorted(k[0] for k in mine),
            "topics_without_route": _capped(orphaned),
        }
        summary = (
            f"Broker {broker} (id {broker_id}) has been silent for over 120 s on every "
            f"NameServer; {len(orphaned)} topic(s) it held have no route left."
        )
        if gap is not None:
            evidence["expired_in_collector_gap"] = {"from": gap[0], "to": gap[1]}
            summary = (
                f"Broker {broker} (id {broker_id}) was registered on no NameServer when the "
                f"collector came back after a gap (silent since {_iso(gap[0])}): it expired in "
                f"that gap; {len(orphaned)} topic(s) it held have no route left."
            )
        self.e.book.raise_or_update(
            key,
            at,
            severity="critical",
            summary=summary,
            evidence=evidence,
            remedy=REMEDIES["BROKER_EXPIRED"],
        )

    # -- the observer ---------------------------------------------------------------------------

    def _observer_key(self) -> AlertKey:
        return ("COLLECTOR_SILENT", self.cluster, None, None, None)

    def _observer_silent(self, at: int) -> None:
        """COLLECTOR_SILENT: the cluster's collector has written no round for three of its
        intervals (at least 30 s); its brokers' expiries wait for its return."""
        obs = self.e.meta.observer
        if obs is None or obs["silent_since"] is not None:
            return
        if obs["last"] + silent_after(obs["interval_ms"]) != at:
            return  # (a round came since: a later deadline decides)
        obs["silent_since"] = obs["last"]
        self.e.book.raise_or_update(
            self._observer_key(),
            at,
            severity="critical",
            summary=f"The collector {obs['collector']} of cluster {self.cluster} has written "
            f"nothing since {_iso(obs['last'])}: routewatch does not see the cluster, and "
            "judges none of its brokers' liveness until it is back.",
            evidence={"collector": obs["collector"], "last_round": obs["last"]},
            remedy=REMEDIES["COLLECTOR_SILENT"],
        )

    def namesrvs_reached(self, obs: dict[str, Any], at: int, *, changed: bool) -> None:
        """A round's reach: NameServers it could not reach are unknown (no divergence is judged
        against them), and NAMESRV_UNREACHABLE says which, once one has been unreachable for
        30 s."""
        if changed:
            self._judge_divergence(at)
        key: AlertKey = ("NAMESRV_UNREACHABLE", self.cluster, None, None, None)
        long = {
            ns: since for ns, since in obs["unreachable"].items() if at - since >= UNREACHABLE_MS
        }
        if not long:
            self.e.book.resolve(key, at)
            return
        names = ", ".join(f"{ns} (since {_iso(since)})" for ns, since in sorted(long.items()))
        one = len(long) == 1
        self.e.book.raise_or_update(
            key,
            at,
            severity="warning",
            summary=f"The collector of cluster {self.cluster} cannot reach NameServer"
            f"{'' if one else 's'} {names}: what {'it routes' if one else 'they route'} is "
            "unknown, and no divergence is judged against "
            f"{'it' if one else 'them'}.",
            evidence={
                "collector": obs["collector"],
                "unreachable_since": dict(sorted(long.items())),
            },
            remedy=REMEDIES["NAMESRV_UNREACHABLE"],
        )

    def observer_back(self, obs: dict[str, Any], at: int) -> None:
        """The collector's first round after its gap."""
        self.e.book.resolve(self._observer_key(), at, {"gap_ms": at - obs["last"], "back_at": at})

    def _live_on(self) -> dict[tuple[str, int], set[str]]:
        """Each broker (name, id) that registered -> the NameServers it is live on now."""
        live_on: dict[tuple[str, int], set[str]] = {}
        for (ns, broker, broker_id), reg in self._regs().items():
            live_on.setdefault((broker, broker_id), set())
            if reg.live:
                live_on[(broker, broker_id)].add(ns)
        return live_on

    def _unknown_namesrvs(self) -> set[str]:
        """NameServers the cluster's collector could not reach at its last round: what they
        route is unknown, not empty."""
        obs = self.e.meta.observer
        return set((obs or {}).get("unreachable") or {})

    def table_stored(self, key: RegKey) -> None:
        """A broker's table changed: what its NameServers route it apart is derived again."""
        _, broker, broker_id = key
        for cached in [c for c in self._apart if c[:2] == (broker, broker_id)]:
            del self._apart[cached]

    def table_changed(self, key: RegKey, at: int) -> None:
        """A live registration changed a broker's table: that broker's NAMESRV_DIVERGENCE judged
        again (no other broker's tables or liveness changed; a registration that turns live is
        judged as a liveness change, every broker)."""
        self._judge_divergence(at, only=(key[1], key[2]))

    def _judge_divergence(self, at: int, only: tuple[str, int] | None = None) -> None:
        unknown = self._unknown_namesrvs()
        cluster_ns = self.cluster_namesrvs() - unknown
        live_on = self._live_on()
        since = self.e.meta.diverged_since
        for (broker, broker_id), all_namesrvs in sorted(live_on.items()):
            if only is not None and (broker, broker_id) != only:
                continue
            namesrvs = all_namesrvs - unknown
            diverged = bool(namesrvs) and (
                namesrvs != cluster_ns or bool(self._routed_apart(broker, broker_id, namesrvs))
            )
            if diverged and (broker, broker_id) not in since:
                since[(broker, broker_id)] = at
                self.e.schedule(at + DIVERGENCE_MS, "diverge", key_json((broker, broker_id)))
            elif not diverged and (broker, broker_id) in since:
                del since[(broker, broker_id)]
                self.e.book.resolve(self._broker_key("NAMESRV_DIVERGENCE", broker, broker_id), at)
            elif diverged and self.e.book.get(
                self._broker_key("NAMESRV_DIVERGENCE", broker, broker_id)
            ):
                self._divergence_alert(broker, broker_id, at)

    def _routed_apart(self, broker: str, broker_id: int, namesrvs: set[str]) -> list[str]:
        """The topics the NameServers ``namesrvs`` route differently to a broker live on each
        of them: held by some of their tables and not others, or with other queues or perm
        (a NameServer that drops what a registration leaves out keeps only the last part of a
        split one: 5.x's deleteTopicWithBrokerRegistration with enableSplitRegistration)."""
        if len(namesrvs) < 2:
            return []
        cached = (broker, broker_id, frozenset(namesrvs))
        if cached not in self._apart:
            tables = [self.e.tables.get((ns, broker, broker_id)) or {} for ns in sorted(namesrvs)]
            topics = {t for table in tables for t in table}
            self._apart[cached] = sorted(
                t for t in topics if any(tb.get(t) != tables[0].get(t) for tb in tables)
            )
        return self._apart[cached]

    def _divergence_alert(self, broker: str, broker_id: int, at: int) -> None:
        unknown = self._unknown_namesrvs()
        cluster_ns = self.cluster_namesrvs() - unknown
        live_on = sorted(self._live_on().get((broker, broker_id), set()) - unknown)
        missing = sorted(cluster_ns - set(live_on))
        if missing:
            differing = sorted(
                {t for ns in live_on for t in (self.e.tables.get((ns, broker, broker_id)) or {})}
            )
            summary = (
                f"Broker {broker} (id {broker_id}) is registered on {', '.join(live_on)} "
                f"but not on {', '.join(missing)}: clients see different routes by NameServer."
            )
            remedy = REMEDIES["NAMESRV_DIVERGENCE"]
        else:
            differing = self._routed_apart(broker, broker_id, set(live_on))
            summary = (
                f"Broker {broker} (id {broker_id}) is registered on {', '.join(live_on)}, "
                f"which route it {len(differing)} topic(s) differently: clients see different "
                "routes by NameServer."
            )
            remedy = REMEDIES["NAMESRV_DIVERGENCE_ROUTES"]
        self.e.book.raise_or_update(
            self._broker_key("NAMESRV_DIVERGENCE", broker, broker_id),
            at,
            severity="warning",
            summary=summary,
            evidence={
                "live_on": live_on,
                "missing_on": missing,
                "since": self.e.meta.diverged_since.get((broker, broker_id)),
                "topics_differing": _capped(differing),
            },
            remedy=remedy,
        )

    # -- topics ---------------------------------------------------------------------------------

    def auto_created(
        self, topic: str, state: TopicState, at: int, how: str = OBSERVED, since: int | None = None
    ) -> bool:
        """The topic was auto-created: a client saw it (``how`` "observed", at ``at``), or the
        broker side's config looks it ("while_watching", "at_start": first seen at ``since``).
        The first evidence sets when; observed evidence replaces inferred. Whether anything
        changed."""
        if state.auto_created_at is None:
            when = at if since is None else min(since, at)
            state.auto_created_at = when
            state.auto_created_how = how
            self.e.out.auto_created[topic] = when
            self.e.meta.auto_topics.add(topic)
            self.e.topics.mark(topic)
            if when + SETTLE_MS > at:
                self.e.schedule(when + SETTLE_MS, "settle", topic)
            return True
        if how == OBSERVED and state.auto_created_how != OBSERVED:
            state.auto_created_how = OBSERVED
            self.e.topics.mark(topic)
            return True
        return False

    def _settled(self, state: TopicState, at: int) -> bool:
        """Whether an auto-created topic's coverage is final: 60 s after its creation, at once
        when a client saw it and no producer holds a template route for it, and at once for a
        topic found at the observer's start (older than the observer)."""
        assert state.auto_created_at is not None
        if state.auto_created_how == AT_START:
            return True
        if state.auto_created_how == OBSERVED and not state.holders:
            return True
        return at >= state.auto_created_at + SETTLE_MS

    def topic_changed(self, topic: str, at: int) -> None:
        """Re-judge QUEUE_SKEW, PARTIAL_COVERAGE and AT_RISK for one topic (a system topic
        raises none of them, but is forgotten as any other)."""
        state = self.e.topic_state(topic) if topic in self.e.meta.auto_topics else None
        self._judge_stale(topic, at)
        if self._is_system(topic):
            if state is not None:
                self.note_idle(topic, state, at)
            return
        holders = self.e.live_holders(topic)
        self._judge_skew(topic, holders, at)
        if state is None or state.auto_created_at is None:
            return
        # a producer sends only to the brokers a route gives it writable
        holding = {b for (_, b, i), c in holders.items() if i == 0 and c[2] & PERM_WRITE}
        expected = self.expected_brokers()
        k, n = len(holding & expected), len(expected)
        pc_key = self._topic_key("PARTIAL_COVERAGE", topic)
        settled = self._settled(state, at)
        pc_open = self.e.book.get(pc_key) is not None
        if (0 < k < n and settled) or (pc_open and k != n):
            self._coverage_alert(topic, state, holders, holding, expected, at)
        elif pc_open:
            self.e.book.resolve(pc_key, at, {"coverage": f"{k}/{n}"})
        self._judge_at_risk(topic, state, holding, at)
        self.note_idle(topic, state, at)

    # -- forgetting an auto-created topic -------------------------------------------------------

    def _is_idle(self, topic: str, state: TopicState) -> bool:
        """Nothing is left of the topic: no live broker holds it, no producer holds a template
        route for it, no failure of it is pending and no alert about it is open."""
        if self.e.live_holders(topic) or state.holders or state.no_route or state.rejected:
            return False
        kinds: tuple[AlertKind, ...] = (
            "PARTIAL_COVERAGE",
            "AT_RISK",
            "QUEUE_SKEW",
            "NO_ROUTE_INFO",
            "SEND_REJECTED",
        )
        return all(self.e.book.get(self._topic_key(kind, topic)) is None for kind in kinds)

    def note_idle(self, topic: str, state: TopicState, at: int) -> None:
        """Start (or stop) counting the time an auto-created topic has been idle; one
        "forget" threshold is pending per topic at a time."""
        if state.auto_created_at is None:
            return
        idle = self._is_idle(topic, state)
        if not idle and state.idle_since is not None:
            state.idle_since = None
            self.e.topics.mark(topic)
        elif idle and state.idle_since is None:
            state.idle_since = at
            if state.forget_due is None:
                state.forget_due = at + TOPIC_FORGET_MS
                self.e.schedule(state.forget_due, "forget", topic)
            self.e.topics.mark(topic)

    def _forget(self, topic: str, at: int) -> None:
        """The threshold: forget the topic if it has been idle for TOPIC_FORGET_MS, else wait
        for the end of its current idle time, if it is idle."""
        state = self.e.topic_state(topic)
        if state is None or state.forget_due != at:
            return
        state.forget_due = None
        self.e.topics.mark(topic)
        if state.idle_since is not None and not self._is_idle(topic, state):
            state.idle_since = None
        if state.idle_since is None:
            return
        if state.idle_since + TOPIC_FORGET_MS <= at:
            self.e.topics.set(topic, None)  # Cluster.finish drops it from the indexes
            return
        state.forget_due = state.idle_since + TOPIC_FORGET_MS
        self.e.schedule(state.forget_due, "forget", topic)

    def _coverage_alert(
        self,
        topic: str,
        state: TopicState,
        holders: dict[RegKey, Any],
        holding: set[str],
        expected: set[str],
        at: int,
    ) -> None:
        k, n = len(holding & expected), len(expected)
        read_only = sorted(
            {b for (_, b, i), r in self._regs().items() if i == 0 and r.live and r.read_only}
            - expected
        )
        views: dict[str, list[str]] = {}
        for ns, b, _ in holders:
            views.setdefault(ns, []).append(b)
        queues = max((c[1] for c in holders.values()), default=4)
        self.e.book.raise_or_update(
            self._topic_key("PARTIAL_COVERAGE", topic),
            at,
            severity="critical" if k <= 1 else "warning",
            summary=_coverage_summary(topic, k, n, read_only),
            evidence={
                "coverage": f"{k}/{n}",
                **({"read_only_brokers": read_only} if read_only else {}),
                "brokers_with_topic": sorted(holding & expected),
                "brokers_without_topic": sorted(expected - holding),
                "namesrv_views": {ns: sorted(set(v)) for ns, v in sorted(views.items())},
                "auto_created_at": state.auto_created_at,
                "auto_created_evidence": _evidence_of(state),
                "producers_with_template_route": sorted(state.holders),
            },
            remedy=self._create_everywhere(topic, queues)
            + ("" if state.auto_created_how == OBSERVED else INFERRED_REMEDY),
        )
        # (AT_RISK's condition keeps its start: if it still holds when PARTIAL_COVERAGE
        # resolves, AT_RISK opens then, its 5 s counted from that start)
        self.e.book.resolve(
            self._topic_key("AT_RISK", topic), at, {"resolution": "partial coverage opened"}
        )

    def _judge_at_risk(self, topic: str, state: TopicState, holding: set[str], at: int) -> None:
        """Opens once its condition — a producer's template route over ``m`` brokers of which
        ``1 <= k < m`` hold the topic — has held for 5 s without a break while no
        PARTIAL_COVERAGE is open; once open it stays while the routes have not converged, also
        when ``k`` falls to 0, until they do, PARTIAL_COVERAGE opens, or no producer holds a
        template route. The condition's start (``at_risk_since``) is the condition's, not the
        alert's: it is kept while a PARTIAL_COVERAGE suppresses the alert, so that when that
        resolves with the condition held all along, AT_RISK opens at once."""
        key = self._topic_key("AT_RISK", topic)
        short = {c: h for c, h in state.holders.items() if not set(h.brokers) <= holding}
        risky = {c: h for c, h in short.items() if set(h.brokers) & holding}
        pc_open = self.e.book.get(self._topic_key("PARTIAL_COVERAGE", topic)) is not None
        is_open = self.e.book.get(key) is not None and not pc_open
        holds = bool(short) and bool(risky or is_open)
        if not holds or pc_open:
            self.e.book.resolve(key, at)
        if not holds:
            if state.at_risk_since is not None:
                state.at_risk_since = None
                self.e.topics.mark(topic)
            return
        if state.at_risk_since is None:
            state.at_risk_since = at
            self.e.topics.mark(topic)
            self.e.schedule(at + AT_RISK_MS, "at_risk", topic)
        if pc_open or (not is_open and at < state.at_risk_since + AT_RISK_MS):
            return
        producers = [
            {
                "client_id": c,
                "template_brokers": sorted(set(h.brokers)),
                "brokers_with_topic": sorted(set(h.brokers) & holding),
                "template_route_since": h.since,
                "next_refresh_by": h.last_pull + REFRESH_MS,
            }
            for c, h in sorted(short.items())
        ]
        refresh_by = max(h.last_pull + REFRESH_MS for h in short.values())
        m = max(len(set(h.brokers)) for h in short.values())
        k = min(len(set(h.brokers) & holding) for h in short.values())
        if k:
            summary = (
                f"Topic {topic} is on {k} of the {m} brokers its producers' template route "
                f"covers; at their next route refresh (by {_iso(refresh_by)}) it collapses to "
                "those brokers."
            )
        else:
            summary = (
                f"Topic {topic} is on none of the {m} brokers its producers' template route "
                "covers any more; those producers keep that route until a route refresh "
                f"succeeds (next by {_iso(refresh_by)})."
            )
        # the topic's own count where a broker holds it, else the template route's (4 queues)
        holders = self.e.live_holders(topic)
        queues = max((c[1] for c in holders.values()), default=4)
        self.e.book.raise_or_update(
            key,
            max(at, state.at_risk_since + AT_RISK_MS),
            severity="warning",
            summary=summary,
            evidence={
                "producers": producers,
                "brokers_with_topic": sorted(holding),
                "condition_since": state.at_risk_since,
            },
            remedy=self._create_everywhere(topic, queues),
        )

    def _judge_stale(self, topic: str, at: int) -> None:
        """STALE_ROUTE: live masters that a NameServer routes the topic to while they do not
        hold it themselves (the heartbeat's ``held``)."""
        key = self._topic_key("STALE_ROUTE", topic)
        stale = sorted(
            k for k, r in self._regs().items() if r.live and r.not_held and topic in r.not_held
        )
        if not stale:
            self.e.book.resolve(key, at)
            return
        routes = self.e.live_holders(topic)
        views: dict[str, list[str]] = {}
        for ns, b, _ in stale:
            views.setdefault(ns, []).append(b)
        brokers = sorted({b for _, b, _ in stale})
        holding = sorted({k[1] for k in routes if k[2] == 0 and k not in stale})
        them = brokers[0] if len(brokers) == 1 else ", ".join(brokers)
        do = "does" if len(brokers) == 1 else "do"
        q = max((routes[k][1] for k in stale if k in routes), default=8)
        recreate = ", ".join(
            self._update_topic(topic, "-b", self._master_addr(b), q=q) for b in brokers
        )
        namesrvs = self._namesrvs_for_remedy()
        delete = shlex.join(
            ["mqadmin", "deleteTopic", "-n", namesrvs, "-c", self.cluster, "-t", topic]
        )
        self.e.book.raise_or_update(
            key,
            at,
            severity="warning",
            summary=f"Topic {topic} is routed to {them}, which {do} not hold it: a producer "
            "sending there is refused (TOPIC_NOT_EXIST) unless auto-creation makes the topic "
            "again, and a consumer of those queues reads nothing.",
            evidence={
                "stale_routes": {ns: bs for ns, bs in sorted(views.items())},
                "brokers_holding_topic": holding,
            },
            remedy=f"Make it there again with {recreate}, or retire the topic everywhere with "
            f"`{delete}` (a NameServer drops a topic a broker deleted only when the topic is "
            "deleted there too, or the broker leaves).",
        )

    def _judge_skew(self, topic: str, holders: dict[RegKey, Any], at: int) -> None:
        """QUEUE_SKEW over the cluster route, per broker (name and id: a master and its slave
        are two); where NameServers hold different counts for one broker, its most recent
        registration decides."""
        key = self._topic_key("QUEUE_SKEW", topic)
        regs = self._regs()
        latest: dict[tuple[str, int], tuple[tuple[int, str], Any]] = {}
        for (ns, broker, broker_id), config in holders.items():
            reg = regs[(ns, broker, broker_id)]
            when = (reg.last_reg if reg.last_reg is not None else reg.last_hb, ns)
            seen = latest.get((broker, broker_id))
            if seen is None or when > seen[0]:
                latest[(broker, broker_id)] = (when, config)
        per_broker = {
            _broker_label(broker, broker_id): {"read": c[0], "write": c[1]}
            for (broker, broker_id), (_, c) in sorted(latest.items())
        }
        writes = {c["write"] for c in per_broker.values()}
        uneven = [b for b, c in per_broker.items() if c["read"] != c["write"]]
        if not (len(writes) > 1 or uneven):
            self.e.book.resolve(key, at)
            return
        q = max(writes)
        self.e.book.raise_or_update(
            key,
            at,
            severity="info",
            summary=f"Topic {topic} has uneven queues: write queues "
            f"{sorted(writes)} across brokers"
            + (f", read != write on {', '.join(uneven)}" if uneven else "")
            + ".",
            evidence={"brokers": per_broker},
            remedy=self._update_topic(topic, "-c", self.cluster, q=q),
        )

    # -- sends ----------------------------------------------------------------------------------

    def send_succeeded(self, topic: str, ts: int, seq: int | None) -> None:
        key = self._topic_key("NO_ROUTE_INFO", topic)
        if self.e.book.get(key) is not None:
            self.e.book.resolve(key, ts, {"resolution": "a send succeeded"})
            self._resolved_at(key, ts, _NO_SEQ if seq is None else seq)

    def _resolved_at(self, key: AlertKey, ts: int, seq: int) -> None:
        """Where a NO_ROUTE_INFO resolution falls in (``ts``, ``seq``) order: only a failure
        later than it reopens the alert."""
        self.e.meta.last_resolved[key_json(key)] = (ts, seq)

    def _cause(self, e: dict[str, Any]) -> NoRouteCause:
        regs = self._regs()
        live = [(k, r) for k, r in regs.items() if r.live]
        said_at = self.e.meta.no_namesrv_clients.get(e["client_id"])
        if e["status"] == "NO_NAMESRV" or (
            said_at is not None and e["ts"] < said_at + CLIENT_FORGET_MS
        ):
            return "NO_NAMESRV"
        if not live:
            return "NO_LIVE_BROKER"
        if e["type"] == "proxy_route_miss":
            return "GRPC_NOT_CREATED"
        reported_tbw102 = bool(self.e.live_holders(TBW102))
        key = e["default_topic"]
        if key != TBW102 and not self.e.live_holders(key) and reported_tbw102:
            return "CREATE_TOPIC_KEY_MISMATCH"
        if all(r.auto_create is False for _, r in live):
            return "AUTO_CREATE_DISABLED"
        if any(r.auto_create for _, r in live) and not reported_tbw102:
            return "TEMPLATE_MISSING"
        return "UNKNOWN"

    def no_route(self, e: dict[str, Any], ts: int) -> None:
        topic = e["topic"]
        key = self._topic_key("NO_ROUTE_INFO", topic)
        resolved = self.e.meta.last_resolved.get(key_json(key))
        if (
            self.e.book.get(key) is None
            and resolved is not None
            and not _later((ts, e.get("seq")), resolved)
        ):
            return  # not later than the alert's last resolution
        state = self.e.topic_state(topic, create=True)
        assert state is not None
        fail = state.no_route if self.e.book.get(key) is not None and state.no_route else None
        fail = fail or {"first": ts, "count": 0, "clients": [], "statuses": {}, "due": None}
        fail["last"] = ts
        fail["count"] += 1
        if e["client_id"] not in fail["clients"]:
            fail["clients"] = sorted([*fail["clients"], e["client_id"]])[:EVIDENCE_LIST_MAX]
        fail["statuses"][e["status"]] = fail["statuses"].get(e["status"], 0) + 1
        if fail["due"] is None:
            fail["due"] = ts + FAILURE_QUIET_MS
            self.e.schedule(ts + FAILURE_QUIET_MS, "no_route", topic)
        state.no_route = fail
        self.note_idle(topic, state, ts)  # a failure ends an idle time
        self.e.topics.mark(topic)
        cause = self._cause(e)
        remedies = {
            "NO_NAMESRV": "Set the client's NameServer address (namesrvAddr).",
            "NO_LIVE_BROKER": "Bring a broker of the cluster back.",
            "CREATE_TOPIC_KEY_MISMATCH": "Align the client's createTopicKey "
            f"({e['default_topic']}) with TBW102 (upgrade a 4.3.0 client).",
            "AUTO_CREATE_DISABLED": "Create the topic: "
            + self._update_topic(topic, "-c", self.cluster, q=8),
            "TEMPLATE_MISSING": "Restore TBW102: restart the brokers with "
            "autoCreateTopicEnable=true, or create the topic.",
            "GRPC_NOT_CREATED": "Create the topic (gRPC clients never auto-create one): "
            + self._update_topic(topic, "-c", self.cluster, q=8),
            "UNKNOWN": "Check the client's NameServer address and the topic's route.",
        }
        failure = (
            f"fail through proxy {e['proxy']} with TOPIC_NOT_FOUND"
            if e["type"] == "proxy_route_miss"
            else 'fail with "No route info of this topic"'
        )
        self.e.book.raise_or_update(
            key,
            ts,
            severity="critical",
            cause=cause,
            summary=f"Sends of topic {topic} {failure} (cause: {cause}).",
            evidence={
                "first_failure": fail["first"],
                "last_failure": fail["last"],
                "failures": fail["count"],
                "statuses": fail["statuses"],
                "clients": fail["clients"],
                "create_topic_key": e["default_topic"],
            },
            remedy=remedies[cause],
        )

    def rejected(self, e: dict[str, Any], ts: int) -> None:
        topic = e["topic"]
        key = self._topic_key("SEND_REJECTED", topic)
        state = self.e.topic_state(topic, create=True)
        assert state is not None
        rej = state.rejected if self.e.book.get(key) is not None and state.rejected else None
        rej = rej or {"first": ts, "count": 0, "brokers": {}, "due": None}
        rej["last"] = ts
        rej["count"] += 1
        broker = e.get("broker") or "?"
        rej["brokers"][broker] = rej["brokers"].get(broker, 0) + 1
        if rej["due"] is None:
            rej["due"] = ts + FAILURE_QUIET_MS
            self.e.schedule(ts + FAILURE_QUIET_MS, "rejected", topic)
        state.rejected = rej
        self.note_idle(topic, state, ts)
        self.e.topics.mark(topic)
        refusing = sorted(rej["brokers"])
        brokers = ", ".join(refusing)
        self.e.book.raise_or_update(
            key,
            ts,
            severity="warning",
            summary=f"Broker(s) {brokers} refuse sends of topic {topic} with TOPIC_NOT_EXIST.",
            evidence={
                "first_refusal": rej["first"],
                "last_refusal": rej["last"],
                "refusals": rej["count"],
                "brokers": rej["brokers"],
            },
            remedy=f"Create {topic} on {brokers} ("
            + ", ".join(self._update_topic(topic, "-b", self._master_addr(b)) for b in refusing)
            + f"), or remove the stale TBW102 from {brokers}.",
        )

    def _failure_quiet(self, topic: str, at: int, field_name: str, kind: AlertKind) -> None:
        """120 s without a failure of this kind resolves the alert."""
        state = self.e.topic_state(topic)
        record = None if state is None else getattr(state, field_name)
        if state is None or record is None or record["due"] != at:
            return  # resolved meanwhile, or a deadline replaced by a later one
        record["due"] = None
        if record["last"] + FAILURE_QUIET_MS > at:
            record["due"] = record["last"] + FAILURE_QUIET_MS
            self.e.schedule(record["due"], field_name, topic)
        else:
            key = self._topic_key(kind, topic)
            self.e.book.resolve(key, at, {"resolution": "quiet for 120 s"})
            if kind == "NO_ROUTE_INFO":
                self._resolved_at(key, at, _BEFORE_EVENTS)
            setattr(state, field_name, None)
            self.note_idle(topic, state, at)
        self.e.topics.mark(topic)


def _evidence_of(state: TopicState) -> str:
    """A PARTIAL_COVERAGE's ``auto_created_evidence``: ``observed`` (a client saw the
    auto-creation), or ``inferred_while_watching`` / ``inferred_at_start`` (the broker side's
    config looks it: docs/alerts.md)."""
    how = state.auto_created_how or OBSERVED
    return how if how == OBSERVED else f"inferred_{how}"
