"""The route tables of one cluster and the application of events to them, in event-time order.

:class:`ClusterEngine` applies released events one at a time: first it lets time pass to the
event's ``ts`` (every threshold at or before it is crossed, each stamped with its own instant,
but a registration stays live through its expiry instant), then it applies the event. The
clock is the whole stream's (``streaming.engine.stream``): a cluster with no events of its own
is advanced to it too, so its brokers expire and its quiet periods end on time.

Route tables are the registrations' content (``routes``: topic -> the registrations listing
it, with counts) plus each registration's liveness; the *effective* route of a topic on a
NameServer is its live registrations. Changes to effective routes are recorded as
:class:`~routewatch.changes.RouteChange` s, from which the store keeps validity intervals.
"""

from __future__ import annotations

import heapq
from typing import Any

import orjson

from routewatch.alerts import Alert
from routewatch.changes import RouteChange
from routewatch.events import DeliveredStatus
from routewatch.rocketmq import (
    BROKER_EXPIRY_MS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    TBW102,
    is_system_topic,
)
from streaming.engine.alerts import AlertBook
from streaming.engine.observer import behind_after, silent_after
from streaming.engine.rules import CLIENT_FORGET_MS, FAILURE_QUIET_MS, Rules
from streaming.engine.shards import HEAD_SHARD, owner_shard, shard_of
from streaming.engine.state import (
    AFTER_LIVENESS,
    BEFORE_EVENTS,
    LIVENESS,
    LIVENESS_KINDS,
    Config,
    Holder,
    LazyMap,
    Meta,
    Outputs,
    Reg,
    RegKey,
    TopicState,
    key_json,
)

__all__ = ["ClusterEngine"]


def _template_state(topics: dict[str, Config], held: dict[str, Any] | None = None) -> str:
    """TBW102 as the broker itself holds it: its table's, unless the heartbeat's ``held`` says
    the broker's own differs from what the NameServer routes."""
    own = (held or {}).get(TBW102)
    if own is not None:
        if not own["held"]:
            return "missing"
        return "usable" if own["perm"] & PERM_INHERIT else "no_inherit"
    config = topics.get(TBW102)
    if config is None:
        return "missing"
    return "usable" if config[2] & PERM_INHERIT else "no_inherit"


def _read_only(broker: str, table: dict[str, Config]) -> bool:
    """Whether a master's topics are routed read-only: its broker-named topic (writable as the
    broker makes it) is readable and not writable — ``wipeWritePerm``, or ``brokerPermission``
    read-only."""
    config = table.get(broker)
    return config is not None and bool(config[2] & PERM_READ) and not config[2] & PERM_WRITE


class ClusterEngine:
    """Applies one cluster's events in order and keeps its route tables and alerts — or one
    shard's of them (``shard`` of ``shards``: :mod:`streaming.engine.shards`)."""

    def __init__(
        self,
        cluster: str,
        meta: Meta | None = None,
        tables: LazyMap[RegKey, dict[str, Config]] | None = None,
        routes: LazyMap[str, dict[RegKey, Config]] | None = None,
        topics: LazyMap[str, TopicState] | None = None,
        *,
        shard: int = HEAD_SHARD,
        shards: int = 1,
    ) -> None:
        self.cluster = cluster
        self.shard, self.shards = shard, shards
        # the head shard keeps the whole tables and owns the broker and cluster alerts
        self.head = shard == HEAD_SHARD
        self.meta = meta or Meta()
        self.tables = tables or LazyMap()
        self.routes = routes or LazyMap()
        self.topics = topics or LazyMap()
        self.book = AlertBook(self.meta.opened_with)
        self.book.open = {a.key: a for a in map(Alert.from_dict, self.meta.open_alerts)}
        self.out = Outputs()
        self.rules = Rules(self)
        # the phase of the threshold being crossed, inherited by those it schedules
        self._crossing: int | None = None

    # -- time -----------------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.meta.stream_time or 0

    def schedule(self, at: int, kind: str, key: str) -> None:
        """A threshold at instant ``at``, in its phase (:data:`~streaming.engine.state.LIVENESS`
        and the others): of liveness, after the events of its instant; scheduled while a
        threshold after the events is crossed, after them and after the liveness of its
        instant; any other before them."""
        self.meta.deadline_seq += 1
        if kind in LIVENESS_KINDS:
            phase = LIVENESS
        elif self._crossing is not None and self._crossing != BEFORE_EVENTS:
            phase = AFTER_LIVENESS
        else:
            phase = BEFORE_EVENTS
        heapq.heappush(self.meta.deadlines, (at, phase, self.meta.deadline_seq, kind, key))

    def next_deadline(self) -> int | None:
        """The instant of the earliest pending threshold, if any."""
        return self.meta.deadlines[0][0] if self.meta.deadlines else None

    def advance(self, ts: int, *, through: bool = False) -> None:
        """Let time pass to ``ts``: cross every threshold at or before it, in order (instant, then
        phase, then when it was scheduled), each at its own instant — but one after the events
        at ``ts`` waits for the events stamped with ``ts``, unless ``through`` (no event at
        ``ts`` is still to come)."""
        deadlines = self.meta.deadlines
        waiting: list[tuple[int, int, int, str, str]] = []
        while deadlines and deadlines[0][0] <= ts:
            item = heapq.heappop(deadlines)
            at, phase, _, kind, key = item
            if at == ts and phase != BEFORE_EVENTS and not through:
                waiting.append(item)
                continue
            self.meta.stream_time = max(self.now, at)
            self._crossing = phase
            try:
                self.rules.fire(kind, key, at)
            finally:
                self._crossing = None
        for item in waiting:
            heapq.heappush(deadlines, item)
        if self.meta.stream_time is None or ts > self.meta.stream_time:
            self.meta.stream_time = ts

    # -- shards ---------------------------------------------------------------------------------

    def owns(self, topic: str) -> bool:
        """Whether ``topic``'s routes, rule state and alerts are this shard's."""
        return self.shards <= 1 or shard_of(topic, self.shards) == self.shard

    # -- events ---------------------------------------------------------------------------------

    def apply(self, raw: str | bytes) -> None:
        """Apply one released event (its raw JSON, already validated)."""
        self.apply_event(orjson.loads(raw))

    def apply_event(self, event: dict[str, Any]) -> None:
        """Apply one released event, decoded."""
        ts = event["ts"]
        self.advance(ts)
        kind = event["type"]
        if self.shards <= 1 or owner_shard(kind, event.get("topic"), self.shards) == self.shard:
            self.out.events[kind] = self.out.events.get(kind, 0) + 1
        if kind == "heartbeat":
            self._heartbeat(event, ts)
        elif kind == "route_pull":
            self._route_pull(event, ts)
        elif kind == "collector_round":
            self._collector_round(event, ts)
        elif kind == "proxy_route_miss":
            self.rules.no_route(_as_failed_send(event), ts)
        else:
            self.out.sends[event["status"]] = self.out.sends.get(event["status"], 0) + 1
            self._send(event, ts)

    def delivered(self, ts: int, seq: int | None, status: str, topic: str) -> None:
        """Apply a delivered send that auto-created nothing (nine events in ten), from its
        compact form's fields (:func:`streaming.engine.compact.delivered`): what
        :meth:`apply_event` does with it, without the event built as a dict first."""
        self.advance(ts)
        out = self.out
        out.events["send"] = out.events.get("send", 0) + 1
        out.sends[status] = out.sends.get(status, 0) + 1
        self.rules.send_succeeded(topic, ts, seq)

    def _heartbeat(self, e: dict[str, Any], ts: int) -> None:
        key: RegKey = (e["namesrv"], e["broker"], e["broker_id"])
        reg = self.meta.regs.get(key)
        was_live = reg is not None and reg.live
        if reg is None:
            reg = self.meta.regs[key] = Reg(addr=e["broker_addr"], last_hb=ts, live=False)
        if self.head:
            self.out.touched_regs.add(key)
        reg.addr, reg.last_hb = e["broker_addr"], ts
        if e.get("shutdown"):
            self._unregistered(key, reg, was_live, ts)
            self.rules.refresh_broker_evidence(ts)
            return
        reg.shutdown, reg.lingers, reg.last_reg = False, False, ts
        timeout = e.get("heartbeat_timeout_ms")
        reg.timeout_ms = timeout if timeout is not None and timeout > 0 else None
        if reg.expiry_due is None or ts + reg.expiry_ms < reg.expiry_due:  # (a shorter timeout)
            reg.expiry_due = ts + reg.expiry_ms
            self.schedule(reg.expiry_due, "expire", key_json(key))
        # the registration is applied whole first (what the broker side infers of its topics,
        # its table, then its liveness), then judged: no rule sees a broker that is live
        # without its table
        was_read_only = reg.read_only
        stale_changed: set[str] = set()
        inferred = self._inferred(e.get("inferred_auto_created"), ts)
        changed: list[str] = []
        complete = False
        if not e["full"]:
            if reg.parts and any(p is None for p in reg.parts.values()) and not reg.amended:
                reg.round_base = dict(self.tables.get(key) or {})
            reg.amended = True
            immediate = _configs(e)
            for topic in immediate:
                reg.named_at[topic] = ts
            changed = self._store_table(key, immediate, ts, replace=False, routed=was_live)
        else:
            complete, table = self._full_table(key, reg, e)
            if complete:
                reg.auto_create = e["auto_create_topic_enable"]
                reg.default_q = e["default_topic_queue_nums"]
                reg.full_at, reg.named_at = ts, {}
            if table is not None:
                changed = self._store_table(key, table, ts, replace=True, routed=was_live)
            if complete:
                held = e.get("held")
                not_held = sorted(t for t, h in (held or {}).items() if not h["held"])
                if key[2] == 0 and not_held != reg.not_held:
                    stale_changed = set(not_held) ^ set(reg.not_held)
                    reg.not_held = not_held
                if table is not None or held or reg.template_held:
                    stored = table if table is not None else (self.tables.get(key) or {})
                    reg.template = _template_state(stored, held)
                    reg.template_held = bool(held and TBW102 in held)
        if not was_live:
            reg.live = True
            self._liveness_changed(key, ts)
        else:
            for topic in changed:
                self.rules.topic_changed(topic, ts)
            if reg.read_only != was_read_only:  # the expected brokers changed
                for topic in sorted(set(self.meta.auto_topics) - set(changed)):
                    self.rules.topic_changed(topic, ts)
            if complete or not e["full"]:  # the registration wrote counts
                for topic in self._counts_apart(key, reg, None if complete else list(e["topics"])):
                    if topic not in changed:
                        self.rules.topic_changed(topic, ts)
        # (evidence for a known table, or whether the broker itself holds a routed topic)
        for topic in sorted((set(inferred) | stale_changed) - set(changed)):
            self.rules.topic_changed(topic, ts)
        if complete:
            self.rules.full_registration(key, reg, ts)
        self.rules.broker_heard(key, ts, shutdown=False)
        if changed and was_live:  # (one that turned live was judged as a liveness change)
            self.rules.table_changed(key, ts)
        if changed or not was_live:  # only then can an open alert's topic evidence change
            self.rules.refresh_broker_evidence(ts)

    def _counts_apart(self, key: RegKey, reg: Reg, named: list[str] | None) -> list[str]:
        """The topics a live registration just wrote — its whole table (``named`` None: a
        complete full registration), or those an immediate one named — that another
        NameServer the broker is live on routes with other counts or perm: the cluster route
        takes a broker's counts from the registration that wrote them last, now this one, so
        they are judged again even where this NameServer's table did not change."""
        _, broker, broker_id = key
        regs = self.meta.regs
        others = [
            k for k, r in regs.items() if r.live and k[1:] == (broker, broker_id) and k != key
        ]
        if not others:
            return []
        if (
            named is None
            and reg.version is not None
            and not reg.amended
            and all(regs[k].version == reg.version and not regs[k].amended for k in others)
        ):
            return []  # (one data version on every NameServer: one table)
        mine = self.tables.get(key) or {}
        topics = mine if named is None else named
        apart: set[str] = set()
        for other in others:
            theirs = self.tables.get(other) or {}
            if theirs != mine:
                apart.update(t for t in topics if t in theirs and theirs[t] != mine.get(t))
        return sorted(apart)

    def knows_table(self, head: dict[str, Any]) -> bool:
        """Whether a full registration's table is the one its registration already holds (the
        data version it was built from, not amended since): then its ``topics`` are not read
        (:func:`streaming.engine.compact.head_form`)."""
        reg = self.meta.regs.get((head["namesrv"], head["broker"], head["broker_id"]))
        version = head.get("data_version")
        return (
            reg is not None and version is not None and version == reg.version and not reg.amended
        )

    def _inferred(self, flags: dict[str, Any] | None, ts: int) -> list[str]:
        """A heartbeat's ``inferred_auto_created``: the topics of the broker's table whose
        config says they were auto-created, each made so (if no evidence came first); the
        topics that changed."""
        if not flags:
            return []
        out = []
        for topic, flag in flags.items():
            if not self.owns(topic):
                continue
            state = self.topic_state(topic, create=True)
            assert state is not None
            if self.rules.auto_created(topic, state, ts, flag["found"], flag["first_seen"]):
                out.append(topic)
        return out

    def _full_table(
        self, key: RegKey, reg: Reg, e: dict[str, Any]
    ) -> tuple[bool, dict[str, Config] | None]:
        """A full registration (or one part of a split one) -> whether the registration is
        complete, and the broker's new table (None: unchanged, or parts are still to come).

        A registration of the table's own data version is not decoded (most registrations of
        a large table); an immediate registration between the parts of a split one does not
        stop it from completing with its last part."""
        version = e.get("data_version")
        parts = e.get("parts") or 1
        known = version is not None and version == reg.version and not reg.amended
        if parts <= 1:
            reg.parts, reg.parts_version, reg.round_base = {}, None, None
            reg.version, reg.amended = version, False
            return True, None if known else _configs(e)
        if reg.parts_version != version or not reg.parts:
            reg.parts, reg.parts_version, reg.round_base = {}, version, None
        # a part of the table's own version is not kept (most registrations of a large table)
        reg.parts[e.get("part") or 0] = None if known else _configs(e)
        if len(reg.parts) < parts:
            return False, None
        received = list(reg.parts.values())
        base = reg.round_base
        reg.parts, reg.parts_version, reg.round_base = {}, None, None
        if all(p is None for p in received):
            return True, None
        table: dict[str, Config] = {}
        if any(p is None for p in received):  # the parts not kept, from the table they are of
            table.update(base if base is not None else (self.tables.get(key) or {}))
        for part in received:
            if part is not None:
                table.update(part)
        reg.version, reg.amended = version, False
        return True, table

    def routed(self, topic: str, broker: str) -> bool:
        """Whether this shard keeps ``topic``'s routes from ``broker``'s registrations and
        judges it after they change: every topic in the head shard; in any other, its own
        topics and the cluster's system topics (TBW102, the broker's own, ...)."""
        return (
            self.head
            or self.owns(topic)
            or is_system_topic(topic, self.cluster, frozenset((broker,)))
        )

    def _store_table(
        self, key: RegKey, topics: dict[str, Config], ts: int, *, replace: bool, routed: bool
    ) -> list[str]:
        """Store a registration's topics (the whole table, or added to it); the topics whose
        config changed that this shard routes (:meth:`routed`: a shard keeps every table
        whole, the routes of its own topics). ``routed``: the registration is live, so its
        routes change at ``ts``."""
        old = self.tables.get(key) or {}
        new = topics if replace else {**old, **topics}
        changed: list[tuple[str, Config | None]] = [
            (t, c) for t, c in topics.items() if old.get(t) != c
        ]
        if replace:
            changed += [(t, None) for t in old if t not in topics]
        if not changed:
            return []
        self.tables.set(key, new or None)
        self.rules.table_stored(key)
        if key[2] == 0:
            self.meta.regs[key].read_only = _read_only(key[1], new)
        if not self.head:
            changed = [(t, c) for t, c in changed if self.routed(t, key[1])]
        for topic, config in changed:
            holders = self.routes.get(topic) or {}
            if config is None:
                holders.pop(key, None)
            else:
                holders[key] = config
            self.routes.set(topic, holders or None)
            if routed and self.owns(topic):
                self.out.route_changes.append(RouteChange(topic, key, ts, config))
        return [t for t, _ in changed]

    def _unregistered(self, key: RegKey, reg: Reg, was_live: bool, ts: int) -> None:
        """A clean shutdown: the NameServer drops the broker and its table at once; a later
        registration starts from nothing. The NameServer stays one of the cluster's until 120 s
        after the last registration it received."""
        reg.live, reg.shutdown = False, True
        if reg.last_reg is not None and reg.last_reg + BROKER_EXPIRY_MS > ts and not reg.lingers:
            reg.lingers = True
            self.schedule(reg.last_reg + BROKER_EXPIRY_MS, "linger", key_json(key))
        if was_live:
            self._liveness_changed(key, ts)
        self._store_table(key, {}, ts, replace=True, routed=False)
        reg.version, reg.amended, reg.template, reg.named_at = None, False, "missing", {}
        reg.parts, reg.parts_version, reg.round_base = {}, None, None
        self.rules.broker_heard(key, ts, shutdown=True)

    def stop_lingering(self, key: RegKey, at: int) -> bool:
        """The end of an unregistered NameServer's 120 s as one of the cluster's."""
        reg = self.meta.regs.get(key)
        if reg is None or not reg.lingers or reg.last_reg is None:
            return False
        if reg.last_reg + BROKER_EXPIRY_MS != at:
            return False  # (registered again since: a later deadline, or none, decides)
        reg.lingers = False
        return True

    def _liveness_changed(self, key: RegKey, at: int) -> None:
        """A registration became live or stopped being live: its topics' routes change."""
        reg = self.meta.regs[key]
        if self.head:
            self.out.touched_regs.add(key)
        table = self.tables.get(key) or {}
        for topic, config in table.items():
            if self.owns(topic):
                change = RouteChange(topic, key, at, config if reg.live else None)
                self.out.route_changes.append(change)
        routed = list(table) if self.head else [t for t in table if self.routed(t, key[1])]
        self.rules.liveness_changed(key, at, routed)

    def expire(self, key: RegKey, at: int) -> bool:
        """The expiry deadline of a registration: drop it if it is still silent."""
        reg = self.meta.regs.get(key)
        if reg is None or reg.expiry_due != at:
            return False  # (a deadline moved earlier by a shorter timeout: the new one decides)
        reg.expiry_due = None
        if not reg.live:
            return False
        last = reg.last_reg if reg.last_reg is not None else reg.last_hb
        if last + reg.expiry_ms > at:
            reg.expiry_due = last + reg.expiry_ms
            self.schedule(reg.expiry_due, "expire", key_json(key))
            return False
        if self.unwatched(at):
            # nobody looked late enough to renew it: judged at the observer's next look
            reg.expiry_deferred = True
            return False
        reg.live = False
        self._liveness_changed(key, at)
        return True

    # -- the observer ---------------------------------------------------------------------------

    def unwatched(self, at: int) -> bool:
        """Whether the cluster's observer (its collector) is not watching at ``at``: it has
        looked (reached a NameServer) at no round since more than one and a half of its
        intervals — silent, blind, or late."""
        obs = self.meta.observer
        if obs is None:
            return False
        last_look = obs.get("last_look", obs["last"])
        return last_look is None or at > last_look + behind_after(obs["interval_ms"])

    def went_silent(self, at: int) -> bool:
        """The threshold of the observer's silence: whether it went silent at ``at`` (no round
        came since the one the threshold was scheduled for); its gap begins at its last round."""
        obs = self.meta.observer
        if obs is None or obs["silent_since"] is not None:
            return False
        if obs["last"] + silent_after(obs["interval_ms"]) != at:
            return False  # (a round came since: a later deadline decides)
        obs["silent_since"] = obs["last"]
        return True

    def _collector_round(self, e: dict[str, Any], ts: int) -> None:
        """One round of the cluster's collector: it watches. A NameServer it did not reach is
        unreachable since the earliest of the present run of rounds that did not reach it
        (across collectors: a restarted one counts from its own start). A round that reached
        one is a look: the expiries deferred while nobody looked are judged, and a gap ends."""
        before = self.meta.observer
        was_unreachable = (before or {}).get("unreachable") or {}
        unreachable = {}
        for ns, r in sorted(e["namesrvs"].items()):
            if r["reached"]:
                continue
            since = r["unreachable_since"] if r["unreachable_since"] is not None else ts
            unreachable[ns] = min(since, was_unreachable.get(ns, since))
        look = len(unreachable) < len(e["namesrvs"])
        last_look = ts if look else (before or {}).get("last_look")
        obs = self.meta.observer = {
            "collector": e["collector"],
            "last": ts,
            "interval_ms": e["interval_ms"],
            "silent_since": None,
            "unreachable": unreachable,
            "last_look": last_look,
        }
        self.schedule(ts + silent_after(e["interval_ms"]), "collector_silent", "")
        if look and before is not None:
            self._looked((before.get("last_look", before["last"]), ts))
        if before is not None and before["silent_since"] is not None:
            self.rules.observer_back(before, ts)
        changed = unreachable.keys() != was_unreachable.keys()
        self.rules.namesrvs_reached(obs, ts, changed=changed)

    def _looked(self, gap: tuple[int | None, int]) -> None:
        """The observer looked at ``gap[1]``: a registration whose expiry was deferred (it fell
        while nobody looked) and that this round's heartbeats renewed was live throughout; one
        they did not renew expired now, in the gap since the observer's last look."""
        ts = gap[1]
        expired: list[RegKey] = []
        for key, reg in sorted(self.meta.regs.items()):
            if not reg.expiry_deferred:
                continue
            reg.expiry_deferred = False
            last = reg.last_reg if reg.last_reg is not None else reg.last_hb
            if reg.live and last + reg.expiry_ms <= ts:
                reg.live = False
                self._liveness_changed(key, ts)
                expired.append(key)
        since = gap[0] if gap[0] is not None else ts
        for broker, broker_id in sorted({(b, i) for _, b, i in expired}):
            self.rules.broker_expired(broker, broker_id, ts, gap=(since, ts))
        if expired:
            self.rules.refresh_broker_evidence(ts)

    def _route_pull(self, e: dict[str, Any], ts: int) -> None:
        client, topic, ok = e["client_id"], e["topic"], e["result"] == "SUCCESS"
        if e["result"] == "NO_NAMESRV":
            self.meta.no_namesrv_clients[client] = ts
        else:
            self.meta.no_namesrv_clients.pop(client, None)
        if e["role"] != "producer" or not self.owns(topic):
            return
        via_default = bool(e.get("via_default"))
        if via_default and ok:
            state = self.topic_state(topic, create=True)
            assert state is not None
            self.rules.auto_created(topic, state, ts)
            state.holders[client] = Holder([q["broker"] for q in e["queues"]], ts, ts)
            self.topics.mark(topic)
            self.rules.topic_changed(topic, ts)
            return
        if topic not in self.meta.active_topics:
            return
        state = self.topic_state(topic)
        if state is None or client not in state.holders:
            return
        if ok:
            del state.holders[client]
        else:
            state.holders[client].last_pull = ts
        self.topics.mark(topic)
        self.rules.topic_changed(topic, ts)

    def _send(self, e: dict[str, Any], ts: int) -> None:
        status, topic = e["status"], e["topic"]
        if status in DeliveredStatus:
            if e.get("auto_created"):
                state = self.topic_state(topic, create=True)
                assert state is not None
                if self.rules.auto_created(topic, state, ts):
                    self.rules.topic_changed(topic, ts)
            self.rules.send_succeeded(topic, ts, e.get("seq"))
        elif status in ("NO_ROUTE_INFO", "NO_NAMESRV"):
            self.rules.no_route(e, ts)
        elif status == "TOPIC_NOT_EXIST":
            self.rules.rejected(e, ts)

    # -- helpers for the rules ------------------------------------------------------------------

    def topic_state(self, topic: str, *, create: bool = False) -> TopicState | None:
        state = self.topics.get(topic) if topic in self.meta.active_topics else None
        if state is None and create:
            state = TopicState()
            self.topics.set(topic, state)
            self.meta.active_topics.add(topic)
        return state

    def live_holders(self, topic: str) -> dict[RegKey, Config]:
        """The live registrations that list ``topic``, with its config in each: from its
        routes where this shard keeps them (every registration's), else from the tables (a
        topic of another shard, which NO_ROUTE_INFO reads when it is a producer's
        ``createTopicKey``: rare, and exact)."""
        return self.holders_of(topic, live_only=True)

    def holders_of(self, topic: str, *, live_only: bool = False) -> dict[RegKey, Config]:
        """The registrations whose last table lists ``topic`` — an expired one's too, unless
        ``live_only`` — with its config in each."""
        regs = self.meta.regs
        if self.head or self.owns(topic) or is_system_topic(topic, self.cluster):
            routes = self.routes.get(topic) or {}
            return {k: c for k, c in routes.items() if regs[k].live or not live_only}
        found = {}
        for key, reg in regs.items():
            if reg.live or not live_only:
                config = (self.tables.get(key) or {}).get(topic)
                if config is not None:
                    found[key] = config
        return found

    def finish(self) -> None:
        """Fold the alert book back into the meta state and drop topics whose rule state
        emptied from the indexes (before persisting)."""
        for topic, value in self.topics.dirty():
            if value is None or value.is_empty():
                self.meta.active_topics.discard(topic)
                self.meta.auto_topics.discard(topic)
        self.meta.open_alerts = [a.to_dict() for a in self.book.open.values()]
        self.meta.opened_with = self.book.opened_with
        horizon = self.now - FAILURE_QUIET_MS
        self.meta.last_resolved = {
            k: v for k, v in self.meta.last_resolved.items() if v[0] >= horizon
        }
        # a client gone for good (a restarted application is a new client id) is forgotten
        self.meta.no_namesrv_clients = {
            c: t for c, t in self.meta.no_namesrv_clients.items() if t + CLIENT_FORGET_MS > self.now
        }


def _as_failed_send(e: dict[str, Any]) -> dict[str, Any]:
    """A proxy's route miss as the failure of NO_ROUTE_INFO it is for the gRPC client that
    asked: the proxy stands for its clients (it does not name them), with the gRPC status and
    no template topic (gRPC clients have none)."""
    return e | {"client_id": e["proxy"], "status": "TOPIC_NOT_FOUND", "default_topic": None}


def _configs(e: dict[str, Any]) -> dict[str, Config]:
    """A registration's topic table: topic -> (read queues, write queues, perm)."""
    return {
        t: (c["read_queue_nums"], c["write_queue_nums"], c["perm"]) for t, c in e["topics"].items()
    }
