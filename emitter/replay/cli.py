"""``routewatch replay``: traces into Kafka, the spool or stdout, at any speed."""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from emitter.replay.pacing import Pacer
from emitter.replay.reader import TraceLine, read_traces_aside
from emitter.replay.replayer import Progress, replay
from emitter.settings import EmitterSettings
from emitter.sinks import sink_for
from routewatch.errors import RoutewatchError
from routewatch.settings import load

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="write traces into Kafka, the spool or stdout at real or accelerated speed",
        description="Replay JSON-lines traces (.jsonl or .jsonl.gz) in order, keeping the gaps "
        "between events scaled by --speed. Kafka and spool settings come from ROUTEWATCH_*.",
    )
    parser.add_argument("traces", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--to", choices=["kafka", "spool", "stdout"], required=True)
    parser.add_argument(
        "--speed",
        default="1",
        metavar="1|N|max",
        help="1 = real time, N = N times faster, max = as fast as possible",
    )
    parser.add_argument(
        "--rebase-time", choices=["now"], help="shift event times so that the trace starts now"
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="count bad lines and go on instead of stopping at the first",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.set_defaults(handler=_run)


def _speed(text: str) -> float | None:
    if text == "max":
        return None
    try:
        speed = float(text)
    except ValueError:
        speed = 0.0
    if speed <= 0:
        raise RoutewatchError(f"--speed must be a positive number or max, got '{text}'.")
    return speed


def _count_lines(paths: list[Path]) -> int:
    import gzip
    import zlib

    total = 0
    for path in paths:
        opener = gzip.open if path.name.endswith(".gz") else open
        lines = 0
        try:
            with opener(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    lines += chunk.count(b"\n")
        except (EOFError, OSError, zlib.error) as exc:  # (a missing file fails later, named)
            if isinstance(exc, FileNotFoundError | PermissionError):
                continue
            raise RoutewatchError(
                f"the trace {path} is not a whole gzip file ({exc}) after line {lines}: copy "
                "it again, or give it uncompressed."
            ) from None
        total += lines
    return total


def _run(args: argparse.Namespace) -> int:
    # the sink's retries are worth a line each; kafka-python's own connection chatter is not
    logging.basicConfig(level=logging.WARNING, format="routewatch replay: %(message)s")
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    settings = load(EmitterSettings)
    if args.to == "kafka" and "kafka_topic" not in settings.model_fields_set:
        # the default topic is the live one: routewatch collect writes there, the job reads it
        raise RoutewatchError(
            f"replay --to kafka needs a topic of its own: set ROUTEWATCH_KAFKA_TOPIC (the "
            f"default, {settings.kafka_topic}, is where routewatch collect writes a live "
            "cluster's events, which replayed traces must not mix with)."
        )
    speed = _speed(args.speed)
    bad: list[str] = []
    rebase_to = int(time.time() * 1000) if args.rebase_time == "now" else None
    lines = read_traces_aside(list(args.traces), args.skip_invalid, bad, rebase_to)
    first = next(lines, None)  # reads the files' first lines: missing files fail here
    total = _count_lines(list(args.traces))
    sink = sink_for(args.to, settings, origin="replayed")

    events: Iterator[TraceLine] = itertools.chain([] if first is None else [first], lines)
    progress = None if args.quiet or args.to == "stdout" else Progress(total)
    result = replay(events, sink, Pacer(speed), progress)
    where = {
        "kafka": f"Kafka {settings.kafka_bootstrap} topic {settings.kafka_topic}",
        "spool": f"the spool {settings.spool_dir}",
        "stdout": "stdout",
    }[args.to]
    rate = result.written / max(result.elapsed_s, 1e-9)
    summary = (
        f"wrote {result.written:,} events to {where} in {result.elapsed_s:.1f} s "
        f"({rate:,.0f} events/s, {result.bytes / max(result.elapsed_s, 1e-9) / 1e6:.1f} MB/s)"
    )
    if bad:
        summary += f"; skipped {len(bad)} invalid line(s), the first: {bad[0]}"
    if result.interrupted:
        print(f"routewatch: interrupted; {summary}.", file=sys.stderr)
        return 130
    print(summary + ".", file=sys.stderr)
    return 0
