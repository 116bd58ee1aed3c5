"""BROKER_EXPIRED: a broker silent for over 120 s on every NameServer, and the topics it held
that have no route left."""

from __future__ import annotations

from typing import Any

from streaming.engine.alerts import Ending
from streaming.engine.rules.base import Rule, capped, iso
from streaming.engine.state import Reg, RegKey

__all__ = ["REMEDY", "BrokerExpired"]

REMEDY = "Check the broker process and its namesrvAddr list."


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
            remedy=REMEDY,
        )
