"""What the streaming job writes to the store: change rows, one change of one kind each.

Each kind has its record, its encoder (``encode_<kind>``, used by the job for every row it
writes) and its decoder (:func:`decode`, used by the store and by ``routewatch evaluate``),
all here; so are the names of the counters the job and the store keep. Records are plain
values: the job encodes many rows per micro-batch.

- ``alert`` (:class:`~routewatch.alerts.Alert`): the store upserts the alert and appends the
  version to the alert log; a new one counts in :data:`ALERTS_OPENED`.
- ``route`` (:class:`RouteChange`): closes the registration's open route interval of the
  topic and, unless the route ended, opens the next.
- ``topic`` (:class:`TopicCreated`): records the topic's auto-creation.
- ``broker`` (:class:`BrokerState`): the registration's latest state.
- ``count`` (:class:`Count`): adds to a counter.
- ``bad`` (:class:`BadLine`): quarantines the line and counts it in :data:`QUARANTINED`.
- ``late`` (:class:`LateEvent`): quarantines the event (a ``count`` row counts it).
- ``clock`` (:class:`ClusterClock`): the cluster's clock.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import orjson

from routewatch.alerts import Alert

__all__ = [
    "ALERTS_OPENED",
    "COUNTERS",
    "DUPLICATES",
    "EVENTS_APPLIED",
    "LATE",
    "QUARANTINED",
    "SENDS",
    "BadLine",
    "BrokerState",
    "Change",
    "ChangeRow",
    "ClusterClock",
    "Config",
    "Count",
    "LateEvent",
    "RegKey",
    "RouteChange",
    "TopicCreated",
    "alert_versions",
    "combine_clocks",
    "decode",
    "encode_alert",
    "encode_bad",
    "encode_broker",
    "encode_clock",
    "encode_count",
    "encode_late",
    "encode_route",
    "encode_topic",
]

# The counters (table ``counters``: name, label, cluster -> a value that only grows).
EVENTS_APPLIED: Final = "events"  # events applied, labelled by type
SENDS: Final = "sends"  # sends applied, labelled by status
DUPLICATES: Final = "duplicates"  # repeated event ids (no label)
LATE: Final = "late"  # events beyond the lateness bound (no label); their quarantine reason
QUARANTINED: Final = "quarantined"  # bad input, labelled by reason
ALERTS_OPENED: Final = "alerts_opened"  # alerts opened, labelled by kind
COUNTERS: Final = (EVENTS_APPLIED, SENDS, DUPLICATES, LATE, QUARANTINED, ALERTS_OPENED)

RegKey = tuple[str, str, int]
"""(namesrv, broker, broker_id): one broker's registration with one NameServer."""

Config = tuple[int, int, int]
"""(read_queue_nums, write_queue_nums, perm): a topic on one broker."""


class ChangeRow(NamedTuple):
    """One row of the job's output, as Spark carries it: the cluster (None for bad input that
    names none), the kind, and the change's key, instant (event time) and payload as text."""

    cluster: str | None
    kind: str
    key: str
    at: int | None
    payload: str


@dataclass(frozen=True, slots=True)
class RouteChange:
    """From ``at``, registration ``reg`` routes ``topic`` with ``config`` (None: no longer)."""

    topic: str
    reg: RegKey
    at: int
    config: Config | None


@dataclass(frozen=True, slots=True)
class TopicCreated:
    """A topic was auto-created at ``auto_created_at`` (event time)."""

    topic: str
    auto_created_at: int


@dataclass(frozen=True, slots=True)
class BrokerState:
    """The latest state of one registration; ``template`` is TBW102 in its latest full table:
    ``usable``, ``missing`` or ``no_inherit``."""

    reg: RegKey
    addr: str
    live: bool
    shutdown: bool
    auto_create: bool | None
    template: str
    last_heartbeat: int


@dataclass(frozen=True, slots=True)
class Count:
    """``value`` more for counter ``name`` (one of :data:`COUNTERS`) with ``label`` ("" for
    none), as of stream time ``at``."""

    name: str
    label: str
    value: int
    at: int | None


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is not a contract event: its raw text, and why (``reason``, one of
    ``routewatch.validation.BAD_INPUT_REASONS``, and one sentence of ``detail``)."""

    reason: str
    detail: str
    raw: str


@dataclass(frozen=True, slots=True)
class LateEvent:
    """An event older than the lateness bound allows: its raw text, and why."""

    detail: str
    raw: str


@dataclass(frozen=True, slots=True)
class ClusterClock:
    """A cluster's clock after a batch: the stream time, the newest ``ts`` received, and how
    many of its events the lateness bound holds back. The job writes one per state bucket that
    holds a shard of the cluster, each with the events held there (:func:`combine_clocks`)."""

    stream_time: int | None
    max_received: int | None
    held: int


Change = (
    Alert | RouteChange | TopicCreated | BrokerState | Count | BadLine | LateEvent | ClusterClock
)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


# ChangeRow(...) without the Python call NamedTuple's __new__ makes: the job builds many rows
_row: Callable[[tuple[str | None, str, str, int | None, str]], ChangeRow] = functools.partial(
    tuple.__new__, ChangeRow
)


# -- encoders: one per kind -------------------------------------------------------------------


def encode_alert(alert: Alert, order: int) -> ChangeRow:
    """A version of an alert; ``order`` is its place among the batch's alert changes, so that
    versions sort in order (:func:`alert_versions`)."""
    return _row((alert.cluster, "alert", f"{alert.id}|{order:06d}", alert.updated_at, _json(alert)))


def encode_route(cluster: str, change: RouteChange) -> ChangeRow:
    key = _json((change.topic, *change.reg))
    return _row((cluster, "route", key, change.at, _json(change.config)))


def encode_topic(cluster: str, created: TopicCreated) -> ChangeRow:
    payload = _json({"auto_created_at": created.auto_created_at})
    return _row((cluster, "topic", created.topic, created.auto_created_at, payload))


def encode_broker(cluster: str, state: BrokerState) -> ChangeRow:
    payload = {
        "addr": state.addr,
        "live": state.live,
        "shutdown": state.shutdown,
        "auto_create": state.auto_create,
        "template": state.template,
        "last_heartbeat": state.last_heartbeat,
    }
    return _row((cluster, "broker", _json(state.reg), state.last_heartbeat, _json(payload)))


def encode_count(cluster: str, count: Count) -> ChangeRow:
    return _row((cluster, "count", f"{count.name}|{count.label}", count.at, str(count.value)))


def encode_bad(cluster: str | None, bad: BadLine) -> ChangeRow:
    payload = {"raw": bad.raw, "reason": bad.reason, "detail": bad.detail}
    return _row((cluster, "bad", bad.reason, None, _json(payload)))


def encode_late(cluster: str, late: LateEvent) -> ChangeRow:
    return _row((cluster, "late", LATE, None, _json({"raw": late.raw, "detail": late.detail})))


def encode_clock(cluster: str, clock: ClusterClock) -> ChangeRow:
    payload = _json({"max_received": clock.max_received, "held": clock.held})
    return _row((cluster, "clock", cluster, clock.stream_time, payload))


# -- decoders ---------------------------------------------------------------------------------


def _alert(row: ChangeRow) -> Alert:
    return Alert.from_dict(orjson.loads(row.payload))


def _route(row: ChangeRow) -> RouteChange:
    topic, namesrv, broker, broker_id = orjson.loads(row.key)
    config = orjson.loads(row.payload)
    assert row.at is not None  # a route change has its instant
    config = None if config is None else (config[0], config[1], config[2])
    return RouteChange(topic, (namesrv, broker, broker_id), row.at, config)


def _topic(row: ChangeRow) -> TopicCreated:
    return TopicCreated(row.key, orjson.loads(row.payload)["auto_created_at"])


def _broker(row: ChangeRow) -> BrokerState:
    namesrv, broker, broker_id = orjson.loads(row.key)
    return BrokerState(reg=(namesrv, broker, broker_id), **orjson.loads(row.payload))


def _count(row: ChangeRow) -> Count:
    name, label = row.key.split("|", 1)
    return Count(name, label, int(row.payload), row.at)


def _bad(row: ChangeRow) -> BadLine:
    return BadLine(**orjson.loads(row.payload))


def _late(row: ChangeRow) -> LateEvent:
    return LateEvent(**orjson.loads(row.payload))


def _clock(row: ChangeRow) -> ClusterClock:
    return ClusterClock(row.at, **orjson.loads(row.payload))


_DECODERS: dict[str, Callable[[ChangeRow], Change]] = {
    "alert": _alert,
    "route": _route,
    "topic": _topic,
    "broker": _broker,
    "count": _count,
    "bad": _bad,
    "late": _late,
    "clock": _clock,
}


def decode(row: ChangeRow) -> Change:
    """The change a row holds, as its kind's record (the row's cluster is not repeated)."""
    return _DECODERS[row.kind](row)


def combine_clocks(
    changes: Iterable[tuple[str | None, Change]],
) -> list[tuple[str | None, Change]]:
    """A batch's ``(cluster, change)`` pairs with each cluster's clocks made one, after the
    other changes: the events held summed over the state buckets that wrote them, the stream
    time and the newest ``ts`` the largest (every bucket keeps the whole stream's clock)."""
    out: list[tuple[str | None, Change]] = []
    clocks: dict[str | None, ClusterClock] = {}
    for cluster, change in changes:
        if not isinstance(change, ClusterClock):
            out.append((cluster, change))
            continue
        seen = clocks.get(cluster)
        clocks[cluster] = (
            change
            if seen is None
            else ClusterClock(
                _larger(seen.stream_time, change.stream_time),
                _larger(seen.max_received, change.max_received),
                seen.held + change.held,
            )
        )
    return out + list(clocks.items())


def _larger(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def alert_versions(rows: Iterable[ChangeRow]) -> list[Alert]:
    """The alert versions among change rows, in order: by cluster, then by alert, each alert's
    versions in the order they were made."""
    alerts = sorted((r for r in rows if r.kind == "alert"), key=lambda r: (r.cluster, r.key))
    return [_alert(r) for r in alerts]
