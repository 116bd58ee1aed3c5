"""Whether a process can listen where it is told to, asked before it starts serving: a port in
use is one sentence, not a server's own message and exit status."""

from __future__ import annotations

import socket

from routewatch.errors import RoutewatchError

__all__ = ["check_can_listen"]


def check_can_listen(host: str, port: int, what_to_do: str) -> None:
    """Raise a :class:`RoutewatchError` saying why ``host:port`` cannot be listened on, and
    ``what_to_do``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise RoutewatchError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): {what_to_do}."
        ) from None
