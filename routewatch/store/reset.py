"""Deleting the store, for a reset of the streaming job (docs/operations.md, Resetting the job):
SQLite's file with its WAL and shared-memory files; on PostgreSQL, every table the migrations
create (:data:`TABLES`, derived from :mod:`routewatch.store.schema`), so that the next job
creates and migrates the store again from the first migration.
"""

from __future__ import annotations

import re

from routewatch.store.backend import locate
from routewatch.store.errors import StoreError
from routewatch.store.schema import MIGRATIONS
from routewatch.store.store import Store

__all__ = ["TABLES", "delete_store", "last_report_ms"]

_CREATE_TABLE = re.compile(r"\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)

# every table of the store: those the migrations create, in order, and the migrations' own record
TABLES: tuple[str, ...] = (
    *(name for _, script in MIGRATIONS for name in _CREATE_TABLE.findall(script)),
    "schema_version",
)

# SQLite's files beside the store's own: its write-ahead log, its index of that log (WAL mode),
# and a rollback journal (a store some other tool opened without WAL)
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def last_report_ms(url: str) -> int | None:
    """When a job that may still run last reported its progress to the store at ``url`` (epoch
    ms; a running job reports every batch, and every 10 s while idle); None when there is no
    store, nothing in it says so, or every job in it recorded that its query ended."""
    file = locate(url).file
    if file is not None and not file.exists():
        return None
    store = Store(url, readonly=True)
    try:
        for query in (
            "SELECT MAX(reported_at) FROM jobs WHERE stopped_at IS NULL",
            "SELECT MAX(reported_at) FROM jobs",  # (a store from before jobs' stops)
        ):
            try:
                rows = store.db.execute(query).rows
                break
            except StoreError:
                rows = []
    finally:
        store.close()
    # (none of them: not a routewatch store, or one from before the jobs table)
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def delete_store(url: str) -> list[str]:
    """Delete the store at ``url``; returns what was deleted, for the operator (empty: there
    was no store)."""
    location = locate(url)
    if location.file is not None:
        file = location.file
        deleted = []
        for path in [file, *(file.with_name(file.name + side) for side in _SQLITE_SIDE_FILES)]:
            if path.exists():
                path.unlink()
                deleted.append(f"the file {path}")
        return deleted
    store = Store(url)
    try:
        with store.transaction() as db:
            db.lock_migrations()  # (a job starting meanwhile migrates after the drop, or before)
            db.execute(f"DROP TABLE IF EXISTS {', '.join(reversed(TABLES))}")
    finally:
        store.close()
    return [f"the tables of the store at {location.where}"]
