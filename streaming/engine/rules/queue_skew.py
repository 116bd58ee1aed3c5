"""QUEUE_SKEW: a topic's queue counts differ across its brokers, or read from write on one."""

from __future__ import annotations

from functools import partial
from typing import Any

from routewatch.alerts import Alert
from routewatch.remedy.plan import Plan, Routed
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import TopicRule, TopicView, broker_label, iso

__all__ = ["QueueSkew"]


class QueueSkew(TopicRule):
    kind = "QUEUE_SKEW"
    reads = frozenset({"registrations", "namesrvs"})

    def judge(self, view: TopicView, at: int) -> None:
        """QUEUE_SKEW over the cluster route, per broker (name and id: a master and its slave
        are two); where NameServers hold different counts for one broker, the registration
        that wrote them last decides (a complete full registration, or an immediate one naming
        the topic: not the NameServer heard from last, whose table may be an older one while a
        split registration is still arriving)."""
        topic = view.topic
        key = self.facts.topic_key(self.kind, topic)
        configs = set(view.holders.values())
        if len(configs) <= 1 and all(c[0] == c[1] for c in configs):
            # (the common case, cheaply: one configuration on every holder, read = write; this
            # judgement runs for every topic of each registration that changes it)
            self.e.book.resolve(key, at, lambda alert: self._ended(alert, view, at))
            return
        per_broker = self._per_broker(view)
        writes = {c["write"] for c in per_broker.values()}
        uneven = [b for b, c in per_broker.items() if c["read"] != c["write"]]
        if not (len(writes) > 1 or uneven):
            self.e.book.resolve(key, at, lambda alert: self._ended(alert, view, at))
            return
        # every count raised to the largest of any broker's, read or write: none is lowered (a
        # read-queue count lowered strands the messages of the queues it drops)
        q = max(max(c["read"], c["write"]) for c in per_broker.values())
        self.e.book.raise_or_update(
            key,
            at,
            severity="info",
            summary=f"Topic {topic} has uneven queues: write queues "
            f"{sorted(writes)} across brokers"
            + (f", read != write on {', '.join(uneven)}" if uneven else "")
            + ".",
            evidence={"brokers": per_broker},
            remedy=self.facts.update_topic(topic, "-c", self.cluster, q=q),
            plan=partial(self._plan, view, per_broker, q),
        )

    def _plan(self, view: TopicView, per_broker: dict[str, dict[str, int]], q: int) -> Plan:
        """Each master whose counts are not ``q`` raised to ``q`` read and write, its perm
        kept (a slave takes its master's table)."""
        topic = view.topic
        perms = {b: c[2] for (_, b, i), c in view.holders.items() if i == 0}
        masters = {b: c for b, c in per_broker.items() if b in perms}
        steps = [
            self.facts.create(
                topic,
                b,
                (q, q, perms[b]),
                f"{topic}'s queues on {b} raised from {c['read']} read and {c['write']} write "
                f"to {q} and {q} (perm {perms[b]} kept); no count is lowered.",
            )
            for b, c in masters.items()
            if (c["read"], c["write"]) != (q, q)
        ]
        routed: dict[str, Routed] = {b: [c["read"], c["write"]] for b, c in masters.items()}
        return Plan(
            namesrvs=self.facts.namesrv_list(),
            expects={"topic": topic, "routed": routed},
            steps=list(steps),
            notes=["routewatch never lowers a queue count: slaves follow their masters."],
        )

    def _per_broker(self, view: TopicView) -> dict[str, dict[str, int]]:
        """Each broker's read and write queues of the topic, from the registration that wrote
        them last."""
        regs = self.facts.regs()
        latest: dict[tuple[str, int], tuple[tuple[int, str], Any]] = {}
        for (ns, broker, broker_id), config in view.holders.items():
            when = (regs[(ns, broker, broker_id)].written_at(view.topic), ns)
            seen = latest.get((broker, broker_id))
            if seen is None or when > seen[0]:
                latest[(broker, broker_id)] = (when, config)
        return {
            broker_label(broker, broker_id): {"read": c[0], "write": c[1]}
            for (broker, broker_id), (_, c) in sorted(latest.items())
        }

    def _ended(self, alert: Alert, view: TopicView, at: int) -> Ending:
        per_broker = self._per_broker(view)
        was = sorted({c["write"] for c in alert.evidence["brokers"].values()})
        if per_broker:
            how, resolution = "its queue counts agreed", "counts agree"
        else:
            how, resolution = "no live broker held it", "no live broker holds it"
        return Ending(
            f"Topic {view.topic} had uneven queues (write queues {was}) from "
            f"{iso(alert.opened_at)}; from {iso(at)} {how}.",
            {"brokers": per_broker, "resolution": resolution},
        )
