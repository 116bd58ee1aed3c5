"""``routewatch collect``: watch a live RocketMQ cluster and write contract heartbeats."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from emitter.collect.collector import Collector
from emitter.collect.derive import Deriver
from emitter.collect.forward import Forwarder
from emitter.collect.metrics import CollectorMetrics, MetricsServer
from emitter.collect.poller import Poller
from emitter.collect.proxylog import ProxyLog
from emitter.collect.settings import CollectSettings
from emitter.sinks import sink_for
from routewatch.addresses import namesrv_list
from routewatch.errors import RoutewatchError
from routewatch.settings import load

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``collect`` to the ``routewatch`` command line."""
    parser = subparsers.add_parser(
        "collect",
        help="watch a live RocketMQ cluster's NameServers and brokers, write heartbeat events",
        description="Poll every NameServer and the brokers they list over RocketMQ's protocol "
        "and write what each NameServer holds as heartbeat events, and forward the client "
        "library's spool files to the same sink (docs/collect.md), until Ctrl-C or SIGTERM. "
        "Sink and collector settings come from ROUTEWATCH_*.",
    )
    parser.add_argument(
        "--namesrv",
        metavar="HOST:PORT[;HOST:PORT]",
        help="the NameServers, as a client's namesrvAddr (default ROUTEWATCH_COLLECT_NAMESRV)",
    )
    parser.add_argument(
        "--forward",
        metavar="DIR",
        action="append",
        type=Path,
        help="a spool directory of the client library whose files are forwarded to the sink "
        "and then removed; repeat for several (default ROUTEWATCH_COLLECT_FORWARD_DIRS)",
    )
    parser.add_argument(
        "--proxy-log",
        metavar="FILE",
        action="append",
        type=Path,
        help="the log of a RocketMQ 5 proxy on this host (with its own logging, "
        "~/logs/rocketmqlogs/broker_default.log), followed for its gRPC clients' route misses; "
        "repeat for several (default ROUTEWATCH_COLLECT_PROXY_LOGS)",
    )
    parser.add_argument(
        "--to",
        choices=["kafka", "spool", "stdout"],
        default="spool",
        help="where the events go: the spool directory that `routewatch stream` reads by "
        "default (ROUTEWATCH_SPOOL_DIR; the default), Kafka (ROUTEWATCH_KAFKA_*) or stdout",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="poll and forward once (and read each proxy log whole), write, and exit",
    )
    parser.set_defaults(handler=_run)


def forward_dirs(given: list[Path], to: str, spool_dir: Path) -> list[Path]:
    """The directories to forward, absolute; a :class:`RoutewatchError` for one named twice,
    or for the spool ``collect`` itself writes to."""
    dirs = [path.absolute() for path in given]
    for path in dirs:
        if dirs.count(path) > 1:
            raise RoutewatchError(f"--forward names {path} twice: name each directory once.")
        if to == "spool" and path == spool_dir.absolute():
            raise RoutewatchError(
                f"--forward {path} is the spool collect writes to (ROUTEWATCH_SPOOL_DIR): "
                "forward a client library's spool into Kafka or into another spool."
            )
    return dirs


def what_to_do(namesrv: str, forward: list[Path], proxy_logs: Sequence[Path] = ()) -> list[str]:
    """The NameServers to watch (none when only forwarding or reading proxy logs); a
    :class:`RoutewatchError` when there is nothing to do."""
    if not namesrv.strip() and (forward or proxy_logs):
        return []
    if not namesrv.strip():
        raise RoutewatchError(
            "nothing to collect: give --namesrv 'host:port;host:port' (or set "
            "ROUTEWATCH_COLLECT_NAMESRV) to watch a cluster, --forward DIR (or set "
            "ROUTEWATCH_COLLECT_FORWARD_DIRS) to forward a client library's spool, "
            "--proxy-log FILE (or set ROUTEWATCH_COLLECT_PROXY_LOGS) to follow a proxy's "
            "log, or several of them."
        )
    return namesrv_list(namesrv)


def proxy_log_files(given: list[Path]) -> list[Path]:
    """The proxy logs to follow, absolute; a :class:`RoutewatchError` for one named twice."""
    files = [path.absolute() for path in given]
    for path in files:
        if files.count(path) > 1:
            raise RoutewatchError(f"--proxy-log names {path} twice: name each file once.")
    return files


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="routewatch collect: %(message)s")
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    settings = load(CollectSettings)
    forward = forward_dirs(
        args.forward or list(settings.collect_forward_dirs), args.to, settings.spool_dir
    )
    proxy_files = proxy_log_files(args.proxy_log or list(settings.collect_proxy_logs))
    namesrvs = what_to_do(args.namesrv or settings.collect_namesrv, forward, proxy_files)
    collector_metrics = CollectorMetrics()
    sink = sink_for(args.to, settings, origin="live")
    metrics_server = None
    host = settings.collect_metrics_host
    if settings.collect_metrics_port:
        try:
            metrics_server = MetricsServer(collector_metrics, settings.collect_metrics_port, host)
        except OSError as exc:
            raise RoutewatchError(
                f"cannot serve /metrics on {host}:{settings.collect_metrics_port} "
                f"({exc.strerror}): set ROUTEWATCH_COLLECT_METRICS_PORT to a free port, or 0."
            ) from None
    credentials = settings.credentials()
    poller = (
        Poller(namesrvs, collector_metrics, settings.collect_timeout_s, credentials=credentials)
        if namesrvs
        else None
    )
    forwarder = Forwarder(forward, sink, collector_metrics) if forward else None
    host_name = socket.gethostname()
    proxy_logs = [
        ProxyLog(
            path,
            settings.collect_proxy_cluster,
            f"{host_name}:{path}",
            settings.collect_proxy_log_utc_offset_h,
            from_start=args.once,
        )
        for path in proxy_files
    ]
    collector = Collector(
        poller,
        Deriver(
            settings.collect_heartbeat_interval_s,
            poll_interval_s=settings.collect_poll_interval_s,
        ),
        sink,
        collector_metrics,
        settings.collect_poll_interval_s,
        settings.collect_log_interval_s,
        forwarder,
        settings.collect_forward_interval_s,
        settings.collect_start_timeout_s,
        proxy_logs,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        collector.stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    where = {
        "kafka": f"Kafka {settings.kafka_bootstrap} topic {settings.kafka_topic}",
        "spool": f"the spool {settings.spool_dir}",
        "stdout": "stdout",
    }[args.to]
    doing = []
    if namesrvs:
        signed = f", signing as {credentials.access_key}" if credentials else ""
        doing.append(
            f"watching {';'.join(namesrvs)} every {settings.collect_poll_interval_s:g} s{signed}"
        )
    if proxy_files:
        doing.append(
            f"following the proxy log(s) {', '.join(map(str, proxy_files))} of cluster "
            f"{settings.collect_proxy_cluster}"
        )
    if forward:
        doing.append(
            f"forwarding the files of {', '.join(map(str, forward))} every "
            f"{settings.collect_forward_interval_s:g} s"
        )
    logging.getLogger("routewatch.collect").info(
        "%s, writing to %s%s.",
        " and ".join(doing),
        where,
        f", /metrics on {host}:{metrics_server.port}" if metrics_server else "",
    )
    try:
        if args.once:
            collector.once()
        else:
            collector.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if poller is not None:
            poller.close()
        for proxy_log in proxy_logs:
            proxy_log.close()
        delivered: int | None = None
        try:
            delivered = sink.close()  # raises, saying what it gave up on, after a failure
        finally:
            if metrics_server is not None:
                metrics_server.close()
            tail = "" if delivered is None else f" ({delivered:g} delivered)"
            print(
                f"routewatch collect: stopped; {collector_metrics.summary()}{tail}.",
                file=sys.stderr,
            )
    return 0
