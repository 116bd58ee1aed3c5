"""From polls to heartbeat events: what each NameServer holds, written as the registrations the
job reads (docs/collect.md has the reasoning).

For each broker a NameServer lists (its cluster list holds only live registrations), one
``heartbeat`` with ``namesrv`` = that NameServer: ``full`` true, the broker's topic table *at the
data version that NameServer holds for it* (``QUERY_DATA_VERSION``), that version as
``data_version``, the broker's ``autoCreateTopicEnable`` and ``defaultTopicQueueNums`` (asked
of the broker: a NameServer does not hold them), and for a master the topics of that table that
look auto-created (``inferred_auto_created``: :mod:`emitter.inference`, each poll one look).
One is written when anything of it changed, and otherwise every ``heartbeat_interval_s``
while the NameServer lists the broker. A broker that a NameServer no longer lists gets no more
heartbeats for it: the job expires it there 120 s after the last one — or after the timeout
the broker registers with, written in its heartbeats, where it sets one (5.x's
slave-acting-master mode; at least two polls, and renewed before two polls are left of it).
Nothing is written for a NameServer that did not answer.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emitter.collect.poller import BrokerKey, Snapshot
from emitter.collect.routes import FULL_CHECK_AFTER_MS, RouteViews
from emitter.inference import AutoCreateInference, MasterTable
from routewatch.events import (
    CollectorRound,
    Heartbeat,
    HeldTopic,
    InferredAutoCreation,
    NamesrvReach,
    TopicConfig,
)
from routewatch.remoting import DataVersion, TopicRoute
from routewatch.rocketmq import PERM_READ, PERM_WRITE, TBW102

__all__ = ["Deriver"]

log = logging.getLogger("routewatch.collect")


_Base = tuple[str, DataVersion, dict[str, TopicConfig], bool]  # addr, version, table, seen


@dataclass(frozen=True)
class _Written:
    ts: int
    addr: str
    version: DataVersion
    auto_create: bool
    default_q: int
    timeout_ms: int | None  # the heartbeat's heartbeat_timeout_ms
    inferred: tuple[tuple[str, InferredAutoCreation], ...] = ()
    routed: str = ""  # the version string written: what the NameServer holds or routes
    topics: dict[str, TopicConfig] = dataclasses.field(default_factory=dict)
    held: tuple[tuple[str, HeldTopic], ...] = ()


class Deriver:
    """Turns each :class:`Snapshot` into the heartbeats to write, keeping what was written."""

    def __init__(
        self,
        heartbeat_interval_s: float = 30.0,
        source: str | None = None,
        full_check_after_ms: int = FULL_CHECK_AFTER_MS,
        poll_interval_s: float | None = None,
    ) -> None:
        self.interval_ms = int(heartbeat_interval_s * 1000)
        # how often it looks (the heartbeat interval when not said): a broker with its own short
        # timeout cannot be renewed more often than that
        self.poll_ms = int((poll_interval_s or heartbeat_interval_s) * 1000)
        self.source = source or f"collect-{uuid.uuid4().hex[:8]}"
        self.seq = 0
        self._tables: dict[tuple[str, DataVersion], dict[str, TopicConfig]] = {}
        # broker addr -> last known settings: autoCreateTopicEnable, defaultTopicQueueNums, and
        # the heartbeat timeout to write (_timeout)
        self._configs: dict[str, tuple[bool, int, int | None]] = {}
        self._permission: dict[str, int] = {}  # broker addr -> brokerPermission
        # (addr, version, brokerPermission) -> that table as the broker registers it
        self._registered: dict[tuple[str, DataVersion, int], dict[str, TopicConfig]] = {}
        self._written: dict[tuple[str, BrokerKey], _Written] = {}  # (namesrv, broker) -> last
        self._waiting: set[tuple[str, BrokerKey]] = set()  # logged as not yet writable
        self.inference = AutoCreateInference()
        # (cluster, master) -> (address, version, settings) at the inference's last look
        self._looked: dict[tuple[str, str], tuple[str, DataVersion | None, Any]] = {}
        self.routes = RouteViews(full_check_after_ms)
        self._clusters: set[str] = set()  # every cluster a NameServer listed
        self._unreached: dict[str, int] = {}  # NameServer -> its first failed round, while failing
        self._absorbed: int | None = None  # id of the snapshot whose tables were taken in

    # -- the route questions (emitter.collect.poller.RouteAsker) --------------------------------

    def _newest(self, addr: str) -> DataVersion | None:
        versions = [v for a, v in self._tables if a == addr]
        return max(versions) if versions else None

    def _as_registered(self, addr: str, version: DataVersion) -> dict[str, TopicConfig]:
        """The broker's table at ``version`` as it registers it: a ``brokerPermission`` without
        the read or the write bit becomes every topic's perm (``registerBrokerAll``)."""
        table = self._tables[(addr, version)]
        permission = self._permission.get(addr, PERM_READ | PERM_WRITE)
        if permission & PERM_READ and permission & PERM_WRITE:
            return table
        key = (addr, version, permission)
        registered = self._registered.get(key)
        if registered is None:
            registered = self._registered[key] = {
                t: dataclasses.replace(c, perm=permission) for t, c in table.items()
            }
        return registered

    def _bases(self, view_ns: Any) -> dict[str, _Base]:
        """The masters ``view_ns`` lists with a version it holds: name -> the table at that
        version (or, never seen, the broker's newest)."""
        bases: dict[str, _Base] = {}
        for (_cluster, name, broker_id), addr in view_ns.brokers.items():
            version = view_ns.versions.get(addr)
            if broker_id != 0 or version is None:
                continue
            seen = (addr, version) in self._tables
            base = version if seen else self._newest(addr)
            if base is None:
                continue
            bases[name] = (addr, version, self._as_registered(addr, base), seen)
        return bases

    def route_questions(self, snap: Snapshot) -> dict[str, set[str]]:
        if self._absorbed != id(snap):
            self._absorb(snap)
            self.routes.start_round()
        held: set[str] = set()
        for addr in {a for a, _ in self._tables}:
            newest = self._newest(addr)
            held |= self._tables[(addr, newest)].keys() if newest is not None else set()
        return {
            ns: self.routes.questions(
                ns, self._bases(view), view.topics, held, view.ts, self._elsewhere(view)
            )
            for ns, view in snap.namesrvs.items()
        }

    def _elsewhere(self, view_ns: Any) -> Callable[[str], set[str]]:
        """For a master ``view_ns`` lists: the topics the other masters of its cluster listed
        there hold (their newest tables) and it does not."""

        def topics(name: str) -> set[str]:
            masters = {n: (c, a) for (c, n, i), a in view_ns.brokers.items() if i == 0}
            cluster, addr = masters[name]
            own = self._newest(addr)
            out: set[str] = set()
            for other, (c, a) in masters.items():
                newest = self._newest(a)
                if other != name and c == cluster and newest is not None:
                    out |= self._tables[(a, newest)].keys()
            return out - (self._tables[(addr, own)].keys() if own is not None else set())

        return topics

    def route_answers(self, snap: Snapshot, ns: str, routes: dict[str, TopicRoute | None]) -> None:
        self.routes.answers(ns, self._bases(snap.namesrvs[ns]), routes)

    def known(self, addr: str, version: DataVersion) -> bool:
        """Whether the table of the broker at ``addr`` at ``version`` is known."""
        return (addr, version) in self._tables

    def derive(self, snap: Snapshot) -> list[Heartbeat]:
        """The heartbeats a poll calls for, in the order to write them (by ``ts``, then
        ``seq``)."""
        if self._absorbed != id(snap):
            self._absorb(snap)
        self._absorbed = None
        self._infer(snap)
        events: list[Heartbeat] = []
        for ns, view in sorted(snap.namesrvs.items(), key=lambda item: item[1].ts):
            for key, addr in sorted(view.brokers.items()):
                event = self._heartbeat(ns, key, addr, view.ts, view.versions.get(addr))
                if event is not None:
                    events.append(event)
        self.routes.forget(
            {ns: {name for (_, name, i) in v.brokers if i == 0} for ns, v in snap.namesrvs.items()}
        )
        self._prune(snap)
        return events

    def rounds(
        self, namesrvs: list[str], snap: Snapshot, ts: int, interval_ms: int
    ) -> list[CollectorRound]:
        """The round's report, one per cluster seen so far, written after its heartbeats: which
        of ``namesrvs`` answered this round, and since when the others have not."""
        for view in snap.namesrvs.values():
            self._clusters |= {cluster for cluster, _, _ in view.brokers}
        for ns in namesrvs:
            if ns in snap.namesrvs:
                self._unreached.pop(ns, None)
            else:
                self._unreached.setdefault(ns, ts)
        reach = {
            ns: NamesrvReach(
                reached=ns not in self._unreached, unreachable_since=self._unreached.get(ns)
            )
            for ns in namesrvs
        }
        out = []
        for cluster in sorted(self._clusters):
            self.seq += 1
            out.append(
                CollectorRound(
                    ts=ts,
                    cluster=cluster,
                    event_id=f"{self.source}-{self.seq}",
                    seq=self.seq,
                    collector=self.source,
                    interval_ms=interval_ms,
                    namesrvs=reach,
                )
            )
        return out

    def _absorb(self, snap: Snapshot) -> None:
        """The brokers' settings and tables of a poll."""
        self._absorbed = id(snap)
        for addr, broker in snap.brokers.items():
            self._configs[addr] = (
                broker.auto_create_topic_enable,
                broker.default_topic_queue_nums,
                self._timeout(broker.heartbeat_timeout_ms),
            )
            self._permission[addr] = broker.broker_permission
            table = broker.table
            if table is not None:
                # The first table seen at a version is the one registered under it: a broker can
                # change its table in memory without a new version (a refused send strips
                # TBW102's inherit bit), which a NameServer does not see until the next version.
                self._tables.setdefault(
                    (addr, table.version),
                    {
                        name: TopicConfig(
                            read_queue_nums=t.read_queue_nums,
                            write_queue_nums=t.write_queue_nums,
                            perm=t.perm,
                        )
                        for name, t in table.topics.items()
                    },
                )

    def _infer(self, snap: Snapshot) -> None:
        """One look of the inference at each cluster's masters: those any NameServer that
        answered lists, each with its table at the newest version listed (None when that table
        is not known)."""
        if not snap.namesrvs:
            return
        masters: dict[str, dict[str, str]] = {}  # cluster -> master name -> address
        newest: dict[str, DataVersion] = {}
        for view in snap.namesrvs.values():
            for (cluster, name, broker_id), addr in view.brokers.items():
                if broker_id == 0:
                    masters.setdefault(cluster, {})[name] = addr
                version = view.versions.get(addr)
                if version is not None and (addr not in newest or version > newest[addr]):
                    newest[addr] = version
        ts = min(view.ts for view in snap.namesrvs.values())
        for cluster, listed in sorted(masters.items()):
            tables: dict[str, MasterTable | None] = {}
            changed: set[str] = set()
            for name, addr in listed.items():
                config = self._configs.get(addr)
                table = self._tables.get((addr, newest[addr])) if addr in newest else None
                tables[name] = (
                    None if table is None or config is None else MasterTable(config[0], table)
                )
                looked = (addr, newest.get(addr), config)
                if tables[name] is not None and self._looked.get((cluster, name)) != looked:
                    self._looked[(cluster, name)] = looked
                    changed.add(name)
            self.inference.look(ts, cluster, tables, changed)

    def _content(
        self, ns: str, key: BrokerKey, addr: str, version: DataVersion | None
    ) -> tuple[DataVersion, str, dict[str, TopicConfig], tuple[tuple[str, HeldTopic], ...]] | None:
        """What ``ns`` holds of a broker, if known: the version of the table it is made from,
        the version string to write, the topics (for a master, what ``ns`` routes), and how the
        broker holds those of them it does not hold as routed (``Heartbeat.held``)."""
        if version is None:
            return None
        table = self._tables.get((addr, version))
        seen, base = table is not None, version
        if key[2] != 0:
            return None if table is None else (version, str(version), table, ())
        if table is None:
            newest = self._newest(addr)
            if newest is None:
                return None
            base = newest
        table = self._as_registered(addr, base)
        own = self._tables[(addr, self._newest(addr) or base)]
        view = self.routes.view(ns, key[1], table, own, str(version), seen=seen)
        if not view.complete:
            return None
        held = [(t, HeldTopic(held=False, perm=None)) for t in view.not_held]
        routed_tbw102, own_tbw102 = view.topics.get(TBW102), own.get(TBW102)
        if own_tbw102 and (routed_tbw102 is None or routed_tbw102.perm != own_tbw102.perm):
            held.append((TBW102, HeldTopic(held=True, perm=own_tbw102.perm)))
        return base, view.version, view.topics, tuple(sorted(held))

    def _timeout(self, own_ms: int | None) -> int | None:
        """The timeout written for a broker that registers with its own (slave-acting-master
        mode): that one, or two polls if longer — the collector renews a broker only when it
        looks, so a shorter one would expire live brokers between two looks."""
        return None if own_ms is None else max(own_ms, 2 * self.poll_ms)

    def _renew_ms(self, written: _Written) -> int:
        """How old a broker's last heartbeat may grow before a poll renews it: the heartbeat
        interval; for a broker with its own timeout, also at most half of it, and at most the
        timeout less two polls — the poll after one that skipped the renewal can come a little
        more than a poll later (polls keep a fixed rate; NameServers answer with some jitter),
        and it must still come before the timeout. With the written timeout at two polls, that
        renews the broker at every poll."""
        if written.timeout_ms is None:
            return self.interval_ms
        timeout = written.timeout_ms
        return max(0, min(self.interval_ms, timeout // 2, timeout - 2 * self.poll_ms))

    def _renewal_due(self, last_ts: int, written: _Written, ts: int) -> bool:
        """Whether a poll at ``ts`` renews a broker last written at ``last_ts`` (as ``written``
        would be now): once its age is within half a poll of :meth:`_renew_ms`. Polls keep a
        fixed rate but NameServers answer with some jitter, so a poll that comes a few
        milliseconds before the age is reached still renews: skipping it would leave a whole
        poll more between two heartbeats (20 s where the interval says 10, seen on a real 4.9.8
        cluster)."""
        return ts - last_ts >= self._renew_ms(written) - self.poll_ms // 2

    def _heartbeat(
        self, ns: str, key: BrokerKey, addr: str, ts: int, version: DataVersion | None
    ) -> Heartbeat | None:
        cluster, name, broker_id = key
        last = self._written.get((ns, key))
        config = self._configs.get(addr)
        content = self._content(ns, key, addr, version)
        if content is not None and config is not None:
            base, routed, topics, held = content
            current = _Written(ts, addr, base, *config, routed=routed, topics=topics, held=held)
        elif last is not None and last.addr == addr:
            # The NameServer holds a version whose table is not known yet (the broker changed it
            # between two questions, or does not answer): renew the liveness it still has with
            # what was last written, and only when the job needs it.
            current = dataclasses.replace(last, ts=ts)
            if not self._renewal_due(last.ts, last, ts):
                return None
        else:
            if (ns, key) not in self._waiting:
                self._waiting.add((ns, key))
                log.warning(
                    "NameServer %s lists broker %s (id %d) at %s, whose %s is not known yet; "
                    "its heartbeats start once the broker answers.",
                    ns,
                    name,
                    broker_id,
                    addr,
                    "configuration" if config is None else "topic table at that version",
                )
            return None
        self._waiting.discard((ns, key))
        inferred = tuple(
            sorted(
                (t, f)
                for t, f in self.inference.found(cluster, name).items()
                if t in current.topics
            )
            if broker_id == 0
            else ()
        )
        current = dataclasses.replace(current, inferred=inferred)
        if (
            last is not None
            and not self._renewal_due(last.ts, current, ts)
            and dataclasses.replace(last, ts=ts) == current
        ):
            return None
        self._written[(ns, key)] = current
        self.seq += 1
        return Heartbeat(
            ts=ts,
            cluster=cluster,
            event_id=f"{self.source}-{self.seq}",
            seq=self.seq,
            broker=name,
            broker_addr=addr,
            broker_id=broker_id,
            namesrv=ns,
            auto_create_topic_enable=current.auto_create,
            default_topic_queue_nums=current.default_q,
            full=True,
            topics=current.topics,
            data_version=current.routed,
            inferred_auto_created=dict(inferred) or None,
            held=dict(current.held) or None,
            heartbeat_timeout_ms=current.timeout_ms,
        )

    def _prune(self, snap: Snapshot) -> None:
        """Forget the tables no NameServer or written heartbeat refers to any more (the newest
        of each broker is kept)."""
        used = {(w.addr, w.version) for w in self._written.values()}
        for view in snap.namesrvs.values():
            used |= {(a, v) for a, v in view.versions.items() if v is not None}
        newest: dict[str, DataVersion] = {}
        for addr, version in self._tables:
            if addr not in newest or version > newest[addr]:
                newest[addr] = version
        used |= set(newest.items())
        for item in [k for k in self._tables if k not in used]:
            del self._tables[item]
        for key in [k for k in self._registered if k[:2] not in self._tables]:
            del self._registered[key]
