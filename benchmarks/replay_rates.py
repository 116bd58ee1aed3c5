"""The replayer's max-speed rates into the local Kafka broker and into the spool
(target: >= 30,000 events/s into Kafka on this 2-core machine).

    .venv/bin/python -m benchmarks.replay_rates [--duration 20] [--runs 3]

Generates that many seconds of the reference fleet's traffic to a file, then replays it at max
speed with the same code as ``routewatch replay`` (acks=all), and prints the median of several
runs: events/s and MB/s per target. Kafka is the test harness's real Apache Kafka broker.
Records the figures in ``benchmarks/results/latest.json`` (``replay_kafka_events_per_s``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.results import median, print_table, record
from emitter.fleet import FleetSpec, generate_fleet
from emitter.replay import Pacer, replay
from emitter.replay.reader import read_traces_aside
from emitter.settings import EmitterSettings
from emitter.sinks import Sink, SpoolSink, sink_for
from emitter.trace import TraceWriter
from routewatch.cli import plain_text
from routewatch.settings import load
from routewatch.testing.kafka import running_broker


def measure(trace: Path, make_sink: object, runs: int) -> tuple[list[float], list[float], int]:
    """Each run's events/s and MB/s, and how many events the last run delivered."""
    rates, mbs = [], []
    written = 0
    for run in range(runs):
        sink: Sink = make_sink(run)  # type: ignore[operator]
        result = replay(read_traces_aside([trace], False, []), sink, Pacer(None))
        written = result.written
        rates.append(result.written / result.elapsed_s)
        mbs.append(result.bytes / result.elapsed_s / 1e6)
    return rates, mbs, written


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="routewatch-replay-") as tmp:
        trace = Path(tmp) / "fleet.jsonl"
        with TraceWriter(trace) as writer:
            generate_fleet(FleetSpec(duration=args.duration), writer.write_line)
        size = trace.stat().st_size
        print(
            f"trace: {writer.count:,} events, {size / 1e6:,.0f} MB "
            f"({args.duration} s of the reference fleet)"
        )
        settings = load(EmitterSettings, data_dir=Path(tmp) / "data")
        spool = measure(
            trace,
            lambda run: SpoolSink(
                Path(tmp) / f"spool-{run}",
                settings.spool_roll_events,
                settings.spool_roll_interval_s,
            ),
            args.runs,
        )
        with running_broker() as broker:
            kafka = measure(
                trace,
                lambda run: sink_for(
                    "kafka",
                    settings.model_copy(
                        update={
                            "kafka_bootstrap": broker.bootstrap,
                            "kafka_topic": f"bench-{run}",
                        }
                    ),
                ),
                args.runs,
            )
            assert kafka[2] == writer.count, "every event must be delivered"
    rows: list[list[object]] = []
    figures: dict[str, object] = {}
    for target, (rates, mbs, _) in (("spool", spool), ("kafka", kafka)):
        rows.append([target, median(rates), median(mbs), min(rates), max(rates), args.runs])
        figures[target] = {
            "events_per_s_median": median(rates),
            "mb_per_s_median": median(mbs),
            "events_per_s_runs": rates,
            "mb_per_s_runs": mbs,
        }
    print_table(["target", "events/s (median)", "MB/s (median)", "min", "max", "runs"], rows)
    figures.update(trace_events=writer.count, trace_mb=size / 1e6, acks=settings.kafka_acks)
    record("replay", figures, replay_kafka_events_per_s=round(median(kafka[0])))


if __name__ == "__main__":
    main()
