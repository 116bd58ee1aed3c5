"""The job's throughput at capacity with its state over one task and over several: how much the
state buckets (issue 38) gain, how the job grows with cores, and what one big cluster costs.

    .venv/bin/python -m benchmarks.state_partitions [--clusters 10] [--warm 32] [--steady 60]
        [--batch 10] [--partitions 1,2] [--one-core] [--big] [--repeat 1] [--cluster-shards 0]
        [--baseline c062ce8] [--no-record]

The reference fleet (``emitter.fleet``) is written as one spool file per second of traffic and
published whole (with ``--big``, also **one big cluster** of the same topic-broker pairs: 1
cluster x 10 x ``--clusters`` brokers x 10,000 topics, the same producers and sends). Then,
each over the same files with a checkpoint and a store of its own, ``--batch`` seconds of
traffic per micro-batch (as the job takes in a backlog):

1. the bare read (text source + stage 1 into the no-op sink; ``benchmarks.bare_read``), each in
   a process and a JVM of its own (``local[2]``), once unmeasured to warm the JIT, then
   measured: first with the stage 1 of ``--baseline`` (the design before issue 38, c062ce8 by
   default: :mod:`benchmarks.revisions`), the denominator of ``capacity_ratio`` as the issue
   defines it — its read only validated, while this checkout's also gives each event its
   prior, topic and held form, work moved out of the stateful stage that would flatter the
   ratio —, then with this checkout's (``capacity_ratio_to_this_read``, in the section);
2. the job (``start_stream``: route tables, alerts, the SQLite store) with each number of state
   partitions of ``--partitions`` (``ROUTEWATCH_STATE_PARTITIONS``; 1 is the whole stream in
   one task, the design before the buckets), over the fleet and then over the big cluster,
   **each run in a process and a JVM of its own** (``local[2]``), as ``routewatch stream`` runs
   one job per JVM. Run one after the other in one JVM, the same job's batches moved by up to
   1.9x with what the queries before it had left (2026-12-03: the big cluster 3.16 s per batch
   as the JVM's first job and 5.25 s as its third, the fleet 6.13 s as its second and 3.31 s
   as its fourth), which is what made ``big_cluster_ratio`` swing between runs.
   ``--repeat`` runs the bare reads and every job that many times, in rounds, and takes each
   one's median; ``capacity_ratio`` is the median of the rounds' ratios, each round's job over
   the same round's denominator.
   ``--cluster-shards`` is every job's ``ROUTEWATCH_CLUSTER_SHARDS`` (0, the default: as many
   shards per cluster as partitions; 1: each cluster whole in one task).

With ``--one-core``, the job with the largest number of partitions runs once more over the
fleet pinned to one core (``taskset -c 0``, ``local[1]``): the scaling from one core to two
(``core_scaling``), and the share of a batch that stays serial as that scaling implies it
(``serial_share`` = 2 / ``core_scaling`` - 1, Karp and Flatt's serial fraction on two cores).
``big_cluster_ratio`` is the big cluster's processing time per second of traffic over the
fleet's, at the largest number of partitions. Rates are over the batches after the first
``--warm`` seconds (every broker's first registration). Records the section
``state_partitions`` of ``benchmarks/results/latest.json`` (with ``--cluster-shards`` other than
0, ``state_partitions_shards_<n>``, and no headline figure).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bare_read import CHILD_MARK as BARE_MARK
from benchmarks.bare_read import Rate
from benchmarks.fleet_realtime import SecondFiles, full_rate, jvm_rss_gib
from benchmarks.results import median, print_table, record
from benchmarks.revisions import BASELINE, checkout, environment
from emitter.fleet import FleetSpec, generate_fleet
from routewatch.cli import plain_text
from routewatch.settings import load
from streaming.settings import StreamingSettings
from streaming.spark.session import spark_session

CHILD_MARK = "state-partitions-result: "


def _settings(data_dir: Path, batch_s: int) -> StreamingSettings:
    return load(StreamingSettings, data_dir=data_dir, max_files_per_trigger=batch_s)


def job_settings(
    data_dir: Path, batch_s: int, partitions: int, store_dir: Path, shards: int = 0
) -> StreamingSettings:
    """The job over the spool of ``data_dir`` with ``partitions`` state partitions, ``shards``
    per cluster (0: as many as partitions) and its store in ``store_dir``."""
    return _settings(data_dir, batch_s).model_copy(
        update={
            "state_partitions": partitions,
            "cluster_shards": shards,
            "store_url": f"sqlite:///{store_dir / 'store.db'}",
        }
    )


def child_result(
    module: str,
    argv: list[str],
    mark: str,
    prefix: tuple[str, ...] = (),
    tree: Path | None = None,
) -> Any:
    """Run ``python -m <module> <argv>`` (after ``prefix``, e.g. ``taskset``) in a process of its
    own, over the packages of ``tree`` (:mod:`benchmarks.revisions`; None: this checkout's); the
    JSON it printed after ``mark``."""
    command = [*prefix, sys.executable, "-m", module, *argv]
    env, cwd = environment(tree)
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=cwd)
    (line,) = [x for x in done.stdout.splitlines() if x.startswith(mark)]
    return json.loads(line[len(mark) :])


def _staged(spec: FleetSpec, data_dir: Path, batch_s: int) -> float:
    """A fleet written into the spool of ``data_dir``, every second published; its events per
    second of traffic."""
    files = SecondFiles(_settings(data_dir, batch_s).spool_dir, spec.start_ms)
    generate_fleet(spec, files.write)
    files.close()
    for second in range(spec.duration):
        files.publish(second)
    return sum(files.events.values()) / spec.duration


def _batches(args: argparse.Namespace) -> tuple[int, int]:
    """The first measured batch, and the seconds of traffic to stage."""
    first = -(-args.warm // args.batch)
    return first, (first + -(-args.steady // args.batch)) * args.batch


def job_run(args: argparse.Namespace) -> dict[str, Any]:
    """(In a child process.) The job over ``--data-dir`` with ``--partitions`` state
    partitions, in a Spark session of its own."""
    first, _ = _batches(args)
    data_dir = Path(args.data_dir)
    with tempfile.TemporaryDirectory(prefix="routewatch-job-", dir=data_dir.parent) as tmp:
        job = job_settings(
            data_dir, args.batch, int(args.partitions), Path(tmp), args.cluster_shards
        )
        spark = spark_session(args.master, "routewatch-bench", {"spark.driver.memory": "1g"})
        spark.sparkContext.setLogLevel("ERROR")
        try:
            rate: Rate = full_rate(spark, job, first, Path(tmp) / "checkpoint")
        finally:
            rss = jvm_rss_gib()
            spark.stop()
    return {
        "events_per_s": rate.per_s,
        "batch_median_s": median(rate.durations),
        "parts_ms": rate.parts,
        "jvm_rss_gib": rss,
    }


def _child(args: argparse.Namespace, data_dir: Path, partitions: int, one_core: bool) -> Any:
    argv = [
        "--child", "--data-dir", str(data_dir), "--partitions", str(partitions),
        "--master", "local[1]" if one_core else "local[2]",
        "--warm", str(args.warm), "--steady", str(args.steady), "--batch", str(args.batch),
        "--cluster-shards", str(args.cluster_shards),
    ]  # fmt: skip
    pin = ("taskset", "-c", "0") if one_core else ()
    return child_result("benchmarks.state_partitions", argv, CHILD_MARK, pin)


def measure(args: argparse.Namespace, partitions: list[int]) -> dict[str, Any]:
    """Stage the fleet (and the big cluster), measure the bare reads and every job, each in a
    process of its own."""
    first, seconds = _batches(args)
    spec = FleetSpec(clusters=args.clusters, duration=seconds)
    out: dict[str, Any] = {"master": "local[2]", "jobs_in_own_jvm": True, "repeat": args.repeat}
    out["baseline"] = args.baseline
    out["cluster_shards"] = args.cluster_shards or "partitions"
    inputs = {"job": spec}
    if args.big:
        inputs["big"] = FleetSpec(
            clusters=1, brokers=spec.brokers * spec.clusters, duration=seconds
        )
    with tempfile.TemporaryDirectory(prefix="routewatch-partitions-") as tmp:
        base = Path(tmp)
        for name, staged in inputs.items():
            traffic = _staged(staged, base / name, args.batch)
            out["events_per_s_of_traffic" if name == "job" else "big_events_per_s_of_traffic"] = (
                traffic
            )
        spool = _settings(base / "job", args.batch).spool_dir
        read = ["--spool", str(spool), "--batch", str(args.batch), "--first", str(first)]
        runs: dict[str, list[dict[str, Any]]] = {}
        for _ in range(args.repeat):
            for key, tree, label in (
                ("baseline_bare", checkout(args.baseline), f"{args.baseline}'s"),
                ("bare", None, "this checkout's"),
            ):
                bare = child_result("benchmarks.bare_read", read, BARE_MARK, tree=tree)
                runs.setdefault(key, []).append(bare)
                rate = bare["events_per_s"]
                print(f"bare read, {label} stage 1: {rate:,.0f} events/s", flush=True)
            for name in inputs:
                for n in partitions:
                    run = _child(args, base / name, n, one_core=False)
                    runs.setdefault(f"{name}_p{n}", []).append(run)
                    label = "job" if name == "job" else "one big cluster"
                    print(f"{label}, {n} state partitions: {run['events_per_s']:,.0f} events/s "
                          f"(batch median {run['batch_median_s']:.2f} s; JVM peak "
                          f"{run['jvm_rss_gib']:.2f} GiB)", flush=True)  # fmt: skip
            if args.one_core:
                run = _child(args, base / "job", max(partitions), one_core=True)
                runs.setdefault("one_core", []).append(run)
                print(f"job on one core: {run['events_per_s']:,.0f} events/s", flush=True)
    for key in ("baseline_bare", "bare"):
        rates = [r["events_per_s"] for r in runs.pop(key)]
        out[f"{key}_events_per_s"] = median(rates)
        out[f"{key}_events_per_s_runs"] = rates
    for key, got in runs.items():
        rates = [r["events_per_s"] for r in got]
        typical = min(got, key=lambda r: abs(r["events_per_s"] - median(rates)))
        if key == "one_core":
            out["one_core"] = {
                "master": "local[1]",
                f"job_p{max(partitions)}_events_per_s": median(rates),
                "events_per_s_runs": rates,
                "parts_ms": typical["parts_ms"],
            }
            continue
        out[f"{key}_events_per_s"] = median(rates)
        out[f"{key}_events_per_s_runs"] = rates
        out[f"{key}_batch_median_s"] = median([r["batch_median_s"] for r in got])
        out[f"{key}_parts_ms"] = typical["parts_ms"]
        out[f"{key}_jvm_rss_gib"] = max(r["jvm_rss_gib"] for r in got)
    out["jvm_rss_gib"] = max(r["jvm_rss_gib"] for got in runs.values() for r in got)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--warm", type=int, default=32)
    parser.add_argument("--steady", type=int, default=60)
    parser.add_argument("--batch", type=int, default=10, help="seconds of traffic per batch")
    parser.add_argument("--partitions", default="1,2")
    parser.add_argument("--one-core", action="store_true", help="also local[1] on one core")
    parser.add_argument("--big", action="store_true", help="also one big cluster")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each job (median)")
    parser.add_argument(
        "--cluster-shards", type=int, default=0, help="shards per cluster (0: as partitions)"
    )
    parser.add_argument(
        "--baseline",
        default=BASELINE,
        help="the revision whose stage 1 is the capacity ratio's "
        "denominator (the design before issue 38)",
    )
    parser.add_argument("--no-record", action="store_true", help="do not write latest.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--master", default="local[2]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(CHILD_MARK + json.dumps(job_run(args)), flush=True)
        return
    partitions = [int(p) for p in args.partitions.split(",")]
    report(measure(args, partitions), partitions, write=not args.no_record)


def report(result: dict[str, Any], partitions: list[int], write: bool = True) -> None:
    traffic = result["events_per_s_of_traffic"]
    bare = result["baseline_bare_events_per_s"]  # the ratios' denominator: the issue's
    now = result["bare_events_per_s"]
    rows = [
        [f"bare read, {result['baseline']}'s stage 1", bare, bare / traffic, "100%"],
        ["bare read, this checkout's stage 1", now, now / traffic, f"{now / bare:.0%}"],
    ]
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
    # each round's job over the same round's denominator, the median of them: the machine's
    # speed moves by the hour (the denominator by 14 % between two runs an hour apart)
    jobs, reads = result[f"job_p{top}_events_per_s_runs"], result["baseline_bare_events_per_s_runs"]
    rounds = zip(jobs, reads, strict=True)
    figures["capacity_ratio"] = median([job / read for job, read in rounds])
    figures["capacity_ratio_to_this_read"] = result[f"job_p{top}_events_per_s"] / now
    figures["capacity_speedup_same_run"] = (
        result[f"job_p{top}_events_per_s"] / result[f"job_p{min(partitions)}_events_per_s"]
    )
    if one:
        one_rate = one[f"job_p{top}_events_per_s"]
        figures["core_scaling"] = result[f"job_p{top}_events_per_s"] / one_rate
        # the share of a batch that does not spread over the second core, as the speed-up
        # from one core to two implies it (Karp and Flatt's serial fraction, p = 2)
        figures["serial_share"] = 2 / figures["core_scaling"] - 1
    print()
    for name, value in figures.items():
        print(f"{name}: {value:.2f}")
    for n in partitions:
        print(f"JVM peak, {n} state partitions: {result[f'job_p{n}_jvm_rss_gib']:.2f} GiB")
    if not write:
        return
    headline = {
        k: v
        for k, v in figures.items()
        if k in ("capacity_ratio", "core_scaling", "big_cluster_ratio")
    }
    if result["cluster_shards"] != "partitions":  # (not the job's default: its own section)
        record(f"state_partitions_shards_{result['cluster_shards']}", {**result, **figures})
        return
    record("state_partitions", {**result, **figures}, **headline)


if __name__ == "__main__":
    main()
