"""``routewatch watch --namesrv ADDRS``: a live cluster watched by one command — ``collect``,
``stream`` and ``api`` as supervised child processes in one data directory.

It prints the API's and the console's address, then every alert the store opens or resolves
(and an update that changes its severity or summary), as ``stream`` and ``demo`` print them. A
child that dies is started again, and said so; one that keeps dying (5 times in 10 minutes) stops
the whole. Ctrl-C or SIGTERM stops every child by its PID. Each part can still run on its own
host, as ``routewatch collect``, ``stream`` and ``api``.

Sized for a small cluster by default (a few brokers, hundreds of topics; docs/operations.md):
``ROUTEWATCH_WATCH_SIZE=fleet`` (or ``--size fleet``) leaves the job's own defaults, the fleet's,
and any ``ROUTEWATCH_*`` setting given wins over either.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from routewatch.addresses import namesrv_list
from routewatch.cli import plain_text
from routewatch.errors import RoutewatchError
from routewatch.listen import check_can_listen
from routewatch.settings import Settings, load
from routewatch.spool_origin import spool_origin
from routewatch.supervise import AlertLogFollower, Children, signals_set_a_flag

__all__ = ["SIZES", "child_env", "register"]

STARTUP_S = 180.0  # the longest the API may take to answer at start
STATUS_EVERY_S = 60.0

# What each size sets, unless the environment sets it: "small" is measured on the sandbox
# (benchmarks/watch_footprint.py, docs/operations.md); "fleet" is the job's own defaults.
SIZES: Mapping[str, Mapping[str, str]] = {
    "small": {
        # Spark refuses a heap below 450 MiB; a small initial heap, and the serial collector,
        # which gives back what it does not use (G1 starts at 1/64 of the machine's memory),
        # and the JVM's quick compiler alone (fewer compiler threads and less code cache)
        "ROUTEWATCH_SPARK_DRIVER_MEMORY": "512m",
        "ROUTEWATCH_SPARK_DRIVER_JAVA_OPTIONS": (
            "-XX:+UseSerialGC -Xms32m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 "
            "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=32m -Xss512k"
        ),
        "ROUTEWATCH_SPARK_MASTER": "local[1]",
        "ROUTEWATCH_STATE_PARTITIONS": "1",
        "ROUTEWATCH_STATE_MEMORY_MB": "32",
        "ROUTEWATCH_KNOWN_TABLES_MB": "16",
        "ROUTEWATCH_TRIGGER_INTERVAL_S": "2",
        # a poll every 5 s (a few brokers' tables: cheap), so that a stuck topic pages within
        # 90 s of its send: 60 s of settling, a poll, the lateness bound and a trigger
        "ROUTEWATCH_COLLECT_POLL_INTERVAL_S": "5",
        "ROUTEWATCH_COLLECT_HEARTBEAT_INTERVAL_S": "5",
    },
    "fleet": {},
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="watch a live cluster: collect, stream and api as one supervised command",
        description=plain_text(__doc__),
    )
    parser.add_argument(
        "--namesrv",
        metavar="HOST:PORT[;HOST:PORT]",
        required=True,
        help="the cluster's NameServers, as a client's namesrvAddr",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="the API's (and console's) port (default ROUTEWATCH_API_PORT, else 8000)",
    )
    parser.add_argument(
        "--size",
        choices=sorted(SIZES),
        default=None,
        help="the job's sizing: small (default, ROUTEWATCH_WATCH_SIZE) or fleet",
    )
    parser.set_defaults(handler=_run)


def child_env(environ: Mapping[str, str], size: str, port: int) -> dict[str, str]:
    """The children's environment: the caller's, with the size's settings where the caller set
    none, the API on ``port``, and Spark's Python workers on this interpreter."""
    env = {**SIZES[size], **environ}
    env["ROUTEWATCH_API_PORT"] = str(port)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


def _run(args: argparse.Namespace) -> int:
    with signals_set_a_flag() as stopping:
        return _watch(args, stopping)


def _watch(args: argparse.Namespace, stopping: list[int]) -> int:
    namesrvs = ";".join(namesrv_list(args.namesrv))
    settings = load(Settings)
    size = args.size or os.environ.get("ROUTEWATCH_WATCH_SIZE", "small")
    if size not in SIZES:
        raise RoutewatchError(
            f"ROUTEWATCH_WATCH_SIZE is '{size}': set it to one of {', '.join(sorted(SIZES))}."
        )
    if spool_origin(settings.spool_dir) == "replayed":
        raise RoutewatchError(
            f"the data directory {settings.data_dir} holds replayed traces (its spool "
            f"{settings.spool_dir} was written by routewatch replay), which must not mix with a "
            "live cluster's events: give watch a directory of its own (ROUTEWATCH_DATA_DIR="
            "/some/dir routewatch watch ...), or delete what it holds with `routewatch reset "
            "--spool --yes`."
        )
    host = os.environ.get("ROUTEWATCH_API_HOST", "127.0.0.1")
    port = args.port or int(os.environ.get("ROUTEWATCH_API_PORT", "8000"))
    check_can_listen(host, port, "is another watch or API running? Pick a free port with --port")
    env = child_env(os.environ, size, port)
    logs = settings.data_dir / "watch"
    logs.mkdir(parents=True, exist_ok=True)
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"

    children = Children(logs, say=lambda line: print(line, flush=True))
    print(f"==> watching {namesrvs}; data directory {settings.data_dir} (logs in {logs})")
    follower = AlertLogFollower(settings.store_url)
    held = follower.skip_to_end()
    if held:
        print(f"==> {len(held)} alert(s) open in the store already:")
        for line in held:
            print(line)
    try:
        for name, argv in (
            ("collect", ["collect", "--namesrv", namesrvs, "--to", "spool"]),
            ("stream", ["stream", "--source", "spool"]),
            ("api", ["api"]),
        ):
            child = children.start(name, argv, env, on_exit="restart")
            print(f"==> {name} started (PID {child.pid})", flush=True)
        if not children.wait_for_api(url, stopping, STARTUP_S):
            return 0
        print(f"    console:  {url}/")
        print(f"    API:      {url}/docs  (alerts: curl -s '{url}/alerts?state=open')")
        print(
            "==> every alert the store opens or resolves, and an update when its severity or "
            "summary changes (Ctrl-C stops everything):",
            flush=True,
        )
        children.follow(follower, stopping, STATUS_EVERY_S)
    finally:
        print(f"==> stopping {len(children.started)} process(es)...", flush=True)
        print(f"==> stopped {children.stop()}", flush=True)
    return 0
