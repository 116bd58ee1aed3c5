"""``routewatch api``: serve the API with uvicorn."""

from __future__ import annotations

import argparse
import socket

from api.settings import ApiSettings
from routewatch.errors import RoutewatchError
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
    _check_free(settings.api_host, settings.api_port)
    import uvicorn

    from api.main import create_app

    uvicorn.run(
        create_app(settings), host=settings.api_host, port=settings.api_port, log_level="info"
    )
    return 0


def _check_free(host: str, port: int) -> None:
    """Fail in one sentence when the address cannot be listened on (uvicorn would log its own
    message and exit with status 3)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise RoutewatchError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): stop what uses it, or "
            "give another port with --port or ROUTEWATCH_API_PORT."
        ) from None
