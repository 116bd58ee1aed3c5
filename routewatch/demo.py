"""``routewatch demo``: the streaming job, the API and a replay of the mixed scenario, together.

It runs the other commands as child processes (the core imports none of their packages), in a
data directory of its own (``<data dir>/demo``, emptied at start), prints where to look, what the
alerts' two clocks are, and every alert the store opens or resolves (and an update that changes
its severity or summary), and on Ctrl-C or SIGTERM stops every process it started, by PID, and
says so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from routewatch.cli import plain_text
from routewatch.errors import RoutewatchError
from routewatch.listen import check_can_listen
from routewatch.settings import Settings, load
from routewatch.supervise import AlertLogFollower, Children, signals_set_a_flag

__all__ = ["register"]

SCENARIO = "demo-mixed"
STARTUP_S = 180.0  # the longest the API may take to answer (it starts fast; Spark does not)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the job, the API and a replay of the mixed scenario until Ctrl-C",
        description=plain_text(__doc__),
    )
    parser.add_argument("--speed", type=float, default=10.0, help="replay speed (default 10)")
    parser.add_argument(
        "--port", type=int, default=8000, help="the API's port on 127.0.0.1 (default 8000)"
    )
    parser.set_defaults(handler=_run)


CHANGES_HEADER = (
    "==> every alert the store opens or resolves, and an update when its severity or summary "
    "changes (Ctrl-C stops everything):"
)


def where_to_look(url: str) -> list[str]:
    """The hint, as the README words it: the unfiltered list shows all four alerts the scenario
    ends with (AT_RISK resolved, three open), then the live stream and the metrics."""
    return [
        f"    console:      {url}/   (open it in a browser: the alerts appear as the job "
        "writes them)",
        f"    all alerts:   curl -s '{url}/alerts'   (the scenario ends with 4: AT_RISK resolved "
        "early on, 3 open; add ?state=open for those)",
        f"    live changes: curl -sN {url}/alerts/stream",
        f"    metrics:      curl -s {url}/metrics",
    ]


def clocks_lines(speed: float) -> list[str]:
    """What the alerts' times are, one line per clock: event time (the trace's clock, which the
    replay starts now and runs ``speed`` times as fast as the wall clock, keeping the trace's
    gaps: compressing them would change its alerts) and the wall clock of detection."""
    pace = "as fast as" if speed == 1 else f"{speed:g}x as fast as"
    return [
        f"    event time: opened_at and resolved_at are event time, the trace's own clock: it "
        f"starts now and runs {pace} the wall clock, keeping the trace's gaps (shorter gaps "
        "would change the alerts)",
        "    wall clock: detected_at is when routewatch stored the alert, so opened_at can be "
        "minutes after detected_at",
    ]


def _fresh(root: Path) -> None:
    """The demo's own directory, emptied: a store and checkpoint from a previous demo would mix
    its alerts with this one's."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)


def _run(args: argparse.Namespace) -> int:
    with signals_set_a_flag() as stopping:
        return _demo(args, stopping)


def _demo(args: argparse.Namespace, stopping: list[int]) -> int:
    settings = load(Settings)
    root = settings.data_dir / "demo"
    # before anything is emptied or started: a port in use (another demo's API, say) would
    # answer /healthz for this one, and another demo's directory is this one's
    check_can_listen(
        "127.0.0.1", args.port, "is another demo running? Stop it, or pick a free port with --port"
    )
    _fresh(root)
    # embedded defaults: none of the caller's ROUTEWATCH_* settings (a production store, Spark
    # master or Kafka) reaches the demo's processes
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEWATCH_")}
    env.update(
        ROUTEWATCH_DATA_DIR=str(root),
        ROUTEWATCH_API_HOST="127.0.0.1",
        ROUTEWATCH_API_PORT=str(args.port),
        PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
    )
    url = f"http://127.0.0.1:{args.port}"
    trace = root / f"{SCENARIO}.jsonl"
    simulated = subprocess.run(
        [
            *(sys.executable, "-m", "routewatch.cli", "simulate"),
            *("--scenario", SCENARIO, "--out", str(trace)),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if stopping:
        return 0
    if simulated.returncode != 0:
        print(simulated.stderr, file=sys.stderr)
        raise RoutewatchError(
            f"simulating {SCENARIO} failed with status {simulated.returncode} (its output is "
            "above); fix what it names and run the demo again."
        )

    children = Children(root, say=lambda line: print(line, flush=True))
    print(f"==> demo data directory: {root} (emptied; logs: stream.log, api.log, replay.log)")
    try:
        stream = children.start("stream", ["stream", "--source", "spool"], env).proc
        print(f"==> streaming job started (PID {stream.pid}): spool -> SQLite store")
        api = children.start("api", ["api"], env).proc
        print(f"==> API started (PID {api.pid}): {url}/docs")
        if not children.wait_for_api(url, stopping, STARTUP_S):
            return 0
        for line in where_to_look(url):
            print(line)
        replay = children.start(
            "replay",
            [
                *("replay", str(trace), "--to", "spool", "--speed", f"{args.speed:g}"),
                *("--rebase-time", "now", "--quiet"),
            ],
            env,
            on_exit="end",
        ).proc
        print(
            f"==> replaying {SCENARIO} at {args.speed:g}x (PID {replay.pid}): healthy topics, a "
            "topic stuck on one broker, a client with no NameServer address, a broker that dies"
        )
        for line in clocks_lines(args.speed):
            print(line)
        print(CHANGES_HEADER)
        _watch(children, root, replay, stopping)
    finally:
        print(f"==> stopping {len(children.started)} process(es)...", flush=True)
        print(f"==> stopped {children.stop()}; the demo's data stays in {root}", flush=True)
    return 0


def _watch(
    children: Children, root: Path, replay: subprocess.Popen[bytes], stopping: list[int]
) -> None:
    """Print every alert change and a progress line every few seconds, until a signal."""
    replay_done: list[bool] = []

    def say_when_replay_ends() -> None:
        if replay.poll() is not None and not replay_done:
            replay_done.append(True)
            print(f"==> replay finished (status {replay.returncode}); the job and API keep running")

    follower = AlertLogFollower(f"sqlite:///{root / 'routewatch.db'}")
    children.follow(follower, stopping, 10, say_when_replay_ends)
