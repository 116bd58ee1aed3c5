"""NameServer addresses as people write them: ``host:port;host:port``, as a RocketMQ client's
``namesrvAddr`` (``routewatch collect --namesrv``, ``routewatch watch --namesrv``)."""

from __future__ import annotations

from routewatch.errors import RoutewatchError

__all__ = ["namesrv_list"]


def namesrv_list(text: str) -> list[str]:
    """``a:1;b:2`` as a list of addresses; a :class:`RoutewatchError` if one is not host:port."""
    addrs = [a.strip() for a in text.split(";") if a.strip()]
    if not addrs:
        raise RoutewatchError(
            "no NameServer to watch: give --namesrv 'host:port;host:port' or set "
            "ROUTEWATCH_COLLECT_NAMESRV."
        )
    for addr in addrs:
        host, _, port = addr.rpartition(":")
        if not host or not port.isdigit():
            raise RoutewatchError(
                f"'{addr}' is not a NameServer address: write each as host:port, separated by ';'."
            )
        if not 0 < int(port) < 65536:
            raise RoutewatchError(
                f"'{addr}' is not a NameServer address: its port {port} is out of range "
                "(1 to 65535)."
            )
    if len(set(addrs)) != len(addrs):
        raise RoutewatchError(f"--namesrv names a NameServer twice ({text}): name each once.")
    return addrs
