"""STALE_ROUTE: a NameServer routes a topic to live masters that do not hold it themselves."""

from __future__ import annotations

import shlex

from routewatch.alerts import Alert
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import TopicRule, TopicView, iso, listed
from streaming.engine.state import Config, RegKey

__all__ = ["StaleRoute"]


class StaleRoute(TopicRule):
    kind = "STALE_ROUTE"
    reads = frozenset({"registrations", "namesrvs"})
    system_topics = True

    def judge(self, view: TopicView, at: int) -> None:
        """Live masters that a NameServer routes the topic to while they do not hold it
        themselves (the heartbeat's ``held``)."""
        topic = view.topic
        key = self.facts.topic_key(self.kind, topic)
        stale = sorted(
            k for k, r in self.facts.regs().items() if r.live and r.not_held and topic in r.not_held
        )
        routes = self.e.live_holders(topic)
        if not stale:
            self.e.book.resolve(key, at, lambda alert: _ended(alert, routes, at))
            return
        views: dict[str, list[str]] = {}
        for ns, b, _ in stale:
            views.setdefault(ns, []).append(b)
        brokers = sorted({b for _, b, _ in stale})
        holding = sorted({k[1] for k in routes if k[2] == 0 and k not in stale})
        them = brokers[0] if len(brokers) == 1 else ", ".join(brokers)
        do = "does" if len(brokers) == 1 else "do"
        q = max((routes[k][1] for k in stale if k in routes), default=8)
        recreate = ", ".join(
            self.facts.update_topic(topic, "-b", self.facts.master_addr(b), q=q) for b in brokers
        )
        namesrvs = self.facts.namesrvs_for_remedy()
        delete = shlex.join(
            ["mqadmin", "deleteTopic", "-n", namesrvs, "-c", self.cluster, "-t", topic]
        )
        self.e.book.raise_or_update(
            key,
            at,
            severity="warning",
            summary=f"Topic {topic} is routed to {them}, which {do} not hold it: sends routed "
            "there are refused (TOPIC_NOT_EXIST) unless auto-creation makes the topic again, and "
            "reads of those queues find nothing.",
            evidence={
                "stale_routes": {ns: bs for ns, bs in sorted(views.items())},
                "brokers_holding_topic": holding,
            },
            remedy=f"Make it there again with {recreate}, or retire the topic everywhere with "
            f"`{delete}` (a NameServer drops a topic a broker deleted only when the topic is "
            "deleted there too, or the broker leaves).",
        )


def _ended(alert: Alert, routes: dict[RegKey, Config], at: int) -> Ending:
    """No live master is routed the topic without holding it any more."""
    was = sorted({b for bs in alert.evidence["stale_routes"].values() for b in bs})
    return Ending(
        f"Topic {alert.topic} was routed to {listed(was)}, which did not hold it, from "
        f"{iso(alert.opened_at)}; from {iso(at)} no live master was routed it without holding it.",
        {
            "stale_routes": {},
            "brokers_holding_topic": sorted({k[1] for k in routes if k[2] == 0}),
            "resolution": "no stale route left",
        },
    )
