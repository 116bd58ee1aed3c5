"""The failures ``routewatch sandbox break`` makes happen, each by RocketMQ's own means on a
running sandbox, and the alert each raises (docs/sandbox.md):

- ``template BROKER`` — the broker loses TBW102: it is stopped, TBW102 is taken out of its topic
  table (``store/config/topics.json``, its data version moved on, as after a hand-edited
  file), it starts with
  auto-creation off (else it would make TBW102 again at start) and auto-creation is turned on at
  run time (``updateBrokerConfig``): ``TEMPLATE_MISSING`` at its next full registration (30 s).
  RocketMQ refuses to delete TBW102 by an admin request (4.9 always; 5.x unless its system-topic
  check is turned off), which is why it takes a restart.
- ``kill BROKER`` — SIGKILL: ``BROKER_EXPIRED`` 120 s after its last heartbeat.
- ``cut BROKER NAMESRV`` — the broker restarts registering with every NameServer but that one
  (its ``namesrvAddr`` without it): ``NAMESRV_DIVERGENCE`` once its registration there has run
  out (120 s) and 60 s of divergence, or sooner if the two route it differently.
- ``perm BROKER`` — its write permission wiped (``updateBrokerConfig brokerPermission=4``,
  which it registers at once): its topics are routed read-only, and ``PARTIAL_COVERAGE`` says so
  of an auto-created topic it holds with no other writable holder.

A break's change to a broker's settings is kept across the broker's later restarts (a wiped
permission stays wiped, a lost TBW102 stays lost, when it is cut off a NameServer).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

from routewatch.errors import RoutewatchError
from routewatch.testing.rocketmq import Broker, RocketMQCluster

__all__ = ["BREAKS", "apply_break"]

TEMPLATE = "TBW102"
READ_ONLY = "4"  # PermName.PERM_READ


def _broker(cluster: RocketMQCluster, name: str) -> Broker:
    if name not in cluster.brokers:
        raise RoutewatchError(
            f"the sandbox has no broker '{name}': name one of {', '.join(cluster.brokers)}."
        )
    broker = cluster.brokers[name]
    if not broker.running:
        raise RoutewatchError(
            f"broker {name} is not running (killed by an earlier break?): restart the sandbox "
            "to have it back."
        )
    return broker


def _without_template(table: Path) -> None:
    """Take TBW102 out of a broker's topic table file (and its backup, which the broker loads
    when the file is unreadable), moving its data version on as the broker does at every change
    of its table: a table that changed under the same version would look unchanged to
    everything that reads it by version (the NameServers, ``routewatch collect``)."""
    for path in (table, table.with_name(table.name + ".bak")):
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        data.get("topicConfigTable", {}).pop(TEMPLATE, None)
        version = data.setdefault("dataVersion", {})
        version["counter"] = int(version.get("counter", 0)) + 1
        version["timestamp"] = int(time.time() * 1000)
        path.write_text(json.dumps(data))


def break_template(cluster: RocketMQCluster, name: str) -> str:
    broker = _broker(cluster, name)
    broker.stop()
    table = broker.store / "config" / "topics.json"
    if not table.exists():
        raise RoutewatchError(
            f"broker {name} keeps no topic table at {table}, so TBW102 cannot be taken out of it."
        )
    _without_template(table)
    broker.restart(auto_create_topic=False)
    cluster.update_broker_config(name, "autoCreateTopicEnable", "true")
    return (
        f"broker {name} restarted without TBW102, auto-creation turned on at run time: "
        "TEMPLATE_MISSING at its next full registration (within 30 s)"
    )


def break_kill(cluster: RocketMQCluster, name: str) -> str:
    broker = _broker(cluster, name)
    pid = broker.pid
    broker.kill()
    return (
        f"broker {name} (PID {pid}) killed with SIGKILL: BROKER_EXPIRED 120 s after its last "
        "heartbeat"
    )


def break_cut(cluster: RocketMQCluster, name: str, namesrv: str) -> str:
    broker = _broker(cluster, name)
    if namesrv not in cluster.namesrvs:
        raise RoutewatchError(
            f"the sandbox has no NameServer '{namesrv}': name one of {', '.join(cluster.namesrvs)}."
        )
    keep = tuple(ns.name for ns in broker.namesrvs if ns.name != namesrv)
    if not keep:
        raise RoutewatchError(
            f"broker {name} registers with {namesrv} alone: cut it off one NameServer of "
            "several (start the sandbox with --namesrvs 2)."
        )
    if len(keep) == len(broker.namesrvs):
        raise RoutewatchError(f"broker {name} does not register with {namesrv} already.")
    # auto-creation turned on at run time (a broker that lost TBW102) is turned on again after
    # the restart: a start with it on would make TBW102 again
    auto_create = broker.running_config().get("autoCreateTopicEnable")
    broker.restart(namesrvs=keep)
    if auto_create == "true" and not broker.spec.auto_create_topic:
        cluster.update_broker_config(name, "autoCreateTopicEnable", "true")
    return (
        f"broker {name} restarted registering with {', '.join(keep)} only: NAMESRV_DIVERGENCE "
        f"within about 3 minutes ({namesrv} no longer lists it: its registration there runs "
        "out after 120 s, then 60 s of divergence)"
    )


def break_perm(cluster: RocketMQCluster, name: str) -> str:
    broker = _broker(cluster, name)
    cluster.update_broker_config(name, "brokerPermission", READ_ONLY)
    broker.spec = dataclasses.replace(
        broker.spec, properties={**broker.spec.properties, "brokerPermission": READ_ONLY}
    )
    return (
        f"broker {name}'s write permission wiped (brokerPermission=4): its topics are routed "
        "read-only at once"
    )


BREAKS: dict[str, Callable[..., str]] = {
    "template": break_template,
    "kill": break_kill,
    "cut": break_cut,
    "perm": break_perm,
}


def apply_break(cluster: RocketMQCluster, kind: str, args: list[str]) -> str:
    """Make the failure ``kind`` happen on ``cluster``; one line saying what was done."""
    return BREAKS[kind](cluster, *args)
