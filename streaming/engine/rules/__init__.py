"""The alert catalogue's rules (docs/alerts.md), judged on one cluster's route tables: one module
per alert kind, each a :class:`~streaming.engine.rules.base.Rule`, listed once in
:data:`REGISTRY`, from which every list of kinds derives.

In a cluster kept in shards (:mod:`streaming.engine.shards`), a shard judges the topic rules
of its own topics, and only the head shard the broker and cluster rules.

Each rule is re-judged only for what an event or a deadline touched: a topic whose route or
template holders changed, a broker whose liveness changed, the expected brokers when masters
come or go. Time-driven transitions come from deadlines, stamped with their own instant.
:class:`Rules` is what the cluster engine calls: it routes each happening to the rules it
concerns.

A new alert kind is a new module with its :class:`Rule` and its tests, a line in
:data:`REGISTRY`, and its name in :data:`routewatch.alerts.AlertKind` (the contract): what its
rule reacts to, it says itself (``judge`` for a topic rule, ``deadlines`` and ``rejudges``,
``on_<happening>`` methods), and :class:`Rules` routes it there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from routewatch.alerts import AlertKind
from streaming.engine.rules.at_risk import AtRisk
from streaming.engine.rules.base import (
    HAPPENINGS,
    ClusterFacts,
    EngineView,
    Rule,
    TopicRule,
    TopicView,
)
from streaming.engine.rules.broker_expired import BrokerExpired
from streaming.engine.rules.collector_silent import CollectorSilent
from streaming.engine.rules.failures import FAILURE_QUIET_MS
from streaming.engine.rules.namesrv_divergence import NamesrvDivergence
from streaming.engine.rules.namesrv_unreachable import NamesrvUnreachable
from streaming.engine.rules.no_route_info import CLIENT_FORGET_MS, NoRouteInfo
from streaming.engine.rules.partial_coverage import PartialCoverage
from streaming.engine.rules.queue_skew import QueueSkew
from streaming.engine.rules.send_rejected import SendRejected
from streaming.engine.rules.stale_route import StaleRoute
from streaming.engine.rules.template_missing import TemplateMissing
from streaming.engine.rules.topics import OBSERVED, TopicLife
from streaming.engine.state import Reg, RegKey, TopicState

__all__ = [
    "CLIENT_FORGET_MS",
    "FAILURE_QUIET_MS",
    "KEEPING_KINDS",
    "REGISTRY",
    "Rules",
]

# Every alert kind's rule. Topic rules are judged in this order after a topic changed.
REGISTRY: tuple[type[Rule], ...] = (
    StaleRoute,
    QueueSkew,
    PartialCoverage,
    AtRisk,
    NoRouteInfo,
    SendRejected,
    TemplateMissing,
    BrokerExpired,
    NamesrvDivergence,
    NamesrvUnreachable,
    CollectorSilent,
)

# The kinds whose open alert keeps an auto-created topic from being forgotten: the topic ones.
KEEPING_KINDS: tuple[AlertKind, ...] = tuple(r.kind for r in REGISTRY if r.scope == "topic")


class Rules:
    """The catalogue's rules over one cluster's engine: every happening the engine reports,
    routed to the rules it concerns — a topic's change to the topic rules, a threshold to the
    rule that scheduled it, anything else to the rules that define its hook
    (:data:`~streaming.engine.rules.base.HAPPENINGS`)."""

    def __init__(self, engine: EngineView) -> None:
        self.e = engine
        self.head = engine.head
        self.facts = ClusterFacts(engine)
        self.life = TopicLife(engine, self.facts, KEEPING_KINDS)
        self.by_kind: dict[AlertKind, Rule] = {
            rule.kind: rule(engine, self.facts, self.life) for rule in REGISTRY
        }
        self.topic_rules = [r for r in self.by_kind.values() if isinstance(r, TopicRule)]
        self.refreshed = {k for k, r in self.by_kind.items() if r.refreshed}
        # happening -> the hooks it calls, in the registry's order (a broker or cluster rule's on
        # the head shard alone)
        self.on: dict[str, tuple[Callable[..., None], ...]] = {
            happening: tuple(
                getattr(rule, f"on_{happening}")
                for rule in self.by_kind.values()
                if hasattr(rule, f"on_{happening}") and (self.head or rule.scope == "topic")
            )
            for happening in HAPPENINGS
        }
        # threshold -> what crosses it: the engine's own (a registration's expiry, the end of an
        # unregistered NameServer's 120 s as one of the cluster's, the observer's silence) and
        # an auto-created topic's, then the rules'
        self._thresholds: dict[str, Callable[[str, int], None]] = {
            "expire": self._expire,
            "linger": self._linger,
            "collector_silent": self._silent,
            "settle": self.topic_changed,
            "forget": self.life.forget,
        }
        for rule in self.by_kind.values():
            for name in rule.deadlines:
                self._thresholds[name] = _firing(rule, name)
            for name in rule.rejudges:
                self._thresholds[name] = self.topic_changed

    def thresholds(self) -> set[str]:
        """Every threshold the rules and the engine schedule."""
        return set(self._thresholds)

    # -- deadlines ------------------------------------------------------------------------------

    def fire(self, kind: str, key: str, at: int) -> None:
        self._thresholds[kind](key, at)

    def _expire(self, key: str, at: int) -> None:
        ns, broker, broker_id = orjson.loads(key)
        if self.e.expire((ns, broker, broker_id), at):
            self.broker_expired(broker, broker_id, at)
            self.refresh_broker_evidence(at)

    def _linger(self, key: str, at: int) -> None:
        ns, broker, broker_id = orjson.loads(key)
        if self.e.stop_lingering((ns, broker, broker_id), at):
            for on in self.on["lingering_ended"]:
                on(at)

    def _silent(self, key: str, at: int) -> None:
        if self.e.went_silent(at):
            for on in self.on["observer_silent"]:
                on(at)

    # -- brokers --------------------------------------------------------------------------------

    def broker_heard(self, key: RegKey, ts: int, *, shutdown: bool) -> None:
        for on in self.on["broker_heard"]:
            on(key, ts, shutdown=shutdown)

    def full_registration(self, key: RegKey, reg: Reg, ts: int) -> None:
        for on in self.on["full_registration"]:
            on(key, reg, ts)

    def liveness_changed(self, key: RegKey, at: int, topics: list[str]) -> None:
        before = self.facts.expected_brokers(flipped=key)
        after = self.facts.expected_brokers()
        for topic in topics:
            self.topic_changed(topic, at)
        if before != after:
            for topic in sorted(self.e.meta.auto_topics):
                self.topic_changed(topic, at)
        for on in self.on["liveness_changed"]:
            on(at)

    def refresh_broker_evidence(self, at: int) -> None:
        """An open alert's evidence states current facts: after a registration or a broker's
        expiry, every open alert of a ``refreshed`` kind (BROKER_EXPIRED: the topics no live
        broker holds; NAMESRV_DIVERGENCE: those the broker registers) is derived again; one
        whose evidence changed is updated in place."""
        if not self.head:
            return
        open_keys = [k for k in self.e.book.open if k[0] in self.refreshed]
        for kind, _, _, broker, broker_id in open_keys:
            assert broker is not None and broker_id is not None
            self.by_kind[kind].refresh(broker, broker_id, at)

    def broker_expired(
        self, broker: str, broker_id: int, at: int, *, gap: tuple[int, int] | None = None
    ) -> None:
        for on in self.on["broker_expired"]:
            on(broker, broker_id, at, gap=gap)

    def table_stored(self, key: RegKey) -> None:
        for on in self.on["table_stored"]:
            on(key)

    def table_changed(self, key: RegKey, at: int) -> None:
        for on in self.on["table_changed"]:
            on(key, at)

    # -- the observer ---------------------------------------------------------------------------

    def namesrvs_reached(self, obs: dict[str, Any], at: int, *, changed: bool) -> None:
        for on in self.on["namesrvs_reached"]:
            on(obs, at, changed=changed)

    def observer_back(self, obs: dict[str, Any], at: int) -> None:
        for on in self.on["observer_back"]:
            on(obs, at)

    # -- topics ---------------------------------------------------------------------------------

    def auto_created(
        self, topic: str, state: TopicState, at: int, how: str = OBSERVED, since: int | None = None
    ) -> bool:
        return self.life.auto_created(topic, state, at, how, since)

    def topic_changed(self, topic: str, at: int) -> None:
        """Judge one topic again: every topic rule in the registry's order (a system topic
        raises none but those judged for system topics, and is forgotten as any other); in a
        cluster kept in shards, only by the topic's own."""
        if not self.e.owns(topic):
            return
        view = TopicView(self.e, self.facts, topic)
        for rule in self.topic_rules:
            if view.system and not rule.system_topics:
                continue
            if rule.auto_created_only and not view.auto_created:
                continue
            rule.judge(view, at)
        if view.state is not None:
            self.life.note_idle(topic, view.state, at)

    # -- sends ----------------------------------------------------------------------------------

    def send_succeeded(self, topic: str, ts: int, seq: int | None) -> None:
        for on in self.on["send_succeeded"]:
            on(topic, ts, seq)

    def no_route(self, e: dict[str, Any], ts: int) -> None:
        for on in self.on["no_route"]:
            on(e, ts)

    def rejected(self, e: dict[str, Any], ts: int) -> None:
        for on in self.on["rejected"]:
            on(e, ts)


def _firing(rule: Rule, name: str) -> Callable[[str, int], None]:
    return lambda key, at: rule.fire(name, key, at)
