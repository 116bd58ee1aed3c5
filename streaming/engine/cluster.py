"""The route tables of one cluster and the application of events to them, in event-time order.

:class:`ClusterEngine` applies released events one at a time: first it lets time pass to the
event's ``ts`` (deadlines due strictly before it fire, each stamped with its own instant), then
it applies the event. Route tables are the registrations' content (``routes``: topic -> the
registrations listing it, with counts) plus each registration's liveness; the *effective* route
of a topic on a NameServer is its live registrations. Changes to effective routes are recorded
as :class:`RouteChange` s, from which the store keeps validity intervals.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import orjson

from routewatch.events import DeliveredStatus
from routewatch.rocketmq import BROKER_EXPIRY_MS, PERM_INHERIT, TBW102
from streaming.engine.alerts import Alert, AlertBook
from streaming.engine.rules import FAILURE_QUIET_MS, Rules
from streaming.engine.state import Config, Holder, LazyMap, Meta, Reg, RegKey, TopicState

__all__ = ["BrokerRow", "ClusterEngine", "RouteChange"]


@dataclass(frozen=True, slots=True)
class RouteChange:
    """From ``at``, registration ``reg`` routes ``topic`` with ``config`` (None: no longer)."""

    topic: str
    reg: RegKey
    at: int
    config: Config | None


@dataclass(frozen=True, slots=True)
class BrokerRow:
    """The latest state of one registration, for the store's broker view."""

    reg: RegKey
    reg_state: dict[str, Any]


@dataclass
class Outputs:
    route_changes: list[RouteChange] = field(default_factory=list)
    touched_regs: set[RegKey] = field(default_factory=set)
    events: dict[str, int] = field(default_factory=dict)
    sends: dict[str, int] = field(default_factory=dict)
    auto_created: dict[str, int] = field(default_factory=dict)


def _template_state(topics: dict[str, Config]) -> str:
    config = topics.get(TBW102)
    if config is None:
        return "missing"
    return "usable" if config[2] & PERM_INHERIT else "no_inherit"


class ClusterEngine:
    """Applies one cluster's events in order and keeps its route tables and alerts."""

    def __init__(
        self,
        cluster: str,
        meta: Meta | None = None,
        tables: LazyMap[RegKey, dict[str, Config]] | None = None,
        routes: LazyMap[str, dict[RegKey, Config]] | None = None,
        topics: LazyMap[str, TopicState] | None = None,
    ) -> None:
        self.cluster = cluster
        self.meta = meta or Meta()
        self.tables = tables or LazyMap()
        self.routes = routes or LazyMap()
        self.topics = topics or LazyMap()
        self.book = AlertBook()
        self.book.open = {a.key: a for a in map(Alert.from_dict, self.meta.open_alerts)}
        self.out = Outputs()
        self.rules = Rules(self)

    # -- time -----------------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.meta.stream_time or 0

    def schedule(self, at: int, kind: str, key: str) -> None:
        self.meta.deadline_seq += 1
        heapq.heappush(self.meta.deadlines, (at, self.meta.deadline_seq, kind, key))

    def advance(self, ts: int) -> None:
        """Let time pass to ``ts``: fire every deadline strictly before it, in order."""
        deadlines = self.meta.deadlines
        while deadlines and deadlines[0][0] < ts:
            at, _, kind, key = heapq.heappop(deadlines)
            self.meta.stream_time = max(self.now, at)
            self.rules.fire(kind, key, at)
        if self.meta.stream_time is None or ts > self.meta.stream_time:
            self.meta.stream_time = ts

    # -- events ---------------------------------------------------------------------------------

    def apply(self, raw: str | bytes) -> None:
        """Apply one released event (its raw JSON, already validated)."""
        event = orjson.loads(raw)
        ts = event["ts"]
        self.advance(ts)
        kind = event["type"]
        self.out.events[kind] = self.out.events.get(kind, 0) + 1
        if kind == "heartbeat":
            self._heartbeat(event, ts)
        elif kind == "route_pull":
            self._route_pull(event, ts)
        else:
            self.out.sends[event["status"]] = self.out.sends.get(event["status"], 0) + 1
            self._send(event, ts)

    def _heartbeat(self, e: dict[str, Any], ts: int) -> None:
        key: RegKey = (e["namesrv"], e["broker"], e["broker_id"])
        reg = self.meta.regs.get(key)
        was_live = reg is not None and reg.live
        if reg is None:
            reg = self.meta.regs[key] = Reg(addr=e["broker_addr"], last_hb=ts)
        self.out.touched_regs.add(key)
        reg.addr, reg.last_hb = e["broker_addr"], ts
        if e.get("shutdown"):
            reg.live, reg.shutdown = False, True
            if was_live:
                self._liveness_changed(key, ts)
            self.rules.broker_heard(key, ts, shutdown=True)
            return
        reg.live, reg.shutdown = True, False
        if reg.expiry_due is None:
            reg.expiry_due = ts + BROKER_EXPIRY_MS
            self.schedule(reg.expiry_due, "expire", _regkey_json(key))
        if not was_live:
            self._liveness_changed(key, ts)
        if not e["full"]:
            reg.version = None  # an immediate registration: the next full one is diffed
            self._apply_table(key, _configs(e), ts, replace=False)
        else:
            reg.auto_create = e["auto_create_topic_enable"]
            reg.default_q = e["default_topic_queue_nums"]
            version = e.get("data_version")
            parts = e.get("parts") or 1
            complete: dict[str, Config] | None = None
            if version is None or version != reg.version:
                # (an unchanged data version skips the table: most heartbeats, large ones)
                topics = _configs(e)
                if parts <= 1:
                    complete = topics
                else:
                    if reg.parts_version != version:
                        reg.parts, reg.parts_version = {}, version
                    reg.parts[e.get("part") or 0] = topics
                    if len(reg.parts) == parts:
                        complete = {t: c for p in reg.parts.values() for t, c in p.items()}
                        reg.parts, reg.parts_version = {}, None
            if complete is not None:
                reg.version = version
                reg.template = _template_state(complete)
                self._apply_table(key, complete, ts, replace=True)
            if parts <= 1 or complete is not None or version == reg.version:
                self.rules.full_registration(key, reg, ts)
        self.rules.broker_heard(key, ts, shutdown=False)

    def _apply_table(
        self, key: RegKey, topics: dict[str, Config], ts: int, *, replace: bool
    ) -> None:
        old = self.tables.get(key) or {}
        new = topics if replace else {**old, **topics}
        changed: list[tuple[str, Config | None]] = [
            (t, c) for t, c in topics.items() if old.get(t) != c
        ]
        if replace:
            changed += [(t, None) for t in old if t not in topics]
        if not changed:
            return
        self.tables.set(key, new)
        live = self.meta.regs[key].live
        for topic, config in changed:
            holders = self.routes.get(topic) or {}
            if config is None:
                holders.pop(key, None)
            else:
                holders[key] = config
            self.routes.set(topic, holders or None)
            if live:
                self.out.route_changes.append(RouteChange(topic, key, ts, config))
        if live:
            for topic, _ in changed:
                self.rules.topic_changed(topic, ts)

    def _liveness_changed(self, key: RegKey, at: int) -> None:
        """A registration became live or stopped being live: its topics' routes change."""
        reg = self.meta.regs[key]
        self.out.touched_regs.add(key)
        table = self.tables.get(key) or {}
        for topic, config in table.items():
            self.out.route_changes.append(RouteChange(topic, key, at, config if reg.live else None))
        self.rules.liveness_changed(key, at, list(table))

    def expire(self, key: RegKey, at: int) -> bool:
        """The expiry deadline of a registration: drop it if it is still silent."""
        reg = self.meta.regs.get(key)
        if reg is None:
            return False
        reg.expiry_due = None
        if not reg.live:
            return False
        if reg.last_hb + BROKER_EXPIRY_MS > at:
            reg.expiry_due = reg.last_hb + BROKER_EXPIRY_MS
            self.schedule(reg.expiry_due, "expire", _regkey_json(key))
            return False
        reg.live = False
        self._liveness_changed(key, at)
        return True

    def _route_pull(self, e: dict[str, Any], ts: int) -> None:
        client, topic, ok = e["client_id"], e["topic"], e["result"] == "SUCCESS"
        if e["result"] == "NO_NAMESRV":
            self.meta.no_namesrv_clients.add(client)
        else:
            self.meta.no_namesrv_clients.discard(client)
        if e["role"] != "producer":
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
                if state.auto_created_at is None:
                    self.rules.auto_created(topic, state, ts)
                    self.rules.topic_changed(topic, ts)
            self.rules.send_succeeded(topic, ts)
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
        regs = self.meta.regs
        return {k: c for k, c in (self.routes.get(topic) or {}).items() if regs[k].live}

    def finish(self) -> None:
        """Fold the alert book back into the meta state and drop topics whose rule state
        emptied from the indexes (before persisting)."""
        for topic, value in self.topics.dirty():
            if value is None or value.is_empty():
                self.meta.active_topics.discard(topic)
                self.meta.auto_topics.discard(topic)
        self.meta.open_alerts = [a.to_dict() for a in self.book.open.values()]
        for key, at in self.book.last_resolved.items():
            if key[0] == "NO_ROUTE_INFO":
                self.meta.last_resolved[_alertkey_json(key)] = at
        self.book.last_resolved.clear()
        horizon = self.now - FAILURE_QUIET_MS
        self.meta.last_resolved = {k: v for k, v in self.meta.last_resolved.items() if v >= horizon}


def _configs(e: dict[str, Any]) -> dict[str, Config]:
    """A registration's topic table: topic -> (read queues, write queues, perm)."""
    return {
        t: (c["read_queue_nums"], c["write_queue_nums"], c["perm"]) for t, c in e["topics"].items()
    }


def _regkey_json(key: RegKey) -> str:
    return orjson.dumps(list(key)).decode()


def _alertkey_json(key: tuple[Any, ...]) -> str:
    return orjson.dumps(list(key)).decode()
