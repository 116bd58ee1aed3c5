"""The reference fleet through the streaming job's route-table stage, one second of traffic per
micro-batch: does each second of traffic take less than a second to process?

    .venv/bin/python benchmarks/route_tables_fleet.py [--duration 60] [--clusters 10]

Writes the fleet (``emitter.fleet``) into a spool directory, one file per second of event time,
runs the job with ``maxFilesPerTrigger=1`` until it has drained them, and prints per-batch
figures from the query's progress: the first 30 s (every broker's first full registration,
10,000 topics each) and the steady state after it, separately; and the JVM's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import IO

from emitter.fleet import FleetSpec, generate_fleet
from routewatch.settings import load
from routewatch.store import open_store
from streaming.jobs import start_spool_stream
from streaming.session import spark_session
from streaming.settings import StreamingSettings


class SecondFiles:
    """Writes lines into one spool file per second of event time, published by rename."""

    def __init__(self, spool: Path, start_ms: int) -> None:
        self.spool, self.start_ms = spool, start_ms
        self.second = -1
        self.handle: IO[bytes] | None = None
        self.count = self.size = 0

    def write(self, line: bytes) -> None:
        at = line.index(b'"ts":') + 5
        second = (int(line[at : line.index(b",", at)]) - self.start_ms) // 1000
        if second != self.second:
            self.close()
            self.second = second
            self.handle = (self.spool / f".{second:06d}.tmp").open("wb")
        assert self.handle is not None
        self.handle.write(line + b"\n")
        self.count += 1
        self.size += len(line) + 1

    def close(self) -> None:
        if self.handle is None:
            return
        self.handle.close()
        tmp = self.spool / f".{self.second:06d}.tmp"
        os.utime(tmp, (1_800_000_000 + self.second, 1_800_000_000 + self.second))
        tmp.rename(self.spool / f"{self.second:06d}.jsonl")
        self.handle = None


def write_spool(spec: FleetSpec, spool: Path) -> tuple[int, int]:
    spool.mkdir(parents=True)
    files = SecondFiles(spool, spec.start_ms)
    generate_fleet(spec, files.write)
    files.close()
    return files.count, files.size


def jvm_rss_gib() -> float:
    """Peak resident memory (VmHWM) of this process's Java children."""
    peak = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"java" in cmdline.split(b"\0")[0] and b"spark" in cmdline:
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
    return peak / 1024 / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=60)
    parser.add_argument("--clusters", type=int, default=10)
    args = parser.parse_args()
    spec = FleetSpec(duration=args.duration, clusters=args.clusters)
    with tempfile.TemporaryDirectory(prefix="routewatch-bench-") as tmp:
        settings = load(
            StreamingSettings, data_dir=Path(tmp), max_files_per_trigger=1, trigger_interval_s=0.1
        )
        count, size = write_spool(spec, settings.spool_dir)
        print(f"fleet: {count:,} events, {size / 1e6:,.0f} MB, {args.duration} s of traffic")
        conf = {"spark.driver.memory": "2g", "spark.sql.streaming.numRecentProgressUpdates": "1000"}
        spark = spark_session("local[2]", "routewatch-bench", conf)
        spark.sparkContext.setLogLevel("ERROR")
        started = time.monotonic()
        query = start_spool_stream(spark, settings)
        query.processAllAvailable()
        elapsed = time.monotonic() - started
        progress = list(query.recentProgress)
        query.stop()
        rss = jvm_rss_gib()
        spark.stop()
        store = open_store(settings.store_url)
        routes = store.db.execute("SELECT COUNT(*) FROM route_intervals").fetchone()[0]
    batches = [
        (p["batchId"], p["numInputRows"], p["durationMs"]["triggerExecution"])
        for p in progress
        if p["numInputRows"]
    ]
    warm = [d for b, _, d in batches if b < 30]
    steady = [d for b, _, d in batches if b >= 30]
    print(
        f"processed in {elapsed:.0f} s wall: {count / elapsed:,.0f} events/s overall; "
        f"{routes:,} route intervals stored; JVM peak RSS {rss:.2f} GiB"
    )
    for name, durations in (("first 30 s", warm), ("steady state", steady)):
        if durations:
            print(
                f"{name:>13}: {len(durations)} batches of 1 s of traffic, batch duration "
                f"median {statistics.median(durations) / 1000:.2f} s, "
                f"max {max(durations) / 1000:.2f} s"
            )


if __name__ == "__main__":
    main()
