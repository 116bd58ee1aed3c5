"""SEND_REJECTED: brokers refuse sends of a topic with TOPIC_NOT_EXIST."""

from __future__ import annotations

from functools import partial
from typing import Any

from routewatch.alerts import Alert
from routewatch.remedy.plan import Plan
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import iso
from streaming.engine.rules.failures import FailureRule

__all__ = ["SendRejected"]


class SendRejected(FailureRule):
    kind = "SEND_REJECTED"
    reads = frozenset({"registrations", "namesrvs"})
    record = "rejected"
    deadlines = ("rejected",)

    def on_rejected(self, e: dict[str, Any], ts: int) -> None:
        """A send a broker refused (TOPIC_NOT_EXIST)."""
        topic = e["topic"]
        key = self.facts.topic_key(self.kind, topic)
        rej = self._failure(topic, ts, {"first": ts, "count": 0, "brokers": {}, "due": None})
        broker = e.get("broker") or "?"
        rej["brokers"][broker] = rej["brokers"].get(broker, 0) + 1
        refusing = sorted(rej["brokers"])
        brokers = ", ".join(refusing)
        update, addr = self.facts.update_topic, self.facts.master_addr
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
            + ", ".join(update(topic, "-b", addr(b)) for b in refusing)
            + f"), or remove the stale TBW102 from {brokers}.",
            plan=partial(self._plan, topic, refusing),
        )

    def _plan(self, topic: str, refusing: list[str]) -> Plan:
        """The topic made on each refusing master, with the count it has on other brokers (8
        where none holds it)."""
        masters = [b for b in refusing if b != "?"]
        q = max((c[1] for c in self.e.live_holders(topic).values()), default=8)
        return Plan(
            namesrvs=self.facts.namesrv_list(),
            expects={"topic": topic, "held": {b: False for b in masters}},
            steps=list(self.facts.create_on(topic, masters, q)),
            notes=[f"routewatch does not touch the TBW102 of {', '.join(masters) or 'a broker'}."],
        )

    def ended(self, alert: Alert, how: str, resolution: str) -> Ending:
        e = alert.evidence
        return Ending(
            f"Broker(s) {', '.join(sorted(e['brokers']))} refused sends of topic {alert.topic} "
            f"with TOPIC_NOT_EXIST {e['refusals']} time(s) from {iso(e['first_refusal'])} to "
            f"{iso(e['last_refusal'])}; {how}.",
            {**e, "resolution": resolution},
        )
