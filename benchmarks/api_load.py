"""The API under load: p99 latency of ``GET /alerts`` and ``GET /topics`` at a fixed request rate
(200 requests/s, 30 s per run) over loopback, while the streaming job runs.

    .venv/bin/python -m benchmarks.api_load [--runs 3] [--duration 30] [--rate 200] [--keep]

Everything is real: ``routewatch stream --source spool`` (SQLite store, in a temporary data
directory), ``routewatch replay --to spool --rebase-time now`` at real speed keeping the job busy
with one merged trace -- every scenario of the library, each on a cluster of its own (so the
store holds alerts), and a small healthy fleet (2 clusters x 10 brokers x 1,000 topics, 500
sends/s by default; so ``/topics`` lists thousands of topics) -- and ``routewatch api`` on a free
127.0.0.1 port. Each run has an API process of its own, started for it and stopped after it, so
that what one run leaves queued in the API cannot slow the next. A run starts once the job has
caught up with the replay (event-time lag under 15 s) and the API lists an alert and every
fleet topic.

The load is open-loop: request ``i`` falls due at ``start + i / rate``, alternating ``/alerts``
and ``/topics`` (half the rate each), whatever came back before it; ``--connections`` threads,
one keep-alive ``http.client`` connection each, send the due requests in order. A
request's latency runs from its *due* time to the end of its response, so waiting for the
scheduler or for a free connection counts (no coordinated omission). Non-2xx answers and
transport errors are errors, and so is any request not answered within ``--timeout`` of its due
time. Every request, errors included, is in the percentiles; a timed-out one counts as
``--timeout``, which understates it.

Prints per run and endpoint p50/p95/p99/max and errors, the median over runs of each endpoint's
p99, and per run: how late the scheduler ever was (if it falls behind, the figures are the
client's, not the API's), the CPU the API and the load itself used, and what the job did
meanwhile (batches, input rows, batch duration, event-time lag). Records it all in
``benchmarks/results/latest.json``, section ``api_load``, with the headline ``api_p99_ms``: the
median over runs of the worse of the two endpoints' p99, in ms. Every process it started is
stopped by PID at the end (SIGTERM, then SIGKILL for what lingers), also on Ctrl-C, SIGTERM or
an error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import heapq
import http.client
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from benchmarks.results import median, print_table, record
from emitter.fleet import FleetSpec, generate_fleet
from emitter.scenarios import SCENARIOS, on_clusters
from emitter.trace import TraceWriter
from routewatch.cli import plain_text
from routewatch.codec import encode
from routewatch.store import StoreError, open_store
from routewatch.testing.processes import free_port, group_alive, start_routewatch, stop, wait_for

ENDPOINTS = ("/alerts", "/topics")
STARTUP_S = 300.0  # Spark's start and the first batch, which holds every first registration
CAUGHT_UP_S = 15.0  # event-time lag of a job that keeps up (lateness bound, trigger, batch)
SLACK_S = 60.0  # per run: its API's start and stop, and the waits before it
PERCENTILES = ("p50_ms", "p95_ms", "p99_ms", "max_ms")


@dataclass(frozen=True)
class Sample:
    """One request: how long after its scheduled time it completed (or was given up)."""

    endpoint: str
    latency_s: float
    error: str | None


@dataclass
class Children:
    """The processes this benchmark started, each in a session of its own (its PID is the
    group's id, so Spark's JVM and Python workers are found through it)."""

    logs: Path
    env: dict[str, str]
    started: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        proc = start_routewatch(argv, self.env, self.log(name), new_session=True)
        self.started[name] = proc
        print(f"==> {name} started (PID {proc.pid})", flush=True)
        return proc

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def check(self) -> None:
        """Fail, with the log's tail, when a child exited on its own (the replay may finish)."""
        for name, proc in self.started.items():
            code = proc.poll()
            if code is not None and (name != "replay" or code != 0):
                tail = self.log(name).read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with status {code}; its log ends:\n{tail}")

    def stop(self, name: str, grace_s: float) -> None:
        """SIGTERM by PID and wait (SIGKILL after ``grace_s``), then SIGKILL whatever is left
        of its group."""
        proc = self.started.pop(name)
        try:
            stop(proc, timeout=grace_s)
            wait_for(partial(_group_gone, proc.pid), 30, f"every process of {name} ending")
        except (TimeoutError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            print(f"==> {name} (PID {proc.pid}) left processes behind: killed its group")
        print(f"==> stopped {name} (PID {proc.pid}, status {proc.returncode})", flush=True)

    def stop_all(self) -> None:
        """Newest first."""
        for name in reversed(list(self.started)):
            self.stop(name, grace_s=60)


def _group_gone(pgid: int) -> bool:
    return not group_alive(pgid)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of one process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the trace ------------------------------------------------------------------------------


def _ts(line: bytes) -> int:
    at = line.index(b'"ts":') + 5
    return int(line[at : line.index(b",", at)])


def _fleet_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            yield _ts(line), line


def write_trace(path: Path, spec: FleetSpec) -> int:
    """Every scenario on a cluster of its own, merged in event-time order with the fleet's
    traffic (both start at the same simulated instant); returns the number of events."""
    fleet = path.with_name("fleet.jsonl")
    with TraceWriter(fleet) as writer:
        generate_fleet(spec, writer.write_line)
    scenarios = [
        (e.ts, encode(e)) for e in on_clusters({name: name for name in SCENARIOS}, first_seed=1)
    ]
    with TraceWriter(path) as writer:
        for _, line in heapq.merge(scenarios, _fleet_lines(fleet), key=lambda p: p[0]):
            writer.write_line(line)
    fleet.unlink()
    return writer.count


# -- starting and waiting -------------------------------------------------------------------


def child_env(data_dir: Path) -> dict[str, str]:
    """This environment without the caller's ROUTEWATCH_* settings, plus the benchmark's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTEWATCH_")}
    env.update(
        ROUTEWATCH_DATA_DIR=str(data_dir),
        ROUTEWATCH_API_HOST="127.0.0.1",
        PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
    )
    return env


def get_json(url: str, timeout: float) -> dict[str, Any] | None:
    """The endpoint's JSON body when it answers 2xx, else None."""
    try:
        response = httpx.get(url, timeout=timeout)
    except httpx.HTTPError:
        return None
    if not response.is_success:
        return None
    body: dict[str, Any] = response.json()
    return body


def job_lag_s(db: Path) -> float | None:
    """The event-time lag after the job's newest batch; None before it has one."""
    if not db.exists():
        return None
    try:
        store = open_store(f"sqlite:///{db}", readonly=True)
        try:
            row = store.db.execute(
                "SELECT event_time_lag_ms FROM batches WHERE event_time_lag_ms IS NOT NULL "
                "ORDER BY written_at DESC LIMIT 1"
            ).fetchone()
        finally:
            store.close()
    except StoreError:
        return None  # not created or migrated yet
    return None if row is None else float(row[0]) / 1000


def wait_until_loaded(url: str, children: Children, topics: int, db: Path) -> dict[str, int]:
    """Wait until the API answers, the job has caught up with the replay (it starts with a
    backlog: Spark takes a while to start), and the API lists an alert and every fleet topic;
    returns how many alerts and topics it lists."""
    listed: dict[str, int] = {}

    def caught_up() -> bool:
        children.check()
        lag_s = job_lag_s(db)
        return lag_s is not None and lag_s <= CAUGHT_UP_S

    def answers() -> bool:
        children.check()
        return get_json(f"{url}/healthz", timeout=1) is not None

    def ready() -> bool:
        children.check()
        return get_json(f"{url}/readyz", timeout=5) is not None

    def loaded() -> bool:
        children.check()
        for path in ENDPOINTS:
            body = get_json(url + path, timeout=30)
            listed[path] = -1 if body is None else int(body["count"])
        return listed["/alerts"] >= 1 and listed["/topics"] >= topics

    wait_for(answers, 60, "the API answering /healthz", interval=0.2)
    wait_for(ready, STARTUP_S, "the stream job writing its first batch", interval=1)
    wait_for(caught_up, STARTUP_S, f"the job's event-time lag under {CAUGHT_UP_S:g} s", 1)
    wait_for(loaded, STARTUP_S, f"the API listing an alert and {topics:,} topics", interval=1)
    return listed


# -- the load -------------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection of the load (``http.client``: a quarter of httpx's
    CPU per request, which matters when the load shares the machine's two cores with the API
    and the job it measures); reopened after an error."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.conn: http.client.HTTPConnection | None = None

    def get(self, path: str, timeout_s: float) -> int:
        """The status of ``GET path``, its body read; raises OSError or HTTPException."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        try:
            self.conn.timeout = timeout_s
            if self.conn.sock is not None:
                self.conn.sock.settimeout(timeout_s)
            self.conn.request("GET", path)
            response = self.conn.getresponse()
            response.read()
            if response.will_close:
                self.close()
            return response.status
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def one_request(conn: Connection, endpoint: str, due: float, timeout_s: float) -> Sample:
    """Send it now (it was due at ``due``); an answer later than ``timeout_s`` after ``due``
    is a timeout."""
    left = due + timeout_s - time.monotonic()
    error: str | None = None
    if left <= 0:
        error = "timeout"  # it waited that long for a free connection: never sent
    else:
        try:
            status = conn.get(endpoint, left)
            if not 200 <= status < 300:
                error = f"HTTP {status}"
        except TimeoutError:
            error = "timeout"
        except (OSError, http.client.HTTPException) as exc:
            error = type(exc).__name__
    latency_s = time.monotonic() - due
    if error is None and latency_s > timeout_s:
        error = "timeout"
    return Sample(endpoint, min(latency_s, timeout_s) if error == "timeout" else latency_s, error)


def connection(
    url: str,
    due: queue.SimpleQueue[tuple[str, float] | None],
    timeout_s: float,
    samples: list[Sample],
) -> None:
    """One connection's worth of requests: the next due request as soon as the last is done."""
    conn = Connection(url)
    try:
        while (job := due.get()) is not None:
            samples.append(one_request(conn, *job, timeout_s))
    finally:
        conn.close()


def open_loop(
    url: str, rate: float, duration_s: float, timeout_s: float, connections: int
) -> tuple[list[Sample], float, float]:
    """Request ``i`` falls due at ``start + i / rate``, whatever came back before it; the
    ``connections`` threads send them in order. Returns the samples, how late, at most, the
    scheduler made a request due, and the CPU the load itself used, in cores."""
    due: queue.SimpleQueue[tuple[str, float] | None] = queue.SimpleQueue()
    samples: list[Sample] = []
    late_s = 0.0
    threads = [
        threading.Thread(target=connection, args=(url, due, timeout_s, samples), daemon=True)
        for _ in range(connections)
    ]
    cpu_before, wall_before = time.process_time(), time.monotonic()
    for thread in threads:
        thread.start()
    start = time.monotonic() + 0.1
    for i in range(round(rate * duration_s)):
        at = start + i / rate
        time.sleep(max(at - time.monotonic(), 0))
        late_s = max(late_s, time.monotonic() - at)
        due.put((ENDPOINTS[i % len(ENDPOINTS)], at))
    for _ in threads:
        due.put(None)
    for thread in threads:
        thread.join()
    load_cores = (time.process_time() - cpu_before) / (time.monotonic() - wall_before)
    return samples, late_s, load_cores


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of ``values`` (0 < q <= 100)."""
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)) - 1, 0)] if ordered else math.nan


def endpoint_figures(samples: list[Sample]) -> dict[str, Any]:
    ms = [s.latency_s * 1000 for s in samples]
    errors = Counter(s.error for s in samples if s.error is not None)
    return {
        "requests": len(samples),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms, default=math.nan),
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
    }


def job_figures(db: Path, since_ms: int, until_ms: int) -> dict[str, Any]:
    """What the stream job wrote to the store between two wall-clock instants."""
    store = open_store(f"sqlite:///{db}", readonly=True)
    try:
        rows = store.db.execute(
            "SELECT input_rows, duration_ms, event_time_lag_ms FROM batches "
            "WHERE written_at >= ? AND written_at < ?",
            (since_ms, until_ms),
        ).fetchall()
    finally:
        store.close()
    durations = [r[1] for r in rows if r[1] is not None]
    lags = [r[2] for r in rows if r[2] is not None]
    return {
        "batches": len(rows),
        "input_rows": sum(r[0] or 0 for r in rows),
        "batch_duration_median_ms": median(durations) if durations else None,
        "event_time_lag_max_s": max(lags) / 1000 if lags else None,
    }


def one_run(args: argparse.Namespace, n: int, tmp: Path, children: Children) -> dict[str, Any]:
    """One run against an API of its own (so that what a run leaves queued in the API cannot
    slow the next), while the job and the replay go on."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    db = tmp / "data" / "routewatch.db"
    api = children.start(f"api-{n}", ["api", "--port", str(port)])
    try:
        listed = wait_until_loaded(url, children, args.clusters * args.topics, db)
        print(
            f"==> run {n}/{args.runs}: {args.rate:g} requests/s for {args.duration:g} s; the "
            f"API lists {listed['/alerts']} alerts, {listed['/topics']:,} topics",
            flush=True,
        )
        cpu_before, since_ms = cpu_seconds(api.pid), int(time.time() * 1000)
        samples, late_s, load_cores = open_loop(
            url, args.rate, args.duration, args.timeout, args.connections
        )
        cpu_s, until_ms = cpu_seconds(api.pid) - cpu_before, int(time.time() * 1000)
        children.check()
    finally:
        children.stop(f"api-{n}", grace_s=15)
    figures = {
        path: endpoint_figures([s for s in samples if s.endpoint == path]) for path in ENDPOINTS
    }
    return {
        "endpoints": figures,
        "worse_p99_ms": max(f["p99_ms"] for f in figures.values()),
        "scheduler_late_max_ms": late_s * 1000,
        "api_cpu_cores": cpu_s / ((until_ms - since_ms) / 1000),
        "load_cpu_cores": load_cores,
        "listed_before": listed,
        "replay_running": children.started["replay"].poll() is None,
        "job": job_figures(db, since_ms, until_ms),
    }


# -- the report -----------------------------------------------------------------------------


def latency_rows(runs: list[dict[str, Any]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for n, run in enumerate(runs, 1):
        for path, f in run["endpoints"].items():
            kinds = ", ".join(f"{k} {v}" for k, v in f["error_kinds"].items())
            rows.append([n, path, f["requests"], *(f[k] for k in PERCENTILES), f["errors"], kinds])
    for path in ENDPOINTS:
        p99 = median([run["endpoints"][path]["p99_ms"] for run in runs])
        rows.append(["median", path, "", "", "", p99, "", "", ""])
    return rows


def job_row(n: int, run: dict[str, Any]) -> list[object]:
    job, listed = run["job"], run["listed_before"]
    return [
        n,
        run["scheduler_late_max_ms"],
        run["api_cpu_cores"],
        run["load_cpu_cores"],
        job["batches"],
        job["input_rows"],
        job["batch_duration_median_ms"],
        job["event_time_lag_max_s"],
        listed["/alerts"],
        listed["/topics"],
        "yes" if run["replay_running"] else "no",
    ]


def print_report(runs: list[dict[str, Any]]) -> None:
    print_table(
        ["run", "endpoint", "requests", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors", ""],
        latency_rows(runs),
    )
    print()
    print_table(
        [
            *("run", "scheduler late max ms", "API CPU cores", "load CPU cores", "job batches"),
            "input rows",
            *("batch median ms", "lag max s", "alerts before", "topics before", "replay running"),
        ],
        [job_row(n, run) for n, run in enumerate(runs, 1)],
    )


def summarise(
    args: argparse.Namespace, spec: FleetSpec, events: int, runs: list[dict[str, Any]]
) -> float:
    headline = median([run["worse_p99_ms"] for run in runs])
    figures = {
        "rate_per_s": args.rate,
        "duration_s": args.duration,
        "runs": args.runs,
        "timeout_s": args.timeout,
        "connections": args.connections,
        "replay_speed": args.speed,
        "fleet": dataclasses.asdict(spec),
        "scenarios": len(SCENARIOS),
        "trace_events": events,
        "median_p99_ms": {
            path: median([run["endpoints"][path]["p99_ms"] for run in runs]) for path in ENDPOINTS
        },
        "api_p99_ms": headline,
        "per_run": runs,
    }
    record("api_load", figures, api_p99_ms=headline)
    return headline


# -- main -----------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    assert __doc__ is not None
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per run")
    parser.add_argument("--rate", type=float, default=200.0, help="requests/s, both endpoints")
    parser.add_argument("--timeout", type=float, default=10.0, help="s after its due time")
    parser.add_argument("--connections", type=int, default=64, help="client pool size")
    parser.add_argument("--speed", type=float, default=1.0, help="replay speed (1: real time)")
    parser.add_argument("--clusters", type=int, default=2, help="fleet clusters")
    parser.add_argument("--brokers", type=int, default=10, help="fleet brokers per cluster")
    parser.add_argument("--topics", type=int, default=1000, help="fleet topics per cluster")
    parser.add_argument("--send-rate", type=int, default=500, help="fleet sends/s")
    parser.add_argument("--keep", action="store_true", help="keep the data directory and logs")
    return parser.parse_args()


def fleet_spec(args: argparse.Namespace) -> FleetSpec:
    """The fleet, with enough traffic to outlast the start and every run at the replay speed."""
    wall_s = STARTUP_S + args.runs * (args.duration + SLACK_S)
    return FleetSpec(
        clusters=args.clusters,
        brokers=args.brokers,
        topics=args.topics,
        producers=50 * args.clusters,
        send_rate=args.send_rate,
        duration=math.ceil(wall_s * args.speed),
    )


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the benchmark as Ctrl-C does: children included


def benchmark(args: argparse.Namespace, tmp: Path) -> None:
    spec = fleet_spec(args)
    trace = tmp / "trace.jsonl"
    events = write_trace(trace, spec)
    print(f"trace: {events:,} events, {trace.stat().st_size / 1e6:,.0f} MB, {spec.duration} s")
    children = Children(tmp, child_env(tmp / "data"))
    runs = []
    try:
        children.start("stream", ["stream", "--source", "spool"])
        children.start(
            "replay",
            [
                *("replay", str(trace), "--to", "spool", "--quiet"),
                *("--speed", f"{args.speed:g}", "--rebase-time", "now"),
            ],
        )
        for n in range(1, args.runs + 1):
            runs.append(one_run(args, n, tmp, children))
    finally:
        children.stop_all()
    print_report(runs)
    headline = summarise(args, spec, events, runs)
    print(f"\napi_p99_ms (median over runs of the worse endpoint's p99): {headline:,.1f}")


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="routewatch-api-load-"))
    try:
        benchmark(args, tmp)
    finally:
        if args.keep:
            print(f"==> kept {tmp} (logs: stream.log, api.log, replay.log)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
