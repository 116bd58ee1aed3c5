"""The reference fleet through the streaming job: throughput, the ceiling ratio, and the highest
speed it sustains in real time.

    .venv/bin/python -m benchmarks.fleet_realtime [--clusters 10] [--warm 32] [--steady 30]
        [--speeds 0.5,1,1.5,2,3,4,5,6,7,8,9,10] [--step 30] [--capacity-batch 10]

The fleet (``emitter.fleet``: by default 10 clusters x 10 brokers x 10,000 topics, 2
NameServers, parts of 800 topics, 1,000 producers, 10,000 sends/s) is written as one spool
file per second of traffic. The phases run in one Spark session (``local[2]``, a
driver heap of ``--driver-memory``, Spark's default 1g unless given):

1. **Bare source + parse**: the spool's text source and stage 1 (``read_events``: parse and
   validate) into Spark's no-op sink, one second of traffic per micro-batch, over the first
   ``warm + steady`` seconds.
1b. **Stateful floor**: the same events, grouped as the job groups them (one group), through
   Spark's ``transformWithStateInPandas`` with a processor that does nothing but count its
   rows (no state, no rules, no store), into the no-op sink: what Spark itself costs around a
   stateful processor written in Python (the shuffle, the state server, Arrow to pandas and
   back). Its rate over the bare rate, the **floor ratio**, is the highest ceiling ratio any
   processor could reach in this design on this machine.
2. **Full pipeline**: the job itself (``start_stream`` over the spool: route tables, alerts,
   the SQLite store), one second of traffic per micro-batch, over the same files. The first 30
   seconds hold every broker's first full registration (10,000 topics each), which the job
   applies up to the lateness bound (2 s) later: ``warm`` is 32 by default. The rate is measured
   on the ``steady`` seconds after them, for both phases, so the **ceiling ratio** is
   the full pipeline's rate over the bare rate on the same events, measured in the same run.
   After phase 3, phases 1, 1b and 2 again with ``--capacity-batch`` seconds of traffic per
   batch (10 by default), as the job takes in a backlog, each with a checkpoint (and for the
   job, a store) of its own: the **ratio at capacity**, where Spark's per-batch steps and the state
   store's commit weigh less and the per-event costs decide.
   Phases 1, 1b and 2 first run once unmeasured, each with a checkpoint (and for the job, a
   store) of its own (``--no-warm-up`` skips this): the first phase of a new JVM runs
   slower while the JIT compiles Spark's code (the bare read 15-30 % slower on this machine),
   which would flatter whichever ratio has it in the denominator.
3. **Real time**: the same job, restarted on its checkpoint with a 1 s trigger (and given one
   second of traffic, not judged, to load its state), while a writer
   publishes the following seconds of traffic at ``speed`` seconds of traffic per wall-clock
   second, ``step`` seconds per speed, speeds rising until the job falls behind. A speed is
   sustained when the job has taken in everything published within ``drain`` seconds (1: the
   trigger) plus two of the step's median batch durations (the batch running when the last
   file lands, then its own) of the step's last publish: its lag did not grow over the step.
   Reports per speed the events/s and MB/s offered, the median batch duration, how
   long after the last publish the job had taken everything in (its lag at the end of the
   step), or how many seconds of traffic it was behind.

4. **Real time by state partitions** (``--compare-partitions 1,2``, issue 38): phase 3 again for
   each number of stateful tasks (``ROUTEWATCH_STATE_PARTITIONS``), one after the other in the
   same session, each on a spool of its own holding the same files (hard links) and a checkpoint
   of its own, first brought up to the measured seconds in batches of one second (unmeasured).
   One partition is the job on one stateful task, as before state buckets (it keeps this
   version's compact sends and block summaries). Its figure, ``partitions_speedup_same_run``
   (in the section), is the highest sustained speed with the most partitions over the one with
   the fewest; the headline ``fleet_speedup_same_run``, against the design before issue 38, is
   ``benchmarks.design_speedup``'s.

Records ``ceiling_ratio`` (one second of traffic per batch; the floor ratio and the ratios at
capacity are in the section) in ``benchmarks/results/latest.json``, section ``fleet``, with
``max_speed`` (the highest speed sustained in this benchmark's own session; 0 if none — the
headline ``fleet_max_speed`` is ``benchmarks.design_speedup``'s, the job as an operator runs
it, beside the design before issue 38), with ``jvm_rss_gib_all_queries`` (the
Spark JVM's peak resident memory, VmHWM, over the whole run: every phase's queries and their
state stores in one JVM); with ``--compare-partitions``, also the section's ``by_partitions``
and ``partitions_speedup_same_run``.

**One job** (``--one-job``): what an operator's ``routewatch stream`` holds — the job alone in a
JVM of its own, brought up to the measured seconds in batches of one second of traffic (not
measured), then phase 3 at ``--speeds``. Records ``jvm_rss_gib`` (its JVM's VmHWM) and its steps
in the section ``fleet_one_job``. ``--native-memory`` (either mode) starts the JVM with Native
Memory Tracking and records its committed memory by category at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming.stateful_processor import (
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from benchmarks.bare_read import (
    Rate,
    bare_rate,
    drained_rate,
    input_rows,
    noop_rate,
    read_frame,
    steady_rate,
)
from benchmarks.results import median, print_table, record
from emitter.fleet import FleetSpec, generate_fleet
from routewatch.changes import Count, encode_count
from routewatch.cli import plain_text
from routewatch.settings import load
from streaming.job.progress import QueryEvents, add_query_events
from streaming.job.stream import start_stream
from streaming.pipeline import by_bucket
from streaming.settings import StreamingSettings
from streaming.spark.session import spark_session
from streaming.stages.track import CHANGES_SCHEMA, changes_frame

STAGED = ".staged"


class SecondFiles:
    """Writes the fleet into one staged file per second of traffic (``<dir>/.staged/``); each
    is published into the spool later by :func:`publish` (a rename, with a modification time
    later than every earlier file's)."""

    def __init__(self, spool: Path, start_ms: int) -> None:
        self.spool, self.start_ms = spool, start_ms
        (spool / STAGED).mkdir(parents=True)
        self.second = -1
        self.handle: IO[bytes] | None = None
        self.events: dict[int, int] = {}
        self.bytes: dict[int, int] = {}

    def write(self, line: bytes) -> None:
        at = line.index(b'"ts":') + 5
        second = (int(line[at : line.index(b",", at)]) - self.start_ms) // 1000
        if second != self.second:
            self.close()
            self.second = second
            self.handle = self.staged(second).open("wb")
        assert self.handle is not None
        self.handle.write(line + b"\n")
        self.events[second] = self.events.get(second, 0) + 1
        self.bytes[second] = self.bytes.get(second, 0) + len(line) + 1

    def staged(self, second: int) -> Path:
        return self.spool / STAGED / f"{second:06d}.jsonl"

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def publish(self, second: int) -> None:
        mtime = 1_800_000_000 + second
        staged = self.staged(second)
        os.utime(staged, (mtime, mtime))
        staged.rename(self.spool / f"{second:06d}.jsonl")

    def linked_copy(self, spool: Path) -> SecondFiles:
        """The same seconds in another spool, as hard links: those published here published
        there, the others staged (publishing one sets the mtime both names share to the value
        either would set)."""
        copy = SecondFiles(spool, self.start_ms)
        copy.events, copy.bytes = self.events, self.bytes
        for second in self.events:
            staged = self.staged(second)
            if staged.exists():
                os.link(staged, copy.staged(second))
            else:
                os.link(self.spool / f"{second:06d}.jsonl", spool / f"{second:06d}.jsonl")
        return copy


def spark_processes() -> Iterator[tuple[str, int, Path]]:
    """``(group, pid, /proc/<pid>)`` of the Spark JVM (``jvm``) and its Python workers (every
    ``pyspark.daemon`` process, the read stage's and the stateful stage's: ``python``) on this
    machine (this process's, as the benchmarks run nothing else)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        proc = Path("/proc", pid)
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"pyspark.daemon" in cmdline:
            yield "python", int(pid), proc
        elif b"java" in cmdline.split(b"\0")[0] and b"spark" in cmdline:
            yield "jvm", int(pid), proc


def jvm_rss_gib() -> float:
    """Peak resident memory (VmHWM) of this process's Spark JVM."""
    peak = 0
    for group, _, proc in spark_processes():
        if group != "jvm":
            continue
        try:
            status = (proc / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]))
    return peak / 1024 / 1024


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) used so far by each of :func:`spark_processes`, keyed
    ``group:pid``."""
    out: dict[str, float] = {}
    for group, pid, proc in spark_processes():
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # (after the command, which may hold spaces)
        out[f"{group}:{pid}"] = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    return out


def cores_used(before: dict[str, float], after: dict[str, float], wall: float) -> dict[str, float]:
    """Cores the JVM and the Python workers used between two :func:`cpu_seconds` (a process
    that ended meanwhile is not counted; one that started counts from zero)."""
    used = {"jvm": 0.0, "python": 0.0}
    for key, seconds in after.items():
        used[key.split(":")[0]] += seconds - before.get(key, 0.0)
    return {group: round(total / wall, 3) for group, total in used.items()}


NMT_OPTION = "-XX:NativeMemoryTracking=summary"
_NMT_LINE = re.compile(r"^-\s+(?P<name>[^(]+?)\s+\(reserved=\d+KB, committed=(?P<kb>\d+)KB\)")


def native_memory_mib() -> dict[str, float]:
    """The Spark JVM's committed memory by the JVM's own categories (Native Memory Tracking,
    ``jcmd <pid> VM.native_memory summary``; the JVM must run with :data:`NMT_OPTION`), in MiB;
    empty if it cannot be read. Native memory the JVM does not allocate itself (RocksDB's, in
    "Other" only when allocated through the JVM) and malloc's arenas are not in it."""
    for pid in (pid for group, pid, _ in spark_processes() if group == "jvm"):
        out = subprocess.run(
            ["jcmd", str(pid), "VM.native_memory", "summary"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        found = {}
        for line in out.stdout.splitlines():
            total = re.match(r"^Total: reserved=\d+KB, committed=(\d+)KB", line.strip())
            if total:
                found["Total"] = int(total.group(1)) / 1024
            m = _NMT_LINE.match(line.strip())
            if m:
                found[m.group("name")] = int(m.group("kb")) / 1024
        if found:
            return found
    return {}


class CountingProcessor(StatefulProcessor):
    """A stateful processor that does none of routewatch's work: it declares no state and
    yields one row per group and batch, the number of rows it was given."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        pass

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        count = sum(len(frame) for frame in rows)
        yield changes_frame([encode_count(str(key[0]), Count("rows", "", count, None))])

    def close(self) -> None:
        pass


def floor_rate(
    spark: SparkSession, spool: Path, checkpoint: Path, first_batch: int, batch_s: int = 1
) -> Rate:
    """Phase 1b, the floor of a Python stateful stage: phase 1's events grouped as the job
    groups them, through Spark's ``transformWithStateInPandas`` with
    :class:`CountingProcessor`, into the no-op sink. What Spark itself costs around a stateful
    processor written in Python (the shuffle, the state server, Arrow to pandas and back)
    with none of routewatch's work: no state, no rules, no store."""
    counted = by_bucket(read_frame(spark, spool, batch_s)).transformWithStateInPandas(
        statefulProcessor=CountingProcessor(),
        outputStructType=CHANGES_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )
    return noop_rate(counted, checkpoint, first_batch)


def full_rate(
    spark: SparkSession,
    settings: StreamingSettings,
    first_batch: int,
    checkpoint: Path | None = None,
) -> Rate:
    """Phase 2: the job, ``settings.max_files_per_trigger`` seconds of traffic per batch."""
    return drained_rate(start_stream(spark, settings, "spool", checkpoint), first_batch)


def ratio_phases(
    spark: SparkSession,
    settings: StreamingSettings,
    base: Path,
    warm: int,
    *,
    label: str = "",
    batch_s: int = 1,
    own_job: bool = True,
) -> tuple[Rate, Rate, Rate]:
    """Phases 1, 1b and 2 over the first ``warm + steady`` seconds, ``batch_s`` seconds of
    traffic per batch, each with a checkpoint of its own under ``base``. With ``own_job``
    the job has a checkpoint and a store there too; without, it has the settings' own, which
    the real-time phase resumes. (At ``batch_s`` > 1, as the job takes in a backlog, the
    per-batch costs weigh less, so the ratio is that of the per-event costs.)"""
    first_batch = -(-warm // batch_s)
    base.mkdir(parents=True, exist_ok=True)
    bare = bare_rate(spark, settings.spool_dir, base / "bare-checkpoint", first_batch, batch_s)
    print(f"{label}bare source + parse: {bare.per_s:,.0f} events/s", flush=True)
    floor = floor_rate(spark, settings.spool_dir, base / "floor-checkpoint", first_batch, batch_s)
    print(f"{label}stateful floor: {floor.per_s:,.0f} events/s", flush=True)
    update: dict[str, Any] = {"max_files_per_trigger": batch_s}
    if own_job:
        update["store_url"] = f"sqlite:///{base / 'full.db'}"
    job = settings.model_copy(update=update)
    full = full_rate(spark, job, first_batch, base / "full-checkpoint" if own_job else None)
    print(f"{label}full pipeline: {full.per_s:,.0f} events/s", flush=True)
    return bare, floor, full


@dataclass
class Step:
    speed: float
    offered_events_per_s: float
    offered_mb_per_s: float
    batch_median_s: float
    drain_s: float | None  # wall time from the last publish until all of it was taken in
    backlog_s: float  # seconds of traffic published but not yet taken in, at the judgement
    sustained: bool
    # per part of a batch, its median over the step's batches (as Rate.parts), in ms
    parts_median_ms: dict[str, float] = field(default_factory=dict)
    # cores used from the step's first publish to its judgement: the JVM's, the Python workers'
    cores: dict[str, float] = field(default_factory=dict)


class Progress:
    """One query's batches as Spark's listener reports them (``streaming.job.progress``), so that
    the real-time phase can wait for them without asking the JVM: ``query.recentProgress``
    costs a py4j round trip per batch retained, every time, while the job is being judged."""

    def __init__(self) -> None:
        self.query_id: str | None = None
        self.batches: list[dict[str, Any]] = []
        self.changed = threading.Condition()

    def progress(self, progress: dict[str, Any]) -> None:
        with self.changed:
            if progress["id"] == self.query_id:
                self.batches.append(progress)
                self.changed.notify_all()

    def terminated(self, query_id: str, exception: str | None) -> None:
        pass

    def durations(self, first_batch: int) -> list[float]:
        """Seconds taken by each batch with input since ``first_batch``."""
        with self.changed:
            return [
                p["durationMs"]["triggerExecution"] / 1000
                for p in self.batches
                if p["batchId"] >= first_batch and input_rows(p)
            ]

    def parts(self, first_batch: int) -> dict[str, float]:
        """The median of each part of the batches with input since ``first_batch``, in ms."""
        with self.changed:
            return steady_rate(list(self.batches), first_batch).parts

    def next_batch(self) -> int:
        with self.changed:
            return int(self.batches[-1]["batchId"]) + 1 if self.batches else 0

    def wait_taken(self, first_batch: int, rows: int, deadline: float) -> int:
        """Rows taken in since ``first_batch``, once at least ``rows`` or at ``deadline``
        (``time.monotonic``)."""
        with self.changed:
            while True:
                taken = sum(input_rows(p) for p in self.batches if p["batchId"] >= first_batch)
                left = deadline - time.monotonic()
                if taken >= rows or left <= 0:
                    return taken
                self.changed.wait(left)


def realtime_step(
    progress: Progress, files: SecondFiles, seconds: list[int], speed: float, drain_s: float
) -> Step:
    """Publish ``seconds`` at ``speed``, then give the job ``drain_s`` to take in the rest."""
    first_batch = progress.next_batch()
    published = 0
    cpu = cpu_seconds()
    started = time.monotonic()
    for i, second in enumerate(seconds):
        left = started + i / speed - time.monotonic()
        if left > 0:
            time.sleep(left)
        files.publish(second)
        published += files.events[second]
    last = time.monotonic()
    # the last file waits at most for the batch running when it lands, then its own batch
    allowed = drain_s + 2 * median(progress.durations(first_batch) or [0.0])
    taken = progress.wait_taken(first_batch, published, last + allowed)
    cores = cores_used(cpu, cpu_seconds(), time.monotonic() - started)
    durations = progress.durations(first_batch)  # (with the ones that took in the step's end)
    drained = taken >= published
    per_second = statistics.mean(files.events[s] for s in seconds)
    wall = len(seconds) / speed
    return Step(
        speed=speed,
        offered_events_per_s=published / wall,
        offered_mb_per_s=sum(files.bytes[s] for s in seconds) / wall / 1e6,
        batch_median_s=median(durations),
        drain_s=time.monotonic() - last if drained else None,
        backlog_s=max(published - taken, 0) / per_second,
        sustained=drained,
        parts_median_ms=progress.parts(first_batch),
        cores=cores,
    )


def realtime(
    spark: SparkSession,
    settings: StreamingSettings,
    files: SecondFiles,
    first: int,
    speeds: list[float],
    step_s: float,
    drain_s: float,
) -> list[Step]:
    """Phase 3: the job with a 1 s trigger, fed at rising speeds until it falls behind."""
    live = settings.model_copy(update={"max_files_per_trigger": None, "trigger_interval_s": 1.0})
    progress = Progress()
    listener = add_query_events(spark, QueryEvents(progress.progress, progress.terminated))
    query = start_stream(spark, live, "spool")
    with progress.changed:
        progress.query_id = str(query.id)
    # one second of traffic, not judged: the restarted query's first batch loads its state
    files.publish(first)
    progress.wait_taken(0, files.events[first], time.monotonic() + 300)
    try:
        return ramp(progress, files, first + 1, speeds, step_s, drain_s)
    finally:
        query.stop()
        spark.streams._jsqm.removeListener(listener)


def highest_sustained(steps: list[Step]) -> float:
    """The highest speed the job sustained among ``steps`` (0 if none)."""
    return max((s.speed for s in steps if s.sustained), default=0.0)


def ramp(
    progress: Progress,
    files: SecondFiles,
    second: int,
    speeds: list[float],
    step_s: float,
    drain_s: float,
) -> list[Step]:
    """The seconds from ``second`` on, ``step_s`` wall seconds at each of ``speeds``, until the
    job falls behind (:func:`realtime_step`); printed as they end."""
    steps: list[Step] = []
    for speed in speeds:
        count = max(round(step_s * speed), 1)
        seconds = list(range(second, second + count))
        step = realtime_step(progress, files, seconds, speed, drain_s)
        second += count
        steps.append(step)
        print(
            f"  speed {speed:g}x: {step.offered_events_per_s:,.0f} events/s offered, "
            f"batch median {step.batch_median_s:.2f} s, cores used: JVM "
            f"{step.cores['jvm']:.2f}, Python workers {step.cores['python']:.2f}, "
            + (
                f"drained {step.drain_s:.1f} s after the last second was published"
                if step.drain_s is not None
                else f"{step.backlog_s:.1f} s of traffic behind: falls behind"
            ),
            flush=True,
        )
        if not step.sustained:
            break
    return steps


def by_partitions(
    spark: SparkSession,
    files: SecondFiles,
    base: Path,
    measured: int,
    partitions: list[int],
    args: argparse.Namespace,
    speeds: list[float],
) -> dict[int, list[Step]]:
    """Phase 4: phase 3 for each number of state partitions, each on a linked copy of the
    spool and a checkpoint of its own, first brought up to ``measured`` (unmeasured)."""
    out: dict[int, list[Step]] = {}
    for count in partitions:
        settings = load(
            StreamingSettings,
            data_dir=base / f"partitions-{count}",
            state_partitions=count,
            max_files_per_trigger=1,
            trigger_interval_s=0.1,
        )
        copy = files.linked_copy(settings.spool_dir)
        for second in range(measured):
            copy.publish(second)
        full_rate(spark, settings, 0)  # (its state, up to the measured seconds)
        print(f"real time, {count} state partition(s):", flush=True)
        out[count] = realtime(spark, settings, copy, measured, speeds, args.step, args.drain)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument(
        "--warm",
        type=int,
        default=32,
        help="seconds of traffic not measured: the first registrations, and the lateness bound",
    )
    parser.add_argument("--steady", type=int, default=30, help="seconds measured after them")
    parser.add_argument("--speeds", default="0.5,1,1.5,2,3,4,5,6,7,8,9,10")
    parser.add_argument("--step", type=float, default=30.0, help="wall seconds per speed")
    parser.add_argument(
        "--driver-memory",
        default="1g",
        help="the Spark JVM's heap (spark.driver.memory): Spark's default, as routewatch stream's",
    )
    parser.add_argument(
        "--capacity-batch",
        type=int,
        default=10,
        help="seconds of traffic per batch for the ratio at capacity (0: not measured)",
    )
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="measure phases 1, 1b and 2 on a cold JVM (by default they run once first, "
        "unmeasured: the first phase of a new JVM runs slower while its JIT compiles Spark)",
    )
    parser.add_argument(
        "--drain",
        type=float,
        default=1.0,
        help="seconds, beyond two batch durations, the job has to take in a step's end",
    )
    parser.add_argument(
        "--compare-partitions",
        default="",
        help="phase 4: the real-time phase again for each of these numbers of state partitions "
        "(e.g. 1,2), in the same session",
    )
    parser.add_argument(
        "--one-job",
        action="store_true",
        help="only the job, in a JVM of its own: brought up to the measured seconds (one "
        "second of traffic per batch, not measured), then phase 3; records the JVM's peak as a "
        "routewatch stream's (section fleet_one_job), not the other phases",
    )
    parser.add_argument(
        "--native-memory",
        action="store_true",
        help=f"start the JVM with {NMT_OPTION} and record its committed memory by category at "
        "the end (a few per cent slower)",
    )
    parser.add_argument(
        "--java-options",
        default="",
        help="more options for the benchmark's JVM, given as --java-options=-Xlog:gc:file=gc.log",
    )
    args = parser.parse_args()
    speeds = [float(s) for s in args.speeds.split(",")]
    compare = [int(p) for p in args.compare_partitions.split(",") if p]
    measured = args.warm + args.steady
    if args.capacity_batch > 1:  # whole batches of capacity_batch seconds after the warm-up
        b = args.capacity_batch
        measured = max(measured, (-(-args.warm // b) + -(-args.steady // b)) * b)
    ramp = 1 + sum(max(round(args.step * s), 1) for s in speeds)
    spec = FleetSpec(clusters=args.clusters, duration=measured + ramp)
    with tempfile.TemporaryDirectory(prefix="routewatch-fleet-") as tmp:
        settings = load(
            StreamingSettings, data_dir=Path(tmp), max_files_per_trigger=1, trigger_interval_s=0.1
        )
        files = SecondFiles(settings.spool_dir, spec.start_ms)
        generate_fleet(spec, files.write)
        files.close()
        pristine = files.linked_copy(Path(tmp) / "pristine") if compare else None
        per_s = statistics.mean(files.events[s] for s in range(args.warm, measured))
        mb_per_s = statistics.mean(files.bytes[s] for s in range(args.warm, measured)) / 1e6
        print(
            f"fleet: {spec.clusters} clusters x {spec.brokers} brokers x {spec.topics:,} topics; "
            f"steady traffic {per_s:,.0f} events/s, {mb_per_s:.1f} MB/s; "
            f"{sum(files.events.values()):,} events staged"
        )
        for second in range(measured):
            files.publish(second)
        conf = {
            "spark.driver.memory": args.driver_memory,
            "spark.sql.streaming.numRecentProgressUpdates": "2000",
        }
        options = [NMT_OPTION] if args.native_memory else []
        if args.java_options:
            options.append(args.java_options)
        if options:
            conf["spark.driver.extraJavaOptions"] = " ".join(options)
        spark = spark_session("local[2]", "routewatch-bench", conf)
        spark.sparkContext.setLogLevel("ERROR")
        if args.one_job:
            try:
                up = full_rate(spark, settings, 0)  # (its state, up to the measured seconds)
                print(f"the job, brought up: {up.per_s:,.0f} events/s (not measured)", flush=True)
                steps = realtime(spark, settings, files, measured, speeds, args.step, args.drain)
            finally:
                peak = jvm_rss_gib()
                native = native_memory_mib() if args.native_memory else {}
                spark.stop()
            report_one_job(args, per_s, steps, peak, native)
            return
        try:
            cold: tuple[Rate, Rate, Rate] | None = None
            if args.warm_up:
                cold = ratio_phases(
                    spark, settings, Path(tmp) / "cold", args.warm, label="cold JVM: "
                )
            bare, floor, full = ratio_phases(spark, settings, Path(tmp), args.warm, own_job=False)
            steps = realtime(spark, settings, files, measured, speeds, args.step, args.drain)
            # (last: the state stores of its queries stay in the JVM for a while, and would
            # weigh on the real-time phase)
            capacity: tuple[Rate, Rate, Rate] | None = None
            if args.capacity_batch > 1:
                capacity = ratio_phases(
                    spark,
                    settings,
                    Path(tmp) / "capacity",
                    args.warm,
                    label=f"{args.capacity_batch} s per batch: ",
                    batch_s=args.capacity_batch,
                )
            compared: dict[int, list[Step]] = {}
            if pristine is not None:
                compared = by_partitions(
                    spark, pristine, Path(tmp) / "compare", measured, compare, args, speeds
                )
        finally:
            peak = jvm_rss_gib()  # VmHWM: the JVM's high-water mark since it started
            native = native_memory_mib() if args.native_memory else {}
            spark.stop()
    report(
        args, per_s, mb_per_s, (bare, floor, full), cold, capacity, steps, peak, native, compared
    )


def print_steps(steps: list[Step]) -> None:
    print_table(
        [
            *("speed", "events/s offered", "MB/s", "batch median s", "drained after s"),
            *("behind s", "cores: JVM", "Python workers"),
        ],
        [
            [
                f"{s.speed:g}x",
                s.offered_events_per_s,
                s.offered_mb_per_s,
                s.batch_median_s,
                "-" if s.drain_s is None else s.drain_s,
                s.backlog_s,
                s.cores.get("jvm", "-"),
                s.cores.get("python", "-"),
            ]
            for s in steps
        ],
    )


def _print_native(native: dict[str, float]) -> None:
    if native:
        print("\nthe JVM's committed memory by category (Native Memory Tracking), MiB:")
        rows = sorted(native.items(), key=lambda kv: kv[1], reverse=True)
        print_table(["category", "MiB"], [list(row) for row in rows])


def report_one_job(
    args: argparse.Namespace,
    per_s: float,
    steps: list[Step],
    peak_gib: float,
    native: dict[str, float],
) -> None:
    """``--one-job``: the real-time steps and the JVM's peak, as one routewatch stream's."""
    max_speed = highest_sustained(steps)
    print()
    print_steps(steps)
    _print_native(native)
    print(
        f"\none job in its JVM: highest sustained speed {max_speed:g}x; JVM peak RSS "
        f"{peak_gib:.2f} GiB (target <= 2 GiB)"
    )
    record(
        "fleet_one_job",
        {
            "clusters": args.clusters,
            "driver_memory": args.driver_memory,
            "steady_traffic_events_per_s": per_s,
            "steps": [vars(s) for s in steps],
            "max_speed": max_speed,
            "native_memory_mib": native or None,
        },
        jvm_rss_gib=round(peak_gib, 2),
    )


PHASES = ("bare source + parse", "stateful floor", "full pipeline")


def _ratio(rate: Rate, bare: Rate) -> float:
    return rate.per_s / bare.per_s if bare.per_s else 0.0


def report(
    args: argparse.Namespace,
    per_s: float,
    mb_per_s: float,
    rates: tuple[Rate, Rate, Rate],
    cold: tuple[Rate, Rate, Rate] | None,
    capacity: tuple[Rate, Rate, Rate] | None,
    steps: list[Step],
    peak_gib: float,
    native: dict[str, float],
    compared: dict[int, list[Step]],
) -> None:
    bare, floor, full = rates
    ratio, floor_ratio = _ratio(full, bare), _ratio(floor, bare)
    phases = [("", rates)]
    if cold is not None:
        phases.insert(0, (" (cold JVM, not measured)", cold))
    if capacity is not None:
        phases.append((f" ({args.capacity_batch} s per batch)", capacity))
    max_speed = highest_sustained(steps)
    print()
    print_table(
        ["phase", "events/s", "x real time", "of bare", "batch median s", "batch max s"],
        [
            [
                name + suffix,
                rate.per_s,
                rate.per_s / per_s,
                f"{_ratio(rate, these[0]):.0%}",
                median(rate.durations),
                max(rate.durations, default=0.0),
            ]
            for suffix, these in phases
            for name, rate in zip(PHASES, these, strict=True)
        ],
    )
    print("\nmedian batch, by part (ms): Spark's durationMs, and the stateful operator's")
    names = sorted(set(bare.parts) | set(floor.parts) | set(full.parts))
    print_table(
        ["part", *PHASES],
        [[name, *(rate.parts.get(name, "-") for rate in rates)] for name in names],
    )
    print()
    print_steps(steps)
    _print_native(native)
    at_capacity = _ratio(capacity[2], capacity[0]) if capacity else None
    floor_at_capacity = _ratio(capacity[1], capacity[0]) if capacity else None
    if capacity is not None:
        print(
            f"\nceiling ratio at {args.capacity_batch} s per batch: {at_capacity:.0%} "
            f"(stateful floor {floor_at_capacity:.0%})"
        )
    print(
        f"\nceiling ratio {ratio:.0%} (target >= 50 %; the stateful floor, Spark's own work "
        f"around a Python stateful processor that does nothing: {floor_ratio:.0%}); highest "
        f"sustained speed {max_speed:g}x (target >= 1x); JVM peak RSS {peak_gib:.2f} GiB "
        "over every phase's queries (one job's: --one-job)"
    )
    by_count = {count: highest_sustained(these) for count, these in compared.items()}
    speedup = None
    if len(by_count) > 1:
        fewest, most = by_count[min(by_count)], by_count[max(by_count)]
        speedup = round(most / fewest, 2) if fewest else 0.0
        print(
            "\nhighest sustained speed by state partitions, same run: "
            + ", ".join(f"{c}: {v:g}x" for c, v in sorted(by_count.items()))
            + f" -> {speedup:g}x"
        )
    record(
        "fleet",
        {
            "clusters": args.clusters,
            "driver_memory": args.driver_memory,
            "bare_batch_parts_median_ms": bare.parts,
            "floor_batch_parts_median_ms": floor.parts,
            "full_batch_parts_median_ms": full.parts,
            "steady_traffic_events_per_s": per_s,
            "steady_traffic_mb_per_s": mb_per_s,
            "bare_events_per_s": bare.per_s,
            "floor_events_per_s": floor.per_s,
            "full_events_per_s": full.per_s,
            "floor_ratio": round(floor_ratio, 3),
            "warm_up": args.warm_up,
            "cold_bare_events_per_s": cold[0].per_s if cold else None,
            "cold_floor_events_per_s": cold[1].per_s if cold else None,
            "cold_full_events_per_s": cold[2].per_s if cold else None,
            "full_batch_median_s": median(full.durations),
            "full_x_real_time": full.per_s / per_s,
            "steps": [vars(s) for s in steps],
            "capacity_batch_s": args.capacity_batch if capacity else None,
            "capacity_bare_events_per_s": capacity[0].per_s if capacity else None,
            "capacity_floor_events_per_s": capacity[1].per_s if capacity else None,
            "capacity_full_events_per_s": capacity[2].per_s if capacity else None,
            "capacity_bare_batch_parts_median_ms": capacity[0].parts if capacity else None,
            "capacity_floor_batch_parts_median_ms": capacity[1].parts if capacity else None,
            "capacity_full_batch_parts_median_ms": capacity[2].parts if capacity else None,
            "ceiling_ratio_at_capacity": round(at_capacity, 3) if at_capacity else None,
            "floor_ratio_at_capacity": round(floor_at_capacity, 3) if floor_at_capacity else None,
            "max_speed": max_speed,
            "max_speed_events_per_s": max_speed * per_s,
            "max_speed_mb_per_s": max_speed * mb_per_s,
            "by_partitions": {
                str(count): {"max_speed": by_count[count], "steps": [vars(s) for s in these]}
                for count, these in compared.items()
            }
            or None,
            "partitions_speedup_same_run": speedup,
            "jvm_rss_gib_all_queries": round(peak_gib, 2),
            "native_memory_mib": native or None,
        },
        ceiling_ratio=round(ratio, 3),
    )


if __name__ == "__main__":
    main()
