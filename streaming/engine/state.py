"""The state the engine keeps per cluster, as plain data that serializes to JSON.

Small parts (registrations, indexes, open alerts, pending deadlines) live in :class:`Meta` and
are loaded whole; large parts (each registration's topic table, the per-topic route content and
per-topic rule state) are :class:`LazyMap` s that load one entry when it is first needed and
remember which entries changed, so that persistence costs follow what changed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import orjson

from routewatch.changes import Config, RegKey, RouteChange
from routewatch.rocketmq import BROKER_EXPIRY_MS

__all__ = [
    "AFTER_LIVENESS",
    "BEFORE_EVENTS",
    "LIVENESS",
    "LIVENESS_KINDS",
    "Config",
    "Holder",
    "LazyMap",
    "Meta",
    "Outputs",
    "Reg",
    "RegKey",
    "TopicState",
    "key_json",
    "reg_id",
    "reg_key",
]


# Thresholds of liveness: a registration expiring, an unregistered NameServer leaving its
# cluster (120 s after its last registration), the cluster's collector falling silent.
# The cluster's collector's silence is its liveness: it watches through its last round's
# threshold instant, as a broker is live through its expiry instant.
LIVENESS_KINDS = frozenset({"expire", "linger", "collector_silent"})

# A threshold's phase: where it falls among the events stamped with its instant — "the same
# instant" is the same millisecond and phase (docs/alerts.md, Time). Time passing comes before
# the events (BEFORE_EVENTS); liveness ends after them (a broker is live through its expiry
# instant: LIVENESS); a threshold scheduled while one of those two after-events phases is
# crossed inherits the after-events side, behind liveness (AFTER_LIVENESS): the change it
# waits on began after the events of its instant, so its wait ends after the events of its
# own, and after the liveness expiries of that millisecond (a NAMESRV_DIVERGENCE begun by an
# expiry at E lasts until after the events and the expiries of E + 60 s). The phase is the
# second field of each pending threshold, so it orders the heap: in one millisecond, the
# thresholds before its events, its events, its expiries, then what inherited their phase.
BEFORE_EVENTS, LIVENESS, AFTER_LIVENESS = 1, 2, 3
# the one after-events phase of states written before liveness went first among them
_LEGACY_AFTER_EVENTS = 0


def _phase(phase: int, kind: str) -> int:
    """A pending threshold's phase as read from a state (a legacy after-events one split by
    its kind)."""
    if phase != _LEGACY_AFTER_EVENTS:
        return phase
    return LIVENESS if kind in LIVENESS_KINDS else AFTER_LIVENESS


def reg_id(key: RegKey) -> str:
    """A registration key as one string (state keys and JSON object keys)."""
    return f"{key[0]}|{key[1]}|{key[2]}"


def reg_key(text: str) -> RegKey:
    ns, broker, broker_id = text.rsplit("|", 2)
    return (ns, broker, int(broker_id))


def key_json(key: tuple[Any, ...]) -> str:
    """A key of several parts as one string, the JSON array of its parts (a deadline's key, a
    NO_ROUTE_INFO resolution's, an entry of the state store's); ``orjson.loads`` gives them
    back."""
    return orjson.dumps(key).decode()


@dataclass(slots=True)
class Reg:
    """What the monitor knows of one broker's registration with one NameServer."""

    addr: str
    last_hb: int
    live: bool = True
    shutdown: bool = False
    # the broker's settings as of its latest complete full registration on this NameServer,
    # and that registration's instant (a split one's last part)
    auto_create: bool | None = None
    default_q: int | None = None
    full_at: int | None = None
    last_reg: int | None = None  # the latest registration that was not an unregistration
    lingers: bool = False  # unregistered, but its NameServer stays the cluster's (120 s)
    version: str | None = None  # data version of the table, as of the latest full registration
    amended: bool = False  # an immediate registration changed the table since then
    template: str = "missing"  # TBW102 in the latest full table: usable | missing | no_inherit
    template_held: bool = False  # that came from the heartbeat's ``held`` (the broker's own)
    read_only: bool = False  # a master whose topics are routed read-only (cluster._read_only)
    expiry_deferred: bool = False  # its expiry fell in its observer's gap: judged at the gap's end
    # topics the NameServer routes to this master that the broker itself does not hold (the
    # heartbeat's ``held``), sorted
    not_held: list[str] = field(default_factory=list)
    expiry_due: int | None = None
    # the split full registration being received: its data version, and its parts by number
    # (None: a part of the table's own data version, not kept, the table has it)
    parts_version: str | None = None
    parts: dict[int, dict[str, Config] | None] = field(default_factory=dict)
    # the table as the round's skipped parts knew it, before an immediate registration amended it
    round_base: dict[str, Config] | None = None
    # the registration's own expiry (the heartbeat's heartbeat_timeout_ms), None: 120 s
    timeout_ms: int | None = None
    # topics named by immediate registrations since the latest complete full one -> the
    # instant of the latest that named each (what wrote its counts: written_at)
    named_at: dict[str, int] = field(default_factory=dict)

    def written_at(self, topic: str) -> int:
        """The instant of the registration that wrote ``topic``'s counts in this table: an
        immediate registration naming it since the latest complete full registration, else
        that full registration (a state written before either was kept: its latest
        registration)."""
        at = self.named_at.get(topic)
        if at is not None:
            return at
        if self.full_at is not None:
            return self.full_at
        return self.last_reg if self.last_reg is not None else self.last_hb

    @property
    def expiry_ms(self) -> int:
        """How long the NameServer keeps this registration without a renewal."""
        return self.timeout_ms or BROKER_EXPIRY_MS

    def to_json(self) -> dict[str, Any]:
        return {
            "addr": self.addr,
            "last_hb": self.last_hb,
            "live": self.live,
            "shutdown": self.shutdown,
            "auto_create": self.auto_create,
            "default_q": self.default_q,
            "full_at": self.full_at,
            "last_reg": self.last_reg,
            "lingers": self.lingers,
            "version": self.version,
            "amended": self.amended,
            "template": self.template,
            "template_held": self.template_held,
            "read_only": self.read_only,
            "expiry_deferred": self.expiry_deferred,
            "not_held": self.not_held,
            "expiry_due": self.expiry_due,
            "parts_version": self.parts_version,
            "parts": {str(i): _table_out(p) for i, p in self.parts.items()},
            "round_base": _table_out(self.round_base),
            "timeout_ms": self.timeout_ms,
            "named_at": self.named_at,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Reg:
        parts = {int(i): _table_in(p) for i, p in d["parts"].items()}
        if "full_at" not in d:  # a state written before it was kept: its latest registration
            d = {**d, "full_at": d["last_reg"] if d["auto_create"] is not None else None}
        return cls(**{**d, "parts": parts, "round_base": _table_in(d["round_base"])})


def _table_out(table: dict[str, Config] | None) -> dict[str, list[int]] | None:
    return None if table is None else {t: list(c) for t, c in table.items()}


def _table_in(raw: dict[str, Any] | None) -> dict[str, Config] | None:
    return None if raw is None else {t: _config(c) for t, c in raw.items()}


def _config(c: Any) -> Config:
    return (int(c[0]), int(c[1]), int(c[2]))


@dataclass(slots=True)
class Holder:
    """A producer holding a template route for a topic."""

    brokers: list[str]
    since: int
    last_pull: int


@dataclass(slots=True)
class TopicState:
    """Per-topic rule state; only topics that were auto-created, or had failures, have one."""

    auto_created_at: int | None = None
    holders: dict[str, Holder] = field(default_factory=dict)
    at_risk_since: int | None = None
    no_route: dict[str, Any] | None = None  # last, count, clients, statuses, due
    rejected: dict[str, Any] | None = None  # last, count, brokers, due
    # an auto-created topic with nothing left of it (Rules.note_idle): idle since when, and the
    # instant of its pending "forget" threshold (one at a time)
    idle_since: int | None = None
    forget_due: int | None = None
    # how the auto-creation is known (AutoCreation): a client saw it ("observed"), or the
    # broker side's config looks it ("while_watching", "at_start": docs/alerts.md)
    auto_created_how: str | None = None

    def is_empty(self) -> bool:
        return (
            self.auto_created_at is None
            and not self.holders
            and self.no_route is None
            and self.rejected is None
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "auto_created_at": self.auto_created_at,
            "holders": {c: [h.brokers, h.since, h.last_pull] for c, h in self.holders.items()},
            "at_risk_since": self.at_risk_since,
            "no_route": self.no_route,
            "rejected": self.rejected,
            "idle_since": self.idle_since,
            "forget_due": self.forget_due,
            "auto_created_how": self.auto_created_how,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TopicState:
        holders = {c: Holder(list(b), int(s), int(p)) for c, (b, s, p) in d["holders"].items()}
        return cls(
            d["auto_created_at"],
            holders,
            d["at_risk_since"],
            d["no_route"],
            d["rejected"],
            d.get("idle_since"),  # absent from states written before forgetting existed
            d.get("forget_due"),
            # absent from states written before the broker side could tell: a client's word
            d.get("auto_created_how") or ("observed" if d["auto_created_at"] is not None else None),
        )


@dataclass(slots=True)
class Meta:
    """The small, whole-loaded part of a cluster's state."""

    stream_time: int | None = None
    regs: dict[RegKey, Reg] = field(default_factory=dict)
    auto_topics: set[str] = field(default_factory=set)
    active_topics: set[str] = field(default_factory=set)  # topics with a TopicState
    # clients whose latest pull said they have no NameServer address -> that pull's ts
    no_namesrv_clients: dict[str, int] = field(default_factory=dict)
    diverged_since: dict[tuple[str, int], int] = field(default_factory=dict)
    # pending thresholds, a heap of (instant, phase, sequence, kind, key)
    deadlines: list[tuple[int, int, int, str, str]] = field(default_factory=list)
    deadline_seq: int = 0
    open_alerts: list[dict[str, Any]] = field(default_factory=list)
    # the evidence each open alert opened with, by id (kept for its resolution)
    opened_with: dict[str, dict[str, Any]] = field(default_factory=dict)
    # NO_ROUTE_INFO keys -> where their last resolution falls in (ts, seq) order (Rules)
    last_resolved: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the cluster's observer (routewatch collect), from its rounds: collector, last (its last
    # round's ts), interval_ms, silent_since (the last round before a gap, while in one),
    # unreachable (NameServer -> since when no round has reached it), last_look (the ts of its
    # last round that reached a NameServer; absent from states written before it was kept)
    observer: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "stream_time": self.stream_time,
            "regs": {reg_id(k): r.to_json() for k, r in self.regs.items()},
            "auto_topics": sorted(self.auto_topics),
            "active_topics": sorted(self.active_topics),
            "no_namesrv_clients": dict(sorted(self.no_namesrv_clients.items())),
            "diverged_since": [[b, i, t] for (b, i), t in self.diverged_since.items()],
            "deadlines": [list(d) for d in self.deadlines],
            "deadline_seq": self.deadline_seq,
            "open_alerts": self.open_alerts,
            "opened_with": self.opened_with,
            "last_resolved": {k: list(v) for k, v in self.last_resolved.items()},
            "observer": self.observer,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Meta:
        return cls(
            stream_time=d["stream_time"],
            regs={reg_key(k): Reg.from_json(r) for k, r in d["regs"].items()},
            auto_topics=set(d["auto_topics"]),
            active_topics=set(d["active_topics"]),
            no_namesrv_clients=_clients_at(d["no_namesrv_clients"], d["stream_time"]),
            diverged_since={(b, int(i)): int(t) for b, i, t in d["diverged_since"]},
            deadlines=_deadlines_in(d["deadlines"]),
            deadline_seq=int(d["deadline_seq"]),
            open_alerts=d["open_alerts"],
            opened_with=d.get("opened_with") or {},  # (absent from states before it was kept)
            last_resolved={k: (int(t), int(s)) for k, (t, s) in d["last_resolved"].items()},
            observer=d.get("observer"),
        )


def _deadlines_in(raw: list[list[Any]]) -> list[tuple[int, int, int, str, str]]:
    """The pending thresholds as a heap again; a state written with one after-events phase has
    its phases split (liveness, then what inherited it) and its heap rebuilt in that order."""
    deadlines = [(int(a), _phase(int(p), str(k)), int(q), str(k), str(e)) for a, p, q, k, e in raw]
    if any(int(p) == _LEGACY_AFTER_EVENTS for _, p, _, _, _ in raw):
        heapq.heapify(deadlines)
    return deadlines


def _clients_at(raw: dict[str, Any] | list[str], stream_time: int | None) -> dict[str, int]:
    """Clients and the instants of their pulls; a state written before the instants were kept
    has the clients alone, taken as of its stream time."""
    if isinstance(raw, list):
        return {str(c): int(stream_time or 0) for c in raw}
    return {str(c): int(t) for c, t in raw.items()}


K = TypeVar("K")
V = TypeVar("V")


class LazyMap(Generic[K, V]):
    """A map that loads an entry on first use (with ``load``) and tracks changed entries."""

    def __init__(self, load: Callable[[K], V | None] | None = None) -> None:
        self._data: dict[K, V | None] = {}
        self._dirty: set[K] = set()
        self._load = load

    def get(self, key: K) -> V | None:
        if key not in self._data:
            self._data[key] = self._load(key) if self._load is not None else None
        return self._data[key]

    def set(self, key: K, value: V | None) -> None:
        """Set (or, with None, delete) an entry."""
        self._data[key] = value
        self._dirty.add(key)

    def mark(self, key: K) -> None:
        """Record that an entry was changed in place."""
        self._dirty.add(key)

    def dirty(self) -> Iterator[tuple[K, V | None]]:
        for key in sorted(self._dirty, key=str):
            yield key, self._data.get(key)


@dataclass
class Outputs:
    """What a cluster's engine produced in the current batch, besides alert changes."""

    route_changes: list[RouteChange] = field(default_factory=list)
    touched_regs: set[RegKey] = field(default_factory=set)
    events: dict[str, int] = field(default_factory=dict)
    sends: dict[str, int] = field(default_factory=dict)
    auto_created: dict[str, int] = field(default_factory=dict)
