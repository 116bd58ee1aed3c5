"""The store's backend: the one small interface the store uses of a database, and how a store
URL picks one — :class:`~routewatch.store.sqlite.SqliteBackend` (``sqlite:///``, the default) or
:class:`~routewatch.store.postgres.PostgresBackend` (``postgresql://``, production).

The store's SQL is written once, in the dialect both share (``?`` parameters, ``INSERT … ON
CONFLICT … DO UPDATE``); what differs — connecting, locking, transactions, the migrations'
spelling and the drivers' errors — is each backend's. A backend raises the store's own errors
(:mod:`routewatch.store.errors`), never its driver's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from routewatch.errors import RoutewatchError

__all__ = ["Backend", "Location", "Result", "locate", "open_backend"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_SCHEME = "sqlite:///"

# A result row, read by position and by column name (``dict(row)`` works): ``sqlite3.Row``, or
# :class:`routewatch.store.postgres.Row`.
Row = Any


class Result:
    """A statement's rows, read at once (so that a driver's error is raised by ``execute``),
    their column names, and the number of rows it changed."""

    __slots__ = ("columns", "rowcount", "rows")

    def __init__(self, columns: tuple[str, ...], rows: list[Row], rowcount: int) -> None:
        self.columns = columns
        self.rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Row:
        """The first row, or None."""
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Row]:
        return self.rows

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)


class Backend(Protocol):
    """One connection to a database, for one thread at a time."""

    where: str  # the store, for messages: its file, or its URL without the password

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        """Run one statement; :class:`~routewatch.store.errors.StoreUnavailableError` when the
        store is busy or unreachable, :class:`~routewatch.store.errors.StoreError` otherwise."""
        ...

    def in_transaction(self) -> bool:
        """Whether a transaction is open on this connection."""
        ...

    def write_transaction(self) -> AbstractContextManager[None]:
        """A transaction holding the store's write lock, so that writers queue; committed when
        the block ends, rolled back when it raises."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A read-only transaction: the reads inside see one version of the store."""
        ...

    def lock_migrations(self) -> None:
        """Inside a write transaction: make another process migrating at once wait."""
        ...

    def migration_script(self, script: str) -> str:
        """A migration (:mod:`routewatch.store.schema`) in this database's spelling."""
        ...

    def close(self) -> None: ...


class Location(NamedTuple):
    where: str  # for messages
    file: Path | None  # SQLite's file; None for a server's store


def locate(url: str) -> Location:
    """Where the store at ``url`` is, without connecting to it."""
    from routewatch.store.postgres import redacted

    if url.startswith(POSTGRES_SCHEMES):
        return Location(redacted(url), None)
    if not url.startswith(SQLITE_SCHEME):
        raise RoutewatchError(
            f"the store URL {redacted(url)} is not supported: use sqlite:///<absolute path> "
            "or postgresql://user@host:port/database."
        )
    path = Path(url.removeprefix(SQLITE_SCHEME))
    return Location(str(path), path)


def open_backend(url: str, *, readonly: bool, timeout_s: float) -> Backend:
    """A connection to the store at ``url``: waits end after ``timeout_s``."""
    file = locate(url).file
    if file is None:
        from routewatch.store.postgres import PostgresBackend

        return PostgresBackend(url, readonly=readonly, timeout_s=timeout_s)
    from routewatch.store.sqlite import SqliteBackend

    return SqliteBackend(file, readonly=readonly, timeout_s=timeout_s)
