"""``create_app(settings)``: the routewatch API."""

from __future__ import annotations

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from api.access import StoreAccess
from api.metrics import StoreCollector
from api.problems import install_problem_handlers
from api.routes import alerts, health, inventory, metrics, stream
from api.settings import ApiSettings
from api.topic_cache import TopicCache

__all__ = ["create_app"]


def create_app(settings: ApiSettings, registry: CollectorRegistry | None = None) -> FastAPI:
    """The API over the store named by ``settings``; metrics in ``registry`` (a fresh one by
    default)."""
    app = FastAPI(
        title="routewatch",
        summary="Route-convergence alerts for Apache RocketMQ clusters.",
        version="0.1.0",
    )
    app.state.settings = settings
    app.state.store_access = StoreAccess(settings.store_url)
    app.state.topic_cache = TopicCache()  # shared by /topics and /metrics
    app.state.registry = registry or CollectorRegistry()
    app.state.registry.register(
        StoreCollector(settings, app.state.store_access, app.state.topic_cache)
    )
    install_problem_handlers(app)
    # /alerts/stream before /alerts/{alert_id}
    for router in (stream.router, alerts.router, inventory.router, health.router, metrics.router):
        app.include_router(router)
    return app
