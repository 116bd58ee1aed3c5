"""TEMPLATE_MISSING: a broker with autoCreateTopicEnable=true whose TBW102 is missing or lacks
INHERIT, so topics sent to it are not auto-created."""

from __future__ import annotations

from streaming.engine.rules.base import Rule
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
                remedy=REMEDY,
            )
        else:
            self.e.book.resolve(
                alert_key, ts, {"tbw102": reg.template, "auto_create_topic_enable": reg.auto_create}
            )
