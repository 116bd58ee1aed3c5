"""How the API opens the store: read-only connections lent to requests and kept for reuse (up to
:data:`IDLE_READERS` idle), after bringing its schema up to date once.

The stream job creates and migrates the store; an API started against a store written by an
older version migrates it first (migrations are transactional and idempotent), so it never
answers with a missing table.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from routewatch.store import Store, StoreUnavailableError, locate

__all__ = ["StoreAccess"]

# Idle read-only connections kept for the next requests. A request holds its connection from
# its start, including its wait for a worker thread, so under load more are in use than there
# are threads; beyond this many, a connection is closed after its request.
IDLE_READERS = 16


class StoreAccess:
    """Opens the store for the API, and keeps idle read-only connections for reuse: opening
    one per request cost more than most requests' reads."""

    def __init__(self, url: str) -> None:
        self.url = url
        # SQLite: the file; PostgreSQL: no file (its server says whether it is there)
        self.where, self.path = locate(url)
        self._migrated = False
        self._lock = threading.Lock()
        self._idle: list[Store] = []
        self.opened = 0  # read-only connections opened so far (the tests count them)

    def open(self, timeout_s: float = 5.0) -> Store:
        """A read-only connection; :class:`StoreUnavailableError` when there is no store yet."""
        if self.path is not None and not self.path.exists():
            raise StoreUnavailableError(
                f"The store {self.path} does not exist yet: start the stream job (routewatch "
                "stream)."
            )
        if not self._migrated:
            with self._lock:
                if not self._migrated:
                    writer = Store(self.url, timeout_s=timeout_s)
                    try:
                        writer.migrate()
                    finally:
                        writer.close()
                    self._migrated = True
        store = Store(self.url, readonly=True, timeout_s=timeout_s)
        self.opened += 1
        return store

    def take_reader(self) -> Store | None:
        """An idle read-only connection, or None (then :meth:`open` one). None also when the
        SQLite file is gone, so that :meth:`open` says so."""
        if self.path is not None and not self.path.exists():
            self.close_idle()
            return None
        with self._lock:
            return self._idle.pop() if self._idle else None

    def give_back(self, store: Store, reusable: bool) -> None:
        """Keep ``store`` for the next request when ``reusable`` (its request ended without an
        error) and no transaction is left open on it; close it otherwise."""
        if reusable and not store.in_transaction():
            with self._lock:
                if len(self._idle) < IDLE_READERS:
                    self._idle.append(store)
                    return
        store.close()

    @contextlib.contextmanager
    def borrowed(self, timeout_s: float = 5.0) -> Iterator[Store]:
        """An idle read-only connection, or a new one, for the block; kept for the next reader
        when the block ends without an error (from a worker thread: opening may block)."""
        store = self.take_reader() or self.open(timeout_s)
        reusable = False
        try:
            yield store
            reusable = True
        finally:
            self.give_back(store, reusable)

    def close_idle(self) -> None:
        """Close the idle connections (at shutdown)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for store in idle:
            store.close()

    def open_writable(self, timeout_s: float = 5.0) -> Store:
        """A connection for the API's own table (acknowledgements and silences)."""
        self.open(timeout_s).close()
        return Store(self.url, timeout_s=timeout_s)
