"""The store: schema, migrations and queries. It never imports pyspark."""

from routewatch.store.store import Store, StoreUnavailableError, open_store

__all__ = ["Store", "StoreUnavailableError", "open_store"]
