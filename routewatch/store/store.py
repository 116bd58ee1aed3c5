"""The store: current alerts, the alert change log, route intervals, brokers, quarantine,
counters and the job's progress, on a backend (:mod:`routewatch.store.backend`): SQLite (WAL) by
default, PostgreSQL for production (``postgresql://`` URLs).

Every write is a method of :class:`Store`. The streaming job writes each micro-batch's changes in
one transaction keyed by ``(job, batch_id)``: a batch replayed after a restart from the checkpoint
is recognised and skipped, so nothing is written twice or lost. The API only reads
(:mod:`routewatch.store.views`), but for its own table of acknowledgements and silences
(:meth:`Store.set_ack`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from routewatch.changes import ChangeRow, combine_clocks, decode
from routewatch.store.backend import Backend, open_backend
from routewatch.store.change_writes import write_change
from routewatch.store.schema import MIGRATIONS

__all__ = ["Store", "alert_row", "open_store"]


def _now_ms() -> int:
    return int(time.time() * 1000)


class Store:
    """One connection to the store; not shared between threads."""

    def __init__(self, url: str, *, readonly: bool = False, timeout_s: float = 30.0) -> None:
        self.db: Backend = open_backend(url, readonly=readonly, timeout_s=timeout_s)
        self.where = self.db.where

    def close(self) -> None:
        self.db.close()

    def in_transaction(self) -> bool:
        """Whether a transaction is open on this connection (one a reader left behind must
        not be handed to the next)."""
        return self.db.in_transaction()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Backend]:
        """One transaction holding the store's write lock. A busy store, or a PostgreSQL
        connection lost on the way (commit included), raises
        :class:`~routewatch.store.errors.StoreUnavailableError`; the batch can then be written
        again whole."""
        with self.db.write_transaction():
            yield self.db

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """The reads inside see one version of the store (one read-only transaction): a batch
        the job commits meanwhile shows in all of them or in none."""
        return self.db.snapshot()

    # -- schema ---------------------------------------------------------------------------------

    def migrate(self) -> int:
        """Apply the migrations not applied yet; returns the schema version."""
        with self.transaction() as db:
            db.lock_migrations()
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY)")
            done = {r[0] for r in db.execute("SELECT version FROM schema_version")}
            for version, script in MIGRATIONS:
                if version in done:
                    continue
                script = db.migration_script(script)
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
            for cluster, change in combine_clocks((row.cluster, decode(row)) for row in rows):
                write_change(db, cluster, change, now)
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

    def record_stop(self, job: str, failure: str | None = None) -> None:
        """The job's query ended: stopped, or failed of ``failure`` (its cause, in a line).
        Its last report stays as it was; its next report, after a restart, clears the stop."""
        now = _now_ms()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO jobs (job, reported_at, stopped_at, failure) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (job) DO UPDATE SET stopped_at = excluded.stopped_at, "
                "failure = excluded.failure",
                (job, now, now, failure),
            )

    def prune(self, keep_ms: int, now_ms: int | None = None) -> dict[str, int]:
        """Retention: delete what is older than ``keep_ms`` — quarantine and alert-log rows by
        the wall clock they were written at, remedy runs by the wall clock they ended at,
        resolved alerts and closed route intervals by event time (against the newest stream
        time). Counters are never pruned."""
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
                "remedy_runs": ("DELETE FROM remedy_runs WHERE ended_at < ?", now_ms - keep_ms),
            }
            for table, (sql, cutoff) in statements.items():
                deleted[table] = 0 if cutoff is None else db.execute(sql, (cutoff,)).rowcount
        return deleted

    # -- the API's writes ------------------------------------------------------------------------

    def set_ack(
        self,
        alert_id: str,
        *,
        acked_by: str | None = None,
        silenced_until: int | None = None,
        now_ms: int,
    ) -> None:
        """Record an acknowledgement or a silence (the API's own table; the job never writes
        it)."""
        acked_at = now_ms if acked_by is not None else None
        with self.transaction() as db:
            db.execute(
                "INSERT INTO alert_acks (alert_id, acked_at, acked_by, silenced_until, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (alert_id) DO UPDATE SET "
                "acked_at = COALESCE(excluded.acked_at, alert_acks.acked_at), "
                "acked_by = COALESCE(excluded.acked_by, alert_acks.acked_by), "
                "silenced_until = COALESCE(excluded.silenced_until, alert_acks.silenced_until), "
                "updated_at = excluded.updated_at",
                (alert_id, acked_at, acked_by, silenced_until, now_ms),
            )

    # -- routewatch notify's writes --------------------------------------------------------------

    def pushed(self, receiver: str) -> dict[tuple[str, str], int]:
        """What ``routewatch notify`` has pushed as firing to ``receiver`` and not yet seen
        resolved there: (alert id, labels key) -> when it was last pushed."""
        rows = self.db.execute(
            "SELECT alert_id, labels, pushed_at FROM alertmanager_pushed WHERE receiver = ?",
            (receiver,),
        )
        return {(r["alert_id"], r["labels"]): r["pushed_at"] for r in rows}

    def record_push(
        self,
        receiver: str,
        firing: Iterable[tuple[str, str]],
        ended: Iterable[tuple[str, str]],
        now_ms: int,
    ) -> None:
        """``receiver`` accepted a push: ``firing`` (alert id, labels key) is held firing there
        now, ``ended`` resolved; the round is recorded as a success."""
        with self.transaction() as db:
            for alert_id, labels in ended:
                db.execute(
                    "DELETE FROM alertmanager_pushed WHERE receiver = ? AND alert_id = ? "
                    "AND labels = ?",
                    (receiver, alert_id, labels),
                )
            for alert_id, labels in firing:
                db.execute(
                    "INSERT INTO alertmanager_pushed (receiver, alert_id, labels, pushed_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (receiver, alert_id, labels) "
                    "DO UPDATE SET pushed_at = excluded.pushed_at",
                    (receiver, alert_id, labels, now_ms),
                )
            _round(db, receiver, now_ms, None)

    def record_push_failure(self, receiver: str, failure: str, now_ms: int) -> None:
        """A round that ``receiver`` did not accept, and why (one line)."""
        with self.transaction() as db:
            _round(db, receiver, now_ms, failure)

    def replace_silences(self, receiver: str, rows: Iterable[dict[str, Any]]) -> None:
        """The silences ``receiver`` holds over routewatch's alerts now (each a dict with the
        columns of ``alertmanager_silences`` but the receiver), in place of the last round's."""
        with self.transaction() as db:
            db.execute("DELETE FROM alertmanager_silences WHERE receiver = ?", (receiver,))
            for r in rows:
                db.execute(
                    "INSERT INTO alertmanager_silences (receiver, silence_id, alert_id, ends_at, "
                    "created_by, comment, ours) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (
                        receiver,
                        r["silence_id"],
                        r["alert_id"],
                        r["ends_at"],
                        r["created_by"],
                        r["comment"],
                        int(r["ours"]),
                    ),
                )

    def notify_rounds(self) -> list[dict[str, Any]]:
        """Each receiver's last round: tried, last accepted, and the failure of the last one
        (None when it was accepted)."""
        rows = self.db.execute("SELECT * FROM alertmanager_rounds ORDER BY receiver")
        return [dict(r) for r in rows]

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
        """Each job's last progress report, since when it has been behind, and when its query
        ended (and why, if it failed), latest report first."""
        rows = self.db.execute("SELECT * FROM jobs ORDER BY reported_at DESC, job")
        return [dict(r) for r in rows]


def _report(db: Backend, job: str, now: int, behind: bool) -> None:
    """A job's progress report: when, and since when it has been behind (kept from the first
    report that left input unread until one that did not); a job that reports runs, so any
    stop it recorded before is cleared."""
    db.execute(
        "INSERT INTO jobs (job, reported_at, behind_since) VALUES (?, ?, ?) "
        "ON CONFLICT (job) DO UPDATE SET reported_at = excluded.reported_at, behind_since = "
        "CASE WHEN excluded.behind_since IS NULL THEN NULL "
        "ELSE COALESCE(jobs.behind_since, excluded.behind_since) END, "
        "stopped_at = NULL, failure = NULL",
        (job, now, now if behind else None),
    )


def _round(db: Backend, receiver: str, now: int, failure: str | None) -> None:
    db.execute(
        "INSERT INTO alertmanager_rounds (receiver, tried_at, pushed_at, failure) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (receiver) DO UPDATE SET tried_at = excluded.tried_at, "
        "pushed_at = COALESCE(excluded.pushed_at, alertmanager_rounds.pushed_at), "
        "failure = excluded.failure",
        (receiver, now, None if failure else now, failure),
    )


def alert_row(row: Any) -> dict[str, Any]:
    """A row of ``alerts`` (and whatever a query joined to it) as a dict, its evidence read
    back from JSON."""
    out = dict(row)
    out["evidence"] = orjson.loads(out["evidence"])
    if "plan" in out:
        out["plan"] = None if out["plan"] is None else orjson.loads(out["plan"])
    return out


def open_store(url: str, *, readonly: bool = False) -> Store:
    """Open the store at ``url`` (creating and migrating it unless ``readonly``)."""
    store = Store(url, readonly=readonly)
    if not readonly:
        store.migrate()
    return store
