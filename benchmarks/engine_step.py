"""The engine's step alone, without Spark: what the stateful stage's Python costs per event of
the reference fleet in steady state, and where it goes (issue 38's baseline).

    .venv/bin/python -m benchmarks.engine_step [--duration 100] [--warmup 65] [--profile] [--raw]
        [--big] [--batch-seconds 1]

The fleet (``routewatch simulate --fleet``'s reference: 10 clusters x 10 brokers x 10,000
topics, 2 NameServers, 10,000 sends/s) is generated into memory, cut into batches of one second
of event time (the job's 1 s trigger on a spool that publishes a file a second; ``--batch-seconds
10``: the job's capacity batches, taking in a backlog), and fed through
:class:`streaming.engine.step.Step` over in-memory entries — the same step the Spark job calls,
minus Spark's transport and state store. The first ``--warmup`` seconds are applied unmeasured
(its wall time is printed apart): every broker's first registration (each of its 10,000 topics
judged) and the next one, 30 s later. Then, for every later batch: its wall time; and, apart,
the time ``orjson`` takes to decode the batch's lines by type — the part of the step that is
decoding JSON text a second time (the read stage decoded it once to validate it). Delivered
sends are held in their compact form, as the job holds them (``streaming.engine.compact``);
``--raw`` holds every event raw, as before. ``--big`` runs one big cluster of the fleet's
topic-broker pairs instead (1 cluster x 100 brokers x 10,000 topics, the same producers and
sends; its route pulls name 100 brokers each, not 10). ``--profile`` prints cProfile's top
functions over the measured batches (its own overhead slows them about 2x: the rates printed
are those of the run without it).

Prints the figures and records them in ``benchmarks/results/latest.json`` (section
``engine_step``, or ``engine_step_big``; with ``--batch-seconds`` other than 1, its number of
seconds after them: ``engine_step_10s``).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections import defaultdict

import orjson

from benchmarks.results import print_table, record
from emitter.fleet import FleetSpec, generate_fleet
from streaming.engine.compact import compact
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.step import Step
from streaming.engine.stream import Arrival

LATENESS_MS = 2_000
DEDUPE_HORIZON_MS = 300_000


Batch = tuple[list[Arrival], list[str | None]]


def batches_of(
    spec: FleetSpec, seconds_per_batch: int = 1
) -> tuple[list[Batch], list[dict[str, list[str]]]]:
    """The fleet's arrivals cut by ``seconds_per_batch`` of ``ts``, each with the compact forms
    the read stage gives them (``streaming.engine.compact``), and each batch's lines by event
    type."""
    lines: list[bytes] = []
    generate_fleet(spec, lines.append)
    by_second: dict[int, Batch] = defaultdict(lambda: ([], []))
    by_type: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for raw in lines:
        event = orjson.loads(raw)
        second = event["ts"] // (1000 * seconds_per_batch)
        text = raw.decode()
        key = dedupe_id(event["cluster"], event["event_id"])
        arrivals, forms = by_second[second]
        arrivals.append((key, event["ts"], event.get("seq"), text))
        forms.append(compact(event, text))
        by_type[second][event["type"]].append(text)
    seconds = sorted(by_second)
    return [by_second[s] for s in seconds], [dict(by_type[s]) for s in seconds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=100, help="seconds of fleet traffic")
    parser.add_argument("--warmup", type=int, default=65, help="seconds applied unmeasured")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    parser.add_argument(
        "--raw", action="store_true", help="hold every event raw, as before the compact sends"
    )
    parser.add_argument(
        "--big", action="store_true", help="one cluster of 100 brokers instead of the fleet"
    )
    parser.add_argument(
        "--batch-seconds",
        type=int,
        default=1,
        help="seconds of traffic per batch (10: the capacity batches)",
    )
    args = parser.parse_args()
    if args.warmup >= args.duration:
        parser.error("--warmup must be shorter than --duration")
    if args.warmup % args.batch_seconds:
        parser.error("--warmup must be a whole number of batches (of --batch-seconds)")
    warmup = args.warmup // args.batch_seconds

    spec = FleetSpec(duration=args.duration)
    if args.big:  # the same topic-broker pairs in one cluster
        spec = FleetSpec(clusters=1, brokers=spec.brokers * spec.clusters, duration=args.duration)
    started = time.perf_counter()
    batches, types = batches_of(spec, args.batch_seconds)
    generated = sum(len(b) for b, _ in batches)
    print(f"generated {generated:,} events in {time.perf_counter() - started:.1f} s")

    step, entries = Step(LATENESS_MS, DEDUPE_HORIZON_MS), MemoryEntries()
    forms_of: list[str | None] | None
    started = time.perf_counter()
    for batch, forms in batches[:warmup]:
        step(entries, batch, compact=None if args.raw else forms)
    warmup_wall = time.perf_counter() - started
    print(
        f"the warm-up ({args.warmup} s of traffic: every broker's first registration, each of "
        f"its topics judged) took {warmup_wall:.1f} s"
    )
    measured = batches[warmup:]
    walls = []
    for batch, forms in measured:
        forms_of = None if args.raw else forms
        t0 = time.perf_counter()
        step(entries, batch, compact=forms_of)
        walls.append(time.perf_counter() - t0)
    events = sum(len(batch) for batch, _ in measured)
    wall = sum(walls)

    decode: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for by_type in types[warmup:]:
        for kind, texts in by_type.items():
            t0 = time.perf_counter()
            for text in texts:
                orjson.loads(text)
            decode[kind] += time.perf_counter() - t0
            counts[kind] += len(texts)

    rate = events / wall
    per_second = events / len(measured) / args.batch_seconds  # the fleet's traffic
    print(
        f"\nthe step alone over {len(measured)} batches of {args.batch_seconds} s of traffic "
        f"(after {args.warmup} s of warm-up): {events:,} events in {wall:.2f} s, "
        f"{rate:,.0f} events/s, {rate / per_second:.1f}x real time; "
        f"batch median {statistics.median(walls) * 1000:.0f} ms, max {max(walls) * 1000:.0f} ms"
    )
    rows = [
        [
            kind,
            counts[kind],
            round(decode[kind] * 1e6 / counts[kind], 1),
            f"{decode[kind] / wall:.1%}",
        ]
        for kind in sorted(counts)
    ]
    print("\ndecoding the lines again (orjson.loads), by type, against the step's time:")
    print_table(["type", "events", "us per event", "share of the step"], rows)

    if args.profile:
        step2, entries2 = Step(LATENESS_MS, DEDUPE_HORIZON_MS), MemoryEntries()
        for batch, forms in batches[:warmup]:
            step2(entries2, batch, compact=None if args.raw else forms)
        profile = cProfile.Profile()
        profile.enable()
        for batch, forms in measured:
            step2(entries2, batch, compact=None if args.raw else forms)
        profile.disable()
        print("\ncProfile over the measured batches (tottime, top 25):")
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)

    record(
        ("engine_step_big" if args.big else "engine_step")
        + ("" if args.batch_seconds == 1 else f"_{args.batch_seconds}s"),
        {
            "clusters": spec.clusters,
            "brokers_per_cluster": spec.brokers,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "warmup_wall_s": round(warmup_wall, 1),
            "sends_held": "raw" if args.raw else "compact",
            "events": events,
            "events_per_s": round(rate),
            "batch_s": args.batch_seconds,
            "real_time_factor": round(rate / per_second, 2),
            "batch_median_ms": round(statistics.median(walls) * 1000, 1),
            "batch_max_ms": round(max(walls) * 1000, 1),
            "decode_share_by_type": {k: round(decode[k] / wall, 4) for k in sorted(counts)},
            "decode_us_per_event_by_type": {
                k: round(decode[k] * 1e6 / counts[k], 2) for k in sorted(counts)
            },
        },
    )


if __name__ == "__main__":
    main()
