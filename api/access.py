"""How the API opens the store: read-only per request, after bringing its schema up to date once.

The stream job creates and migrates the store; an API started against a store written by an
older version migrates it first (migrations are transactional and idempotent), so it never
answers with a missing table.
"""

from __future__ import annotations

import threading
from pathlib import Path

from routewatch.store import Store, StoreUnavailableError

__all__ = ["StoreAccess"]


class StoreAccess:
    def __init__(self, url: str) -> None:
        self.url = url
        self.path = Path(url.removeprefix("sqlite:///"))
        self._migrated = False
        self._lock = threading.Lock()

    def open(self, timeout_s: float = 5.0) -> Store:
        """A read-only connection; :class:`StoreUnavailableError` when there is no store yet."""
        if not self.path.exists():
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
        return Store(self.url, readonly=True, timeout_s=timeout_s)

    def open_writable(self, timeout_s: float = 5.0) -> Store:
        """A connection for the API's own table (acknowledgements and silences)."""
        self.open(timeout_s).close()
        return Store(self.url, timeout_s=timeout_s)
