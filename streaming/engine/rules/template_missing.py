"""TEMPLATE_MISSING: a broker with autoCreateTopicEnable=true whose TBW102 is missing or lacks
INHERIT, so topics sent to it are not auto-created."""

from __future__ import annotations

from streaming.engine.alerts import Ending
from streaming.engine.rules.base import Rule, iso
from streaming.engine.state import Reg, RegKey

__all__ = ["REMEDY", "TemplateMissing"]

REMEDY = (
    "Restart the broker with autoCreateTopicEnable=true so that it recreates TBW102, or turn "
    "auto-creation off on purpose."
)


class TemplateMissing(Rule):
    kind = "TEMPLATE_MISSING"
    scope = "broker"
    # reads nothing beyond its own broker's registrations

    def on_full_registration(self, key: RegKey, reg: Reg, ts: int) -> None:
        """Judged on a live broker's latest full registration."""
        _, broker, broker_id = key
        alert_key = self.facts.broker_key(self.kind, broker, broker_id)
        evidence = {
            "namesrv": key[0],
            "auto_create_topic_enable": reg.auto_create,
            "tbw102": reg.template,
            "data_version": reg.version,
        }
        if reg.auto_create and reg.template != "usable":
            what = "has no TBW102" if reg.template == "missing" else "has a TBW102 without INHERIT"
            self.e.book.raise_or_update(
                alert_key,
                ts,
                severity="warning",
                summary=f"Broker {broker} has autoCreateTopicEnable=true but {what}: "
                "topics sent to it are not auto-created.",
                evidence=evidence,
                remedy=REMEDY,
            )
            return
        how = "a usable TBW102" if reg.auto_create else "autoCreateTopicEnable=false"
        self.e.book.resolve(
            alert_key,
            ts,
            lambda alert: Ending(
                f"Broker {broker} had autoCreateTopicEnable=true without a usable TBW102 "
                f"({alert.evidence['tbw102']}) from {iso(alert.opened_at)}; its full "
                f"registration at {iso(ts)} on {key[0]} carried {how}.",
                {
                    **evidence,
                    "resolution": "usable TBW102" if reg.auto_create else "auto-creation off",
                },
            ),
        )
