"""A prototype for issue 38's design: two chained ``transformWithStateInPandas`` operators in one
streaming query on the pinned PySpark, without event time, and what they do.

    .venv/bin/python -m benchmarks.chained_state [--batches 6] [--rows 4000] [--partitions 1,2,4,8]

Stage 1 is keyed by cluster (the cluster-wide facts' owner in the design): it numbers each
cluster's rows in its own arrival order (a counter in a ``ValueState``) and gives each a bucket
(the topic's); stage 2 is keyed by (cluster, bucket) and keeps, per key, the highest number it
has seen. Each of ``--batches`` micro-batches is one file of ``--rows`` lines over 3 clusters
and 16 topics. The script prints, and records in ``benchmarks/results/latest.json`` (section
``chained_state``), what it found:

- whether Spark accepts the chain (Append, ``timeMode="None"``);
- whether stage 2 sees stage 1's rows in the same micro-batch;
- whether a stage-2 key receives its rows in stage 1's order (the shuffle between them does not
  promise it: the design sorts by stage 1's number where order matters);
- how many of stage 2's partitions received rows (``spark.sql.shuffle.partitions``, each
  number of ``--partitions`` a run of its own, on a checkpoint of its own);
- whether both operators' state survives a restart on the checkpoint (the numbering and the
  keys' highest numbers go on);
- the time of a batch with the chain against one operator alone (stage 1 only), medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import (
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from benchmarks.results import print_table, record
from streaming.spark.session import spark_session

CLUSTERS = ("c0", "c1", "c2")
TOPICS = 16
BUCKETS = 4

NUMBERED = StructType(
    [
        StructField("cluster", StringType()),
        StructField("bucket", IntegerType()),
        StructField("n", LongType()),  # the row's number in its cluster's arrival order
        StructField("batch", IntegerType()),
    ]
)
SEEN = StructType(
    [
        StructField("cluster", StringType()),
        StructField("bucket", IntegerType()),
        StructField("rows", LongType()),
        StructField("first_n", LongType()),
        StructField("last_n", LongType()),
        StructField("previous_n", LongType()),  # the key's highest number before this batch
        StructField("in_order", BooleanType()),
        StructField("batches", StringType()),  # the stage-1 batches its rows came from
        StructField("stage2_partition", IntegerType()),
    ]
)
COUNTER = StructType([StructField("value", LongType())])


def _value(state: tuple[Any, ...] | None) -> int:
    return 0 if state is None else int(state[0])


def _partition() -> int:
    context = TaskContext.get()
    return -1 if context is None else context.partitionId()


class Numbering(StatefulProcessor):
    """Stage 1, per cluster: each row numbered in the cluster's order, with its bucket."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.count = handle.getValueState("count", COUNTER)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        frame = pd.concat(list(rows)).sort_values("line")  # this batch's rows, in file order
        start = _value(self.count.get())
        self.count.update((start + len(frame),))
        yield pd.DataFrame(
            {
                "cluster": key[0],
                "bucket": (frame["topic"] % BUCKETS).astype("int32").to_numpy(),
                "n": range(start + 1, start + len(frame) + 1),
                "batch": frame["batch"].astype("int32").to_numpy(),
            }
        )

    def close(self) -> None:
        pass


class Seen(StatefulProcessor):
    """Stage 2, per (cluster, bucket): what arrived, in which order, and the highest number."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.highest = handle.getValueState("highest", COUNTER)

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        frame = pd.concat(list(rows))
        numbers = frame["n"].tolist()
        previous = _value(self.highest.get())
        self.highest.update((max(previous, *numbers),))
        yield pd.DataFrame(
            {
                "cluster": [key[0]],
                "bucket": [int(key[1])],
                "rows": [len(numbers)],
                "first_n": [min(numbers)],
                "last_n": [max(numbers)],
                "previous_n": [previous],
                "in_order": [numbers == sorted(numbers)],
                "batches": [",".join(map(str, sorted(set(frame["batch"].tolist()))))],
                "stage2_partition": [_partition()],
            }
        )

    def close(self) -> None:
        pass


def _lines(spark: SparkSession, folder: Path) -> DataFrame:
    raw = spark.readStream.option("maxFilesPerTrigger", 1).text(str(folder))
    parts = F.split("value", ",")
    return raw.select(
        parts[0].alias("cluster"),
        parts[1].cast("int").alias("topic"),
        parts[2].cast("long").alias("line"),
        parts[3].cast("int").alias("batch"),
    )


def stage1(lines: DataFrame) -> DataFrame:
    return lines.groupBy("cluster").transformWithStateInPandas(
        statefulProcessor=Numbering(),
        outputStructType=NUMBERED,
        outputMode="Append",
        timeMode="None",
    )


def chained(lines: DataFrame) -> DataFrame:
    return (
        stage1(lines)
        .groupBy("cluster", "bucket")
        .transformWithStateInPandas(
            statefulProcessor=Seen(),
            outputStructType=SEEN,
            outputMode="Append",
            timeMode="None",
        )
    )


def write_batch(folder: Path, batch: int, rows: int) -> None:
    """One file: ``rows`` lines ``cluster,topic,line,batch``, clusters and topics interleaved."""
    start = batch * rows
    text = "".join(
        f"{CLUSTERS[i % len(CLUSTERS)]},{(i * 7) % TOPICS},{start + i},{batch}\n"
        for i in range(rows)
    )
    (folder / f"batch-{batch:04d}.txt").write_text(text)


def run(
    spark: SparkSession,
    build: Any,
    source: Path,
    checkpoint: Path,
    batches: range,
    rows: int,
    name: str,
) -> tuple[list[dict[str, Any]], list[float]]:
    """Feed ``batches`` one file at a time into the query ``build(lines)``; its rows and each
    batch's duration (s)."""
    out: list[dict[str, Any]] = []

    def collect(frame: DataFrame, batch_id: int) -> None:
        out.extend(r.asDict() for r in frame.collect())

    query = (
        build(_lines(spark, source))
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .queryName(name)
        .start()
    )
    durations: list[float] = []
    try:
        for batch in batches:
            write_batch(source, batch, rows)
            started = time.perf_counter()
            query.processAllAvailable()
            durations.append(time.perf_counter() - started)
    finally:
        query.stop()
    return out, durations


def measure(spark: SparkSession, root: Path, batches: int, rows: int) -> dict[str, Any]:
    """One run of the findings on the session's present number of shuffle partitions."""
    half = batches // 2
    for sub in ("in", "in-one", "cp", "cp-one"):
        (root / sub).mkdir()
    found: dict[str, Any] = {}
    try:
        first, chain_s = run(spark, chained, root / "in", root / "cp", range(half), rows, "chain")
        found["accepted"] = True
    except Exception as exc:  # what Spark said is the finding
        return {"accepted": False, "error": str(exc).splitlines()[0][:400]}
    # the same query again on its checkpoint: both operators' state must go on
    second, more_s = run(
        spark, chained, root / "in", root / "cp", range(half, batches), rows, "chain"
    )
    _, one_s = run(spark, stage1, root / "in-one", root / "cp-one", range(batches), rows, "one")
    rows_out = first + second
    # per key, the numbers go on across the restart: each batch's first number follows the
    # key's highest before it (stage 2's state), and stage 1 numbered the whole run once
    continued = all(r["first_n"] > r["previous_n"] for r in rows_out)
    continued &= all(r["previous_n"] > 0 for r in second)
    total = dict.fromkeys(CLUSTERS, 0)
    last: dict[str, int] = dict.fromkeys(CLUSTERS, 0)
    for r in rows_out:
        total[r["cluster"]] += r["rows"]
        last[r["cluster"]] = max(last[r["cluster"]], r["last_n"])
    found.update(
        {
            "same_micro_batch": all(len(r["batches"].split(",")) == 1 for r in rows_out),
            "stage2_keys_in_stage1_order_share": round(
                sum(r["in_order"] for r in rows_out) / len(rows_out), 3
            ),
            "stage2_partitions_with_rows": len({r["stage2_partition"] for r in rows_out}),
            "stage2_keys": len({(r["cluster"], r["bucket"]) for r in rows_out}),
            "state_survives_restart": continued and last == total,
            "chain_batch_median_s": round(statistics.median(chain_s[1:] + more_s[1:]), 3),
            "one_operator_batch_median_s": round(statistics.median(one_s[1:]), 3),
        }
    )
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--partitions", default="1,2,4,8")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.partitions.split(",")]
    spark = spark_session("local[2]", "routewatch-chained-state")
    spark.sparkContext.setLogLevel("ERROR")
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="routewatch-chained-") as tmp:
        for n in counts:
            spark.conf.set("spark.sql.shuffle.partitions", str(n))
            (Path(tmp) / str(n)).mkdir()
            runs[str(n)] = measure(spark, Path(tmp) / str(n), args.batches, args.rows)
    spark.stop()
    names = list(next(iter(runs.values())))
    print(f"two chained transformWithStateInPandas, {args.rows} rows per batch, local[2]")
    print_table(
        ("finding", *(f"{n} partitions" for n in counts)),
        [(k, *(str(runs[str(n)].get(k)) for n in counts)) for k in names],
    )
    record("chained_state", {"rows_per_batch": args.rows, "by_partitions": runs})


if __name__ == "__main__":
    main()
