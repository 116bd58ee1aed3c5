"""An alert's remedy as data (docs/alerts.md, "Remedies as plans"): the record every alert
carries as ``plan``, and the builders the rules make it with.

A :class:`Plan` is defined once, here: the engine builds one beside each alert's prose remedy
and stores :meth:`Plan.to_dict`; ``routewatch remedy`` and the API read it back with
:meth:`Plan.from_dict`. The shell form of an action is derived from its fields, never stored
apart from them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "PERM_RW",
    "PERM_TEMPLATE",
    "Action",
    "CheckKind",
    "Manual",
    "Op",
    "Plan",
    "Routed",
    "Step",
    "check",
]

PERM_RW = 6  # read and write (PermName.PERM_READ | PERM_WRITE)
PERM_TEMPLATE = 7  # read, write and inherit: a usable TBW102

Op = Literal["create_topic", "restore_template", "delete_route"]
CheckKind = Literal[
    "broker_live", "namesrv_answers", "routed_alike", "template_usable", "alert_resolved"
]
# what a plan assumes a broker is routed: nothing, writable, or these [read, write] counts
Routed = None | Literal["writable"] | list[int]

# the broker setting that keeps a 5.x broker from making TBW102 (a system topic) on request
VALIDATE_SYSTEM_TOPIC = "validateSystemTopicWhenUpdateTopic"


@dataclass(frozen=True)
class Action:
    """One admin request routewatch performs: ``create_topic`` and ``restore_template`` on a
    master (``broker`` at ``addr``), ``delete_route`` on a NameServer (``namesrv``)."""

    op: Op
    topic: str
    changes: str
    broker: str | None = None
    addr: str | None = None
    namesrv: str | None = None
    read_queues: int | None = None
    write_queues: int | None = None
    perm: int | None = None
    loses: str | None = None

    def shell(self, namesrvs: list[str]) -> str | None:
        """The same as a command to paste, quoted as every remedy command; None where
        ``mqadmin`` has no command that does only this."""
        ns = ";".join(namesrvs) or "<namesrv>"
        if self.op == "create_topic":
            return shlex.join(
                [
                    *("mqadmin", "updateTopic", "-n", ns, "-b", str(self.addr), "-t", self.topic),
                    *("-r", str(self.read_queues), "-w", str(self.write_queues)),
                    *("-p", str(self.perm)),
                ]
            )
        if self.op == "restore_template":
            config = ["mqadmin", "updateBrokerConfig", "-n", ns, "-b", str(self.addr)]
            off = shlex.join([*config, "-k", VALIDATE_SYSTEM_TOPIC, "-v", "false"])
            back = shlex.join([*config, "-k", VALIDATE_SYSTEM_TOPIC, "-v", "true"])
            make = shlex.join(
                [
                    *("mqadmin", "updateTopic", "-n", ns, "-b", str(self.addr), "-t", self.topic),
                    *("-r", str(self.read_queues), "-w", str(self.write_queues)),
                    *("-p", str(self.perm)),
                ]
            )
            return f"{off} && {make}; {back}"
        return None  # delete_route: mqadmin deleteTopic also deletes it on every broker

    def to_dict(self, namesrvs: list[str]) -> dict[str, Any]:
        return {
            "type": "action",
            "op": self.op,
            "broker": self.broker,
            "addr": self.addr,
            "namesrv": self.namesrv,
            "topic": self.topic,
            "read_queues": self.read_queues,
            "write_queues": self.write_queues,
            "perm": self.perm,
            "changes": self.changes,
            "loses": self.loses,
            "shell": self.shell(namesrvs),
        }

    @property
    def target(self) -> str:
        """Where the request goes: the broker's address or the NameServer's."""
        return str(self.addr if self.namesrv is None else self.namesrv)


def check(kind: CheckKind, says: str, **args: Any) -> dict[str, Any]:
    """A manual step's check: what a run evaluates on the live cluster, and its sentence."""
    return {"kind": kind, **args, "says": says}


@dataclass(frozen=True)
class Manual:
    """A step routewatch cannot take (restart a broker, fix a client), with the check that
    shows it was done."""

    do: str
    check: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "manual", "do": self.do, "check": self.check}


Step = Action | Manual


def _step(data: dict[str, Any]) -> Step:
    if data["type"] == "manual":
        return Manual(data["do"], data["check"])
    fields = {k: v for k, v in data.items() if k not in ("type", "shell")}
    return Action(**fields)


@dataclass(frozen=True)
class Plan:
    """An alert's remedy as steps, with what it assumes of the cluster."""

    namesrvs: list[str]
    steps: list[Step]
    expects: dict[str, Any] = field(default_factory=dict)
    alternative: tuple[str, list[Step]] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        alt = self.alternative
        return {
            "namesrvs": self.namesrvs,
            "expects": self.expects,
            "steps": [self.step_dict(s) for s in self.steps],
            "alternative": None
            if alt is None
            else {"why": alt[0], "steps": [self.step_dict(s) for s in alt[1]]},
            "notes": self.notes,
        }

    def step_dict(self, step: Step) -> dict[str, Any]:
        """One step as the plan's record holds it (an action with its shell form)."""
        return step.to_dict(self.namesrvs) if isinstance(step, Action) else step.to_dict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        alt = data.get("alternative")
        return cls(
            namesrvs=list(data["namesrvs"]),
            steps=[_step(s) for s in data["steps"]],
            expects=dict(data.get("expects") or {}),
            alternative=None if alt is None else (alt["why"], [_step(s) for s in alt["steps"]]),
            notes=list(data.get("notes") or []),
        )

    def path(self, *, alternative: bool) -> list[Step]:
        """The steps a run takes: the plan's, or its alternative's."""
        if not alternative:
            return self.steps
        return [] if self.alternative is None else self.alternative[1]

    @property
    def actions(self) -> list[Action]:
        return [s for s in self.steps if isinstance(s, Action)]
