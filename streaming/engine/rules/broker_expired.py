"""BROKER_EXPIRED: a broker silent for over 120 s on every NameServer, and the topics it held
that have no route left."""

from __future__ import annotations

from functools import partial
from typing import Any

from routewatch.remedy.plan import Manual, Plan, check
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import EVIDENCE_LIST_MAX, Rule, capped, iso
from streaming.engine.state import Reg, RegKey

__all__ = ["BrokerExpired", "remedy"]


def remedy(broker: str, broker_id: int, addr: str) -> str:
    return (
        f"Start broker {broker} (id {broker_id}, last at {addr}) again, with every NameServer "
        "of its cluster in its namesrvAddr list; if it runs, check why it cannot reach them."
    )


class BrokerExpired(Rule):
    kind = "BROKER_EXPIRED"
    scope = "broker"
    reads = frozenset({"registrations", "tables", "observer"})
    refreshed = True

    def on_broker_heard(self, key: RegKey, ts: int, *, shutdown: bool) -> None:
        """A heartbeat (or an unregistration) from a broker resolves its BROKER_EXPIRED."""
        _, broker, broker_id = key
        how = "it unregistered" if shutdown else "it registered again"
        self.e.book.resolve(
            self.facts.broker_key(self.kind, broker, broker_id),
            ts,
            lambda alert: Ending(
                f"Broker {broker} (id {broker_id}) was silent on every NameServer from "
                f"{iso(alert.opened_at)}; at {iso(ts)} {how}.",
                {
                    **self._evidence(broker, broker_id),
                    "resolution": "unregistered" if shutdown else "heartbeat received",
                },
            ),
        )

    def refresh(self, broker: str, broker_id: int, at: int) -> None:
        self.on_broker_expired(broker, broker_id, at)

    def _mine(self, broker: str, broker_id: int) -> dict[RegKey, Reg]:
        regs = self.facts.regs()
        return {k: r for k, r in regs.items() if (k[1], k[2]) == (broker, broker_id)}

    def _evidence(self, broker: str, broker_id: int) -> dict[str, Any]:
        """The broker as it stands: its last heartbeat and address, its NameServers, and the
        topics it held that no live broker holds (system topics apart)."""
        mine = self._mine(broker, broker_id)
        latest = max(mine.values(), key=lambda r: r.last_hb)
        orphaned = sorted(
            {t for k in mine for t in (self.e.tables.get(k) or {}) if not self.e.live_holders(t)}
        )
        return {
            "last_heartbeat": latest.last_hb,
            "addr": latest.addr,
            "namesrvs": sorted(k[0] for k in mine),
            "topics_without_route": capped([t for t in orphaned if not self.facts.is_system(t)]),
            "system_topics": [t for t in orphaned if self.facts.is_system(t)],
        }

    def on_broker_expired(
        self, broker: str, broker_id: int, at: int, *, gap: tuple[int, int] | None = None
    ) -> None:
        """BROKER_EXPIRED, if the broker is live on no NameServer now; ``gap``: it expired in a
        gap of its cluster's observer (from its last look to its first look after), found at
        the gap's end."""
        mine = self._mine(broker, broker_id)
        if not mine or any(r.live for r in mine.values()):
            return
        if max(mine.values(), key=lambda r: r.last_hb).shutdown:
            return
        key = self.facts.broker_key(self.kind, broker, broker_id)
        current = self.e.book.get(key)
        if gap is None and current is not None and "expired_in_collector_gap" in current.evidence:
            found = current.evidence["expired_in_collector_gap"]  # (its evidence refreshed)
            gap = (found["from"], found["to"])
        evidence = self._evidence(broker, broker_id)
        lost = evidence["topics_without_route"]["count"]
        summary = (
            f"Broker {broker} (id {broker_id}) has been silent for over 120 s on every "
            f"NameServer; {lost} topic(s) it held have no route left."
        )
        if gap is not None:
            evidence["expired_in_collector_gap"] = {"from": gap[0], "to": gap[1]}
            summary = (
                f"Broker {broker} (id {broker_id}) was registered on no NameServer when the "
                f"collector looked again after a gap (its last look before was at "
                f"{iso(gap[0])}): it expired in that gap; {lost} topic(s) it held have no route "
                "left."
            )
        self.e.book.raise_or_update(
            key,
            at,
            severity="critical",
            summary=summary,
            evidence=evidence,
            remedy=remedy(broker, broker_id, evidence["addr"]),
            plan=partial(self._plan, broker, broker_id, evidence),
        )

    def _plan(self, broker: str, broker_id: int, evidence: dict[str, Any]) -> Plan:
        """The broker started again, by hand; instead, behind the loss flag, each topic it
        held that has no route left made on the live writable masters."""
        facts = self.facts
        start = Manual(
            remedy(broker, broker_id, evidence["addr"]),
            check(
                "broker_live",
                f"{broker} (id {broker_id}) is live on every NameServer of the cluster",
                broker=broker,
                broker_id=broker_id,
            ),
        )
        orphans: list[str] = evidence["topics_without_route"]["items"]
        if broker_id != 0 or not orphans:
            return Plan(namesrvs=facts.namesrv_list(), steps=[start])
        configs: dict[str, Any] = {}
        for key in self._mine(broker, broker_id):
            for topic, c in (self.e.tables.get(key) or {}).items():
                if topic in orphans:
                    configs.setdefault(topic, c)
        masters = sorted(facts.expected_brokers())
        stranded = (
            f"the messages on {broker} stay there, unread, until it returns: sends go to the "
            "other masters meanwhile"
        )
        instead = [
            facts.create(
                topic,
                b,
                c,
                f"{topic}, which had its only route on {broker}, made on {b} with its {c[0]} "
                f"read and {c[1]} write queues.",
                loses=stranded,
            )
            for topic, c in sorted(configs.items())
            for b in masters
        ]
        notes = []
        if len(instead) > EVIDENCE_LIST_MAX:  # (a plan stays small: run it again for the rest)
            notes.append(
                f"The alternative holds the first {EVIDENCE_LIST_MAX} of {len(instead)} topic "
                "placements; the alert's next plan holds the rest once these are made."
            )
            instead = instead[:EVIDENCE_LIST_MAX]
        return Plan(
            namesrvs=facts.namesrv_list(),
            steps=[start],
            alternative=(
                f"Route the topics that only {broker} held to the live masters instead.",
                list(instead),
            ),
            notes=notes,
        )
