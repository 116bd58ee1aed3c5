"""How fast the fleet generator writes the reference fleet to a file (target: >= 100,000 events/s).

    .venv/bin/python benchmarks/fleet_generation.py [--duration 60] [--runs 3] [--gzip]

Prints the median of several runs: events/s, MB/s, and the trace size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from emitter.fleet import FleetSpec, generate_fleet
from emitter.trace import TraceWriter
from routewatch.cli import plain_text


def one_run(spec: FleetSpec, path: Path) -> tuple[int, int, float]:
    started = time.perf_counter()
    with TraceWriter(path) as writer:
        generate_fleet(spec, writer.write_line)
    elapsed = time.perf_counter() - started
    return writer.count, path.stat().st_size, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--duration", type=int, default=60, help="seconds of fleet traffic")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gzip", action="store_true", help="write .jsonl.gz instead of .jsonl")
    args = parser.parse_args()
    spec = FleetSpec(duration=args.duration)
    rates, mbs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("fleet.jsonl.gz" if args.gzip else "fleet.jsonl")
        for _ in range(args.runs):
            count, size, elapsed = one_run(spec, path)
            rates.append(count / elapsed)
            mbs.append(size / elapsed / 1e6)
    print(f"reference fleet, {args.duration} s of traffic: {count:,} events, {size / 1e6:,.0f} MB")
    print(f"{'runs':>6} {'events/s (median)':>18} {'MB/s (median)':>14}")
    print(f"{args.runs:>6} {statistics.median(rates):>18,.0f} {statistics.median(mbs):>14,.1f}")


if __name__ == "__main__":
    main()
