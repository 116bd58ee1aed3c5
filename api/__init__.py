"""The alert API and Prometheus metrics over the store (FastAPI)."""

__all__: list[str] = []
