"""SQLite for the store (the default): one file in WAL mode, through the standard library."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from routewatch.store.backend import Result
from routewatch.store.errors import (
    StoreBusyError,
    StoreError,
    StoreUnavailableError,
    fault,
    one_line,
)

__all__ = ["SqliteBackend"]


def _is_busy(exc: sqlite3.Error) -> bool:
    """SQLite gave up waiting for a lock that another connection holds (SQLITE_BUSY/LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", 0)
    return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class SqliteBackend:
    """A connection to the store's file. Writers take SQLite's write lock (``BEGIN
    IMMEDIATE``), waiting up to the busy timeout; WAL readers are not blocked by them."""

    def __init__(self, path: Path, *, readonly: bool, timeout_s: float) -> None:
        self.where = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
            # the API opens a request's store on one worker thread and may use and close it on
            # others (one at a time): the connection is not shared, only handed over
            self._db = sqlite3.connect(
                uri, uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
            if not readonly:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailableError(f"cannot open the store at {path}: {exc}.") from None
        self._db.row_factory = sqlite3.Row

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        try:
            cursor = self._db.execute(sql, params)
            columns = tuple(d[0] for d in cursor.description or ())
            return Result(columns, cursor.fetchall(), cursor.rowcount)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise fault(self.where, exc) from exc
            # a read locked out by another connection (a writer in exclusive locking mode keeps
            # even WAL readers out): the store is briefly busy
            raise StoreBusyError(f"the store at {self.where} is busy: {exc}.", str(exc)) from None
        except sqlite3.Error as exc:
            raise fault(self.where, exc) from exc

    def in_transaction(self) -> bool:
        return self._db.in_transaction

    def _rollback(self) -> None:
        """Roll back what is open; a rollback that fails (SQLite already rolled back) must not
        hide the error that led here."""
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("ROLLBACK")

    @contextlib.contextmanager
    def write_transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE``: :class:`StoreBusyError` when the write lock stays taken past the
        busy timeout. Once it is held, an error is not a lock wait but a fault (:class:`StoreError`,
        not retried)."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            self._rollback()
            reason = one_line(exc)
            raise StoreBusyError(f"the store at {self.where} is busy: {reason}.", reason) from None
        except sqlite3.Error as exc:
            self._rollback()
            raise fault(self.where, exc) from exc
        try:
            yield
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise fault(self.where, exc) from exc
        except StoreUnavailableError as exc:
            self._rollback()
            raise StoreError(str(exc), exc.reason) from exc
        except BaseException:
            self._rollback()
            raise

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        self.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._rollback()
            raise
        self.execute("COMMIT")

    def lock_migrations(self) -> None:
        """Nothing to do: the write lock already keeps every other writer out."""

    def migration_script(self, script: str) -> str:
        return script

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
