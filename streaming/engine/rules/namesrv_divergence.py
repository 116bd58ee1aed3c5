"""NAMESRV_DIVERGENCE: a broker registered on some of the cluster's NameServers and not others,
or routed differently by them, for 60 s."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from routewatch.alerts import Alert
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import (
    EVIDENCE_LIST_MAX,
    ClusterFacts,
    EngineView,
    Rule,
    capped,
    iso,
    listed,
)
from streaming.engine.state import RegKey, key_json

if TYPE_CHECKING:
    from streaming.engine.rules.topics import TopicLife

__all__ = ["DIVERGENCE_MS", "REMEDY", "ROUTES_REMEDY", "NamesrvDivergence"]

DIVERGENCE_MS = 60_000

# a broker missing on some NameServers
REMEDY = "Check the broker process and its namesrvAddr list: it no longer reaches every NameServer."
# a broker live on every NameServer whose routes of it differ
ROUTES_REMEDY = (
    "Compare the routes each NameServer gives for the topics named (topicRoute against each "
    "NameServer): a NameServer with deleteTopicWithBrokerRegistration=true drops from a "
    "broker's routes what each part of a split registration (enableSplitRegistration=true) "
    "leaves out, so turn one of the two off; otherwise check that the broker's registrations "
    "reach every NameServer."
)


class NamesrvDivergence(Rule):
    kind = "NAMESRV_DIVERGENCE"
    scope = "broker"
    reads = frozenset({"registrations", "tables", "namesrvs", "observer"})
    deadlines = ("diverge",)
    refreshed = True

    def __init__(self, engine: EngineView, facts: ClusterFacts, life: TopicLife) -> None:
        super().__init__(engine, facts, life)
        # (broker, id, NameServers) -> the topics they route it differently; derived from the
        # tables, dropped when one of the broker's changes (judged on every liveness change)
        self._apart: dict[tuple[str, int, frozenset[str]], list[str]] = {}

    def fire(self, deadline: str, key: str, at: int) -> None:
        """60 s of divergence, without a break, opens the alert."""
        broker, broker_id = orjson.loads(key)
        if self.e.meta.diverged_since.get((broker, broker_id)) == at - DIVERGENCE_MS:
            self._alert(broker, broker_id, at)

    def refresh(self, broker: str, broker_id: int, at: int) -> None:
        self._alert(broker, broker_id, at)

    def on_liveness_changed(self, at: int) -> None:
        self.judge(at)

    def on_lingering_ended(self, at: int) -> None:
        self.judge(at)

    def on_namesrvs_reached(self, obs: dict[str, Any], at: int, *, changed: bool) -> None:
        """NameServers a round could not reach are unknown: no divergence is judged against
        them."""
        if changed:
            self.judge(at)

    def on_table_changed(self, key: RegKey, at: int) -> None:
        """A live registration changed a broker's table: that broker judged again (no other
        broker's tables or liveness changed; a registration that turns live is judged as a
        liveness change, every broker)."""
        self.judge(at, only=(key[1], key[2]))

    def on_table_stored(self, key: RegKey) -> None:
        """A broker's table changed: what its NameServers route it apart is derived again."""
        _, broker, broker_id = key
        for cached in [c for c in self._apart if c[:2] == (broker, broker_id)]:
            del self._apart[cached]

    def judge(self, at: int, only: tuple[str, int] | None = None) -> None:
        """Every broker's divergence (``only``: one broker's), started, ended or updated."""
        unknown = self.facts.unknown_namesrvs()
        cluster_ns = self.facts.cluster_namesrvs() - unknown
        live_on = self.facts.live_on()
        since = self.e.meta.diverged_since
        for (broker, broker_id), all_namesrvs in sorted(live_on.items()):
            if only is not None and (broker, broker_id) != only:
                continue
            namesrvs = all_namesrvs - unknown
            diverged = bool(namesrvs) and (
                namesrvs != cluster_ns or bool(self._routed_apart(broker, broker_id, namesrvs))
            )
            key = self.facts.broker_key(self.kind, broker, broker_id)
            if diverged and (broker, broker_id) not in since:
                since[(broker, broker_id)] = at
                self.e.schedule(at + DIVERGENCE_MS, "diverge", key_json((broker, broker_id)))
            elif not diverged and (broker, broker_id) in since:
                del since[(broker, broker_id)]
                self.e.book.resolve(key, at, lambda alert: self._ended(alert, at))
            elif diverged and self.e.book.get(key):
                self._alert(broker, broker_id, at)

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

    def _alert(self, broker: str, broker_id: int, at: int) -> None:
        unknown = self.facts.unknown_namesrvs()
        cluster_ns = self.facts.cluster_namesrvs() - unknown
        live_on = sorted(self.facts.live_on().get((broker, broker_id), set()) - unknown)
        missing = sorted(cluster_ns - set(live_on))
        if missing:
            differing = sorted(
                {t for ns in live_on for t in (self.e.tables.get((ns, broker, broker_id)) or {})}
            )
        else:
            differing = self._routed_apart(broker, broker_id, set(live_on))
        topics = [t for t in differing if not self.facts.is_system(t)]
        system = [t for t in differing if self.facts.is_system(t)]
        if missing:
            summary = (
                f"Broker {broker} (id {broker_id}) is registered on {listed(live_on)} "
                f"but not on {listed(missing)}: clients see different routes by NameServer."
            )
            remedy = REMEDY
            plan = partial(
                self.facts.manual_plan,
                remedy,
                "broker_live",
                f"{broker} (id {broker_id}) is live on every NameServer of the cluster",
                broker=broker,
                broker_id=broker_id,
            )
        else:
            counts = [f"{len(topics)} topic(s)"] if topics or not system else []
            counts += [f"{len(system)} system topic(s)"] if system else []
            summary = (
                f"Broker {broker} (id {broker_id}) is registered on {listed(live_on)}, "
                f"which route it {' and '.join(counts)} differently: clients see different "
                "routes by NameServer."
            )
            remedy = ROUTES_REMEDY
            plan = partial(
                self.facts.manual_plan,
                remedy,
                "routed_alike",
                f"every NameServer routes {broker} (id {broker_id}) the topics named alike",
                broker=broker,
                broker_id=broker_id,
                topics=[*topics, *system][:EVIDENCE_LIST_MAX],
            )
        self.e.book.raise_or_update(
            self.facts.broker_key(self.kind, broker, broker_id),
            at,
            severity="warning",
            summary=summary,
            evidence={
                "live_on": live_on,
                "missing_on": missing,
                "since": self.e.meta.diverged_since.get((broker, broker_id)),
                "topics_differing": capped(topics),
                "system_topics": system,
            },
            remedy=remedy,
            plan=plan,
        )

    def _ended(self, alert: Alert, at: int) -> Ending:
        """Live on every NameServer of its cluster again and routed alike, or on none."""
        broker, broker_id = alert.broker, alert.broker_id
        assert broker is not None and broker_id is not None
        unknown = self.facts.unknown_namesrvs()
        live_on = sorted(self.facts.live_on().get((broker, broker_id), set()) - unknown)
        since = alert.evidence["since"]
        was = (
            "registered on some NameServers of its cluster and not others"
            if alert.evidence["missing_on"]
            else "routed differently by the NameServers of its cluster"
        )
        now = "registered alike on every one" if live_on else "registered on none"
        return Ending(
            f"Broker {broker} (id {broker_id}) was {was} from {iso(since)}; from {iso(at)} it "
            f"was {now}.",
            {
                "live_on": live_on,
                "missing_on": [],
                "since": since,
                "topics_differing": capped([]),
                "system_topics": [],
                "resolution": "alike on every NameServer" if live_on else "on no NameServer",
            },
        )
