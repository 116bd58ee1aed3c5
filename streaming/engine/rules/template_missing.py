"""TEMPLATE_MISSING: a broker with autoCreateTopicEnable=true whose TBW102 is missing or lacks
INHERIT, so topics sent to it are not auto-created."""

from __future__ import annotations

from routewatch.remedy.plan import PERM_TEMPLATE, Action, Manual, Plan, check
from routewatch.rocketmq import TBW102
from streaming.engine.alerts import Ending
from streaming.engine.rules.base import Rule, iso
from streaming.engine.state import Reg, RegKey

__all__ = ["TemplateMissing", "remedy"]


def remedy(broker: str, addr: str) -> str:
    return (
        f"Restart broker {broker} ({addr}) with autoCreateTopicEnable=true so that it recreates "
        "TBW102, or turn auto-creation off on purpose."
    )


def plan(namesrvs: list[str], broker: str, broker_id: int, addr: str) -> Plan:
    """On a 5.x master, TBW102 made again with INHERIT by three requests (a broker refuses
    a request on a system topic unless told not to); a restart instead, by hand."""
    restart = Manual(
        f"Restart broker {broker} ({addr}) with autoCreateTopicEnable=true in its configuration "
        "file: at its start it makes TBW102 with INHERIT.",
        check("template_usable", f"{broker}'s own TBW102 has INHERIT", broker=broker, addr=addr),
    )
    off = "Or turn auto-creation off on purpose (autoCreateTopicEnable=false): routewatch does not."
    if broker_id != 0:  # a slave takes its master's table
        return Plan(namesrvs=namesrvs, steps=[restart], notes=[off])
    make = Action(
        "restore_template",
        TBW102,
        changes=f"TBW102 made again on {broker} with perm {PERM_TEMPLATE} (read, write, inherit) "
        "and the broker's own defaultTopicQueueNums, validateSystemTopicWhenUpdateTopic set to "
        "false for that request and back after it.",
        broker=broker,
        addr=addr,
        read_queues=8,
        write_queues=8,
        perm=PERM_TEMPLATE,
    )
    return Plan(
        namesrvs=namesrvs,
        expects={"template_unusable": [broker]},
        steps=[make],
        alternative=("Restart the broker instead (on RocketMQ 4.9, the only way).", [restart]),
        notes=[
            "A RocketMQ 4.9 broker refuses any admin request on TBW102 (a system topic): there "
            "routewatch refuses the action, and the alternative is the way.",
            off,
        ],
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
                remedy=remedy(broker, reg.addr),
                plan=lambda: plan(self.facts.namesrv_list(), broker, broker_id, reg.addr),
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
