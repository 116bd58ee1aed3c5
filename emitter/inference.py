"""Which topics of a broker's table were most likely auto-created, from the broker side alone.

A broker auto-creates a topic from a template topic of its table that has the inherit bit
(TBW102, unless the client names another): the new topic gets the template's ``perm`` without
the inherit bit, and ``min(client default, template's write queues)`` read and write queues
(RocketMQ's ``TopicConfigManager.createTopicInSendMessageMethod``, 4.9 and 5.x). So a
non-system topic of a master with ``autoCreateTopicEnable=true`` whose config is exactly that
of some template of the same table *looks* auto-created. ``mqadmin updateTopic -b`` with the
default perm and no more queues than the template looks the same: an inference, which the
alert says it is (docs/alerts.md).

:class:`AutoCreateInference` judges each master's tables as an observer sees them, one look
at a time:

- a topic that **appears** in a master's table after the observer's first look at it, with
  that config, on some of the cluster's listed masters only (one that appears on every master
  at once was made with ``updateTopic -c``, or covers them all anyway), is ``while_watching``,
  first seen at that look;
- a topic **already there** at the first look (of a cluster whose every listed master's
  table is known) is ``at_start`` when it has that config on every master holding it and is
  on a strict subset of the cluster's listed masters: a topic stuck since before the
  observer started.

Shared by ``routewatch collect`` (its looks are polls) and the emitter's model (its look is a
broker's registration), so that scenarios and a real cluster give the job the same evidence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from routewatch.events import InferredAutoCreation, TopicConfig
from routewatch.rocketmq import PERM_INHERIT, is_system_topic

__all__ = ["AutoCreateInference", "MasterTable", "looks_auto_created"]

Master = tuple[str, str]  # (cluster, broker name) of a master (broker id 0)


@dataclass(frozen=True)
class MasterTable:
    """A master's table as seen at one look, with the setting that decides auto-creation."""

    auto_create: bool
    topics: Mapping[str, TopicConfig]


def looks_auto_created(topic: str, table: MasterTable) -> bool:
    """Whether ``topic``'s config in ``table`` is what one of the table's templates (a topic
    with the inherit bit) gives an auto-created topic, on a broker with auto-creation on."""
    config = table.topics.get(topic)
    if not table.auto_create or config is None:
        return False
    if config.perm & PERM_INHERIT or config.read_queue_nums != config.write_queue_nums:
        return False
    return any(
        name != topic
        and t.perm & PERM_INHERIT
        and config.perm == t.perm & ~PERM_INHERIT
        and 1 <= config.write_queue_nums <= t.write_queue_nums
        for name, t in table.topics.items()
    )


class AutoCreateInference:
    """The topics each master's table holds that look auto-created (:func:`looks_auto_created`),
    as an observer that started at its first :meth:`look` finds them. Keeps, per master, the
    topics seen in its table and those inferred; a topic that leaves the table is forgotten
    (created again, it is judged again)."""

    def __init__(self) -> None:
        self._seen: dict[Master, set[str]] = {}  # masters with a first look: topics seen
        self._found: dict[Master, dict[str, InferredAutoCreation]] = {}

    def look(
        self,
        ts: int,
        cluster: str,
        listed: Mapping[str, MasterTable | None],
        changed: Collection[str] | None = None,
    ) -> None:
        """One look at ``cluster`` at ``ts``: each master it lists (by name), with its current
        table, or None when the table is not known at this look; ``changed`` names the masters
        whose tables may have changed since the last look (None: any). A master's first look
        is taken only once every listed master's table is known (``at_start`` needs them
        all)."""
        complete = all(table is not None for table in listed.values())
        brokers = frozenset(listed)
        holders: dict[str, int] | None = None
        for name, table in sorted(listed.items()):
            master = (cluster, name)
            seen = self._seen.get(master)
            if table is None or (seen is not None and changed is not None and name not in changed):
                continue
            found = self._found.setdefault(master, {})
            for gone in [t for t in found if t not in table.topics]:
                del found[gone]
            if seen is None:
                if not complete:
                    continue
                self._seen[master] = set(table.topics)
                if holders is None:  # how many listed masters hold each topic
                    holders = Counter(t for m in listed.values() if m is not None for t in m.topics)
                for topic in table.topics:
                    if (
                        not is_system_topic(topic, cluster, brokers)
                        and holders[topic] < len(listed)
                        and all(
                            looks_auto_created(topic, other)
                            for other in listed.values()
                            if other is not None and topic in other.topics
                        )
                    ):
                        found[topic] = InferredAutoCreation(found="at_start", first_seen=ts)
                continue
            seen &= set(table.topics)
            for topic in table.topics:
                if topic in seen:
                    continue
                seen.add(topic)
                if is_system_topic(topic, cluster, brokers) or not looks_auto_created(topic, table):
                    continue
                if holders is None:
                    holders = Counter(t for m in listed.values() if m is not None for t in m.topics)
                if holders[topic] < len(listed):  # (on every master at once: made with -c)
                    found[topic] = InferredAutoCreation(found="while_watching", first_seen=ts)

    def found(self, cluster: str, broker: str) -> dict[str, InferredAutoCreation]:
        """What is inferred of the topics of ``broker``'s table (as of the last look)."""
        return dict(self._found.get((cluster, broker), {}))
