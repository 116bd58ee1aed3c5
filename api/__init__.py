"""The alert API and Prometheus metrics over the store (FastAPI)."""

from api.main import create_app
from api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]
