"""What each NameServer routes to each master, kept cheaply beside the brokers' own tables.

A NameServer's queue data for a broker is the broker's topic table as last *applied* there (a
registration is applied only when its data version changed, and in 4.x it adds and updates
topics, never removes one), changed since by ``wipeWritePerm`` (every topic of the broker loses
its write bit) or ``addWritePerm`` (every topic's perm becomes read|write, 6: the inherit bit
goes too), or by ``deleteTopic`` on the NameServer. So the view of (NameServer, master) is the
broker's table at the version that NameServer holds, put through a *transform* learnt from one
route query of a *sentinel* topic (the broker-named topic), plus *overrides*: the topics where
a route query found something else — a topic the NameServer routes to the broker that the
table lacks (a *stale* route), one it does not route, other counts.

Route queries are asked only where the views can differ (docs/collect.md has the cost table):
each round the sentinel of each master and TBW102 (whose inherit bit a broker strips in memory,
under the same data version), the topics of a known override again, the topics that
a NameServer lists but no broker's table holds; at the first look at a master, the topics other
masters of its cluster hold and it does not; when a broker's table changes, the topics it
dropped; and every topic of the broker once, when the sentinel's answer fits no known transform
or the NameServer has held a version of the table the collector never saw for 35 s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from routewatch.events import TopicConfig
from routewatch.remoting import DataVersion, TopicRoute
from routewatch.rocketmq import PERM_READ, PERM_WRITE, TBW102

__all__ = ["AS_REGISTERED", "FULL_CHECK_AFTER_MS", "RouteViews", "Transform", "View", "transformed"]

Transform = str
AS_REGISTERED: Transform = "as_registered"
WRITE_WIPED: Transform = "write_wiped"  # mqadmin wipeWritePerm: perm & ~W
WRITE_ADDED: Transform = "write_added"  # mqadmin addWritePerm: perm = R|W
UNKNOWN: Transform = "unknown"  # every topic asked: the overrides say it all
ADDED_PERM = PERM_READ | PERM_WRITE
# A NameServer holding a version of a table never read is most often a race (the broker changed
# its table again between the NameServer's answer and the broker's): its next registration, at
# most 30 s later, brings the newest. Only a NameServer that still holds an unread version after
# this long is asked topic by topic (meanwhile, what was last written for it is renewed).
FULL_CHECK_AFTER_MS = 35_000


def transformed(config: TopicConfig, transform: Transform) -> TopicConfig:
    """``config`` as a NameServer routes it under ``transform``."""
    if transform == WRITE_WIPED:
        perm = config.perm & ~PERM_WRITE
    elif transform == WRITE_ADDED:
        perm = ADDED_PERM
    else:
        return config
    return TopicConfig(
        read_queue_nums=config.read_queue_nums,
        write_queue_nums=config.write_queue_nums,
        perm=perm,
    )


def _transform_of(registered: TopicConfig, routed: TopicConfig | None) -> Transform:
    """The transform that makes ``registered`` what the NameServer routes."""
    if routed is None:
        return UNKNOWN
    for transform in (AS_REGISTERED, WRITE_WIPED, WRITE_ADDED):
        if transformed(registered, transform) == routed:
            return transform
    return UNKNOWN


def _routed(route: TopicRoute | None, broker: str) -> TopicConfig | None:
    queue = None if route is None else route.queue(broker)
    if queue is None:
        return None
    return TopicConfig(
        read_queue_nums=queue.read_queue_nums,
        write_queue_nums=queue.write_queue_nums,
        perm=queue.perm,
    )


def sentinel_of(broker: str, table: dict[str, TopicConfig]) -> str | None:
    """The topic whose route shows a transform of ``broker``'s topics: a writable one, for a
    wiped write bit to show — the broker-named topic (every broker makes it, writable unless
    ``brokerTopicEnable=false``), else the first writable topic of its table, else any."""
    writable = sorted(t for t, c in table.items() if c.perm & PERM_WRITE)
    if broker in writable or not writable:
        return broker if broker in table else min(table, default=None)
    return writable[0]


@dataclass
class _Known:
    """One NameServer's routes of one master, as far as the route queries have shown."""

    base: tuple[str, DataVersion] | None = None  # the table the view was checked against
    base_topics: frozenset[str] = frozenset()
    seen: bool = True  # whether the NameServer's version of that table was ever seen
    unseen_since: int | None = None  # since when the NameServer holds that unseen version (ms)
    transform: Transform = AS_REGISTERED
    overrides: dict[str, TopicConfig | None] = field(default_factory=dict)
    checked_all: bool = False  # every topic of the base asked since the transform was learnt
    dropped: frozenset[str] = frozenset()  # topics the broker dropped, to ask about once
    looked: bool = False  # the first look asked about the topics its cluster's others hold


@dataclass(frozen=True)
class View:
    """What a NameServer routes to a master: its topics, those of them the broker does not hold,
    and a version string naming the content (the table's data version when it is the table)."""

    topics: dict[str, TopicConfig]
    not_held: tuple[str, ...]
    version: str
    transform: Transform
    complete: bool  # False: the NameServer holds a table never seen, not yet asked topic by topic


class RouteViews:
    """The route views of every (NameServer, master); ``questions`` -> the poller asks ->
    ``answers``, in up to a few passes per round, then ``view``."""

    def __init__(self, full_check_after_ms: int = FULL_CHECK_AFTER_MS) -> None:
        self.full_check_after_ms = full_check_after_ms
        self._known: dict[tuple[str, str], _Known] = {}
        self._asked: dict[str, set[str]] = {}  # this round's questions, by NameServer
        self._answered: dict[str, set[str]] = {}  # this round's answers, by NameServer

    def start_round(self) -> None:
        self._asked, self._answered = {}, {}

    def questions(
        self,
        ns: str,
        bases: dict[str, tuple[str, DataVersion, dict[str, TopicConfig], bool]],
        listed: frozenset[str] | None,
        held: set[str],
        now: int = 0,
        elsewhere: Callable[[str], set[str]] = lambda name: set(),
    ) -> set[str]:
        """The topics whose route to ask ``ns`` now. ``bases``: master name -> (address, the
        version ``ns`` holds, that table — or the broker's newest when that version was never
        seen —, whether it was seen); ``listed``: the NameServer's topic list; ``held``: every
        topic some broker's own table holds; ``now``: the round's time, ms; ``elsewhere(name)``:
        the topics other masters of that master's cluster hold and it does not (asked at the
        first look at it: one deleted there before the collector started may still be routed
        to it)."""
        wanted: set[str] = set()
        first = ns not in self._asked
        for name, (addr, version, table, seen) in bases.items():
            known = self._known.setdefault((ns, name), _Known())
            if known.base != (addr, version) or known.seen != seen:
                known.dropped = known.base_topics - table.keys()
                known.base, known.seen = (addr, version), seen
                known.unseen_since = None if seen else now
                known.base_topics = frozenset(table)
                known.transform, known.checked_all = AS_REGISTERED, False
                # a new version applied on the NameServer updates every topic of the table
                known.overrides = {t: c for t, c in known.overrides.items() if t not in table}
            if first:
                sentinel = sentinel_of(name, table)
                if sentinel is not None:
                    wanted.add(sentinel)
                wanted |= known.overrides.keys() | known.dropped
                if not known.looked:
                    wanted |= elsewhere(name)
            lagging = (
                not seen
                and known.unseen_since is not None
                and now - known.unseen_since >= self.full_check_after_ms
            )
            if (known.transform == UNKNOWN or lagging) and not known.checked_all:
                wanted |= table.keys()
        if first and any(TBW102 in base[2] for base in bases.values()):
            # TBW102 each round: a broker strips its inherit bit in memory on a refused send,
            # without a new data version, so the table read at a version can differ from the
            # one the NameServer applied under it (a collector that first reads it afterwards)
            wanted.add(TBW102)
        if first and listed is not None:
            wanted |= listed - held
        wanted -= self._asked.get(ns, set())
        self._asked.setdefault(ns, set()).update(wanted)
        return wanted

    def answers(
        self,
        ns: str,
        bases: dict[str, tuple[str, DataVersion, dict[str, TopicConfig], bool]],
        routes: dict[str, TopicRoute | None],
    ) -> None:
        """What ``ns`` answered to this pass's questions."""
        answered = self._answered.setdefault(ns, set())
        answered.update(routes)
        for name, (_addr, _version, table, _seen) in bases.items():
            known = self._known[(ns, name)]
            sentinel = sentinel_of(name, table)
            if sentinel in routes:
                transform = _transform_of(table[sentinel], _routed(routes[sentinel], name))
                if transform != known.transform:
                    known.transform, known.checked_all = transform, False
            if (known.transform == UNKNOWN or not known.seen) and table.keys() <= answered:
                known.checked_all = True
            for topic, route in routes.items():
                routed = _routed(route, name)
                registered = table.get(topic)
                expected = (
                    None
                    if registered is None
                    else transformed(registered, _derivable(known.transform))
                )
                if routed != expected:
                    known.overrides[topic] = routed
                else:
                    known.overrides.pop(topic, None)
            known.dropped = known.dropped - routes.keys()
            known.looked = True

    def view(
        self,
        ns: str,
        name: str,
        table: dict[str, TopicConfig],
        own: Iterable[str],
        version: str,
        *,
        seen: bool = True,
    ) -> View:
        """What ``ns`` routes to master ``name``, whose table at the version ``ns`` holds is
        ``table`` (named ``version``; ``seen`` False: that version's table was never seen and
        ``table`` is the broker's newest) and whose own newest table has the topics ``own``."""
        known = self._known.get((ns, name)) or _Known(seen=seen)
        transform = _derivable(known.transform)
        topics = {t: transformed(c, transform) for t, c in table.items()}
        for topic, routed in known.overrides.items():
            if routed is None:
                topics.pop(topic, None)
            else:
                topics[topic] = routed
        own = set(own)
        not_held = tuple(sorted(t for t in topics if t not in own))
        if topics != table or not known.seen:
            digest = hashlib.blake2b(
                repr(sorted(topics.items())).encode(), digest_size=4
            ).hexdigest()
            version = f"{version}~{digest}"
        complete = seen or (not known.seen and known.checked_all)
        return View(topics, not_held, version, known.transform, complete)

    def forget(self, listed: dict[str, set[str]]) -> None:
        """Drop the views of the masters a NameServer that answered no longer lists."""
        for ns, name in [k for k in self._known if k[0] in listed and k[1] not in listed[k[0]]]:
            del self._known[(ns, name)]


def _derivable(transform: Transform) -> Transform:
    """The transform to apply to the table (an unknown one is all in the overrides)."""
    return AS_REGISTERED if transform == UNKNOWN else transform
