"""``routewatch api``: serve the API with uvicorn."""

from __future__ import annotations

import argparse

from api.settings import ApiSettings
from routewatch.listen import check_can_listen
from routewatch.settings import load

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "api",
        help="serve the alert API and Prometheus metrics over the store",
        description="Serve the REST API, and /metrics, over ROUTEWATCH_STORE_URL.",
    )
    parser.add_argument("--host", help="address to listen on (default ROUTEWATCH_API_HOST)")
    parser.add_argument("--port", type=int, help="port (default ROUTEWATCH_API_PORT, 8000)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in (("api_host", args.host), ("api_port", args.port)) if v}
    settings = load(ApiSettings, **overrides)
    check_can_listen(
        settings.api_host,
        settings.api_port,
        "stop what uses it, or give another port with --port or ROUTEWATCH_API_PORT",
    )
    import uvicorn

    from api.main import create_app

    # (open live streams — a console left open — would hold a stop for uvicorn's default of
    # waiting on every connection: they are closed after 3 s)
    uvicorn.run(
        create_app(settings),
        host=settings.api_host,
        port=settings.api_port,
        log_level="info",
        timeout_graceful_shutdown=3,
    )
    return 0
