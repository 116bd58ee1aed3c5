"""The job's throughput at capacity with its state over one task and over several, in one run:
how much the state buckets (issue 38) gain, and how the job grows with cores.

    .venv/bin/python -m benchmarks.state_partitions [--clusters 10] [--warm 32] [--steady 30]
        [--batch 10] [--partitions 1,2] [--one-core] [--big]

The reference fleet (``emitter.fleet``) is written as one spool file per second of traffic and
published whole. Then, in one Spark session (``local[2]``), each over the same files with a
checkpoint and a store of its own, ``--batch`` seconds of traffic per micro-batch (as the job
takes in a backlog):

1. the bare read (text source + stage 1 into the no-op sink): once unmeasured to warm the JIT,
   then measured — the denominator of the capacity ratio, as in ``benchmarks.fleet_realtime``;
2. the job (``start_stream``: route tables, alerts, the SQLite store) with each number of state
   partitions of ``--partitions`` (``ROUTEWATCH_STATE_PARTITIONS``; 1 is the whole stream in
   one task, the design before the buckets), after one unmeasured run of the job with the
   largest number (``--no-warm-up`` skips it): the JIT goes on compiling the job's own paths
   (the shuffle, the state store, the stateful operator's Python runner) well after the bare
   read's warm-up, so without it the first job measured runs slowest — on 2026-12-01 the same
   job ran 16 % faster as the third job query of its JVM than as the first.

With ``--one-core``, the job with the largest number of partitions runs once more in a child
process pinned to one core (``taskset -c 0``, ``local[1]``): the scaling from one core to two.
With ``--big``, the job runs again at each number of partitions over **one big cluster** of the
same topic-broker pairs (1 cluster x 10 x ``--clusters`` brokers x 10,000 topics, the same
producers and sends), staged the same way: ``big_cluster_ratio`` is its processing time per
second of traffic over the fleet's, at the largest number of partitions.
Rates are over the batches after the first ``--warm`` seconds (every broker's first
registration). Records the section ``state_partitions`` of ``benchmarks/results/latest.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.fleet_realtime import (
    Rate,
    SecondFiles,
    bare_rate,
    full_rate,
    jvm_rss_gib,
)
from benchmarks.results import median, print_table, record
from emitter.fleet import FleetSpec, generate_fleet
from routewatch.cli import plain_text
from routewatch.settings import load
from streaming.settings import StreamingSettings
from streaming.spark.session import spark_session

CHILD_MARK = "state-partitions-result: "


def _job_rate(
    spark: SparkSession, settings: StreamingSettings, base: Path, partitions: int, first: int
) -> Rate:
    job = settings.model_copy(
        update={
            "state_partitions": partitions,
            "store_url": f"sqlite:///{base / f'p{partitions}.db'}",
        }
    )
    return full_rate(spark, job, first, base / f"p{partitions}-checkpoint")


def _staged(spec: FleetSpec, base: Path, batch_s: int) -> tuple[StreamingSettings, float]:
    """A fleet written into a spool under ``base``, every second published; the settings of a
    job over it, and its events per second of traffic."""
    settings = load(StreamingSettings, data_dir=base, max_files_per_trigger=batch_s)
    files = SecondFiles(settings.spool_dir, spec.start_ms)
    generate_fleet(spec, files.write)
    files.close()
    for second in range(spec.duration):
        files.publish(second)
    return settings, sum(files.events.values()) / spec.duration


def measure(args: argparse.Namespace, master: str, partitions: list[int]) -> dict[str, Any]:
    """Stage the fleet and measure the bare read and the job at each number of partitions (and
    over one big cluster)."""
    b = args.batch
    first = -(-args.warm // b)
    seconds = (first + -(-args.steady // b)) * b
    spec = FleetSpec(clusters=args.clusters, duration=seconds)
    out: dict[str, Any] = {"master": master}
    with tempfile.TemporaryDirectory(prefix="routewatch-partitions-") as tmp:
        base = Path(tmp)
        settings, out["events_per_s_of_traffic"] = _staged(spec, base, b)
        spark = spark_session(master, "routewatch-bench", {"spark.driver.memory": "1g"})
        spark.sparkContext.setLogLevel("ERROR")
        try:
            if not args.child:
                bare_rate(spark, settings.spool_dir, base / "cold-bare", first, b)  # (JIT)
                bare = bare_rate(spark, settings.spool_dir, base / "bare", first, b)
                out["bare_events_per_s"] = bare.per_s
                print(f"bare read: {bare.per_s:,.0f} events/s", flush=True)
            if args.warm_up:
                (base / "warm-up").mkdir()
                _job_rate(spark, settings, base / "warm-up", max(partitions), first)  # (JIT)
            for n in partitions:
                rate = _job_rate(spark, settings, base, n, first)
                out[f"job_p{n}_events_per_s"] = rate.per_s
                out[f"job_p{n}_batch_median_s"] = median(rate.durations)
                out[f"job_p{n}_parts_ms"] = rate.parts
                print(f"job, {n} state partitions: {rate.per_s:,.0f} events/s", flush=True)
            if args.big and not args.child:
                big = FleetSpec(clusters=1, brokers=spec.brokers * spec.clusters, duration=seconds)
                big_settings, out["big_events_per_s_of_traffic"] = _staged(big, base / "big", b)
                for n in partitions:
                    rate = _job_rate(spark, big_settings, base / "big", n, first)
                    out[f"big_p{n}_events_per_s"] = rate.per_s
                    out[f"big_p{n}_batch_median_s"] = median(rate.durations)
                    out[f"big_p{n}_parts_ms"] = rate.parts
                    print(f"one big cluster, {n} state partitions: {rate.per_s:,.0f} events/s")
        finally:
            out["jvm_rss_gib"] = jvm_rss_gib()
            spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--warm", type=int, default=32)
    parser.add_argument("--steady", type=int, default=30)
    parser.add_argument("--batch", type=int, default=10, help="seconds of traffic per batch")
    parser.add_argument("--partitions", default="1,2")
    parser.add_argument("--one-core", action="store_true", help="also local[1] on one core")
    parser.add_argument("--big", action="store_true", help="also one big cluster")
    parser.add_argument(
        "--no-warm-up", dest="warm_up", action="store_false", help="no unmeasured job first"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    partitions = [int(p) for p in args.partitions.split(",")]
    if args.child:
        result = measure(args, "local[1]", partitions)
        print(CHILD_MARK + json.dumps(result), flush=True)
        return
    result = measure(args, "local[2]", partitions)
    top = max(partitions)
    if args.one_core:
        child = subprocess.run(
            [
                "taskset", "-c", "0", sys.executable, "-m", "benchmarks.state_partitions",
                "--child", "--partitions", str(top), "--clusters", str(args.clusters),
                "--warm", str(args.warm), "--steady", str(args.steady),
                "--batch", str(args.batch), *([] if args.warm_up else ["--no-warm-up"]),
            ],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        (line,) = [x for x in child.stdout.splitlines() if x.startswith(CHILD_MARK)]
        result["one_core"] = json.loads(line[len(CHILD_MARK) :])
    report(result, partitions)


def report(result: dict[str, Any], partitions: list[int]) -> None:
    traffic = result["events_per_s_of_traffic"]
    bare = result["bare_events_per_s"]
    rows = [["bare read", bare, bare / traffic, "100%"]]
    for n in partitions:
        rate = result[f"job_p{n}_events_per_s"]
        rows.append([f"job, {n} state partitions", rate, rate / traffic, f"{rate / bare:.0%}"])
    one = result.get("one_core")
    top = max(partitions)
    if one:
        rate = one[f"job_p{top}_events_per_s"]
        rows.append([f"job, {top} partitions, 1 core", rate, rate / traffic, f"{rate / bare:.0%}"])
    figures: dict[str, Any] = {}
    big_traffic = result.get("big_events_per_s_of_traffic")
    for n in partitions if big_traffic else ():
        rate = result[f"big_p{n}_events_per_s"]
        rows.append([f"one big cluster, {n} partitions", rate, rate / big_traffic, "-"])
        # processing seconds per second of traffic, the big cluster's over the fleet's
        fleet_cost = traffic / result[f"job_p{n}_events_per_s"]
        figures[f"big_cluster_ratio_p{n}"] = big_traffic / rate / fleet_cost
    if big_traffic:
        figures["big_cluster_ratio"] = figures[f"big_cluster_ratio_p{top}"]
    print()
    print_table(["run", "events/s", "x real time", "of bare read"], rows)
    figures["capacity_ratio"] = result[f"job_p{top}_events_per_s"] / bare
    figures["capacity_speedup_same_run"] = (
        result[f"job_p{top}_events_per_s"] / result[f"job_p{min(partitions)}_events_per_s"]
    )
    if one:
        one_rate = one[f"job_p{top}_events_per_s"]
        figures["core_scaling"] = result[f"job_p{top}_events_per_s"] / one_rate
    print()
    for name, value in figures.items():
        print(f"{name}: {value:.2f}")
    headline = {
        k: v
        for k, v in figures.items()
        if k in ("capacity_ratio", "core_scaling", "big_cluster_ratio")
    }
    record("state_partitions", {**result, **figures}, **headline)


if __name__ == "__main__":
    main()
