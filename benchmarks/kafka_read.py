"""The reference fleet's bare read — source and parse, no state — through Spark's own Kafka source,
beside the spool's text source, on the same events in one Spark session.

    .venv/bin/python -m benchmarks.kafka_read [--clusters 10] [--warm 32] [--steady 30]
        [--partitions 1] [--batches 1,10]

The fleet's first ``warm + steady`` seconds (``emitter.fleet``, the reference fleet by default)
are written once as one spool file per second and once into a topic of the test harness's
Kafka 4.x broker (``routewatch/testing/kafka.py``), with the replayer's Kafka sink (acks=all).
Then, for each batch size (seconds of traffic per micro-batch: a file per second for the
spool, ``maxOffsetsPerTrigger`` of that many seconds' mean events for Kafka), each source feeds
stage 1 (``read_events``: parse and validate) into Spark's no-op sink, and the rate is the
events over the processing time of the batches after the ``warm`` seconds, as
``benchmarks.fleet_realtime`` measures its bare read. Both run once first, unmeasured, so that
neither is measured on a cold JVM. Records the rates in ``benchmarks/results/latest.json``,
section ``kafka_read``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from benchmarks.bare_read import Rate, bare_rate, noop_rate
from benchmarks.fleet_realtime import SecondFiles
from benchmarks.results import print_table, record
from emitter.fleet import FleetSpec, generate_fleet
from emitter.replay import Pacer, replay
from emitter.replay.reader import read_traces_aside
from emitter.settings import EmitterSettings
from emitter.sinks import sink_for
from emitter.trace import TraceWriter
from routewatch.cli import plain_text
from routewatch.settings import load
from routewatch.testing.kafka import KafkaBroker, running_broker
from routewatch.testing.parts import spark_kafka_jars
from streaming.settings import StreamingSettings
from streaming.sources.kafka import kafka_lines, kafka_records
from streaming.spark.session import spark_session
from streaming.stages.read import read_events

TOPIC = "bench.fleet"


def _kafka_events(spark: SparkSession, broker: KafkaBroker, cap: int) -> DataFrame:
    settings = load(
        StreamingSettings,
        kafka_bootstrap=broker.bootstrap,
        kafka_topic=TOPIC,
        kafka_max_offsets_per_trigger=cap,
    )
    return read_events(kafka_lines(kafka_records(spark, settings)))


def kafka_rate(
    spark: SparkSession, broker: KafkaBroker, checkpoint: Path, cap: int, warm_events: int
) -> Rate:
    """Spark's Kafka source + parse and validate, ``cap`` records per batch, into the no-op
    sink; measured from the first batch wholly after the ``warm_events``."""
    first_batch = -(-warm_events // cap)
    return noop_rate(_kafka_events(spark, broker, cap), checkpoint, first_batch)


def produce(broker: KafkaBroker, trace: Path, events: int, partitions: int, data: Path) -> None:
    """The trace into the topic, in order, with the replayer's Kafka sink."""
    broker.create_topic(TOPIC, partitions=partitions)
    settings = load(EmitterSettings, data_dir=data)
    sink = sink_for(
        "kafka",
        settings.model_copy(update={"kafka_bootstrap": broker.bootstrap, "kafka_topic": TOPIC}),
    )
    written = replay(read_traces_aside([trace], False, []), sink, Pacer(None)).written
    assert written == events, "every event must be delivered"


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--warm", type=int, default=32, help="seconds of traffic not measured")
    parser.add_argument("--steady", type=int, default=30, help="seconds measured after them")
    parser.add_argument("--partitions", type=int, default=1, help="of the Kafka topic")
    parser.add_argument("--batches", default="1,10", help="seconds of traffic per batch")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    seconds = args.warm + args.steady
    spec = FleetSpec(clusters=args.clusters, duration=seconds)
    with tempfile.TemporaryDirectory(prefix="routewatch-kafka-read-") as tmp:
        root = Path(tmp)
        settings = load(StreamingSettings, data_dir=root)
        files = SecondFiles(settings.spool_dir, spec.start_ms)
        trace = root / "fleet.jsonl"
        with TraceWriter(trace) as writer:

            def write(line: bytes) -> None:
                files.write(line)
                writer.write_line(line)

            generate_fleet(spec, write)
        files.close()
        events = writer.count
        for second in sorted(files.events):
            files.publish(second)
        warm_events = sum(n for s, n in files.events.items() if s < args.warm)
        per_s = statistics.mean(files.events[s] for s in range(args.warm, seconds))
        print(f"fleet: {events:,} events in {seconds} s of traffic; steady {per_s:,.0f}/s")
        with running_broker() as broker:
            produce(broker, trace, events, args.partitions, root / "emitter")
            conf = {
                "spark.jars": spark_kafka_jars(),
                "spark.sql.streaming.numRecentProgressUpdates": "2000",
            }
            spark = spark_session("local[2]", "routewatch-bench-kafka-read", conf)
            spark.sparkContext.setLogLevel("ERROR")
            try:
                # unmeasured: the JIT compiles both sources' code first
                bare_rate(spark, settings.spool_dir, root / "cold-spool", args.warm)
                kafka_rate(spark, broker, root / "cold-kafka", round(per_s), warm_events)
                rates: dict[int, tuple[Rate, Rate]] = {}
                for batch_s in batches:
                    first = -(-args.warm // batch_s)  # the first batch wholly after the warm-up
                    spool = bare_rate(
                        spark, settings.spool_dir, root / f"spool-{batch_s}", first, batch_s
                    )
                    cap = round(per_s * batch_s)
                    kafka = kafka_rate(spark, broker, root / f"kafka-{batch_s}", cap, warm_events)
                    rates[batch_s] = (spool, kafka)
                    print(
                        f"{batch_s} s per batch: spool {spool.per_s:,.0f} events/s, "
                        f"Kafka {kafka.per_s:,.0f} events/s",
                        flush=True,
                    )
            finally:
                spark.stop()
    rows = []
    figures: dict[str, object] = {
        "events": events,
        "steady_events_per_s": per_s,
        "partitions": args.partitions,
        "kafka_source": "Spark's own (spark-sql-kafka-0-10)",
    }
    for batch_s, (spool, kafka) in rates.items():
        rows.append([f"{batch_s} s", spool.per_s, kafka.per_s, kafka.per_s / spool.per_s])
        figures[f"batch_{batch_s}s"] = {
            "spool_bare_events_per_s": spool.per_s,
            "kafka_bare_events_per_s": kafka.per_s,
            "spool_batch_median_s": statistics.median(spool.durations),
            "kafka_batch_median_s": statistics.median(kafka.durations),
        }
    print_table(["traffic per batch", "spool events/s", "Kafka events/s", "Kafka / spool"], rows)
    record("kafka_read", figures)


if __name__ == "__main__":
    main()
