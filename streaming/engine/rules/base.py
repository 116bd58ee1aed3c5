"""What every rule of the catalogue stands on: the engine it reads and changes, the cluster-wide
facts derived from its state, the words of evidence and remedies, and :class:`Rule`, the shape
of one alert kind's module.
"""

from __future__ import annotations

import datetime
import shlex
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from routewatch.alerts import AlertKey, AlertKind
from routewatch.remedy.plan import PERM_RW, Action, Manual, Plan, Routed, check
from routewatch.rocketmq import PERM_WRITE, is_system_topic
from streaming.engine.alerts import AlertBook
from streaming.engine.state import Config, LazyMap, Meta, Outputs, Reg, RegKey, TopicState

if TYPE_CHECKING:
    from streaming.engine.rules.topics import TopicLife

__all__ = [
    "EVIDENCE_LIST_MAX",
    "HAPPENINGS",
    "REFRESH_MS",
    "ClusterFacts",
    "EngineView",
    "Fact",
    "Rule",
    "Scope",
    "TopicRule",
    "TopicView",
    "broker_label",
    "capped",
    "iso",
    "listed",
]

EVIDENCE_LIST_MAX = 50
REFRESH_MS = 30_000  # a client refreshes its routes every 30 s

# What a rule's alert is about: one topic of a cluster, one broker (name and id), or the
# cluster itself; its key has the topic, the broker, or neither.
Scope = Literal["topic", "broker", "cluster"]

# The facts a rule reads beyond its own key's — beyond the alert's own topic, broker or
# cluster (docs/streaming.md, "One module per kind"): what a keying of the state finer than by
# cluster must bring to it.
Fact = Literal[
    "registrations",  # every registration: liveness, address, auto-creation, read-only, TBW102
    "tables",  # every topic's routes, not only the alert's own topic's
    "template",  # the live routes of TBW102 (and of a client's createTopicKey)
    "namesrvs",  # the cluster's NameServers (registered with in the last 120 s)
    "clients",  # the clients that said they have no NameServer address
    "observer",  # the cluster's collector: its rounds, its gaps, what it cannot reach
]


# What the cluster engine reports to the rules beside a topic's change and a threshold crossed:
# a rule that defines ``on_<happening>`` is called with it, in the registry's order — a broker or
# cluster rule on the cluster's head shard alone (its alerts' one owner), a topic rule on every
# shard (a send or its failure reaches the topic's own shard only). A new alert kind that needs
# one of these is one module: its rule defines the method, and the registry routes it there.
HAPPENINGS: dict[str, str] = {
    "broker_heard": "(key, ts, *, shutdown): a broker registered, or unregistered (shutdown)",
    "full_registration": "(key, reg, ts): a live broker's full registration is whole",
    "broker_expired": "(broker, broker_id, at, *, gap=None): a broker's last registration "
    "expired (gap: in its collector's gap, from its last round to its first round after)",
    "liveness_changed": "(at): a registration turned live or not (after its topics were judged)",
    "lingering_ended": "(at): an unregistered NameServer stopped being one of the cluster's",
    "table_stored": "(key): a broker's table was stored",
    "table_changed": "(key, at): a live registration changed its broker's table",
    "namesrvs_reached": "(obs, at, *, changed): a collector round's reach of the NameServers",
    "observer_silent": "(at): the cluster's collector has written no round for three intervals",
    "observer_back": "(obs, at): the collector's first round after its silence",
    "send_succeeded": "(topic, ts, seq): a send of the topic was delivered",
    "no_route": "(e, ts): a send found no route (or a proxy's route miss)",
    "rejected": "(e, ts): a broker refused a send with TOPIC_NOT_EXIST",
}


def iso(ms: int) -> str:
    """An event time for a sentence: ISO 8601, UTC, to the millisecond."""
    stamp = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def listed(items: list[str]) -> str:
    """Names for a sentence: ``a, b, c``."""
    return ", ".join(items)


def broker_label(broker: str, broker_id: int) -> str:
    """A broker in evidence: its name for a master, ``name/id`` for a slave."""
    return broker if broker_id == 0 else f"{broker}/{broker_id}"


def capped(items: list[str]) -> dict[str, Any]:
    return {"items": items[:EVIDENCE_LIST_MAX], "count": len(items)}


class EngineView(Protocol):
    """What the rules read and change of a cluster's engine, and no more (the engine,
    :class:`streaming.engine.cluster.ClusterEngine`, is one; the rules do not import it)."""

    cluster: str
    head: bool  # the cluster's head shard (streaming.engine.shards): its broker alerts' owner
    meta: Meta
    tables: LazyMap[RegKey, dict[str, Config]]
    topics: LazyMap[str, TopicState]
    book: AlertBook
    out: Outputs

    def schedule(self, at: int, kind: str, key: str) -> None: ...

    def expire(self, key: RegKey, at: int) -> bool: ...

    def stop_lingering(self, key: RegKey, at: int) -> bool: ...

    def went_silent(self, at: int) -> bool: ...

    def owns(self, topic: str) -> bool: ...

    def topic_state(self, topic: str, *, create: bool = False) -> TopicState | None: ...

    def live_holders(self, topic: str) -> dict[RegKey, Config]: ...

    def holders_of(self, topic: str, *, live_only: bool = False) -> dict[RegKey, Config]: ...


class ClusterFacts:
    """The cluster-wide facts the rules derive from the engine's state — its masters, its
    NameServers, its brokers' names — and the commands their remedies give."""

    def __init__(self, engine: EngineView) -> None:
        self.e = engine
        self.cluster = engine.cluster
        self._names: set[str] | None = None
        self._names_of: set[RegKey] = set()

    def regs(self) -> dict[RegKey, Reg]:
        return self.e.meta.regs

    def topic_key(self, kind: AlertKind, topic: str) -> AlertKey:
        return (kind, self.cluster, topic, None, None)

    def broker_key(self, kind: AlertKind, broker: str, broker_id: int) -> AlertKey:
        return (kind, self.cluster, None, broker, broker_id)

    def cluster_key(self, kind: AlertKind) -> AlertKey:
        return (kind, self.cluster, None, None, None)

    def expired_masters(self) -> set[str]:
        """Masters live on no NameServer whose latest registration was not an unregistration:
        those with ``BROKER_EXPIRED`` open."""
        latest: dict[str, Reg] = {}
        live: set[str] = set()
        for (_, b, i), r in self.regs().items():
            if i == 0:
                if r.live:
                    live.add(b)
                if b not in latest or r.last_hb > latest[b].last_hb:
                    latest[b] = r
        return {b for b, r in latest.items() if b not in live and not r.shutdown}

    def expected_brokers(self, flipped: RegKey | None = None) -> set[str]:
        """Live writable masters of the cluster (as they were before ``flipped`` changed
        liveness): live on some NameServer that does not route its topics read-only."""
        return {
            b
            for (ns, b, i), r in self.regs().items()
            if i == 0 and (r.live != ((ns, b, i) == flipped)) and not r.read_only
        }

    def auto_create_by_broker(self) -> dict[tuple[str, int], bool | None]:
        """Each broker (name, id) live in the cluster -> whether auto-creation is on, as its
        latest complete full registration on any NameServer says (on a tie, the NameServer
        whose address sorts last); None while it has none (a part of a split registration
        whose other parts have not arrived is not one)."""
        live = {(b, i) for (_, b, i), r in self.regs().items() if r.live}
        latest: dict[tuple[str, int], tuple[tuple[int, str], bool | None]] = {}
        for (ns, broker, broker_id), reg in self.regs().items():
            if (broker, broker_id) not in live or reg.full_at is None:
                continue
            seen = latest.get((broker, broker_id))
            if seen is None or (reg.full_at, ns) > seen[0]:
                latest[(broker, broker_id)] = ((reg.full_at, ns), reg.auto_create)
        return {b: latest[b][1] if b in latest else None for b in sorted(live)}

    def cluster_namesrvs(self) -> set[str]:
        """NameServers any broker of the cluster registered with in the last 120 s: those it is
        live on, and those it unregistered from since (they stay the cluster's for 120 s)."""
        return {ns for (ns, _, _), r in self.regs().items() if r.live or r.lingers}

    def unknown_namesrvs(self) -> set[str]:
        """NameServers the cluster's collector could not reach at its last round: what they
        route is unknown, not empty."""
        obs = self.e.meta.observer
        return set((obs or {}).get("unreachable") or {})

    def live_on(self) -> dict[tuple[str, int], set[str]]:
        """Each broker (name, id) that registered -> the NameServers it is live on now."""
        live_on: dict[tuple[str, int], set[str]] = {}
        for (ns, broker, broker_id), reg in self.regs().items():
            live_on.setdefault((broker, broker_id), set())
            if reg.live:
                live_on[(broker, broker_id)].add(ns)
        return live_on

    def _broker_names(self) -> set[str]:
        if self._names is None or len(self._names_of) != len(self.regs()):
            self._names_of = set(self.regs())
            self._names = {b for (_, b, _) in self._names_of}
        return self._names

    def is_system(self, topic: str) -> bool:
        return is_system_topic(topic, self.cluster, self._broker_names())

    def namesrvs_for_remedy(self) -> str:
        return ";".join(sorted(self.cluster_namesrvs())) or "<namesrv>"

    def master_addr(self, broker: str) -> str:
        """The address the master ``broker`` last registered with, for ``updateTopic -b``."""
        addrs = sorted({r.addr for (_, b, i), r in self.regs().items() if b == broker and i == 0})
        return addrs[-1] if addrs else f"<address of {broker}>"

    def update_topic(self, topic: str, *where: str, q: int | None = None) -> str:
        """``mqadmin updateTopic`` for the cluster's NameServers, as a command line that runs
        when pasted into a shell (``;`` between NameServers quoted: docs/alerts.md); between
        backticks, as every command in a remedy."""
        queues = () if q is None else ("-r", str(q), "-w", str(q))
        argv = ["mqadmin", "updateTopic", "-n", self.namesrvs_for_remedy(), *where, "-t", topic]
        return f"`{shlex.join([*argv, *queues])}`"

    def namesrv_list(self) -> list[str]:
        """The cluster's NameServers, sorted: a plan's ``namesrvs``."""
        return sorted(self.cluster_namesrvs())

    def create_on(
        self, topic: str, brokers: list[str], q: int, perm: int = PERM_RW, *, why: str = ""
    ) -> list[Action]:
        """``create_topic`` actions: ``topic`` on each master of ``brokers``, ``q`` read and
        write queues."""
        return [
            self.create(
                topic,
                b,
                (q, q, perm),
                f"{topic} made on {b} with {q} read and {q} write queues (perm {perm}){why}; "
                "the broker registers it with every NameServer at once.",
            )
            for b in brokers
        ]

    def create(
        self, topic: str, broker: str, config: Config, changes: str, *, loses: str | None = None
    ) -> Action:
        """One ``create_topic`` action: ``topic`` on the master ``broker`` with ``config``
        (read queues, write queues, perm)."""
        read, write, perm = config
        return Action(
            "create_topic",
            topic,
            changes=changes,
            broker=broker,
            addr=self.master_addr(broker),
            read_queues=read,
            write_queues=write,
            perm=perm,
            loses=loses,
        )

    def coverage_plan(
        self, topic: str, holding: list[str], missing: list[str], q: int, notes: list[str]
    ) -> Plan:
        """The coverage alerts' plan: the topic made on each expected master without it."""
        routed: dict[str, Routed] = {b: "writable" for b in holding}
        routed |= {b: None for b in missing}
        return Plan(
            namesrvs=self.namesrv_list(),
            expects={"topic": topic, "routed": routed, "held": {b: False for b in missing}},
            steps=list(self.create_on(topic, missing, q)),
            notes=notes,
        )

    def manual_plan(self, do: str, kind: Any, says: str, **args: Any) -> Plan:
        """A plan of one manual step and its check."""
        return Plan(namesrvs=self.namesrv_list(), steps=[Manual(do, check(kind, says, **args))])

    def create_everywhere(self, topic: str, q: int) -> str:
        """The coverage alerts' remedy: the topic on every master, auto-creation off."""
        return (
            f"{self.update_topic(topic, '-c', self.cluster, q=q)}, and set "
            "autoCreateTopicEnable=false on the brokers in production."
        )


class Rule:
    """One alert kind of the catalogue: its module holds what raises, updates and resolves it.

    The class attributes describe it to the registry (:mod:`streaming.engine.rules`), from which
    every list of kinds derives: ``scope`` (a topic-scoped alert, open, keeps an auto-created
    topic from being forgotten), ``reads`` (the cluster-wide facts it judges on), ``deadlines``
    (the thresholds it schedules, which :meth:`fire` crosses), ``rejudges`` (the thresholds it
    schedules, keyed by topic, at which the whole topic is judged again, every topic rule in
    order) and ``refreshed`` (its open alerts' evidence is derived again after every
    registration or expiry). Its ``on_<happening>`` methods are called for the happenings of
    :data:`HAPPENINGS` it defines them for."""

    kind: ClassVar[AlertKind]
    scope: ClassVar[Scope]
    reads: ClassVar[frozenset[Fact]] = frozenset()
    deadlines: ClassVar[tuple[str, ...]] = ()
    rejudges: ClassVar[tuple[str, ...]] = ()
    refreshed: ClassVar[bool] = False

    def __init__(self, engine: EngineView, facts: ClusterFacts, life: TopicLife) -> None:
        self.e = engine
        self.facts = facts
        self.life = life
        self.cluster = engine.cluster

    def fire(self, deadline: str, key: str, at: int) -> None:
        """Cross one of this rule's thresholds (``deadline`` is one of ``deadlines``)."""
        raise NotImplementedError(f"{type(self).__name__} schedules no threshold {deadline!r}")

    def refresh(self, broker: str, broker_id: int, at: int) -> None:
        """Derive an open alert's evidence again (``refreshed`` rules)."""
        raise NotImplementedError(f"{type(self).__name__} has no evidence to refresh")


class TopicView:
    """One topic as the topic rules judge it after a change: its rule state (an auto-created
    topic's), its live routes, and the masters that hold it writable against those expected."""

    def __init__(self, engine: EngineView, facts: ClusterFacts, topic: str) -> None:
        self.e, self.facts, self.topic = engine, facts, topic
        self.state = engine.topic_state(topic) if topic in engine.meta.auto_topics else None

    @cached_property
    def system(self) -> bool:
        return self.facts.is_system(self.topic)

    @property
    def auto_created(self) -> bool:
        return self.state is not None and self.state.auto_created_at is not None

    @cached_property
    def holders(self) -> dict[RegKey, Config]:
        return self.e.live_holders(self.topic)

    @cached_property
    def holding(self) -> set[str]:
        """Masters routed the topic writable (a producer sends only to those)."""
        return {b for (_, b, i), c in self.holders.items() if i == 0 and c[2] & PERM_WRITE}

    @cached_property
    def expected(self) -> set[str]:
        return self.facts.expected_brokers()


class TopicRule(Rule):
    """A rule judged for one topic whenever its routes, its template holders or the expected
    masters change: for every topic (``system_topics``: system topics too), or only for
    auto-created ones (``auto_created_only``)."""

    scope: ClassVar[Scope] = "topic"
    system_topics: ClassVar[bool] = False
    auto_created_only: ClassVar[bool] = False

    def judge(self, view: TopicView, at: int) -> None:
        raise NotImplementedError
