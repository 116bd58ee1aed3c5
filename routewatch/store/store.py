"""The store: current alerts, the alert change log, route intervals, brokers, quarantine,
counters and the job's progress. SQLite (WAL) by default; PostgreSQL for production
(``postgresql://`` URLs, see :mod:`routewatch.store.postgres`).

The streaming job writes each micro-batch's changes in one transaction keyed by ``(job,
batch_id)``: a batch replayed after a restart from the checkpoint is recognised and skipped, so
nothing is written twice or lost. Readers (the API) only read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from routewatch.alerts import Alert, StoredAlert
from routewatch.changes import (
    ALERTS_OPENED,
    LATE,
    QUARANTINED,
    BadLine,
    BrokerState,
    ChangeRow,
    ClusterClock,
    Count,
    LateEvent,
    RouteChange,
    TopicCreated,
    decode,
)
from routewatch.errors import RoutewatchError
from routewatch.store.postgres import (
    MIGRATION_LOCK,
    WRITE_LOCK,
    PgConnection,
    one_line,
    pg_script,
    redacted,
)
from routewatch.store.schema import MIGRATIONS

__all__ = ["Store", "StoreUnavailableError", "alert_row", "open_store"]


class StoreUnavailableError(RoutewatchError):
    """The store cannot be reached or is busy."""


# A connection: ``sqlite3.Connection`` or :class:`PgConnection` (the methods the store uses).
Connection = Any

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def _now_ms() -> int:
    return int(time.time() * 1000)


class Store:
    """One connection to the store; not shared between threads."""

    def __init__(self, url: str, *, readonly: bool = False, timeout_s: float = 30.0) -> None:
        self.postgres = url.startswith(POSTGRES_SCHEMES)
        self.db: Connection
        if self.postgres:
            self._open_postgres(url, readonly, timeout_s)
            return
        if not url.startswith("sqlite:///"):
            raise RoutewatchError(
                f"the store URL {redacted(url)} is not supported: use sqlite:///<absolute path> "
                "or postgresql://user@host:port/database."
            )
        self.path: Path | None = Path(url.removeprefix("sqlite:///"))
        self.where = str(self.path)
        # errors that mean "the store is busy or unreachable, try again", as opposed to bugs
        self.unavailable: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            uri = f"file:{self.path}?mode=ro" if readonly else f"file:{self.path}"
            # the API opens a request's store on one worker thread and may use and close it on
            # others (one at a time): the connection is not shared, only handed over
            self.db = sqlite3.connect(
                uri, uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailableError(f"cannot open the store at {self.path}: {exc}.") from None
        self.db.row_factory = sqlite3.Row

    def _open_postgres(self, url: str, readonly: bool, timeout_s: float) -> None:
        import psycopg

        self.path = None
        self.where = redacted(url)
        self.unavailable = (psycopg.OperationalError, psycopg.InterfaceError)
        try:
            self.db = PgConnection(url, readonly=readonly, timeout_s=timeout_s)
        except self.unavailable as exc:
            raise StoreUnavailableError(
                f"cannot reach the store at {self.where}: {one_line(exc)}."
            ) from None

    def close(self) -> None:
        with contextlib.suppress(*self.unavailable):
            self.db.close()

    def in_transaction(self) -> bool:
        """Whether a transaction is open on this connection (one a reader left behind must
        not be handed to the next)."""
        return bool(self.db.in_transaction() if self.postgres else self.db.in_transaction)

    def _rollback(self) -> None:
        """Roll back what is open; a rollback that fails (the connection is gone, or SQLite
        already rolled back) must not hide the error that led here."""
        with contextlib.suppress(*self.unavailable):
            self.db.execute("ROLLBACK")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction holding the store's write lock (SQLite: ``BEGIN IMMEDIATE``;
        PostgreSQL: an advisory lock, so that writers queue as on SQLite). A busy store, or a
        PostgreSQL connection lost on the way (commit included), raises
        :class:`StoreUnavailableError`; the batch can then be written again whole."""
        try:
            if self.postgres:
                self.db.execute("BEGIN")
                self.db.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))
            else:
                self.db.execute("BEGIN IMMEDIATE")
        except self.unavailable as exc:
            self._rollback()
            state = "is busy or unreachable" if self.postgres else "is busy"
            raise StoreUnavailableError(
                f"the store at {self.where} {state}: {one_line(exc)}."
            ) from None
        try:
            yield self.db
            self.db.execute("COMMIT")
        except self.unavailable as exc:
            self._rollback()
            if not self.postgres:
                raise  # SQLite holds the write lock: this is not a lock wait, but a fault
            raise StoreUnavailableError(
                f"the store at {self.where} went away: {one_line(exc)}."
            ) from None
        except BaseException:
            self._rollback()
            raise

    # -- schema ---------------------------------------------------------------------------------

    def migrate(self) -> int:
        """Apply the migrations not applied yet; returns the schema version."""
        with self.transaction() as db:
            if self.postgres:  # two processes migrating at once wait for each other
                db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY)")
            done = {r[0] for r in db.execute("SELECT version FROM schema_version")}
            for version, script in MIGRATIONS:
                if version in done:
                    continue
                if self.postgres:
                    script = pg_script(script)
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        return max(v for v, _ in MIGRATIONS)

    # -- the streaming job's writes -------------------------------------------------------------

    def write_batch(self, job: str, batch_id: int, rows: Iterable[ChangeRow]) -> bool:
        """Apply one micro-batch's changes atomically; False when it was applied before."""
        now = _now_ms()
        rows = list(rows)
        with self.transaction() as db:
            seen = db.execute(
                "SELECT 1 FROM batches WHERE job = ? AND batch_id = ?", (job, batch_id)
            ).fetchone()
            if seen:
                return False
            for row in rows:
                change = decode(row)
                _WRITERS[type(change)](db, row.cluster, change, now)
            db.execute(
                "INSERT INTO batches (job, batch_id, written_at, change_rows) VALUES (?, ?, ?, ?)",
                (job, batch_id, now, len(rows)),
            )
        return True

    def record_progress(
        self, job: str, batch_id: int, input_rows: int, duration_ms: int, behind: bool = False
    ) -> int | None:
        """The query's own figures for a batch (from its progress report), with the event-time
        lag at that moment (wall clock minus the newest stream time); returns the lag. The
        job's report time is now, and it is ``behind`` when the batch left input unread."""
        now = _now_ms()
        with self.transaction() as db:
            newest = db.execute("SELECT MAX(stream_time) FROM clusters").fetchone()[0]
            lag = None if newest is None else now - int(newest)
            db.execute(
                "UPDATE batches SET input_rows = ?, duration_ms = ?, event_time_lag_ms = ? "
                "WHERE job = ? AND batch_id = ?",
                (input_rows, duration_ms, lag, job, batch_id),
            )
            _report(db, job, now, behind)
        return lag

    def record_idle(self, job: str) -> None:
        """The query reported that it is idle: alive, with nothing left to read."""
        with self.transaction() as db:
            _report(db, job, _now_ms(), behind=False)

    def prune(self, keep_ms: int, now_ms: int | None = None) -> dict[str, int]:
        """Retention: delete what is older than ``keep_ms`` — quarantine and alert-log rows by
        the wall clock they were written at, resolved alerts and closed route intervals by
        event time (against the newest stream time). Counters are never pruned."""
        now_ms = _now_ms() if now_ms is None else now_ms
        deleted: dict[str, int] = {}
        with self.transaction() as db:
            newest = db.execute("SELECT MAX(stream_time) FROM clusters").fetchone()[0]
            event_cutoff = None if newest is None else int(newest) - keep_ms
            statements = {
                "quarantine": ("DELETE FROM quarantine WHERE arrived_at < ?", now_ms - keep_ms),
                "alert_log": ("DELETE FROM alert_log WHERE written_at < ?", now_ms - keep_ms),
                "alerts": (
                    "DELETE FROM alerts WHERE state = 'resolved' AND resolved_at < ?",
                    event_cutoff,
                ),
                "route_intervals": ("DELETE FROM route_intervals WHERE valid_to < ?", event_cutoff),
            }
            for table, (sql, cutoff) in statements.items():
                deleted[table] = 0 if cutoff is None else db.execute(sql, (cutoff,)).rowcount
        return deleted

    # -- reads ----------------------------------------------------------------------------------

    def alerts(self, *, state: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM alerts"
        args: tuple[Any, ...] = ()
        if state is not None:
            sql, args = sql + " WHERE state = ?", (state,)
        return [alert_row(r) for r in self.db.execute(sql + " ORDER BY opened_at, id", args)]

    def alert_log(self, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT seq, alert_id, change, at, alert FROM alert_log WHERE seq > ? ORDER BY seq "
            "LIMIT ?",
            (after, limit),
        )
        return [{**dict(r), "alert": orjson.loads(r["alert"])} for r in rows]

    def brokers(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM brokers ORDER BY cluster, broker, broker_id, namesrv")
        return [dict(r) for r in rows]

    def counters(self) -> dict[tuple[str, str, str], int]:
        rows = self.db.execute("SELECT name, label, cluster, value FROM counters")
        return {(r["name"], r["label"], r["cluster"]): r["value"] for r in rows}

    def quarantine(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM quarantine ORDER BY seq DESC LIMIT ?", (limit,))
        return [dict(r) for r in rows]

    def clusters(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM clusters ORDER BY cluster")]

    def jobs(self) -> list[dict[str, Any]]:
        """Each job's last progress report and since when it has been behind, latest first."""
        rows = self.db.execute("SELECT * FROM jobs ORDER BY reported_at DESC, job")
        return [dict(r) for r in rows]


def _report(db: Connection, job: str, now: int, behind: bool) -> None:
    """A job's progress report: when, and since when it has been behind (kept from the first
    report that left input unread until one that did not)."""
    db.execute(
        "INSERT INTO jobs (job, reported_at, behind_since) VALUES (?, ?, ?) "
        "ON CONFLICT (job) DO UPDATE SET reported_at = excluded.reported_at, behind_since = "
        "CASE WHEN excluded.behind_since IS NULL THEN NULL "
        "ELSE COALESCE(jobs.behind_since, excluded.behind_since) END",
        (job, now, now if behind else None),
    )


def alert_row(row: Any) -> dict[str, Any]:
    """A row of ``alerts`` (and whatever a query joined to it) as a dict, its evidence read
    back from JSON."""
    out = dict(row)
    out["evidence"] = orjson.loads(out["evidence"])
    return out


# the columns of ``alerts``: a stored alert's fields
_ALERT_COLUMNS = tuple(f.name for f in dataclasses.fields(StoredAlert))
_ALERT_UPDATES = ", ".join(
    f"{c} = excluded.{c}" for c in _ALERT_COLUMNS if c not in ("id", "detected_at")
)
_ALERT_UPSERT = (
    f"INSERT INTO alerts ({', '.join(_ALERT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_ALERT_COLUMNS))}) "
    f"ON CONFLICT (id) DO UPDATE SET {_ALERT_UPDATES}"
)


def _write_alert(db: Connection, cluster: str | None, alert: Alert, now: int) -> None:
    found = db.execute("SELECT detected_at FROM alerts WHERE id = ?", (alert.id,)).fetchone()
    stored = StoredAlert.detected(alert, found[0] if found else now)
    values = [getattr(stored, c) for c in _ALERT_COLUMNS]
    # a field that holds an object (the evidence) is kept as its JSON text
    values = [orjson.dumps(v).decode() if isinstance(v, dict) else v for v in values]
    db.execute(_ALERT_UPSERT, values)
    change = "opened" if not found else ("resolved" if alert.state == "resolved" else "updated")
    if not found:
        _add_counter(db, ALERTS_OPENED, alert.kind, alert.cluster, 1)
    db.execute(
        "INSERT INTO alert_log (alert_id, change, at, written_at, alert) VALUES (?, ?, ?, ?, ?)",
        (alert.id, change, alert.updated_at, now, orjson.dumps(stored).decode()),
    )


def _write_route(db: Connection, cluster: str | None, change: RouteChange, now: int) -> None:
    key = (cluster, change.topic, *change.reg)
    db.execute(
        "UPDATE route_intervals SET valid_to = ? WHERE cluster = ? AND topic = ? AND namesrv = ? "
        "AND broker = ? AND broker_id = ? AND valid_to IS NULL",
        (change.at, *key),
    )
    if change.config is not None:
        db.execute(
            "INSERT INTO route_intervals (cluster, topic, namesrv, broker, broker_id, "
            "read_queue_nums, write_queue_nums, perm, valid_from) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*key, *change.config, change.at),
        )


def _write_broker(db: Connection, cluster: str | None, s: BrokerState, now: int) -> None:
    db.execute(
        "INSERT INTO brokers (cluster, namesrv, broker, broker_id, addr, live, shutdown, "
        "auto_create, template, last_heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (cluster, namesrv, broker, broker_id) DO UPDATE SET addr = excluded.addr, "
        "live = excluded.live, shutdown = excluded.shutdown, auto_create = excluded.auto_create, "
        "template = excluded.template, last_heartbeat = excluded.last_heartbeat",
        (
            cluster,
            *s.reg,
            s.addr,
            s.live,
            s.shutdown,
            s.auto_create,
            s.template,
            s.last_heartbeat,
        ),
    )


def _add_counter(db: Connection, name: str, label: str, cluster: str, value: int) -> None:
    db.execute(
        "INSERT INTO counters (name, label, cluster, value) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name, label, cluster) DO UPDATE SET value = counters.value + excluded.value",
        (name, label, cluster, value),
    )


def _write_count(db: Connection, cluster: str | None, count: Count, now: int) -> None:
    _add_counter(db, count.name, count.label, cluster or "", count.value)


def _quarantine(
    db: Connection, now: int, cluster: str | None, reason: str, detail: str, raw: str
) -> None:
    db.execute(
        "INSERT INTO quarantine (arrived_at, cluster, reason, detail, raw) VALUES (?, ?, ?, ?, ?)",
        (now, cluster, reason, detail, raw),
    )


def _write_bad(db: Connection, cluster: str | None, bad: BadLine, now: int) -> None:
    _quarantine(db, now, cluster, bad.reason, bad.detail, bad.raw)
    _add_counter(db, QUARANTINED, bad.reason, cluster or "", 1)


def _write_late(db: Connection, cluster: str | None, late: LateEvent, now: int) -> None:
    _quarantine(db, now, cluster, LATE, late.detail, late.raw)


def _write_clock(db: Connection, cluster: str | None, clock: ClusterClock, now: int) -> None:
    """The cluster's clock; ``input_at`` becomes ``now`` on its first write and whenever
    ``max_received`` grows (an event newer than every event before it arrived), so
    that the input stopping shows as its age (``routewatch_stream_input_age_seconds``). The
    SET expressions read the stored row as it was before this update."""
    db.execute(
        "INSERT INTO clusters (cluster, stream_time, max_received, held, updated_at, input_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (cluster) DO UPDATE SET "
        "input_at = CASE WHEN clusters.input_at IS NULL "
        "OR excluded.max_received > clusters.max_received "
        "OR (clusters.max_received IS NULL AND excluded.max_received IS NOT NULL) "
        "THEN excluded.input_at ELSE clusters.input_at END, "
        "stream_time = excluded.stream_time, max_received = excluded.max_received, "
        "held = excluded.held, updated_at = excluded.updated_at",
        (cluster, clock.stream_time, clock.max_received, clock.held, now, now),
    )


def _write_topic(db: Connection, cluster: str | None, created: TopicCreated, now: int) -> None:
    db.execute(
        "INSERT INTO topics (cluster, topic, auto_created_at) VALUES (?, ?, ?) "
        "ON CONFLICT (cluster, topic) DO UPDATE SET auto_created_at = excluded.auto_created_at",
        (cluster, created.topic, created.auto_created_at),
    )


# how each kind of change is written, by its record
_WRITERS: dict[type, Callable[[Connection, str | None, Any, int], None]] = {
    Alert: _write_alert,
    RouteChange: _write_route,
    TopicCreated: _write_topic,
    BrokerState: _write_broker,
    Count: _write_count,
    BadLine: _write_bad,
    LateEvent: _write_late,
    ClusterClock: _write_clock,
}


def open_store(url: str, *, readonly: bool = False) -> Store:
    """Open the store at ``url`` (creating and migrating it unless ``readonly``)."""
    store = Store(url, readonly=readonly)
    if not readonly:
        store.migrate()
    return store
