"""STALE_ROUTE: a NameServer routes a topic to live masters that do not hold it themselves."""

from __future__ import annotations

import shlex
from functools import partial

from routewatch.alerts import Alert
from routewatch.remedy.plan import Action, Plan, Routed
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
            plan=partial(self._plan, topic, stale, routes),
        )

    def _plan(self, topic: str, stale: list[RegKey], routes: dict[RegKey, Config]) -> Plan:
        """The topic made again on each stale master with the routed counts; instead, behind
        the loss flag, its route deleted on every NameServer and made again from its holders."""
        facts = self.facts
        configs: dict[str, Config] = {}
        for k in stale:
            if k[2] == 0 and k in routes:
                configs.setdefault(k[1], routes[k])
        routed: dict[str, Routed] = {b: [c[0], c[1]] for b, c in configs.items()}
        steps = [
            facts.create(
                topic,
                b,
                c,
                f"{topic} made again on {b}, which it is routed to, with the routed {c[0]} read "
                f"and {c[1]} write queues (perm {c[2]}).",
            )
            for b, c in sorted(configs.items())
        ]
        holders: dict[str, Config] = {}
        for k, c in sorted(routes.items()):
            if k[2] == 0 and k[1] not in configs:
                holders.setdefault(k[1], c)
        instead: list[Action] = [
            Action(
                "delete_route",
                topic,
                changes=f"{topic}'s route deleted on NameServer {ns}.",
                namesrv=ns,
                loses=f"{topic} has no route on {ns} until the next step makes it again on its "
                "holders: sends that refresh their route then fail.",
            )
            for ns in facts.namesrv_list()
        ]
        instead += [
            facts.create(
                topic,
                b,
                c,
                f"{topic} updated on {b}, which holds it, with its own {c[0]} read and {c[1]} "
                "write queues: the NameServers route it there again.",
            )
            for b, c in sorted(holders.items())
        ]
        return Plan(
            namesrvs=facts.namesrv_list(),
            expects={
                "topic": topic,
                "routed": routed,
                "held": {b: False for b in configs},
            },
            steps=list(steps),
            alternative=(
                "Retire the stale route instead: delete the topic's route on every NameServer, "
                "then make it again on the masters that hold it.",
                list(instead),
            ),
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
