"""The store: schema, migrations and queries. It never imports pyspark."""

from routewatch.store.store import ChangeRow, Store, StoreUnavailableError, open_store

__all__ = ["ChangeRow", "Store", "StoreUnavailableError", "open_store"]
