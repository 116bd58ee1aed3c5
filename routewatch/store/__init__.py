"""The store: schema, migrations, writes and read-only views, on SQLite or PostgreSQL. Its
callers see its own errors, never a driver's. It never imports pyspark."""

from routewatch.store.backend import locate
from routewatch.store.errors import StoreBusyError, StoreError, StoreUnavailableError
from routewatch.store.store import Store, open_store

__all__ = [
    "Store",
    "StoreBusyError",
    "StoreError",
    "StoreUnavailableError",
    "locate",
    "open_store",
]
