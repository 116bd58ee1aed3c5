"""``create_app(settings)``: the routewatch API."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio.to_thread
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from prometheus_client import CollectorRegistry

from api.access import StoreAccess
from api.console.render import STATIC
from api.metrics import StoreCollector
from api.problems import install_problem_handlers
from api.routes import (
    alerts,
    console,
    health,
    inventory,
    metrics,
    remedies,
    runbook,
    stream,
)
from api.settings import ApiSettings
from api.topic_cache import TopicCache

__all__ = ["DOCS_ASSETS", "create_app"]

DOCS_ASSETS = "/docs-assets"


def create_app(settings: ApiSettings, registry: CollectorRegistry | None = None) -> FastAPI:
    """The API over the store named by ``settings``; metrics in ``registry`` (a fresh one by
    default)."""
    access = StoreAccess(settings.store_url)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # the threads that run the endpoints' reads: a few keep the CPU busy; more only queue
        # for Python's GIL, and under load each request then takes longer (measured: p99 at
        # 200 requests/s went from about 0.3 s with 4 threads to 1-2 s with anyio's 40)
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = settings.api_worker_threads
        yield
        access.close_idle()

    # /docs and /redoc load Swagger UI and ReDoc from the API (DOCS_ASSETS), not from a CDN
    app = FastAPIOffline(
        static_url=DOCS_ASSETS,
        lifespan=lifespan,
        title="routewatch",
        summary="Route-convergence alerts for Apache RocketMQ clusters.",
        version="0.1.0",
    )
    app.state.settings = settings
    app.state.store_access = access
    app.state.topic_cache = TopicCache()  # shared by /topics and /metrics
    app.state.registry = registry or CollectorRegistry()
    app.state.registry.register(
        StoreCollector(settings, app.state.store_access, app.state.topic_cache)
    )
    install_problem_handlers(app)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="console-static")
    # /alerts/stream before /alerts/{alert_id}
    routers = (stream, alerts, remedies, inventory, health, metrics, runbook, console)
    for router in (r.router for r in routers):
        app.include_router(router)
    return app
