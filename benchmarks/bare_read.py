"""The bare read: the spool's text source and stage 1 (parse and validate) into Spark's no-op
sink — the denominator of the ceiling and capacity ratios — and the steady rate of any query
from its progress.

    .venv/bin/python -m benchmarks.bare_read --spool DIR [--batch 10] [--first 4]

Run as a module, the read of every file of ``--spool`` (``--batch`` of them per micro-batch)
in a Spark session (``local[2]``) and a JVM of its own, once unmeasured (the JIT) and once
measured over the batches from ``--first``; prints its rate as JSON after
:data:`CHILD_MARK`. Run in the environment of an earlier revision
(:func:`benchmarks.revisions.environment`, as ``benchmarks.state_partitions`` runs it), it
reads with that revision's stage 1: issue 38 measures the job against the read of the design before
it, which did less (no block summaries, priors, topics or held forms), so that work moved into
the read stage does not flatter the ratio. Each revision reads the spool as its job does: with
Spark's text source until 2026-12-05, then with the files read in the read stage's Python
(``streaming.sources.spool.read_lines``). This module imports only what every revision since
2026-11-28 has: ``read_events`` and ``spark_session`` (and the spool's reading, as it finds it).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from benchmarks.results import median
from streaming.spark.session import spark_session
from streaming.stages.read import read_events

__all__ = [
    "CHILD_MARK",
    "Rate",
    "bare_rate",
    "drained_rate",
    "noop_rate",
    "read_frame",
    "steady_rate",
]

CHILD_MARK = "bare-read-result: "


@dataclass
class Rate:
    """Events per second of processing time over the steady batches, and their durations."""

    events: int = 0
    seconds: float = 0.0
    durations: list[float] = field(default_factory=list)
    # per part of a batch (Spark's durationMs, and the stateful operator's update and commit
    # times), its median over the batches, in ms
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def per_s(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


STATE_PARTS = ("allUpdatesTimeMs", "commitTimeMs")


def input_rows(progress: dict[str, Any]) -> int:
    """The lines a batch read, from its progress (``streaming.job.progress.input_lines``; in a
    revision without it, Spark's ``numInputRows``: its sources' rows were lines)."""
    try:
        from streaming.job.progress import input_lines
    except ImportError:
        return int(progress["numInputRows"])
    return input_lines(progress)


def steady_rate(progress: Sequence[Any], first_batch: int) -> Rate:
    rate = Rate()
    parts: dict[str, list[float]] = {}
    for p in progress:
        if p["batchId"] >= first_batch and input_rows(p):
            seconds = p["durationMs"]["triggerExecution"] / 1000
            rate.events += input_rows(p)
            rate.seconds += seconds
            rate.durations.append(seconds)
            for name, ms in p["durationMs"].items():
                parts.setdefault(name, []).append(ms)
            for op in p["stateOperators"]:
                for name in STATE_PARTS:
                    parts.setdefault(f"state.{name}", []).append(op[name])
    rate.parts = {name: median(values) for name, values in sorted(parts.items())}
    return rate


def read_frame(spark: SparkSession, spool: Path, batch_s: int) -> DataFrame:
    """Stage 1 over the spool, read as this revision's job reads it."""
    try:
        from streaming.sources.spool import read_lines, spool_files
    except ImportError:  # (a revision of 2026-12-05 or before: Spark's text source)
        from streaming.sources.spool import file_lines  # type: ignore[attr-defined]

        reader = spark.readStream.format("text")
        text = reader.option("maxFilesPerTrigger", batch_s).load(str(spool))
        return read_events(file_lines(text))
    from streaming.stages.read import LINES_READ, READ_METRICS

    events = read_events(spool_files(spark, spool, batch_s), lines_of=read_lines)
    # (the source's rows are files: the lines are counted as the job counts them)
    return events.observe(READ_METRICS, F.count("value").alias(LINES_READ))


def drained_rate(query: StreamingQuery, first_batch: int) -> Rate:
    """The steady rate of ``query`` once it has taken in everything there is; stops it."""
    query.processAllAvailable()
    progress = list(query.recentProgress)
    query.stop()
    return steady_rate(progress, first_batch)


def noop_rate(frame: DataFrame, checkpoint: Path, first_batch: int) -> Rate:
    query = frame.writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start()
    return drained_rate(query, first_batch)


def bare_rate(
    spark: SparkSession, spool: Path, checkpoint: Path, first_batch: int, batch_s: int = 1
) -> Rate:
    """Phase 1: text source + parse and validate, into the no-op sink, ``batch_s`` seconds of
    traffic per batch."""
    return noop_rate(read_frame(spark, spool, batch_s), checkpoint, first_batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spool", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=10, help="files per micro-batch")
    parser.add_argument("--first", type=int, default=0, help="the first measured batch")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    spark = spark_session(args.master, "routewatch-bench", {"spark.driver.memory": "1g"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with tempfile.TemporaryDirectory(prefix="routewatch-bare-") as tmp:
            bare_rate(spark, args.spool, Path(tmp) / "cold", args.first, args.batch)  # (JIT)
            rate = bare_rate(spark, args.spool, Path(tmp) / "measured", args.first, args.batch)
    finally:
        spark.stop()
    print(CHILD_MARK + json.dumps(asdict(rate) | {"events_per_s": rate.per_s}), flush=True)


if __name__ == "__main__":
    main()
